"""Linear-algebra ops of ``keras.ops`` that Ember's protocol lacks, built from ``ops.linalg``.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     int(ops.to_numpy(ops.matrix_rank(ops.convert_to_tensor([[1.0, 2.0], [2.0, 4.0]]))))
    1
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes, ops
from ember.ops.extra.arrays import tril, triu

__all__ = ["cholesky_inverse", "logdet", "lu_factor", "matrix_rank", "solve_triangular", "cdist"]


def _float(x: Any) -> Any:
    x = x if ops.is_array(x) else ops.convert_to_tensor(x)
    return x if dtypes.is_float(ops.dtype(x)) else ops.cast(x, dtypes.floatx())


def _square(op: str, x: Any) -> None:
    shape = ops.shape(x)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{op}: expected a (batch of) square matrices, received shape {shape}")


def cholesky_inverse(x, upper=False):
    """Inverse of ``A`` from its Cholesky factor ``x`` (``A = x x^T``, or ``x^T x`` when ``upper``).

    Example:
        >>> from ember import ops
        >>> factor = ops.convert_to_tensor([[2.0, 0.0], [1.0, 1.0]])  # A = factor @ factor.T
        >>> ops.to_numpy(ops.cholesky_inverse(factor)).astype(float).round(4).tolist()
        [[0.5, -0.5], [-0.5, 1.0]]
    """
    x = _float(x)
    _square("cholesky_inverse", x)
    factor_t = ops.swapaxes(x, -1, -2)
    product = ops.matmul(factor_t, x) if upper else ops.matmul(x, factor_t)
    return ops.linalg.inv(product)


def logdet(x):
    """``log(det(x))`` of (a batch of) positive-definite matrices, from the log-determinant of ``slogdet``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.logdet(ops.convert_to_tensor([[2.0, 0.0], [0.0, 2.0]]))).astype(float).round(4).tolist()
        1.3863
    """
    x = _float(x)
    _square("logdet", x)
    return ops.linalg.slogdet(x)[1]


def lu_factor(x):
    """``(lu, pivots)`` of the LU factorization with partial pivoting (SciPy's ``lu_factor`` layout).

    ``lu`` holds ``U`` on and above the diagonal and the unit-lower ``L`` below it; ``pivots[i]``
    is the row swapped with row ``i`` (int32). A 2-D matrix, eliminated one column at a time.

    Example:
        >>> from ember import ops
        >>> lu, pivots = ops.lu_factor(ops.convert_to_tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> ops.to_numpy(lu).astype(float).round(4).tolist(), ops.to_numpy(pivots).tolist()
        ([[3.0, 4.0], [0.3333, 0.6667]], [1, 1])
    """
    x = _float(x)
    _square("lu_factor", x)
    if ops.ndim(x) != 2:
        raise ValueError(f"lu_factor: expected a 2-D matrix, received shape {ops.shape(x)}")
    n = ops.shape(x)[0]
    a = x
    pivots = []
    rows = ops.arange(n)
    for k in range(n):
        column = ops.abs(ops.getitem(a, (slice(k, None), k)))
        p = k + int(ops.to_numpy(ops.argmax(column)))
        pivots.append(p)
        if p != k:
            order = np.arange(n)
            order[[k, p]] = order[[p, k]]
            a = ops.take(a, ops.convert_to_tensor(order.astype(np.int32)), axis=0)
        pivot = ops.getitem(a, (k, k))
        below = ops.greater(rows, k)
        factors = ops.where(below, ops.divide(ops.getitem(a, (slice(None), k)), pivot), ops.zeros((n,), ops.dtype(a)))
        update = ops.multiply(ops.expand_dims(factors, 1), ops.expand_dims(ops.getitem(a, k), 0))
        right = ops.greater(rows, k)
        a = ops.subtract(a, ops.where(ops.expand_dims(right, 0), update, ops.zeros_like(update)))
        a = ops.where(ops.logical_and(ops.expand_dims(below, 1), ops.expand_dims(ops.equal(rows, k), 0)),
                      ops.expand_dims(factors, 1), a)
    return a, ops.convert_to_tensor(np.asarray(pivots, dtype=np.int32))


def matrix_rank(x, tol=None):
    """Number of singular values above ``tol`` (default ``max(M, N) * eps * largest``), as int32.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.matrix_rank(ops.convert_to_tensor([[1.0, 2.0], [2.0, 4.0]]))).tolist()
        1
    """
    x = _float(x)
    singular = ops.linalg.svd(x, compute_uv=False)
    if tol is None:
        eps = float(np.finfo(dtypes.to_numpy_dtype("float32" if ops.dtype(x) == "bfloat16" else ops.dtype(x))).eps)
        tol = ops.multiply(ops.max(singular, axis=-1, keepdims=True), max(ops.shape(x)[-2:]) * eps)
    return ops.sum(ops.cast(ops.greater(singular, tol), "int32"), axis=-1)


def solve_triangular(a, b, lower=False):
    """Solve ``a x = b`` for triangular ``a`` (only its ``lower`` or upper triangle is read).

    Example:
        >>> from ember import ops
        >>> a, b = ops.convert_to_tensor([[2.0, 0.0], [1.0, 1.0]]), ops.convert_to_tensor([[2.0], [3.0]])
        >>> ops.to_numpy(ops.solve_triangular(a, b, lower=True)).astype(float).round(4).tolist()
        [[1.0], [2.0]]
    """
    a = _float(a)
    _square("solve_triangular", a)
    return ops.linalg.solve(tril(a) if lower else triu(a), _float(b))


def cdist(x, y):
    """Euclidean distances between the rows of ``x`` (``(..., m, d)``) and of ``y`` (``(..., n, d)``).

    Example:
        >>> from ember import ops
        >>> x, y = ops.convert_to_tensor([[0.0, 0.0]]), ops.convert_to_tensor([[3.0, 4.0], [0.0, 1.0]])
        >>> ops.to_numpy(ops.cdist(x, y)).astype(float).round(4).tolist()
        [[5.0, 1.0]]
    """
    x, y = _float(x), _float(y)
    difference = ops.subtract(ops.expand_dims(x, -2), ops.expand_dims(y, -3))
    return ops.sqrt(ops.sum(ops.square(difference), axis=-1))
