"""Shared pieces of the normalization layers: axis validation and float handling."""

from __future__ import annotations

import numbers
from typing import Any

from ember import ops
from ember.layers.core._checks import input_shape_of
from ember.layers.layer import Layer
from ember.validation import check_bool

# Dtypes computed in float32 and cast back (as Keras does, for stability).
LOW_PRECISION = ("float16", "bfloat16")


def check_axis(layer: Layer, value: Any, allow_list: bool) -> int | tuple[int, ...]:
    """Validate an ``axis`` config value: an int, or (``allow_list``) a non-empty list/tuple
    of distinct ints, returned as a tuple."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if allow_list and isinstance(value, (list, tuple)) and value and all(
            isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in value):
        axes = tuple(int(a) for a in value)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{layer.name}: axis must not repeat an axis, received {value!r}")
        return axes
    expected = "an int or a non-empty list/tuple of ints" if allow_list else "an int"
    raise TypeError(f"{layer.name}: axis must be {expected}, received {value!r}")


def check_real(layer: Layer, field: str, low: float, high: float | None = None, low_open: bool = False) -> None:
    """Normalize the config field ``field`` to a float in ``[low, high]`` (``(low, ...`` if ``low_open``)."""
    value = getattr(layer, field)
    is_real = not isinstance(value, bool) and isinstance(value, numbers.Real)
    ok = is_real and (value > low if low_open else value >= low) and (high is None or value <= high)
    if not ok:
        opening = "(" if low_open else "["
        closing = f"{high}]" if high is not None else "inf)"
        bounds = f"{opening}{low}, {closing}"
        raise ValueError(f"{layer.name}: {field} must be a number in {bounds}, received {value!r}")
    layer._normalize(field, float(value))


def check_bools(layer: Layer, *fields: str) -> None:
    for field in fields:
        check_bool(layer.name, field, getattr(layer, field))


def resolve_axes(layer: Layer, axis: int | tuple[int, ...], rank: int, shape: tuple | None = None) -> tuple[int, ...]:
    """``axis`` as sorted non-negative axes of a rank-``rank`` input; ValueError naming the
    layer when an axis is out of range or is the batch axis."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    where = f"inputs of shape {shape}" if shape is not None else f"rank-{rank} inputs"
    resolved = []
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"layer {layer.name!r}: axis {a} is out of range for {where}")
        resolved.append(a % rank)
    if 0 in resolved:
        raise ValueError(f"layer {layer.name!r}: axis {axis} includes the batch axis 0 of {where}")
    if len(set(resolved)) != len(resolved):
        raise ValueError(f"layer {layer.name!r}: axis {axis} names the same axis twice for {where}")
    return tuple(sorted(resolved))


def known_dims(layer: Layer, shape: tuple, axes: tuple[int, ...]) -> tuple[int, ...]:
    """The sizes of ``shape`` at ``axes``, which must be known (they size the params)."""
    dims = tuple(shape[a] for a in axes)
    if any(d is None for d in dims):
        raise ValueError(f"layer {layer.name!r} needs known sizes on axis {axes} to build its weights, "
                         f"received shape {shape}")
    return dims


def broadcast_param(param: Any, axes: tuple[int, ...], shape: tuple) -> Any:
    """Reshape a param of shape ``shape[axes]`` so it broadcasts against ``shape``."""
    rank = len(shape)
    if axes == tuple(range(rank - len(axes), rank)):
        return param  # trailing axes broadcast as they are
    target = [1] * rank
    for a in axes:
        target[a] = shape[a]
    return ops.reshape(param, tuple(target))


def compute_input(layer: Layer, x: Any) -> tuple[Any, str]:
    """``(x in its compute dtype, original dtype)``: half precision is computed in float32."""
    dtype = ops.dtype(x)
    if dtype in LOW_PRECISION:
        return ops.cast(x, "float32"), dtype
    if not dtype.startswith("float"):
        raise TypeError(f"layer {layer.name!r} expects floating-point inputs, received dtype {dtype}")
    return x, dtype


def input_shape(layer: Layer, x: Any) -> tuple:
    """The shape of the native array ``x`` (TypeError naming the layer for non-arrays)."""
    if not ops.is_array(x):
        raise TypeError(f"layer {layer.name!r} expects one array input, received {type(x).__name__}")
    return tuple(ops.shape(x))


def as_input_dtype(outputs: Any, input_dtype: str) -> Any:
    """``outputs`` in the input's dtype again (:func:`compute_input` computed half precision in float32)."""
    return outputs if ops.dtype(outputs) == input_dtype else ops.cast(outputs, input_dtype)


def checked_param(layer: Layer, params: dict, name: str, shape: tuple, axes: tuple[int, ...]) -> Any:
    """``params[name]`` (x's sizes on ``axes``); ValueError when it does not fit ``shape``."""
    param = params[name]
    expected = tuple(shape[a] for a in axes)
    if tuple(ops.shape(param)) != expected:
        raise ValueError(f"layer {layer.name!r} was built for sizes {tuple(ops.shape(param))} on axis "
                         f"{layer.axis}, received inputs of shape {shape}")
    return param


def axis_output_shape(layer: Layer, input_shape: Any) -> tuple:
    """The output shape of a layer that normalizes over ``layer.axis``: the input shape (rank >= 2),
    once ``axis`` is checked against it."""
    shape = input_shape_of(layer, input_shape, min_rank=2)
    resolve_axes(layer, layer.axis, len(shape), shape)
    return shape
