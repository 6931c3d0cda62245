"""``scatter``: build an array from N-d indices and updates, combining duplicates by a reduction."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes, ops
from ember.features.one_hot import integer_indices
from ember.features.segment import reflect, segment_counts

REDUCTIONS = ("sum", "max", "min", "mean")


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise ValueError(f"scatter: shape must be a tuple of ints >= 0, received {shape!r}")
    return tuple(int(d) for d in shape)


def _check_range(indices: Any, dims: tuple[int, ...]) -> None:
    """``IndexError`` for an index outside ``[-dim, dim)`` (one device-to-host check)."""
    limit = ops.convert_to_tensor(np.asarray(dims, dtype=np.int64), dtype="int64")
    wide = ops.cast(indices, "int64")
    bad = ops.logical_or(ops.less(wide, ops.negative(limit)), ops.greater_equal(wide, limit))
    if not bool(ops.to_numpy(ops.any(bad))):
        return
    host_bad = ops.to_numpy(bad)
    position = tuple(int(i) for i in np.argwhere(host_bad)[0])
    value = int(ops.to_numpy(indices)[position])
    axis = position[-1]
    raise IndexError(f"scatter: index {value} (indices{list(position[:-1])}[{axis}]) is out of bounds for "
                     f"axis {axis} with size {dims[axis]}")


def scatter(indices: Any, updates: Any, shape: Any, reduction: str = "sum") -> Any:
    """An array of ``shape`` holding ``updates`` at N-d ``indices``, duplicates combined by ``reduction``.

    ``indices[..., :k]`` addresses the first ``k = indices.shape[-1]`` axes of the output
    (TensorFlow's ``scatter_nd`` / Keras's ``ops.scatter`` layout), so ``updates`` has shape
    ``indices.shape[:-1] + shape[k:]``. Negative indices count from the end (NumPy).
    Positions no index points at are 0 for every reduction; ``"mean"`` of integer updates
    gives ``floatx()``.

    Args:
        indices: integer array ``(..., k)``.
        updates: values ``indices.shape[:-1] + shape[k:]``.
        shape: output shape.
        reduction: ``"sum"`` (Keras's ``scatter``), ``"max"``, ``"min"`` or ``"mean"``.

    Returns:
        A native array of ``shape`` with ``updates``'s dtype (floating for ``"mean"``).

    Raises:
        TypeError: non-integer indices.
        ValueError: unknown reduction, ``k`` larger than the output rank, or ``updates``
            of the wrong shape.
        IndexError: an index outside its axis.

    Example:
        >>> import ember
        >>> from ember import features, ops
        >>> ember.set_backend("numpy")
        >>> idx, upd = [[0], [2], [0]], [1.0, 5.0, 3.0]
        >>> ops.to_numpy(features.scatter(idx, upd, (4,))).tolist()
        [4.0, 0.0, 5.0, 0.0]
        >>> ops.to_numpy(features.scatter(idx, upd, (4,), reduction="max")).tolist()
        [3.0, 0.0, 5.0, 0.0]
        >>> ops.to_numpy(features.scatter(idx, upd, (4,), reduction="mean")).tolist()
        [2.0, 0.0, 5.0, 0.0]
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"scatter: reduction must be one of {REDUCTIONS}, received {reduction!r}")
    indices = integer_indices(indices, "scatter")
    if updates is None:
        raise TypeError("scatter: updates must be an array, received None")
    updates = ops.convert_to_tensor(updates)
    shape = _shape(shape)
    index_shape = ops.shape(indices)
    if len(index_shape) == 0 or not 1 <= index_shape[-1] <= len(shape):
        raise ValueError(f"scatter: indices must have shape (..., k) with 1 <= k <= len(shape)={len(shape)}, "
                         f"received indices of shape {index_shape}")
    k = index_shape[-1]
    expected = index_shape[:-1] + shape[k:]
    if ops.shape(updates) != expected:
        raise ValueError(f"scatter: updates must have shape indices.shape[:-1] + shape[{k}:] = {expected}, "
                         f"received {ops.shape(updates)}")
    dims = shape[:k]
    _check_range(indices, dims)
    if reduction == "sum":
        return ops.scatter(indices, updates, shape)

    # Other reductions: flatten the addressed axes into one segment id per update row.
    limit = ops.convert_to_tensor(np.asarray(dims, dtype=np.int64), dtype="int64")
    wide = ops.cast(indices, "int64")
    wide = ops.where(ops.less(wide, 0), ops.add(wide, limit), wide)
    strides = np.cumprod((dims[1:] + (1,))[::-1])[::-1].astype(np.int64)
    flat = ops.reshape(ops.sum(ops.multiply(wide, ops.convert_to_tensor(strides, dtype="int64")), axis=-1), (-1,))
    data = ops.reshape(updates, (-1,) + shape[k:])
    segments = int(np.prod(dims))
    if reduction == "mean":
        if not dtypes.is_float(ops.dtype(data)):
            data = ops.cast(data, dtypes.floatx())
        result = ops.segment_sum(data, flat, segments)
        counts = segment_counts(flat, segments, ops.dtype(result))
        counts = ops.reshape(counts, (segments,) + (1,) * (len(shape) - k))
        result = ops.divide(result, ops.maximum(counts, 1))
    else:
        if reduction == "max":
            result = ops.segment_max(data, flat, segments)
        elif ops.dtype(data) == "bool":
            result = ops.logical_not(ops.segment_max(ops.logical_not(data), flat, segments))
        else:
            result = reflect(ops.segment_max(reflect(data), flat, segments))
        counts = ops.reshape(segment_counts(flat, segments, "int32"), (segments,) + (1,) * (len(shape) - k))
        result = ops.where(ops.greater(counts, 0), result, ops.zeros_like(result))
    return ops.reshape(result, shape)
