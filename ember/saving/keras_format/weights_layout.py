"""Where each Ember variable lives in a Keras 3 weights file (``model.weights.h5``).

Keras stores a layer's own variables as ``<path>/vars/0``, ``/1``, ... in the order the
layer created them, and its tracked sub-objects under attribute names
(``<path>/cell/vars/...`` for a recurrent layer, ``query_dense`` for attention). A model's
layers sit under ``layers/<snake_case class name>[_<n>]``, numbered per class in the
order Keras lists the layers. Ember's layers use Keras's layouts (kernel shapes, LSTM gate
order i, f, c, o, GRU z, r, h, BatchNorm moving statistics as buffers), so only the paths differ:
:func:`variable_paths` pairs each Keras dataset path with the Ember state path.

Example:
    >>> import ember
    >>> from ember import layers
    >>> from ember.saving.keras_format import weights_layout
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((4, 3)), layers.Dense(2, name="hidden"), layers.LSTM(2, name="rnn")])
    >>> for keras_path, ember_path in weights_layout.variable_paths(model):
    ...     print(keras_path, "->", ember_path)
    layers/dense/vars/0 -> params/hidden/kernel
    layers/dense/vars/1 -> params/hidden/bias
    layers/lstm/cell/vars/0 -> params/rnn/kernel
    layers/lstm/cell/vars/1 -> params/rnn/recurrent_kernel
    layers/lstm/cell/vars/2 -> params/rnn/bias
"""

from __future__ import annotations

from typing import Any

from ember.layers.attention.multi_head_attention import MultiHeadAttention
from ember.layers.rnn.bidirectional import Bidirectional
from ember.layers.rnn.gru import GRU
from ember.layers.rnn.lstm import LSTM
from ember.layers.rnn.simple_rnn import SimpleRNN
from ember.layers.rnn.time_distributed import TimeDistributed
from ember.naming import to_snake_case
from ember.saving.keras_format.model_classes import is_model
from ember.saving.keras_format.model_config import keras_layer_order

# The order Keras layers create their variables in (names Ember shares with Keras).
KERAS_CREATION_ORDER = ("embeddings", "kernel", "depthwise_kernel", "pointwise_kernel", "recurrent_kernel",
                        "bias", "gamma", "beta", "scale", "moving_mean", "moving_variance")
# Keras attribute names of MultiHeadAttention's projections, by Ember's state key.
ATTENTION_PROJECTIONS = (("query", "query_dense"), ("key", "key_dense"), ("value", "value_dense"),
                         ("attention_output", "output_dense"))
RECURRENT_LAYERS = (LSTM, GRU, SimpleRNN)
LORA_PREFIX = "lora_"  # LoRA factors (lora_kernel_a, lora_embeddings_b): merged into the kernel in Keras files


def _ordered(names: list[str]) -> list[str]:
    rank = {name: i for i, name in enumerate(KERAS_CREATION_ORDER)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), names.index(n)))


def _own(keras_path: str, state: dict, ember_prefix: str) -> list[tuple[str, str]]:
    """A layer's own variables (params, then buffers) as ``<keras_path>/vars/<i>``."""
    # LoRA factors are not Keras file variables: Keras saves the merged kernel (see lora_prefixes)
    kinds = {name: "params" for name in state["params"] if not name.startswith(LORA_PREFIX)}
    kinds.update({name: "buffers" for name in state["buffers"]})
    pairs = []
    for i, name in enumerate(_ordered(list(kinds))):
        pairs.append((f"{keras_path}/vars/{i}", f"{kinds[name]}/{ember_prefix}/{name}".replace("//", "/")))
    return pairs


def _sub(state: dict, key: str) -> dict:
    return {"params": state["params"].get(key, {}), "buffers": state["buffers"].get(key, {})}


