"""Linear algebra of the MLX backend (NumPy ``linalg`` semantics, batched over leading axes).

MLX implements its factorisations (inv, svd, qr, cholesky, eigh, eig, solve, lu, det)
on the CPU only, so they run with ``stream=mx.cpu``; MLX arrays live in unified
memory, so the results are usable on the default device as they are. The factorisations
accept float32/float64: float16/bfloat16 inputs are computed in float32 and cast back,
integers and bools in ``floatx()``. MLX has no complex linear algebra (and no complex128),
so complex inputs, and ``eig`` of float64 matrices (whose NumPy result is complex128),
raise ``TypeError``.

The matrix products (``matmul``, ``dot``, ...) live in :mod:`._products`, as in every backend.

The factorisations MLX cannot differentiate (inv, solve, cholesky, eigh, eigvalsh, qr, svd)
run through :mod:`._linalg_vjp`, which gives them the NumPy backend's VJP rules, so
``pinv``, ``lstsq`` and the spectral norms built on them are differentiable too.
"""

from __future__ import annotations

import builtins
import math

import mlx.core as mx
import numpy as np

from ember.backends._common import normalize_axes
from ember.backends.mlx import _f64, _linalg_vjp
from ember.backends.mlx._base import (
    FLOATS,
    SMALL_INTS,
    floatx,
    normalize_axis,
    to_mx,
)
from ember.backends.mlx._products import dot, einsum, matmul, outer, tensordot  # noqa: F401

_CPU = mx.cpu

# ------------------------------------------------------------------------- factorisations


def _as_float(x, op, square=False):
    """``(work array, dtype to cast results back to)`` for an MLX CPU linalg routine."""
    x = to_mx(x)
    dtype = x.dtype
    if dtype == mx.complex64:
        raise TypeError(f"linalg.{op}: complex64 is not supported on the mlx backend (MLX has no complex linalg)")
    if dtype not in FLOATS:
        dtype = floatx()
    if x.ndim < 2:
        raise ValueError(f"linalg.{op}: expected an array of rank >= 2, received shape {tuple(x.shape)}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"linalg.{op}: expected square matrices, received shape {tuple(x.shape)}")
    work = mx.float64 if dtype == mx.float64 else mx.float32
    return (x if x.dtype == work else x.astype(work)), dtype


def _back(x, dtype):
    return x if x.dtype == dtype else x.astype(dtype)


def solve(a, b):
    a, dtype = _as_float(a, "solve", square=True)
    b = to_mx(b, "b")
    b = b.astype(a.dtype)
    vector = b.ndim == 1
    if vector:
        b = mx.expand_dims(b, -1)
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(f"linalg.solve: a of shape {tuple(a.shape)} does not match b of shape {tuple(b.shape)}")
    batch = tuple(mx.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))) if (a.ndim > 2 or b.ndim > 2) else ()
    a = mx.broadcast_to(a, batch + tuple(a.shape[-2:]))
    b = mx.broadcast_to(b, batch + tuple(b.shape[-2:]))
    out = _linalg_vjp.solve(a, b)
    _evaluated(out, "solve", "the matrix a is singular")
    if vector:
        out = out[..., 0]
    return _back(out, dtype)


def _evaluated(out, op: str, problem: str) -> bool:
    """Evaluate ``out`` now, so that a failed LAPACK factorization raises here, as NumPy's
    ``LinAlgError`` (MLX raises a RuntimeError only when the result is first read). False inside
    ``mx.compile`` (nothing can be evaluated there: the result stays lazy, unchecked)."""
    try:
        mx.eval(out)
    except RuntimeError as error:
        if "failed" in str(error):
            raise np.linalg.LinAlgError(f"linalg.{op}: {problem} ({error})") from None
        raise
    except ValueError as error:
        if "[eval]" in str(error):  # tracing (mx.compile/vmap)
            return False
        raise
    return True


def inv(x):
    x, dtype = _as_float(x, "inv", square=True)
    out = _linalg_vjp.inv(x)
    _evaluated(out, "inv", "the matrix is singular")
    return _back(out, dtype)


def svd(x, full_matrices=True, compute_uv=True):
    x, dtype = _as_float(x, "svd")
    if not compute_uv:
        return _back(_linalg_vjp.svdvals(x), dtype)
    u, s, vh = _linalg_vjp.svd(x)  # MLX gives the full matrices
    if not full_matrices:
        k = builtins.min(x.shape[-2], x.shape[-1])
        u, vh = u[..., :, :k], vh[..., :k, :]
    return _back(u, dtype), _back(s, dtype), _back(vh, dtype)


