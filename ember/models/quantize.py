"""``model.quantize(mode)``: quantize every layer of a model that can be (Keras's ``Model.quantize``).

Walks the model's layers (nested models and Keras-style parents included), calls ``quantize``
on each leaf layer that implements it (``Dense``, ``Embedding``: see
:mod:`ember.layers.core.dense_adaptation`), warns for a leaf that implements it but refuses
(a subclass, a mode Ember lacks) and leaves the other layers (activations, convolutions, RNNs)
as they are, as Keras does.

Example:
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((4,)), layers.Dense(8, activation="relu"), layers.Dense(2)])
    >>> _ = model.build(seed=0)
    >>> model.quantize("int8")
    >>> [layer.dtype_policy.name for layer in model.layers]
    ['int8_from_float32', 'int8_from_float32']
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

from ember.layers.layer import Layer
from ember.quantizers import validate_and_resolve_config


def _leaves(layer: Any, seen: set[int]) -> list:
    """Leaf layers under ``layer`` (each once), in model order."""
    if id(layer) in seen:
        return []
    seen.add(id(layer))
    children = list(getattr(layer, "layers", None) or [])
    if not children:
        children = list(layer._state_children().values())
    if not children:
        return [layer]
    found: list = []
    for child in children:
        found += _leaves(child, seen)
    return found


def _selected(layer: Any, filters: Any) -> bool:
    if filters is None:
        return True
    if callable(filters):
        return bool(filters(layer))
    patterns = [filters] if isinstance(filters, str) else list(filters)
    return any(re.search(pattern, layer.name) for pattern in patterns)


def quantize_model(model: Any, mode: str | None = None, config: Any = None, filters: Any = None,
                   **kwargs: Any) -> list:
    """Quantize ``model``'s quantizable layers in place; returns the layers quantized.

    Args:
        model: a built model.
        mode: ``"int8"`` (or None with ``config``).
        config: an :class:`~ember.quantizers.Int8QuantizationConfig`.
        filters: a regular expression (or list of them) searched in the layer names, or a callable
            ``layer -> bool``: only the layers selected are quantized.
        **kwargs: ``type_check`` (False also quantizes subclasses of the quantizable layers).

    Raises:
        ValueError: unknown keyword arguments, filters of another type, a bad mode/config.
    """
    type_check = kwargs.pop("type_check", True)
    if kwargs:
        raise ValueError(f"{model.name}.quantize: unrecognized keyword arguments {sorted(kwargs)}")
    if filters is not None and not isinstance(filters, (str, list, tuple, Callable)):  # type: ignore[arg-type]
        raise ValueError(f"{model.name}.quantize: filters must be a regex string, a list of them or a callable, "
                         f"received {type(filters).__name__}")
    validate_and_resolve_config(mode, config, f"{model.name}.quantize")
    model._read_state()  # builds the model when its input shapes are known (its layers then have weights)
    done = []
    for layer in _leaves(model, set()):
        if not _selected(layer, filters) or type(layer).quantize is Layer.quantize:
            continue
        try:
            layer.quantize(mode, type_check=type_check, config=config)
        except NotImplementedError as error:
            warnings.warn(str(error), UserWarning, stacklevel=3)
            continue
        done.append(layer)
    return done
