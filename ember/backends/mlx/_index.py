"""Indexing, scatter/gather, sorting and segment ops of the MLX backend (re-exported by :mod:`.core`).

MLX indexing has no boolean masks and reads out of bounds silently for integer
indices, so :func:`getitem` rewrites the key first: integers are bounds-checked
(``IndexError``), and a boolean mask becomes the integer arrays of its ``True``
positions. That conversion needs the mask's values on the host (``mx.eval`` via
NumPy): the result's shape depends on the data, so it cannot stay lazy.
"""

from __future__ import annotations

import builtins
from typing import Any

import mlx.core as mx
import numpy as np

from ember.backends._common import normalize_axis, one_hot_depth
from ember.backends.mlx._base import (
    FLOATS,
    FROM_MX,
    INTEGERS,
    UNSIGNED,
    A,
    mx_dtype,
    to_mx,
    to_numpy,
)

_slice = builtins.slice  # this module defines an op named ``slice``

# ------------------------------------------------------------------------------- indexing


def _is_bool_mask(k):
    if isinstance(k, A):
        return k.dtype == mx.bool_
    if isinstance(k, np.ndarray):
        return k.dtype == np.bool_
    if getattr(type(k), "__ember_tensor__", False):
        return _is_bool_mask(to_mx(k))
    if isinstance(k, (list, tuple)):
        leaf = k
        while isinstance(leaf, (list, tuple)) and len(leaf):
            leaf = leaf[0]
        return isinstance(leaf, (bool, np.bool_))
    return False


def _index_array(k, axis_size=None, axis=None):
    """An integer index (array-like) as an int32/int64 ``mx.array``; host data is bounds-checked."""
    if isinstance(k, A) or getattr(type(k), "__ember_tensor__", False):
        k = to_mx(k, "key")
        if k.dtype not in INTEGERS:
            raise IndexError(f"getitem: index arrays must be integers or booleans, received {FROM_MX[k.dtype]}")
        if axis_size is not None:
            _check_bounds(mx.expand_dims(k, -1), (axis_size,), "getitem", first_axis=axis or 0)
        return k
    host = np.asarray(k)
    if host.size == 0 and host.dtype.kind not in "iu":
        host = host.astype(np.int32)
    if host.dtype.kind not in "iu":
        raise IndexError(f"getitem: index arrays must be integers or booleans, received {host.dtype}")
    if axis_size is not None and host.size:
        bad = host[(host >= axis_size) | (host < -axis_size)]
        if bad.size:
            raise IndexError(
                f"getitem: index {int(bad.flat[0])} is out of bounds for axis {axis} with size {axis_size}"
            )
    if host.dtype.itemsize > 4 and host.size and (host.max() > 2**31 - 1 or host.min() < -(2**31)):
        return mx.array(host.astype(np.int64))
    return mx.array(host.astype(np.int32))


def _check_bounds(indices, sizes, op, first_axis=0):
    """IndexError when an index is outside ``[-size, size)`` of its axis (MLX itself does not check:
    it would read or write out-of-bounds memory). The last axis of ``indices`` runs over ``sizes``.

    Checking evaluates the indices; inside ``mx.compile``/``vmap`` nothing may be evaluated, so
    traced calls go unchecked (the eager call of the same code is checked).
    """
    if indices.size == 0:
        return
    if indices.dtype in (mx.uint8, mx.uint16, mx.uint32, mx.uint64):
        indices = indices.astype(mx.int64)  # -limits must not wrap around
    limits = mx.array(list(sizes), dtype=indices.dtype)
    bad = mx.any((indices >= limits) | (indices < -limits))
    try:
        out_of_bounds = bad.item()
    except ValueError:  # tracing under mx.compile / mx.vmap: cannot evaluate
        return
    if out_of_bounds:
        host = np.array(indices).reshape(-1, len(sizes))
        limit = np.asarray(sizes)
        row = np.argmax(np.any((host >= limit) | (host < -limit), axis=1))
        axis = int(np.argmax((host[row] >= limit) | (host[row] < -limit)))
        raise IndexError(f"{op}: index {int(host[row, axis])} is out of bounds for axis {first_axis + axis} "
                         f"with size {sizes[axis]}")


