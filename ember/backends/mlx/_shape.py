"""Shape manipulation ops of the MLX backend (re-exported by :mod:`.core`)."""

from __future__ import annotations

import builtins
import math

import mlx.core as mx
import numpy as np

from ember.backends._common import normalize_axes, normalize_axis
from ember.backends.mlx._base import (
    A,
    promote,
    to_mx,
    to_numpy,
)

_slice = builtins.slice  # this module defines an op named ``slice``

# ---------------------------------------------------------------------------------- shape


def reshape(x, newshape):
    x = to_mx(x)
    if isinstance(newshape, (int, np.integer)):
        newshape = (int(newshape),)
    newshape = tuple(int(d) for d in newshape)
    known = math.prod(d for d in newshape if d != -1)
    if newshape.count(-1) > 1 or (newshape.count(-1) == 0 and known != x.size) or (
        newshape.count(-1) == 1 and (known == 0 or x.size % known)
    ):
        if not (newshape.count(-1) == 1 and known == 0 and x.size == 0):
            raise ValueError(f"reshape: cannot reshape an array of shape {tuple(x.shape)} (size {x.size}) "
                             f"into shape {newshape}")
    return mx.reshape(x, newshape)


def transpose(x, axes=None):
    x = to_mx(x)
    if axes is None:
        return mx.transpose(x)
    axes = [normalize_axis(a, x.ndim, "axes") for a in axes]
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes {tuple(axes)} are not a permutation of the {x.ndim} axes")
    return mx.transpose(x, axes)


def expand_dims(x, axis):
    x = to_mx(x)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out_ndim = x.ndim + len(axes)
    axes = sorted(normalize_axis(a, out_ndim) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"expand_dims: axis {axis} repeats an axis")
    return mx.expand_dims(x, axes)


def squeeze(x, axis=None):
    x = to_mx(x)
    if axis is None:
        return mx.squeeze(x)
    axes = normalize_axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: cannot squeeze axis {a} of shape {tuple(x.shape)}: its length is "
                             f"{x.shape[a]}, not 1")
    return mx.squeeze(x, list(axes)) if axes else x


def concatenate(xs, axis=0):
    arrays = promote(xs, "concatenate: xs")
    if not arrays:
        raise ValueError("concatenate: need at least one array")
    if axis is None:
        return mx.concatenate([mx.reshape(a, (-1,)) for a in arrays], axis=0)
    ndim = arrays[0].ndim
    if ndim == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis(axis, ndim)
    for array in arrays[1:]:
        if array.ndim != ndim or builtins.any(
            a != b for i, (a, b) in enumerate(zip(array.shape, arrays[0].shape)) if i != axis
        ):
            raise ValueError(f"concatenate: shapes {[tuple(a.shape) for a in arrays]} do not match off axis {axis}")
    return mx.concatenate(arrays, axis=axis)


def stack(xs, axis=0):
    arrays = promote(xs, "stack: xs")
    if not arrays:
        raise ValueError("stack: need at least one array")
    first = tuple(arrays[0].shape)
    if builtins.any(tuple(a.shape) != first for a in arrays):
        raise ValueError(f"stack: all arrays must have the same shape, received {[tuple(a.shape) for a in arrays]}")
    axis = normalize_axis(axis, len(first) + 1)
    return mx.stack(arrays, axis=axis)


def split(x, indices_or_sections, axis=0):
    x = to_mx(x)
    axis = normalize_axis(axis, x.ndim)
    length = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0 or length % sections:
            raise ValueError(f"split: {sections} equal sections do not divide axis {axis} of length {length}")
        if length == 0:
            return [x for _ in range(sections)]
        return mx.split(x, sections, axis=axis)
    indices = [int(i) for i in (to_numpy(indices_or_sections).tolist() if isinstance(indices_or_sections, A)
                                else indices_or_sections)]
    bounds = [0] + [builtins.min(builtins.max(i if i >= 0 else i + length, 0), length) for i in indices] + [length]
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        key = [_slice(None)] * x.ndim
        key[axis] = _slice(lo, builtins.max(lo, hi))
        parts.append(x[tuple(key)])
    return parts


def tile(x, repeats):
    x = to_mx(x)
    reps = (int(repeats),) if isinstance(repeats, (int, np.integer)) else tuple(int(r) for r in repeats)
    if builtins.any(r < 0 for r in reps):
        raise ValueError(f"tile: repeats must be non-negative, received {reps}")
    return mx.tile(x, reps)


