"""Integer, bit and index ops of ``keras.ops`` computed on the host (NumPy) and returned on the backend.

These ops have no gradient (integer or index results) or a data-dependent output shape
(``unique``), so they copy their inputs to the host, run NumPy, and convert the result
back to the active backend's default device. Their cost is one host round trip; keep
them out of per-step training code on an accelerator.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.to_numpy(ops.bitwise_and(ops.convert_to_tensor([6, 3]), 5)).tolist()
    [4, 1]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember import dtypes, ops

__all__ = [
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_invert", "bitwise_left_shift",
    "bitwise_right_shift", "left_shift", "right_shift", "gcd", "lcm", "unique", "unravel_index",
    "argpartition", "nextafter",
]


def _host(x: Any) -> np.ndarray:
    return np.asarray(ops.to_numpy(x)) if ops.is_array(x) or hasattr(x, "numpy") else np.asarray(x)


def _dtype_of(x: Any) -> str:
    """Ember's dtype for an operand: arrays keep theirs, Python ints are weak (int32)."""
    if ops.is_array(x) or hasattr(x, "numpy"):
        return ops.dtype(ops.convert_to_tensor(x))
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int32"
    return dtypes.standardize_dtype(np.asarray(x).dtype)


def _weak(x: Any) -> Any:
    """A Python scalar as is (weak in promotion), anything else as its Ember dtype name."""
    return x if isinstance(x, (bool, int, float)) else ops.dtype(ops.convert_to_tensor(x))


def _integer_binary(name: str, function: Callable, x: Any, y: Any) -> Any:
    """NumPy's ``function`` of two integer (or bool) operands on the host, in their promoted dtype."""
    result_dtype = dtypes.result_type(*(_weak(v) for v in (x, y)))
    for argument, value in (("x", x), ("y", y)):
        kind = _dtype_of(value)
        if not (dtypes.is_integer(kind) or kind == "bool"):
            raise TypeError(f"{name}: {argument} must be an integer or bool array, received dtype {kind}")
    numpy_dtype = dtypes.to_numpy_dtype(result_dtype)
    out = function(_host(x).astype(numpy_dtype), _host(y).astype(numpy_dtype))
    return ops.convert_to_tensor(np.asarray(out).astype(numpy_dtype), dtype=result_dtype)


# One function each (not made by a factory), so that each has a signature and a docstring in the source.
def bitwise_and(x, y):
    """NumPy's ``bitwise_and`` of two integer (or bool) arrays, computed on the host.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.bitwise_and(ops.convert_to_tensor([12, 10]), ops.convert_to_tensor([10, 6]))).tolist()
        [8, 2]
    """
    return _integer_binary("bitwise_and", np.bitwise_and, x, y)


def bitwise_or(x, y):
    """NumPy's ``bitwise_or`` of two integer (or bool) arrays, computed on the host.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.bitwise_or(ops.convert_to_tensor([12, 10]), ops.convert_to_tensor([10, 6]))).tolist()
        [14, 14]
    """
    return _integer_binary("bitwise_or", np.bitwise_or, x, y)


def bitwise_xor(x, y):
    """NumPy's ``bitwise_xor`` of two integer (or bool) arrays, computed on the host.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.bitwise_xor(ops.convert_to_tensor([12, 10]), ops.convert_to_tensor([10, 6]))).tolist()
        [6, 12]
    """
    return _integer_binary("bitwise_xor", np.bitwise_xor, x, y)


def bitwise_left_shift(x, y):
    """NumPy's ``left_shift`` of two integer (or bool) arrays, computed on the host.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.bitwise_left_shift(ops.convert_to_tensor([1, 3]), ops.convert_to_tensor([2, 1]))).tolist()
        [4, 6]
    """
    return _integer_binary("bitwise_left_shift", np.left_shift, x, y)


def bitwise_right_shift(x, y):
    """NumPy's ``right_shift`` of two integer (or bool) arrays, computed on the host.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.bitwise_right_shift(ops.convert_to_tensor([8, 6]), ops.convert_to_tensor([2, 1]))).tolist()
        [2, 3]
    """
    return _integer_binary("bitwise_right_shift", np.right_shift, x, y)


def left_shift(x, y):
    """NumPy's ``left_shift`` of two integer (or bool) arrays, computed on the host.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.left_shift(ops.convert_to_tensor([1, 3]), ops.convert_to_tensor([2, 1]))).tolist()
        [4, 6]
    """
    return _integer_binary("left_shift", np.left_shift, x, y)


def right_shift(x, y):
    """NumPy's ``right_shift`` of two integer (or bool) arrays, computed on the host.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.right_shift(ops.convert_to_tensor([8, 6]), ops.convert_to_tensor([2, 1]))).tolist()
        [2, 3]
    """
    return _integer_binary("right_shift", np.right_shift, x, y)


def gcd(x, y):
    """NumPy's ``gcd`` of two integer (or bool) arrays, computed on the host.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.gcd(ops.convert_to_tensor([12, 9]), ops.convert_to_tensor([8, 6]))).tolist()
        [4, 3]
    """
    return _integer_binary("gcd", np.gcd, x, y)


