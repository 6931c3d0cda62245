"""Running a layer under its mixed-precision dtype policy (Keras's autocasting).

A layer whose policy is mixed (``"mixed_float16"``, ``"mixed_bfloat16"``: variables in
``float32``, computation in a 16-bit type) runs through :func:`apply` wherever a model or
a parent layer calls it: its floating inputs and its weights are cast to the compute dtype
(the casts are differentiable, so gradients reach the ``float32`` variables), and the
buffers it returns are cast back to the dtypes they are stored in. Layers whose statistics
are sensitive to rounding (the normalizations: ``float32_compute`` is True) compute in
``float32`` instead, on their ``float32`` weights, and return outputs in the compute dtype:
Keras's ``BatchNormalization`` does the same. Other policies run the layer as it is.

Example:
    >>> import ember
    >>> from ember import layers, ops
    >>> from ember.layers import autocast
    >>> ember.set_backend("numpy")
    >>> dense = layers.Dense(2, dtype="mixed_bfloat16")
    >>> state = dense.build((None, 3), seed=0)
    >>> y, new_state = autocast.apply(dense, state, ops.ones((1, 3)))
    >>> ops.dtype(y), ops.dtype(new_state["params"]["kernel"])
    ('bfloat16', 'float32')
"""

from __future__ import annotations

import functools
from typing import Any

import optree

from ember import dtypes, ops
from ember.dtype_policies import MIXED
from ember.layers import rematerialization

_HALF = ("float16", "bfloat16", "float32")  # the floating dtypes a mixed policy casts


def compute_dtype_of(layer: Any) -> str | None:
    """The 16-bit compute dtype of a layer with a mixed policy (a quantized one's source policy:
    ``"int8_from_mixed_bfloat16"``); None for any other layer."""
    dtype = getattr(layer, "dtype", None)
    return MIXED.get(dtype.rpartition("_from_")[2]) if isinstance(dtype, str) else None


def cast_floats(tree: Any, dtype: str) -> Any:
    """``tree`` with its float16/bfloat16/float32 arrays cast to ``dtype`` (others as they are)."""
    def cast(leaf: Any) -> Any:
        if ops.is_array(leaf):
            current = ops.dtype(leaf)
            if current != dtype and current in _HALF:
                return ops.cast(leaf, dtype)
        return leaf

    return optree.tree_map(cast, tree, none_is_leaf=False)


def _cast_like(new: Any, old: Any) -> Any:
    """``new``'s arrays cast back to the dtypes of the matching arrays of ``old`` (new entries kept)."""
    if isinstance(new, dict) and isinstance(old, dict):
        return {key: _cast_like(value, old[key]) if key in old else value for key, value in new.items()}
    if ops.is_array(new) and ops.is_array(old) and ops.dtype(new) != ops.dtype(old) \
            and dtypes.is_float(ops.dtype(old)):
        return ops.cast(new, ops.dtype(old))
    return new


def apply(layer: Any, state: dict, inputs: Any, **kwargs: Any) -> tuple[Any, dict]:
    """``layer.apply(state, inputs, **kwargs)`` under the layer's dtype policy (see the module docstring)."""
    run = layer.apply
    if layer.__dict__.get("_remat_mode") is not None and rematerialization.applies(layer, state, inputs):
        run = functools.partial(rematerialization.apply, layer)  # made in an ember.RematScope
    compute = compute_dtype_of(layer)
    if compute is None:
        return run(state, inputs, **kwargs)
    if getattr(layer, "float32_compute", False):
        outputs, new_state = run(state, cast_floats(inputs, "float32"), **kwargs)
        return cast_floats(outputs, compute), new_state
    cast_state = {"params": cast_floats(state["params"], compute), "buffers": cast_floats(state["buffers"], compute)}
    outputs, new_state = run(cast_state, cast_floats(inputs, compute), **kwargs)
    return outputs, {"params": state["params"], "buffers": _cast_like(new_state["buffers"], state["buffers"])}