def layer_paths(layer: Any, state: dict, keras_path: str, ember_prefix: str) -> list[tuple[str, str]]:
    """``(keras dataset path, ember state path)`` for every variable of ``layer`` (its ``state``)."""
    if is_model(layer):
        return model_paths(layer, state, keras_path, ember_prefix)
    if isinstance(layer, RECURRENT_LAYERS):  # a stateful RNN's carried states are not Keras variables
        carried = set(layer.carried_buffers)
        cell_state = {"params": state["params"], "buffers": {k: v for k, v in state["buffers"].items()
                                                             if k not in carried}}
        return _own(f"{keras_path}/cell", cell_state, ember_prefix)
    if isinstance(layer, Bidirectional):
        pairs = []
        for attribute, child in (("forward_layer", layer.layer), ("backward_layer", layer.backward_layer)):
            pairs += layer_paths(child, _sub(state, child.name), f"{keras_path}/{attribute}",
                                 f"{ember_prefix}/{child.name}")
        return pairs
    if isinstance(layer, TimeDistributed):
        return layer_paths(layer.layer, state, f"{keras_path}/layer", ember_prefix)
    if isinstance(layer, MultiHeadAttention):
        pairs = []
        for key, attribute in ATTENTION_PROJECTIONS:
            pairs += _own(f"{keras_path}/{attribute}", _sub(state, key), f"{ember_prefix}/{key}")
        return pairs
    return _own(keras_path, state, ember_prefix)


def model_paths(model: Any, state: dict, keras_path: str = "", ember_prefix: str = "") -> list[tuple[str, str]]:
    """Every variable of ``model`` (its ``state``) as ``(keras path, ember path)``, Keras's layer numbering."""
    used: dict[str, int] = {}
    pairs = []
    state_keys = model._state_keys() if hasattr(model, "_state_keys") else {}
    for layer in keras_layer_order(model):
        base = to_snake_case(type(layer).__name__)
        if base == "model":
            base = "functional"
        used[base] = used.get(base, -1) + 1
        group = base if used[base] == 0 else f"{base}_{used[base]}"
        prefix = f"{keras_path}/layers/{group}".lstrip("/")
        key = state_keys.get(id(layer), layer.name)  # structural state key within the model
        pairs += layer_paths(layer, _sub(state, key), prefix, f"{ember_prefix}/{key}".lstrip("/"))
    return pairs


def carried_state_paths(model: Any, ember_prefix: str = "") -> list[str]:
    """The Ember state paths of the stateful RNNs' carried states (``buffers/<key>/rnn_state_<i>``):
    not Keras variables, so a Keras weights file has none; loading starts them from zeros."""
    paths = []
    state_keys = model._state_keys() if hasattr(model, "_state_keys") else {}
    for layer in keras_layer_order(model):
        key = state_keys.get(id(layer), layer.name)
        prefix = f"{ember_prefix}/{key}".lstrip("/")
        if is_model(layer):
            paths += carried_state_paths(layer, prefix)
        elif isinstance(layer, RECURRENT_LAYERS):
            paths += [f"buffers/{prefix}/{name}" for name in layer.carried_buffers]
    return paths


def lora_layers(model: Any, ember_prefix: str = "") -> list[tuple[Any, str]]:
    """``(layer, ember state prefix)`` of the layers with LoRA enabled: a Keras file holds their merged
    kernel and no factors (Keras's ``save_own_variables``); loading zeroes the factors, as Keras does."""
    found = []
    state_keys = model._state_keys() if hasattr(model, "_state_keys") else {}
    for layer in keras_layer_order(model):
        key = state_keys.get(id(layer), layer.name)
        prefix = f"{ember_prefix}/{key}".lstrip("/")
        if is_model(layer):
            found += lora_layers(layer, prefix)
        elif getattr(layer, "lora_rank", None) is not None and hasattr(layer, "merged_state"):
            found.append((layer, prefix))
    return found


def variable_paths(model: Any) -> list[tuple[str, str]]:
    """Every variable of ``model`` as ``(keras dataset path, ember state path)``."""
    return model_paths(model, model.placeholder_state())
