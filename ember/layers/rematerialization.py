"""Layers made inside ``ember.RematScope``: their forward pass is rematerialized, as in Keras.

A layer constructed while a :class:`~ember.autodiff.remat.RematScope` is active remembers the
scope's settings (``_remat_mode``). Whenever it runs (in a model, inside a parent layer, eagerly,
in ``fit``), :func:`apply` decides with Keras's rule (:func:`~ember.autodiff.remat.remat_applies`)
whether to run it through :func:`ember.remat` (activations recomputed in the backward pass):

* ``"full"``: every such layer; ``"list_of_layers"``: the layers named in ``layer_names``;
* ``"larger_than"``: layers whose output holds more than ``output_size_threshold`` elements;
* ``"activations"``: layers with a non-linear ``activation`` (Keras rematerializes only the
  activation function inside the layer; Ember the layer's whole forward, which keeps less).

Layers with buffers (BatchNormalization's moving statistics) or an ``activity_regularizer`` run
as usual: a recomputation would update the buffers twice, and the activity loss is part of the
forward pass the scope recomputes. Values and gradients equal the plain run.

Example:
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> with ember.RematScope(mode="full"):
    ...     dense = layers.Dense(2)
    >>> dense._remat_mode.mode
    'full'
"""

from __future__ import annotations

import math
from typing import Any

from ember import ops
from ember.autodiff.remat import get_current_remat_mode, remat, remat_applies


def current_mode() -> Any:
    """The settings a layer constructed now keeps (None outside every ``RematScope`` and in a
    ``RematScope(mode=None)``, which turns rematerialization off inside an outer scope)."""
    mode = get_current_remat_mode()
    return None if mode is None or mode.mode is None else mode


def applies(layer: Any, state: dict, inputs: Any) -> bool:
    """Whether ``layer`` (which has a ``_remat_mode``) runs rematerialized on ``inputs``."""
    if state["buffers"] or getattr(layer, "activity_regularizer", None) is not None:
        return False
    mode = layer._remat_mode
    size = _output_size(layer, inputs) if mode.mode == "larger_than" else 0
    activation = getattr(layer, "activation", None)  # a name ("relu") or a function
    has_activation = activation is not None and getattr(activation, "__name__", activation) not in ("linear", None)
    return remat_applies(mode, layer.name, size, has_activation)


def _output_size(layer: Any, inputs: Any) -> int:
    """Elements of the output for ``inputs`` (the batch size included), from ``compute_output_shape``."""
    shape = tuple(ops.shape(inputs[0] if isinstance(inputs, (list, tuple)) else inputs))
    out = layer.compute_output_shape(shape if not isinstance(inputs, (list, tuple))
                                     else [tuple(ops.shape(x)) for x in inputs])
    shapes = [out] if isinstance(out, tuple) and all(d is None or isinstance(d, int) for d in out) else list(out)
    return sum(math.prod(shape[0] if d is None else d for d in s) for s in shapes)


def apply(layer: Any, state: dict, inputs: Any, **kwargs: Any) -> tuple[Any, dict]:
    """``layer.apply(state, inputs, **kwargs)`` with the forward rematerialized (module docstring)."""
    buffers = state["buffers"]

    def forward(params: dict, values: Any) -> Any:
        return layer.apply({"params": params, "buffers": buffers}, values, **kwargs)[0]

    return remat(forward)(state["params"], inputs), state
