"""Segment reductions: ``segment_sum``, ``segment_mean``, ``segment_max``, ``segment_min``.

Row ``i`` of ``data`` belongs to segment ``segment_ids[i]``; each op reduces the rows of
every segment (TensorFlow's ``unsorted_segment_*`` / Keras's ``ops.segment_*``).
``segment_ids`` may also be an N-d prefix of ``data``'s shape. Ids outside
``[0, num_segments)`` are dropped (as TensorFlow's unsorted segment ops); ``num_segments``
defaults to ``max(segment_ids) + 1`` (one device-to-host read). Empty segments give 0
for sum and mean, and the dtype's lowest (max) / highest (min) value, as ``ops.segment_max``
and TensorFlow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes, ops
from ember.features.one_hot import integer_indices


def _prepare(data: Any, segment_ids: Any, num_segments: Any, where: str) -> tuple[Any, Any, int]:
    if data is None:
        raise TypeError(f"{where}: data must be an array, received None")
    data = ops.convert_to_tensor(data)
    ids = integer_indices(segment_ids, where, "segment_ids")
    id_shape, data_shape = ops.shape(ids), ops.shape(data)
    if len(id_shape) == 0 or data_shape[: len(id_shape)] != id_shape:
        raise ValueError(f"{where}: segment_ids shape {id_shape} must be a (non-empty) prefix of data shape "
                         f"{data_shape}")
    if len(id_shape) > 1:  # N-d ids: flatten them and the matching leading axes of data
        ids = ops.reshape(ids, (-1,))
        data = ops.reshape(data, (ops.size(ids),) + data_shape[len(id_shape):])
    if num_segments is None:
        num_segments = int(ops.to_numpy(ops.max(ids))) + 1 if ops.size(ids) else 0
        num_segments = max(num_segments, 0)
    elif not isinstance(num_segments, (int, np.integer)) or isinstance(num_segments, bool) or num_segments < 0:
        raise ValueError(f"{where}: num_segments must be None or an int >= 0, received {num_segments!r}")
    return data, ids, int(num_segments)


def _check_sorted(sorted: Any, where: str) -> None:
    if not isinstance(sorted, bool):
        raise TypeError(f"{where}: sorted must be a bool, received {sorted!r}")


def segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None, sorted: bool = False) -> Any:
    """Sum of the rows of ``data`` in each segment: ``(num_segments, *data.shape[ids.ndim:])``.

    Args:
        data: array whose leading axes match ``segment_ids``.
        segment_ids: integer segment id of each row.
        num_segments: output length (default ``max(segment_ids) + 1``).
        sorted: Keras's hint that ids are sorted; accepted and not needed (any order works).

    Example:
        >>> import ember
        >>> from ember import features, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(features.segment_sum([1.0, 2.0, 3.0], [0, 0, 2])).tolist()
        [3.0, 0.0, 3.0]
    """
    _check_sorted(sorted, "segment_sum")
    data, ids, count = _prepare(data, segment_ids, num_segments, "segment_sum")
    return ops.segment_sum(data, ids, count)


def segment_counts(segment_ids: Any, num_segments: int, dtype: str) -> Any:
    """Number of (in-range) rows per segment, as ``dtype``.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.features.segment import segment_counts
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(segment_counts(ops.convert_to_tensor([0, 2, 2]), 4, "int32")).tolist()
        [1, 0, 2, 0]
    """
    return ops.segment_sum(ops.ones(ops.shape(segment_ids), dtype=dtype), segment_ids, num_segments)


def _broadcastable(counts: Any, result: Any) -> Any:
    extra = ops.ndim(result) - 1
    return ops.reshape(counts, (ops.shape(counts)[0],) + (1,) * extra)


def segment_mean(data: Any, segment_ids: Any, num_segments: int | None = None, sorted: bool = False) -> Any:
    """Mean of the rows of ``data`` in each segment (0 for an empty segment).

    Integer data gives ``floatx()`` means, as ``ops.mean``.

    Example:
        >>> import ember
        >>> from ember import features, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(features.segment_mean([[1.0], [3.0], [5.0]], [1, 1, 0], num_segments=3)).tolist()
        [[5.0], [2.0], [0.0]]
    """
    _check_sorted(sorted, "segment_mean")
    data, ids, count = _prepare(data, segment_ids, num_segments, "segment_mean")
    dtype = ops.dtype(data)
    if not dtypes.is_float(dtype):
        if dtypes.is_complex(dtype):
            raise TypeError(f"segment_mean: complex data is not supported, received dtype {dtype}")
        data = ops.cast(data, dtypes.floatx())
    total = ops.segment_sum(data, ids, count)
    counts = _broadcastable(segment_counts(ids, count, ops.dtype(total)), total)
    return ops.divide(total, ops.maximum(counts, 1))


def segment_max(data: Any, segment_ids: Any, num_segments: int | None = None, sorted: bool = False) -> Any:
    """Maximum of the rows of ``data`` in each segment (the dtype's lowest value when empty).

    Example:
        >>> import ember
        >>> from ember import features, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(features.segment_max([1, 7, 3], [0, 0, 1])).tolist()
        [7, 3]
    """
    _check_sorted(sorted, "segment_max")
    data, ids, count = _prepare(data, segment_ids, num_segments, "segment_max")
    return ops.segment_max(data, ids, count)


def reflect(data: Any) -> Any:
    """An order-reversing bijection of ``data``'s dtype onto itself (``-x``; ``lo + hi - x`` for integers).

    ``min`` reductions are ``reflect(max(reflect(x)))``; for integers ``-x`` would overflow
    at the lowest value, ``lo + hi - x`` never does.

    Example:
        >>> import ember, numpy as np
        >>> from ember import ops
        >>> from ember.features.segment import reflect
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(reflect(np.array([-128, 0, 127], np.int8))).tolist()
        [127, -1, -128]
    """
    dtype = ops.dtype(data)
    if dtypes.is_integer(dtype):
        info = np.iinfo(dtypes.to_numpy_dtype(dtype))
        # lo + hi is -1 for signed, hi for unsigned types: never overflows, unlike -x.
        return ops.subtract(ops.full_like(data, int(info.min) + int(info.max)), data)
    return ops.negative(data)


def segment_min(data: Any, segment_ids: Any, num_segments: int | None = None, sorted: bool = False) -> Any:
    """Minimum of the rows of ``data`` in each segment (the dtype's highest value when empty).

    Example:
        >>> import ember
        >>> from ember import features, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(features.segment_min([1.0, 7.0, 3.0], [0, 0, 1])).tolist()
        [1.0, 3.0]
    """
    _check_sorted(sorted, "segment_min")
    data, ids, count = _prepare(data, segment_ids, num_segments, "segment_min")
    if ops.dtype(data) == "bool":
        return ops.logical_not(ops.segment_max(ops.logical_not(data), ids, count))
    return reflect(ops.segment_max(reflect(data), ids, count))
