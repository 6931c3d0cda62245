"""``one_hot``: integer class indices to one-hot vectors, with an optional strict range check."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes, ops


def integer_indices(indices: Any, where: str, argument: str = "indices") -> Any:
    """``indices`` as a native integer array; ``TypeError`` naming ``where`` for other dtypes.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.features.one_hot import integer_indices
        >>> ember.set_backend("numpy")
        >>> ops.dtype(integer_indices([1, 2], "demo"))
        'int32'
        >>> integer_indices([0.5], "demo")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        TypeError: demo: indices must have an integer dtype, received float32
        (cast with ops.cast(indices, 'int32') if the values are whole numbers)
    """
    if indices is None:
        raise TypeError(f"{where}: {argument} must be an integer array, received None")
    try:
        native = ops.convert_to_tensor(indices)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{where}: {argument} must be an integer array ({error})") from None
    dtype = ops.dtype(native)
    if not dtypes.is_integer(dtype):
        raise TypeError(f"{where}: {argument} must have an integer dtype, received {dtype} "
                        f"(cast with ops.cast({argument}, 'int32') if the values are whole numbers)")
    return native


def _positive_int(value: Any, where: str, argument: str) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{where}: {argument} must be an int, received {value!r}")
    if value < 1:
        raise ValueError(f"{where}: {argument} must be >= 1, received {value}")
    return int(value)


def one_hot(indices: Any, depth: int, dtype: Any = None, axis: int = -1, strict: bool = False) -> Any:
    """One-hot encode integer ``indices`` into vectors of length ``depth``.

    As in Keras (and ``ops.one_hot``), an index outside ``[0, depth)`` (negative ones
    included) gives an all-zero vector; with ``strict=True`` it is an error instead.

    Args:
        indices: integer array of any shape (NumPy, list, native array or ``Tensor``).
        depth: number of classes (Keras's ``num_classes``).
        dtype: output dtype; None means ``floatx()`` (Keras's default).
        axis: where the new class axis goes (default last).
        strict: raise ``ValueError`` for out-of-range indices (one device-to-host check).

    Returns:
        A native array of shape ``indices.shape`` with ``depth`` inserted at ``axis``.

    Raises:
        TypeError: non-integer ``indices`` or ``depth``.
        ValueError: ``depth < 1``, a bad ``axis``, or out-of-range indices with ``strict``.

    Example:
        >>> import ember
        >>> from ember import features, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(features.one_hot([0, 2, 5], 3)).tolist()
        [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
        >>> features.one_hot([0, 2, 5], 3, strict=True)
        Traceback (most recent call last):
        ...
        ValueError: one_hot: strict=True and 1 index is outside [0, 3): [5]
    """
    indices = integer_indices(indices, "one_hot")
    depth = _positive_int(depth, "one_hot", "depth")
    if not isinstance(strict, bool):
        raise TypeError(f"one_hot: strict must be a bool, received {strict!r}")
    rank = ops.ndim(indices) + 1
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or not -rank <= axis < rank:
        raise ValueError(f"one_hot: axis {axis!r} is out of range for an output of rank {rank}")
    dtype = dtypes.floatx() if dtype is None else dtypes.standardize_dtype(dtype, "one_hot: dtype")
    if strict:
        bad = ops.logical_or(ops.less(indices, 0), ops.greater_equal(indices, depth))
        if bool(ops.to_numpy(ops.any(bad))):
            values = ops.to_numpy(indices)[ops.to_numpy(bad)]
            shown = ", ".join(str(v) for v in values[:5]) + (", ..." if values.size > 5 else "")
            noun = "index is" if values.size == 1 else "indices are"
            raise ValueError(f"one_hot: strict=True and {values.size} {noun} outside [0, {depth}): [{shown}]")
    return ops.one_hot(indices, depth, dtype=dtype, axis=int(axis))