def eigh(x):
    x, dtype = _as_float(x, "eigh", square=True)
    values, vectors = _linalg_vjp.eigh(x)
    return _back(values, dtype), _back(vectors, dtype)


def _complex_ok(x, op):
    native = to_mx(x)
    if native.dtype == mx.float64:
        raise TypeError(f"linalg.{op}: the eigenvalues of a float64 matrix are complex128, which the mlx backend "
                        "does not support; cast the input to float32 (complex64 results)")
    return native


def eig(x):
    x, _ = _as_float(_complex_ok(x, "eig"), "eig", square=True)
    return mx.linalg.eig(x, stream=_CPU)


def eigvals(x):
    x, _ = _as_float(_complex_ok(x, "eigvals"), "eigvals", square=True)
    return mx.linalg.eigvals(x, stream=_CPU)


def eigvalsh(x):
    x, dtype = _as_float(x, "eigvalsh", square=True)
    return _back(_linalg_vjp.eigvalsh(x), dtype)


def det(x):
    x, dtype = _as_float(x, "det", square=True)
    if x.dtype == mx.float64:
        # MLX's det exponentiates log|det| with a float32-grade exp: rebuild it accurately.
        sign, logdet = mx.linalg.slogdet(x, stream=_CPU)
        return sign * _f64.exp(logdet)
    return _back(mx.linalg.det(x, stream=_CPU), dtype)


def slogdet(x):
    x, dtype = _as_float(x, "slogdet", square=True)
    sign, logdet = mx.linalg.slogdet(x, stream=_CPU)
    return _back(sign, dtype), _back(logdet, dtype)


def _singular_values(x, row, col):
    """Singular values of the matrices spanning axes ``(row, col)`` (CPU, float32/float64)."""
    work = x if x.dtype in (mx.float32, mx.float64) else x.astype(mx.float32)
    order = [a for a in range(x.ndim) if a not in (row, col)] + [row, col]
    moved = mx.transpose(work, order)
    values = _linalg_vjp.svdvals(moved)
    return values.astype(x.dtype)


def norm(x, ord=None, axis=None, keepdims=False):
    x = to_mx(x)
    if x.dtype == mx.complex64:
        x = mx.abs(x)
    elif x.dtype not in FLOATS:
        x = x.astype(floatx())
    ndim = x.ndim
    axes: tuple[int, ...]
    if axis is None:
        if ord is None:
            out = mx.sqrt(mx.sum(mx.square(mx.abs(x))))
            return mx.reshape(out, (1,) * ndim) if keepdims else out
        if ndim == 1:
            axes = (0,)
        elif ndim == 2:
            axes = (0, 1)
        else:
            raise ValueError(f"linalg.norm: ord={ord!r} with axis=None needs a 1-D or 2-D array, received rank {ndim}")
    else:
        axes = normalize_axes(axis, ndim)
    absx = mx.abs(x)
    if len(axes) == 1:
        out = _vector_norm(absx, ord, axes[0])
    elif len(axes) == 2:
        out = _matrix_norm(x, absx, ord, axes)
    else:
        raise ValueError(f"linalg.norm: axis must name one or two axes, received {axis!r}")
    if keepdims:
        for a in sorted(axes):
            out = mx.expand_dims(out, a)
    return out


def _vector_norm(absx, ord, axis):
    if ord is None or ord == 2:
        return mx.sqrt(mx.sum(mx.square(absx), axis=axis))
    if isinstance(ord, str):
        raise ValueError(f"linalg.norm: ord={ord!r} is not a vector norm")
    if ord == math.inf:
        return mx.max(absx, axis=axis)
    if ord == -math.inf:
        return mx.min(absx, axis=axis)
    if ord == 0:
        return mx.sum(absx != 0, axis=axis).astype(absx.dtype)
    if ord == 1:
        return mx.sum(absx, axis=axis)
    p = float(ord)
    return mx.power(mx.sum(mx.power(absx, p), axis=axis), 1.0 / p)


def _matrix_norm(x, absx, ord, axes):
    row, col = axes
    if row == col:
        raise ValueError(f"linalg.norm: duplicate axes {axes}")
    if ord is None or ord == "fro":
        return mx.sqrt(mx.sum(mx.square(absx), axis=list(axes)))
    if ord == "nuc":
        return mx.sum(_singular_values(x, row, col), axis=-1)
    if ord in (2, -2):
        values = _singular_values(x, row, col)
        return mx.max(values, axis=-1) if ord == 2 else mx.min(values, axis=-1)
    if ord in (1, -1):
        sums = mx.sum(absx, axis=row)  # column sums
        reduce_axis = col - 1 if col > row else col
        return mx.max(sums, axis=reduce_axis) if ord == 1 else mx.min(sums, axis=reduce_axis)
    if ord in (math.inf, -math.inf):
        sums = mx.sum(absx, axis=col)  # row sums
        reduce_axis = row - 1 if row > col else row
        return mx.max(sums, axis=reduce_axis) if ord == math.inf else mx.min(sums, axis=reduce_axis)
    raise ValueError(f"linalg.norm: invalid matrix norm order {ord!r}")