def lcm(x, y):
    """NumPy's ``lcm`` of two integer (or bool) arrays, computed on the host.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.lcm(ops.convert_to_tensor([4, 3]), ops.convert_to_tensor([6, 5]))).tolist()
        [12, 15]
    """
    return _integer_binary("lcm", np.lcm, x, y)


def bitwise_invert(x):
    """Bitwise NOT of an integer array (logical NOT of a bool array), computed on the host.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.bitwise_invert(ops.convert_to_tensor([0, 5]))).tolist()
        [-1, -6]
        >>> ops.to_numpy(ops.bitwise_invert(ops.convert_to_tensor([True, False]))).tolist()
        [False, True]
    """
    kind = _dtype_of(x)
    if not (dtypes.is_integer(kind) or kind == "bool"):
        raise TypeError(f"bitwise_invert: x must be an integer or bool array, received dtype {kind}")
    return ops.convert_to_tensor(np.invert(_host(x).astype(dtypes.to_numpy_dtype(kind))), dtype=kind)


def bitwise_not(x):
    """Alias of :func:`bitwise_invert`.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.bitwise_not(ops.convert_to_tensor([0, 5]))).tolist()
        [-1, -6]
    """
    return bitwise_invert(x)


def unique(x, sorted=True, return_inverse=False, return_counts=False, axis=None, size=None, fill_value=None):
    """Sorted unique elements of ``x`` (and inverse indices and counts), NumPy's ``unique``.

    ``size`` pads (with ``fill_value``, default the smallest unique value) or truncates the
    result to a fixed length, as in Keras's JAX-friendly form.

    Raises:
        ValueError: ``sorted=False`` (the result is always sorted, as NumPy's).

    Example:
        >>> from ember import ops
        >>> values, counts = ops.unique(ops.convert_to_tensor([3, 1, 3, 2]), return_counts=True)
        >>> ops.to_numpy(values).tolist(), ops.to_numpy(counts).tolist()
        ([1, 2, 3], [1, 1, 2])
    """
    if not sorted:
        raise ValueError("unique: sorted=False is not supported; the unique values are always sorted")
    host = _host(x)
    kind = ops.dtype(ops.convert_to_tensor(x))
    values, inverse, counts = np.unique(host, return_inverse=True, return_counts=True, axis=axis)
    if size is not None:
        fill = values.min(axis=0) if fill_value is None and values.size else (fill_value or 0)
        if len(values) >= size:
            values, counts = values[:size], counts[:size]
        else:
            pad = [(0, size - len(values))] + [(0, 0)] * (values.ndim - 1)
            values = np.pad(values, pad, constant_values=fill)
            counts = np.pad(counts, (0, size - len(counts)))
    outputs = [ops.convert_to_tensor(values, dtype=kind)]
    if return_inverse:
        outputs.append(ops.convert_to_tensor(inverse.reshape(host.shape if axis is None else -1).astype(np.int32)))
    if return_counts:
        outputs.append(ops.convert_to_tensor(counts.astype(np.int32)))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def unravel_index(indices, shape):
    """Coordinate arrays (int32) of flat ``indices`` into an array of ``shape``.

    Raises:
        ValueError: an index out of range for ``shape``.

    Example:
        >>> from ember import ops
        >>> rows, cols = ops.unravel_index(ops.convert_to_tensor([5, 1]), (2, 3))
        >>> ops.to_numpy(rows).tolist(), ops.to_numpy(cols).tolist()
        ([1, 0], [2, 1])
    """
    host = _host(indices).astype(np.int64)
    total = int(np.prod(shape))
    if host.size and (host.min() < 0 or host.max() >= total):
        raise ValueError(f"unravel_index: indices must be in [0, {total}) for shape {tuple(shape)}, "
                         f"received values in [{host.min()}, {host.max()}]")
    return tuple(ops.convert_to_tensor(c.astype(np.int32)) for c in np.unravel_index(host, tuple(shape)))


def argpartition(x, kth, axis=-1):
    """Indices (int32) that partition ``x`` around its ``kth`` smallest element along ``axis``.

    Computed as a stable ``argsort`` (a valid partition; NumPy's own order within the parts differs).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.argpartition(ops.convert_to_tensor([3.0, 1.0, 2.0]), 1)).tolist()
        [1, 2, 0]
    """
    host = _host(x)
    if not -host.shape[axis] <= kth < host.shape[axis]:
        raise ValueError(f"argpartition: kth={kth} is out of range for axis {axis} of shape {host.shape}")
    return ops.convert_to_tensor(np.argsort(host, axis=axis, kind="stable").astype(np.int32))


def nextafter(x1, x2):
    """The next representable float after ``x1`` towards ``x2``, in ``x1``'s dtype.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0])
        >>> ops.to_numpy(ops.subtract(ops.nextafter(x, ops.convert_to_tensor([2.0])), x)).tolist()
        [1.1920928955078125e-07]
    """
    kind = dtypes.result_type(*(_weak(v) for v in (x1, x2)))
    if not dtypes.is_float(kind) or kind == "bfloat16":
        kind = dtypes.floatx() if not dtypes.is_float(kind) else kind
    numpy_dtype = dtypes.to_numpy_dtype(kind if kind != "bfloat16" else "float32")
    out = np.nextafter(_host(x1).astype(numpy_dtype), _host(x2).astype(numpy_dtype))
    return ops.convert_to_tensor(out, dtype=kind)