def repeat(x, repeats, axis=None):
    x = to_mx(x)
    if axis is None:
        x = mx.reshape(x, (-1,))
        axis = 0
    axis = normalize_axis(axis, x.ndim)
    if isinstance(repeats, (int, np.integer)):
        return mx.repeat(x, int(repeats), axis=axis)
    counts = np.asarray(to_numpy(repeats) if isinstance(repeats, A) else repeats).astype(np.int64).reshape(-1)
    if counts.size == 1:
        return mx.repeat(x, int(counts[0]), axis=axis)
    if counts.size != x.shape[axis] or (counts < 0).any():
        raise ValueError(f"repeat: repeats must be non-negative and of length {x.shape[axis]} (axis {axis}), "
                         f"received {counts.tolist()}")
    index = mx.array(np.repeat(np.arange(x.shape[axis], dtype=np.int32), counts))
    return mx.take(x, index, axis=axis)


def _pad_pairs(pad_width, ndim):
    width = np.asarray(to_numpy(pad_width) if isinstance(pad_width, A) else pad_width, dtype=np.int64)
    if width.ndim == 0:
        width = np.full((ndim, 2), int(width))
    elif width.shape == (1,) or width.shape == (2,) or width.shape == (1, 2):
        width = np.broadcast_to(width.reshape(-1) if width.size == 2 else width.reshape(1), (ndim, 2))
    elif width.shape != (ndim, 2):
        raise ValueError(f"pad: pad_width of shape {width.shape} does not fit an array of rank {ndim}")
    if (width < 0).any():
        raise ValueError("pad: pad_width entries must be non-negative")
    return [(int(a), int(b)) for a, b in width]


def pad(x, pad_width, mode="constant", constant_values=0):
    x = to_mx(x)
    pairs = _pad_pairs(pad_width, x.ndim)
    if mode not in ("constant", "reflect", "symmetric", "edge"):
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'symmetric' or 'edge', received {mode!r}")
    if mode == "constant":
        value = mx.array(constant_values, dtype=x.dtype) if not isinstance(constant_values, A) else constant_values
        return mx.pad(x, pairs, mode="constant", constant_values=value.astype(x.dtype))
    for a, (lo, hi) in enumerate(pairs):
        if (lo or hi) and x.shape[a] == 0:
            raise ValueError(f"pad: cannot pad an empty axis {a} in mode {mode!r}")
    if mode == "reflect":
        # NumPy reflects repeatedly when the pad is longer than the axis; build the index per axis.
        out = x
        for a, (lo, hi) in enumerate(pairs):
            if lo or hi:
                out = mx.take(out, mx.array(_reflect_index(x.shape[a], lo, hi)), axis=a)
        return out
    return mx.pad(x, pairs, mode=mode)


def _reflect_index(n, lo, hi):
    """Indices of NumPy's 'reflect' padding of an axis of length n (period 2n - 2)."""
    positions = np.arange(-lo, n + hi)
    if n == 1:
        return np.zeros_like(positions, dtype=np.int32)
    period = 2 * n - 2
    folded = np.mod(positions, period)
    return np.where(folded >= n, period - folded, folded).astype(np.int32)


def flip(x, axis=None):
    x = to_mx(x)
    axes = range(x.ndim) if axis is None else normalize_axes(axis, x.ndim)
    key = [_slice(None)] * x.ndim
    for a in axes:
        key[a] = _slice(None, None, -1)
    return x[tuple(key)] if x.ndim else x


def broadcast_to(x, shape):
    x = to_mx(x)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    try:
        np.broadcast_shapes(tuple(x.shape), shape)
    except ValueError:
        raise ValueError(f"broadcast_to: cannot broadcast shape {tuple(x.shape)} to {shape}") from None
    if len(shape) < x.ndim or np.broadcast_shapes(tuple(x.shape), shape) != shape:
        raise ValueError(f"broadcast_to: cannot broadcast shape {tuple(x.shape)} to {shape}")
    return mx.broadcast_to(x, shape)


def moveaxis(x, source, destination):
    x = to_mx(x)
    src = normalize_axes(source, x.ndim, "source")
    dst = normalize_axes(destination, x.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} differ in length")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return mx.transpose(x, order)


def swapaxes(x, axis1, axis2):
    x = to_mx(x)
    return mx.swapaxes(x, normalize_axis(axis1, x.ndim, "axis1"), normalize_axis(axis2, x.ndim, "axis2"))


def ravel(x):
    return mx.reshape(to_mx(x), (-1,))
