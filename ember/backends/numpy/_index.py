"""NumPy backend: indexing, scatter/gather, sorting and segment ops (re-exported by ``core``).

N-d ``indices`` (``gather``/``scatter*``) follow TF's ``gather_nd`` layout: the last
axis of ``indices`` holds one coordinate per leading axis of the target, so it is
moved to the front and used as a tuple of NumPy integer index arrays.
"""

from __future__ import annotations

import builtins

import ml_dtypes
import numpy as np

from ember.backends._common import foreign_array_error, one_hot_depth, tensor_native
from ember.backends.numpy._base import (
    BACKEND,
    BF16,
    BOOL,
    F32,
    HALF,
    I32,
    ND,
    axis_arg,
    dtype_arg,
    floatx,
    int_list,
    out,
    to_native,
)

_SIMPLE_KEYS = (int, builtins.slice, type(None), type(Ellipsis), ND, bool)


def _index_key(key):
    """An indexing key with Tensors unwrapped and lists turned into index arrays."""
    t = type(key)
    if t in _SIMPLE_KEYS:
        return key
    if t is tuple:
        return tuple(_index_key(k) for k in key)
    if getattr(t, "__ember_tensor__", False):
        return tensor_native(key, BACKEND)
    if isinstance(key, (ND, np.generic)):
        return key
    if t is list:
        return np.asarray(key)
    if t.__module__.startswith(("torch", "mlx")):
        raise foreign_array_error(key, BACKEND)
    return key


def getitem(x, key):
    if type(x) is not ND:
        x = to_native(x)
    r = x[_index_key(key)]
    return r if type(r) is ND else out(r)


def _int_indices(indices, op, argument="indices"):
    indices = to_native(indices, argument)
    if indices.dtype.kind not in "iu":
        raise TypeError(f"{op}: {argument} must be integers, received dtype {indices.dtype}")
    return indices


def take(x, indices, axis=None):
    x = to_native(x)
    indices = _int_indices(indices, "take")
    if axis is not None:
        axis = axis_arg(axis, x.ndim)
    try:
        return out(np.take(x, indices, axis=axis))
    except IndexError as error:
        raise IndexError(f"take: {error}") from None


def take_along_axis(x, indices, axis):
    x = to_native(x)
    indices = _int_indices(indices, "take_along_axis")
    if indices.ndim != x.ndim:
        raise ValueError(
            f"take_along_axis: indices must have the same rank as x ({x.ndim}), received rank {indices.ndim}"
        )
    try:
        return np.take_along_axis(x, indices, axis=axis_arg(axis, x.ndim))
    except IndexError as error:
        raise IndexError(f"take_along_axis: {error}") from None


def _nd_index(indices, target_ndim, op):
    """``indices[..., k]`` as a tuple of ``k`` index arrays (TF ``gather_nd`` layout)."""
    indices = _int_indices(indices, op)
    if indices.ndim == 0:
        raise ValueError(f"{op}: indices must have at least one axis (the coordinate axis)")
    depth = indices.shape[-1]
    if depth > target_ndim:
        raise ValueError(
            f"{op}: indices.shape[-1]={depth} exceeds the rank {target_ndim} of the indexed array"
        )
    return tuple(np.moveaxis(indices, -1, 0)), indices.shape[:-1], depth


def gather(x, indices):
    x = to_native(x)
    index, batch_shape, depth = _nd_index(indices, x.ndim, "gather")
    if depth == 0:
        return np.broadcast_to(x, batch_shape + x.shape).copy()
    return out(x[index])


def _accumulating(dt):
    return F32 if dt in HALF else dt


def scatter(indices, updates, shape):
    updates = to_native(updates, "updates")
    shape = tuple(int_list(shape, "shape"))
    index, _, _ = _nd_index(indices, len(shape), "scatter")
    result = np.zeros(shape, _accumulating(updates.dtype))
    np.add.at(result, index, updates)
    return result if result.dtype == updates.dtype else result.astype(updates.dtype)


def scatter_update(x, indices, updates):
    x = to_native(x)
    index, _, _ = _nd_index(indices, x.ndim, "scatter_update")
    result = x.copy()
    result[index] = to_native(updates, "updates")
    return result


def scatter_add(x, indices, updates):
    x = to_native(x)
    index, _, _ = _nd_index(indices, x.ndim, "scatter_add")
    result = x.astype(_accumulating(x.dtype), copy=True)
    np.add.at(result, index, to_native(updates, "updates").astype(result.dtype, copy=False))
    return result if result.dtype == x.dtype else result.astype(x.dtype)


def _block(x_shape, start_indices, sizes, op):
    starts = int_list(start_indices, "start_indices")
    if len(starts) != len(x_shape) or len(sizes) != len(x_shape):
        raise ValueError(
            f"{op}: start_indices ({len(starts)}) and shape ({len(sizes)}) need one entry per axis of x "
            f"(rank {len(x_shape)})"
        )
    block = []
    for axis, (start, size, dim) in enumerate(zip(starts, sizes, x_shape)):
        if size == -1:
            size = dim - start
        if start < 0 or size < 0 or start + size > dim:
            raise ValueError(
                f"{op}: a block of size {size} at start {start} does not fit axis {axis} of size {dim}"
            )
        block.append(builtins.slice(start, start + size))
    return tuple(block)


