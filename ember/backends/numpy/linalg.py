"""NumPy backend, ``ember.ops.linalg``: ``numpy.linalg`` batched over leading axes.

Integer inputs are computed as ``floatx()``; float16/bfloat16 (which LAPACK does not
take) are computed in float32 and rounded back. ``eig``/``eigvals`` always return
complex arrays (NumPy returns real ones when every eigenvalue is real).
"""

from __future__ import annotations

import numpy as np

from ember.backends.numpy._base import (
    C64,
    C128,
    F64,
    axes_arg,
    axis_arg,
    binary,
    float_compute,
    out,
    to_native,
)
from ember.backends.numpy._products import dot, einsum, matmul, tensordot  # noqa: F401  (ops)
from ember.backends.numpy._reduce import _accumulator


def _unary(x, op):
    x = to_native(x)
    if x.ndim < 2:
        raise ValueError(f"linalg.{op}: expected a matrix (rank >= 2), received shape {x.shape}")
    return float_compute(x)


def _finish(r, final):
    r = out(r)
    if final is None:
        return r
    if r.dtype.kind == "c":
        return r.astype(C64)
    return r.astype(final)


def solve(a, b):
    a, b = binary(a, b)
    a, final = float_compute(a)
    b, _ = float_compute(b)
    return _finish(np.linalg.solve(a, b), final)


def inv(x):
    x, final = _unary(x, "inv")
    return _finish(np.linalg.inv(x), final)


def svd(x, full_matrices=True, compute_uv=True):
    x, final = _unary(x, "svd")
    if not compute_uv:
        return _finish(np.linalg.svd(x, full_matrices=full_matrices, compute_uv=False), final)
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices, compute_uv=True)
    return _finish(u, final), _finish(s, final), _finish(vh, final)


def eigh(x):
    x, final = _unary(x, "eigh")
    w, v = np.linalg.eigh(x)
    return _finish(w, final), _finish(v, final)


def _complex(r, x):
    return r.astype(C128 if x.dtype in (F64, C128) else C64, copy=False)


def eig(x):
    x, _ = _unary(x, "eig")
    w, v = np.linalg.eig(x)
    return out(_complex(w, x)), out(_complex(v, x))


def eigvals(x):
    x, _ = _unary(x, "eigvals")
    return out(_complex(np.linalg.eigvals(x), x))


def eigvalsh(x):
    x, final = _unary(x, "eigvalsh")
    return _finish(np.linalg.eigvalsh(x), final)


def det(x):
    x, final = _unary(x, "det")
    return _finish(np.linalg.det(x), final)


def slogdet(x):
    x, final = _unary(x, "slogdet")
    sign, logabsdet = np.linalg.slogdet(x)
    return _finish(sign, final), _finish(logabsdet, final)


def norm(x, ord=None, axis=None, keepdims=False):
    x, final = float_compute(x)
    axes = axes_arg(axis, x.ndim)
    if axes is not None and len(axes) not in (1, 2):
        raise ValueError(f"linalg.norm: axis must be an int or a pair of ints, received {axis!r}")
    if axes is not None and len(axes) == 1:
        axes = axes[0]
    r = out(np.linalg.norm(x, ord=ord, axis=axes, keepdims=keepdims))
    real = x.real.dtype if x.dtype.kind == "c" else x.dtype
    r = r.astype(real, copy=False)
    return r if final is None else r.astype(final)


def qr(x, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', received {mode!r}")
    x, final = _unary(x, "qr")
    q, r = np.linalg.qr(x, mode=mode)
    return _finish(q, final), _finish(r, final)


def cholesky(x):
    x, final = _unary(x, "cholesky")
    return _finish(np.linalg.cholesky(x), final)


def lstsq(a, b, rcond=None):
    a, b = binary(a, b)
    a, final = float_compute(a)
    b, _ = float_compute(b)
    if a.ndim < 2:
        raise ValueError(f"linalg.lstsq: a must be a matrix (rank >= 2), received shape {a.shape}")
    if a.ndim == 2 and b.ndim in (1, 2):
        return _finish(np.linalg.lstsq(a, b, rcond=rcond)[0], final)
    # Batched: the minimum-norm solution via the pseudo-inverse (what lstsq returns).
    pinv_a = np.linalg.pinv(a) if rcond is None else np.linalg.pinv(a, rcond=rcond)
    if b.ndim == a.ndim - 1:
        return _finish(np.matmul(pinv_a, b[..., None])[..., 0], final)
    return _finish(np.matmul(pinv_a, b), final)


def pinv(x):
    x, final = _unary(x, "pinv")
    return _finish(np.linalg.pinv(x), final)


def diag(x, k=0):
    x = to_native(x)
    if x.ndim not in (1, 2):
        raise ValueError(f"linalg.diag: expected a 1-D or 2-D array, received shape {x.shape}")
    return np.diag(x, k=int(k)).copy()


def diagonal(x, offset=0, axis1=0, axis2=1):
    x = to_native(x)
    axis1 = axis_arg(axis1, x.ndim, "axis1")
    axis2 = axis_arg(axis2, x.ndim, "axis2")
    if axis1 == axis2:
        raise ValueError(f"linalg.diagonal: axis1 and axis2 must differ, both are {axis1}")
    return np.diagonal(x, offset=int(offset), axis1=axis1, axis2=axis2).copy()


def trace(x, offset=0, axis1=0, axis2=1):
    x = to_native(x)
    axis1 = axis_arg(axis1, x.ndim, "axis1")
    axis2 = axis_arg(axis2, x.ndim, "axis2")
    if axis1 == axis2:
        raise ValueError(f"linalg.trace: axis1 and axis2 must differ, both are {axis1}")
    acc, final = _accumulator(x.dtype)
    r = out(np.trace(x, offset=int(offset), axis1=axis1, axis2=axis2, dtype=acc))
    return r if final is None else r.astype(final)