def getitem(x, key):
    x = to_mx(x)
    if type(key) is int:  # fast path: x[i]
        if x.ndim == 0:
            raise IndexError("getitem: too many indices for a 0-d array")
        n = x.shape[0]
        if not -n <= key < n:
            raise IndexError(f"getitem: index {key} is out of bounds for axis 0 with size {n}")
        return x[key]
    if type(key) is _slice:
        return x[key]
    key = key if type(key) is tuple else (key,)
    # Expand boolean masks into integer arrays (NumPy: mask -> mask.nonzero()).
    parts: list[tuple[str, Any]] = []
    for k in key:
        if isinstance(k, (bool, np.bool_)):
            parts.append(("scalarbool", builtins.bool(k)))
        elif _is_bool_mask(k):
            mask = to_numpy(k) if not isinstance(k, (list, tuple)) else np.asarray(k, dtype=bool)
            parts.append(("mask", mask))
        else:
            parts.append(("other", k))
    consumed = builtins.sum(
        1 if kind == "other" and not (v is None or v is Ellipsis) else (v.ndim if kind == "mask" else 0)
        for kind, v in parts
    )
    if consumed > x.ndim:
        raise IndexError(f"getitem: too many indices for an array of rank {x.ndim} (key {key!r})")
    n_ellipsis = builtins.sum(1 for kind, v in parts if kind == "other" and v is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("getitem: an index can only have a single ellipsis ('...')")
    out_key: list[Any] = []
    empty_axes = []  # positions of False scalar booleans (NumPy: a new axis of length 0)
    axis = 0
    for kind, v in parts:
        if kind == "scalarbool":
            if not v:
                empty_axes.append(len(out_key))
            out_key.append(None)
        elif kind == "mask":
            shape = tuple(x.shape[axis:axis + v.ndim])
            if v.shape != shape:
                raise IndexError(f"getitem: boolean index of shape {v.shape} does not match the indexed axes "
                                 f"{tuple(range(axis, axis + v.ndim))} of shape {shape}")
            if v.ndim == 0:
                if not v:
                    empty_axes.append(len(out_key))
                out_key.append(None)
                continue
            out_key.extend(mx.array(i.astype(np.int32)) for i in np.nonzero(v))
            axis += v.ndim
        elif v is None:
            out_key.append(None)
        elif v is Ellipsis:
            out_key.append(Ellipsis)
            axis = x.ndim - (consumed - axis)
        elif isinstance(v, _slice):
            out_key.append(_slice(*(None if s is None else int(s) for s in (v.start, v.stop, v.step))))
            axis += 1
        elif isinstance(v, (int, np.integer)):
            n = x.shape[axis]
            i = int(v)
            if not -n <= i < n:
                raise IndexError(f"getitem: index {i} is out of bounds for axis {axis} with size {n}")
            out_key.append(i)
            axis += 1
        elif isinstance(v, (A, np.ndarray, list, tuple)) or getattr(type(v), "__ember_tensor__", False):
            array = _index_array(v, x.shape[axis], axis)
            if array.ndim == 0 and not isinstance(v, A):
                out_key.append(int(array.item()))
            else:
                out_key.append(array)
            axis += 1
        else:
            raise IndexError(f"getitem: unsupported index {v!r} of type {type(v).__name__}")
    out = x[tuple(out_key)] if out_key else x
    for position in empty_axes:
        # A False scalar index selects nothing along the new axis it adds.
        axis_key = [_slice(None)] * out.ndim
        axis_key[_new_axis_position(out_key, position)] = _slice(0, 0)
        out = out[tuple(axis_key)]
    return out


def _new_axis_position(out_key, position):
    """Axis of the result that the ``None`` at ``out_key[position]`` created (no advanced indices before it)."""
    return builtins.sum(1 for k in out_key[:position] if k is None or isinstance(k, _slice))


def take(x, indices, axis=None):
    x = to_mx(x)
    try:
        indices = _index_array(indices) if not isinstance(indices, (int, np.integer)) else int(indices)
    except IndexError as error:  # float indices: a TypeError, as on NumPy and torch
        raise TypeError(f"take: indices must be integers ({error})") from None
    if axis is None:
        x = mx.reshape(x, (-1,))
        axis = 0
    axis = normalize_axis(axis, x.ndim)
    if isinstance(indices, int):
        n = x.shape[axis]
        if not -n <= indices < n:
            raise IndexError(f"take: index {indices} is out of bounds for axis {axis} with size {n}")
        return mx.take(x, indices, axis=axis)
    _check_bounds(mx.expand_dims(indices, -1), (x.shape[axis],), "take", first_axis=axis)
    return mx.take(x, indices, axis=axis)


def take_along_axis(x, indices, axis):
    x = to_mx(x)
    indices = _index_array(indices)
    if axis is None:
        x = mx.reshape(x, (-1,))
        axis = 0
    axis = normalize_axis(axis, x.ndim)
    if indices.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices of rank {indices.ndim} do not match x of rank {x.ndim}")
    n = x.shape[axis]
    _check_bounds(mx.expand_dims(indices, -1), (n,), "take_along_axis", first_axis=axis)
    indices = mx.where(indices < 0, indices + n, indices)
    return mx.take_along_axis(x, indices, axis=axis)


def _nd_index(x, indices, op):
    indices = _index_array(indices)
    if indices.ndim == 0:
        raise ValueError(f"{op}: indices must have a last axis of length k (the indexed rank)")
    k = indices.shape[-1]
    if k > x.ndim:
        raise ValueError(f"{op}: indices index {k} axes but x has rank {x.ndim}")
    _check_bounds(indices, x.shape[:k], op)
    return tuple(indices[..., j] for j in range(k))


def gather(x, indices):
    x = to_mx(x)
    key = _nd_index(x, indices, "gather")
    return x[key] if key else mx.broadcast_to(x, tuple(_index_array(indices).shape[:-1]) + tuple(x.shape))


def scatter(indices, updates, shape):
    updates = to_mx(updates, "updates")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    out = mx.zeros(shape, dtype=updates.dtype)
    key = _nd_index(out, indices, "scatter")
    return out.at[key].add(updates)


def scatter_update(x, indices, updates):
    x = to_mx(x)
    updates = to_mx(updates, "updates")
    key = _nd_index(x, indices, "scatter_update")
    out = mx.array(x)  # a new array object: item assignment below never touches ``x``
    out[key] = updates.astype(x.dtype)
    return out


def scatter_add(x, indices, updates):
    x = to_mx(x)
    updates = to_mx(updates, "updates")
    key = _nd_index(x, indices, "scatter_add")
    return x.at[key].add(updates.astype(x.dtype))


def _start_list(start_indices, ndim, op):
    if isinstance(start_indices, (int, np.integer)):
        start_indices = [start_indices]
    if isinstance(start_indices, A) or getattr(type(start_indices), "__ember_tensor__", False):
        start = to_mx(start_indices)
        if start.size != ndim:
            raise ValueError(f"{op}: start_indices has {start.size} entries for an array of rank {ndim}")
        return None, start.astype(mx.int32).reshape(-1)
    start = [int(s) for s in start_indices]
    if len(start) != ndim:
        raise ValueError(f"{op}: start_indices has {len(start)} entries for an array of rank {ndim}")
    return start, None


def slice(x, start_indices, shape):
    x = to_mx(x)
    sizes = [int(s) for s in ((shape,) if isinstance(shape, (int, np.integer)) else shape)]
    if len(sizes) != x.ndim:
        raise ValueError(f"slice: shape {tuple(sizes)} does not match the rank {x.ndim} of x")
    static, dynamic = _start_list(start_indices, x.ndim, "slice")
    if dynamic is not None:
        return mx.slice(x, dynamic, list(range(x.ndim)), sizes)
    key = []
    for a, (s, n) in enumerate(zip(static, sizes)):
        s = s + x.shape[a] if s < 0 else s
        if n < 0:
            n = x.shape[a] - s
        if s < 0 or s + n > x.shape[a]:
            raise ValueError(f"slice: block of size {n} at {s} exceeds axis {a} of size {x.shape[a]}")
        key.append(_slice(s, s + n))
    return x[tuple(key)]


def slice_update(x, start_indices, updates):
    x = to_mx(x)
    updates = to_mx(updates, "updates").astype(x.dtype)
    if updates.ndim != x.ndim:
        raise ValueError(f"slice_update: updates of rank {updates.ndim} do not match x of rank {x.ndim}")
    static, dynamic = _start_list(start_indices, x.ndim, "slice_update")
    if dynamic is None:
        for a, (s, n) in enumerate(zip(static, updates.shape)):
            if s < 0 or s + n > x.shape[a]:
                raise ValueError(f"slice_update: block of size {n} at {s} exceeds axis {a} of size {x.shape[a]}")
        dynamic = mx.array(static, dtype=mx.int32)
    if x.ndim == 0:
        return updates
    return mx.slice_update(x, updates, dynamic, list(range(x.ndim)))


def one_hot(indices, depth=None, dtype=None, axis=-1, *, num_classes=None):
    indices = to_mx(indices, "indices")
    depth = one_hot_depth(depth, num_classes)
    if indices.dtype in FLOATS:  # Keras casts float class ids (toward zero); non-finite ids match no class
        finite = mx.isfinite(indices)
        indices = mx.where(finite, mx.clip(mx.trunc(mx.where(finite, indices, -1)), -1, depth), -1).astype(mx.int32)
    if indices.dtype not in INTEGERS:
        raise TypeError(f"one_hot: indices must be integers or floats, received dtype {FROM_MX[indices.dtype]}")
    target = mx_dtype(dtype, "one_hot")
    out = mx.equal(mx.expand_dims(indices.astype(mx.int32), -1), mx.arange(depth, dtype=mx.int32)).astype(target)
    axis = normalize_axis(axis, out.ndim)
    if axis != out.ndim - 1:
        out = mx.moveaxis(out, -1, axis)
    return out


def _descending_argsort(x):
    """Stable descending argsort along the last axis (ties keep their original order)."""
    n = x.shape[-1]
    ascending_of_reversed = mx.argsort(x[..., ::-1], axis=-1).astype(mx.int32)
    return (n - 1) - ascending_of_reversed[..., ::-1]


def top_k(x, k, sorted=True):
    x = to_mx(x)
    k = int(k)
    if x.ndim == 0:
        raise ValueError("top_k: x must have at least one axis")
    if not 0 <= k <= x.shape[-1]:
        raise ValueError(f"top_k: k={k} is out of range for a last axis of length {x.shape[-1]}")
    work = x.astype(mx.int32) if x.dtype == mx.bool_ else x
    indices = _descending_argsort(work)[..., :k]
    return mx.take_along_axis(x, indices, axis=-1), indices


def sort(x, axis=-1):
    x = to_mx(x)
    if axis is None:
        return mx.sort(mx.reshape(x, (-1,)), axis=0)
    if x.ndim == 0:
        return x
    return mx.sort(x, axis=normalize_axis(axis, x.ndim))


def argsort(x, axis=-1):
    x = to_mx(x)
    if axis is None:
        return mx.argsort(mx.reshape(x, (-1,)), axis=0).astype(mx.int32)
    if x.ndim == 0:
        return mx.zeros((), dtype=mx.int32)
    return mx.argsort(x, axis=normalize_axis(axis, x.ndim)).astype(mx.int32)


def nonzero(x):
    # Data-dependent output shape: the values must come to the host.
    host = to_numpy(to_mx(x))
    if host.ndim == 0:
        host = host.reshape(1)
    return tuple(mx.array(i.astype(np.int32)) for i in np.nonzero(host))


def _segments(data, segment_ids, num_segments, op):
    data = to_mx(data, "data")
    ids = _index_array(segment_ids).astype(mx.int32)
    if ids.ndim == 0 or tuple(ids.shape) != tuple(data.shape[:ids.ndim]):
        raise ValueError(f"{op}: segment_ids shape {tuple(ids.shape)} must be a prefix of data shape "
                         f"{tuple(data.shape)}")
    if ids.ndim > 1:  # TF semantics: the id axes are flattened into one
        data = mx.reshape(data, (ids.size,) + tuple(data.shape[ids.ndim:]))
        ids = mx.reshape(ids, (-1,))
    if num_segments is None:
        # The output size depends on the ids' values: bring their maximum to the host.
        num_segments = int(mx.max(ids).item()) + 1 if ids.size else 0  # type: ignore[arg-type]  # int ids: an int
    num_segments = int(num_segments)
    valid = (ids >= 0) & (ids < num_segments)
    return data, mx.where(valid, ids, 0), valid, num_segments


def _expand_to(mask, ndim):
    return mx.reshape(mask, tuple(mask.shape) + (1,) * (ndim - 1))


def segment_sum(data, segment_ids, num_segments=None):
    data, ids, valid, num = _segments(data, segment_ids, num_segments, "segment_sum")
    if data.dtype == mx.bool_:  # bool counts as 0/1: the sums are int32 (as sum(bool))
        data = data.astype(mx.int32)
    contribution = mx.where(_expand_to(valid, data.ndim), data, mx.zeros((), dtype=data.dtype))
    out = mx.zeros((num,) + tuple(data.shape[1:]), dtype=data.dtype)
    return out.at[ids].add(contribution)


def _lowest(dtype):
    if dtype == mx.complex64:
        raise TypeError("segment_max: complex data is not ordered (received complex64)")
    if dtype == mx.bool_:
        return False
    if dtype in FLOATS:
        return float(mx.finfo(dtype).min)
    if dtype in UNSIGNED:
        return 0
    return int(mx.iinfo(dtype).min)


def segment_max(data, segment_ids, num_segments=None):
    data, ids, valid, num = _segments(data, segment_ids, num_segments, "segment_max")
    low = mx.array(_lowest(data.dtype), dtype=data.dtype)
    contribution = mx.where(_expand_to(valid, data.ndim), data, low)
    out = mx.full((num,) + tuple(data.shape[1:]), low, dtype=data.dtype)
    return out.at[ids].maximum(contribution)