def slice(x, start_indices, shape):
    x = to_native(x)
    return x[_block(x.shape, start_indices, int_list(shape, "shape"), "slice")]


def slice_update(x, start_indices, updates):
    x = to_native(x)
    updates = to_native(updates, "updates")
    if updates.ndim != x.ndim:
        raise ValueError(f"slice_update: updates must have the rank of x ({x.ndim}), received {updates.shape}")
    block = _block(x.shape, start_indices, list(updates.shape), "slice_update")
    result = x.copy()
    result[block] = updates
    return result


def _class_ids(indices, depth):
    """Integer class ids; float ids are truncated toward zero as Keras casts them (non-finite: no class)."""
    indices = to_native(indices, "indices")
    if indices.dtype.kind == "f" or indices.dtype == BF16:
        wide = indices.astype(np.float64)
        finite = np.isfinite(wide)
        return np.where(finite, np.clip(np.trunc(np.where(finite, wide, -1.0)), -1, depth), -1).astype(np.int64)
    return _int_indices(indices, "one_hot")


def one_hot(indices, depth=None, dtype=None, axis=-1, *, num_classes=None):
    depth = one_hot_depth(depth, num_classes)
    indices = _class_ids(indices, depth)
    target = floatx() if dtype is None else dtype_arg(dtype)
    axis = axis_arg(axis, indices.ndim + 1)
    # Negative and too-large indices match no class, so their row stays all zero.
    hot = indices[..., None] == np.arange(depth)
    return np.moveaxis(hot, -1, axis).astype(target)


def _sortable(x):
    """bfloat16 sorted through float32 (exact), so NaNs order as NumPy's."""
    return x.astype(F32) if x.dtype == BF16 else x


def sort(x, axis=-1):
    x = to_native(x)
    if axis is not None:
        axis = axis_arg(axis, x.ndim)
    r = np.sort(_sortable(x), axis=axis)
    return r if r.dtype == x.dtype else r.astype(x.dtype)


def argsort(x, axis=-1):
    x = to_native(x)
    if axis is not None:
        axis = axis_arg(axis, x.ndim)
    return np.argsort(_sortable(x), axis=axis, kind="stable").astype(I32)


def top_k(x, k, sorted=True):
    x = to_native(x)
    if x.ndim == 0:
        raise ValueError("top_k: x must have at least one axis")
    n = x.shape[-1]
    k = int(k)
    if not 0 <= k <= n:
        raise ValueError(f"top_k: k={k} is out of range for a last axis of size {n}")
    # Descending order with ties broken by the lower index: a stable ascending sort of
    # the reversed axis, read backwards. NaN sorts as the largest value.
    ascending = np.argsort(_sortable(x)[..., ::-1], axis=-1, kind="stable")
    order = (n - 1 - ascending)[..., ::-1][..., :k]
    values = np.take_along_axis(x, order, axis=-1)
    return values, order.astype(I32)


def nonzero(x):
    x = to_native(x)
    if x.ndim == 0:
        raise ValueError("nonzero: x must have at least one axis (received a 0-d array)")
    return tuple(i.astype(I32) for i in np.nonzero(x))


def _segments(data, segment_ids, num_segments, op):
    data = to_native(data, "data")
    ids = _int_indices(segment_ids, op, "segment_ids")
    if ids.shape != data.shape[: ids.ndim]:
        raise ValueError(
            f"{op}: segment_ids shape {ids.shape} must be a prefix of data shape {data.shape}"
        )
    rank = ids.ndim
    ids = ids.reshape(-1)
    data = data.reshape((ids.size,) + data.shape[rank:])
    if num_segments is None:
        num_segments = int(ids.max()) + 1 if ids.size else 0
    num_segments = int(num_segments)
    keep = (ids >= 0) & (ids < num_segments)  # out-of-range ids are dropped, as TF's unsorted_segment ops
    if not keep.all():
        ids, data = ids[keep], data[keep]
    return data, ids, num_segments


def segment_sum(data, segment_ids, num_segments=None):
    data, ids, count = _segments(data, segment_ids, num_segments, "segment_sum")
    # bool data counts as 0/1: the sums are int32 (as sum(bool)); other dtypes are kept.
    final = I32 if data.dtype == BOOL else data.dtype
    result = np.zeros((count,) + data.shape[1:], I32 if data.dtype == BOOL else _accumulating(data.dtype))
    np.add.at(result, ids, data)
    return result if result.dtype == final else result.astype(final)


def _lowest(dt):
    if dt == BOOL:
        return False
    if dt.kind in "iu":
        return np.iinfo(dt).min
    if dt == BF16:
        return float(ml_dtypes.finfo(BF16).min)
    if dt.kind == "c":
        raise TypeError(f"segment_max: complex data is not ordered (received {dt})")
    return np.finfo(dt).min


def segment_max(data, segment_ids, num_segments=None):
    data, ids, count = _segments(data, segment_ids, num_segments, "segment_max")
    work = data.astype(F32) if data.dtype == BF16 else data
    result = np.full((count,) + data.shape[1:], _lowest(data.dtype), dtype=work.dtype)
    np.maximum.at(result, ids, work)
    return result if result.dtype == data.dtype else result.astype(data.dtype)