def qr(x, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', received {mode!r}")
    x, dtype = _as_float(x, "qr")
    m, n = x.shape[-2], x.shape[-1]
    if mode == "complete" and m > n:
        # MLX returns the reduced factors only. Householder QR of [x | I] (m x (n+m)) has
        # a square Q, and its first n columns of R are the complete R of x.
        eye = mx.broadcast_to(mx.eye(m, dtype=x.dtype), tuple(x.shape[:-2]) + (m, m))
        q, r = mx.linalg.qr(mx.concatenate([x, eye], axis=-1), stream=_CPU)
        return _back(q, dtype), _back(r[..., :, :n], dtype)
    q, r = _linalg_vjp.qr(x)
    return _back(q, dtype), _back(r, dtype)


def cholesky(x):
    x, dtype = _as_float(x, "cholesky", square=True)
    out = _linalg_vjp.cholesky(x)
    # MLX ignores LAPACK's failure flag and returns the partial factor. A failed factorization
    # leaves its non-positive pivot (or NaN) on the diagonal; a successful one has a positive one.
    diagonal_ok = mx.all(mx.diagonal(out, axis1=-2, axis2=-1) > 0)
    if _evaluated(diagonal_ok, "cholesky", "the matrix is not positive definite") and out.size \
            and not diagonal_ok.item():
        raise np.linalg.LinAlgError("linalg.cholesky: the matrix is not positive definite (a pivot of the "
                                    "factorization is not positive)")
    return _back(out, dtype)


def _pinv(x, rcond):
    m, n = x.shape[-2], x.shape[-1]
    if m == 0 or n == 0:
        return mx.zeros(tuple(x.shape[:-2]) + (n, m), dtype=x.dtype)
    u, s, vh = _linalg_vjp.svd(x)
    k = builtins.min(m, n)
    u, vh = u[..., :, :k], vh[..., :k, :]
    if rcond is None:
        eps = 2.220446049250313e-16 if x.dtype == mx.float64 else 1.1920929e-07
        rcond = builtins.max(1e-15, builtins.max(m, n) * eps)
    cutoff = rcond * mx.max(s, axis=-1, keepdims=True)
    s_inv = mx.where(s > cutoff, 1.0 / mx.where(s > cutoff, s, 1), 0).astype(x.dtype)
    return mx.matmul(mx.swapaxes(vh, -1, -2) * mx.expand_dims(s_inv, -2), mx.swapaxes(u, -1, -2), stream=_CPU)


def pinv(x):
    x, dtype = _as_float(x, "pinv")
    return _back(_pinv(x, None), dtype)


def lstsq(a, b, rcond=None):
    a, dtype = _as_float(a, "lstsq")
    b = to_mx(b, "b").astype(a.dtype)
    vector = b.ndim == 1
    if vector:
        b = mx.expand_dims(b, -1)
    if b.shape[-2] != a.shape[-2]:
        raise ValueError(f"linalg.lstsq: a of shape {tuple(a.shape)} does not match b of shape {tuple(b.shape)}")
    out = mx.matmul(_pinv(a, rcond), b, stream=_CPU)
    if vector:
        out = out[..., 0]
    return _back(out, dtype)


# ----------------------------------------------------------------------------- diagonals


def diag(x, k=0):
    x = to_mx(x)
    if x.ndim not in (1, 2):
        raise ValueError(f"linalg.diag: expected a 1-D or 2-D array, received shape {tuple(x.shape)}")
    return mx.diag(x, k=int(k))


def diagonal(x, offset=0, axis1=0, axis2=1):
    x = to_mx(x)
    a1 = normalize_axis(axis1, x.ndim, "axis1")
    a2 = normalize_axis(axis2, x.ndim, "axis2")
    if a1 == a2:
        raise ValueError("linalg.diagonal: axis1 and axis2 must differ")
    return mx.diagonal(x, int(offset), a1, a2)


def trace(x, offset=0, axis1=0, axis2=1):
    d = diagonal(x, offset, axis1, axis2)
    if d.dtype in SMALL_INTS:
        d = d.astype(mx.int32)
    return mx.sum(d, axis=-1)

