"""NumPy backend: shape manipulation ops (re-exported by ``core``)."""

from __future__ import annotations

import numpy as np

from ember.backends._common import normalize_axes
from ember.backends.numpy._base import (
    axes_arg,
    axis_arg,
    int_list,
    out,
    promote_all,
    shape_arg,
    to_native,
)


def reshape(x, newshape):
    x = to_native(x)
    shape = tuple(int_list(newshape, "newshape"))
    try:
        return x.reshape(shape)
    except ValueError:
        raise ValueError(f"reshape: cannot reshape an array of shape {x.shape} (size {x.size}) into shape "
                         f"{shape}") from None


def transpose(x, axes=None):
    x = to_native(x)
    if axes is None:
        return np.transpose(x)
    perm = tuple(axis_arg(a, x.ndim, "axes") for a in int_list(axes, "axes"))
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes must be a permutation of range({x.ndim}), received {tuple(axes)}")
    return np.transpose(x, perm)


def expand_dims(x, axis):
    x = to_native(x)
    axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    count = len(axis) if isinstance(axis, tuple) else 1
    return np.expand_dims(x, axes_arg(axis, x.ndim + count))


def squeeze(x, axis=None):
    x = to_native(x)
    if axis is None:
        return np.squeeze(x)
    axes = axes_arg(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, expected 1 (input shape {x.shape})")
    return np.squeeze(x, axis=axes)


def _sequence(xs, op):
    if not isinstance(xs, (list, tuple)):
        xs = list(xs)
    if not xs:
        raise ValueError(f"{op}: expected a non-empty sequence of arrays, received an empty one")
    return promote_all(xs)


def concatenate(xs, axis=0):
    arrays = _sequence(xs, "concatenate")
    if axis is None:
        return np.concatenate([a.ravel() for a in arrays])
    if arrays[0].ndim == 0:
        raise ValueError("concatenate: 0-d arrays cannot be concatenated; use stack")
    axis = axis_arg(axis, arrays[0].ndim)
    try:
        return np.concatenate(arrays, axis=axis)
    except ValueError:
        raise ValueError(f"concatenate: shapes {[a.shape for a in arrays]} do not match off axis {axis}") from None


def stack(xs, axis=0):
    arrays = _sequence(xs, "stack")
    axis = axis_arg(axis, arrays[0].ndim + 1)
    try:
        return np.stack(arrays, axis=axis)
    except ValueError:
        raise ValueError(f"stack: all arrays must have the same shape, received {[a.shape for a in arrays]}") from None


def split(x, indices_or_sections, axis=0):
    x = to_native(x)
    axis = axis_arg(axis, x.ndim)
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0 or x.shape[axis] % sections:
            raise ValueError(
                f"split: {sections} equal sections do not divide axis {axis} of size {x.shape[axis]}"
            )
        return np.split(x, sections, axis=axis)
    return np.split(x, int_list(indices_or_sections, "indices_or_sections"), axis=axis)


def tile(x, repeats):
    repeats = tuple(int_list(repeats, "repeats"))
    if any(r < 0 for r in repeats):
        raise ValueError(f"tile: repeats must be non-negative, received {repeats}")
    return np.tile(to_native(x), repeats)


def repeat(x, repeats, axis=None):
    x = to_native(x)
    if axis is not None:
        axis = axis_arg(axis, x.ndim)
    if not isinstance(repeats, (int, np.integer)):
        repeats = np.asarray(to_native(repeats, "repeats"))
    return np.repeat(x, repeats, axis=axis)


_PAD_MODES = ("constant", "reflect", "symmetric", "edge")


def pad(x, pad_width, mode="constant", constant_values=0):
    x = to_native(x)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {_PAD_MODES}, received {mode!r}")
    width = np.asarray(to_native(pad_width, "pad_width"))
    if width.dtype.kind not in "iu":
        raise TypeError(f"pad: pad_width must hold integers, received dtype {width.dtype}")
    if mode == "constant":
        value = constant_values
        if not isinstance(value, (bool, int, float, complex)):
            value = to_native(value, "constant_values")
        return np.pad(x, width, mode="constant", constant_values=value)
    return np.pad(x, width, mode=mode)


def flip(x, axis=None):
    x = to_native(x)
    return np.flip(x, axis=axes_arg(axis, x.ndim))


def broadcast_to(x, shape):
    x, shape = to_native(x), shape_arg(shape)
    try:
        return np.broadcast_to(x, shape)
    except ValueError:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}") from None


def moveaxis(x, source, destination):
    x = to_native(x)
    src = normalize_axes(list(source) if isinstance(source, (list, tuple)) else source, x.ndim, "source")
    dst = normalize_axes(
        list(destination) if isinstance(destination, (list, tuple)) else destination, x.ndim, "destination"
    )
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must have the same length")
    return np.moveaxis(x, src, dst)


def swapaxes(x, axis1, axis2):
    x = to_native(x)
    return np.swapaxes(x, axis_arg(axis1, x.ndim, "axis1"), axis_arg(axis2, x.ndim, "axis2"))


def ravel(x):
    return out(np.ravel(to_native(x)))
