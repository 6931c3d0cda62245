"""``ember.ops.linalg`` on torch: ``torch.linalg`` with NumPy's conventions.

Bridged differences:

* integer/bool inputs are computed in ``floatx()``; float16/bfloat16 inputs in
  float32 (torch.linalg has no half-precision kernels) and cast back;
* MPS lacks most decompositions, so there the computation runs on the CPU and the
  result is moved back to the input's device;
* ``solve`` follows NumPy 2: ``b`` is a vector only when it is 1-D, otherwise a
  (batch of) matrix (torch would read a ``(..., n)`` ``b`` as a batch of vectors);
* a singular/non-positive-definite matrix raises ``numpy.linalg.LinAlgError`` (a
  ``ValueError``), the same class the NumPy backend raises.
"""

from __future__ import annotations

import numpy as np
import torch

from ember.backends._common import normalize_axis
from ember.backends.torch._base import (
    ACCUMULATE,
    COMPLEX,
    COMPLEX_OF,
    HALF,
    INEXACT,
    REAL_OF,
    Tensor,
    floatx,
    many,
    native,
)
from ember.backends.torch._products import dot, einsum, matmul, tensordot  # noqa: F401


def _prep(*xs):
    """Operands in a dtype/device torch.linalg handles, plus the dtype/device to return in."""
    ts = many(list(xs), "x")
    kind = ts[0].dtype
    out = kind if kind in INEXACT else floatx()
    compute = torch.float32 if out in HALF else out
    device = ts[0].device
    run_on = torch.device("cpu") if device.type == "mps" else device
    ts = [t if (t.dtype is compute and t.device == run_on) else t.to(device=run_on, dtype=compute) for t in ts]
    return ts, out, device


def _back(t: Tensor, out: torch.dtype, device: torch.device) -> Tensor:
    if t.dtype in COMPLEX:
        target = COMPLEX_OF[out]
    elif t.dtype is torch.bool or t.dtype is torch.int64 or t.dtype is torch.int32:
        target = t.dtype
    else:
        target = REAL_OF.get(out, out)
    if t.dtype is not target or t.device != device:
        t = t.to(device=device, dtype=target)
    return t


def _call(name: str, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except torch.linalg.LinAlgError as error:
        raise np.linalg.LinAlgError(f"linalg.{name}: {error}") from None
    except RuntimeError as error:
        shapes = [tuple(a.shape) for a in args if isinstance(a, Tensor)]
        raise ValueError(f"linalg.{name}: invalid input of shape(s) {shapes}: {error}") from None


def _square(name: str, t: Tensor) -> None:
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise ValueError(f"linalg.{name}: expected a (batch of) square matrix, received shape {tuple(t.shape)}")


def solve(a, b):
    (A, B), out, device = _prep(a, b)
    _square("solve", A)
    if B.ndim == 1:
        x = _call("solve", torch.linalg.solve, A, B.unsqueeze(-1)).squeeze(-1)
    else:
        if B.ndim < A.ndim:  # a matrix b broadcast over a's batch, never a batch of vectors
            B = B.reshape((1,) * (A.ndim - B.ndim) + tuple(B.shape))
        x = _call("solve", torch.linalg.solve, A, B)
    return _back(x, out, device)


def inv(x):
    (X,), out, device = _prep(x)
    _square("inv", X)
    return _back(_call("inv", torch.linalg.inv, X), out, device)


def svd(x, full_matrices=True, compute_uv=True):
    (X,), out, device = _prep(x)
    if X.ndim < 2:
        raise ValueError(f"linalg.svd: expected a (batch of) matrix, received shape {tuple(X.shape)}")
    if not compute_uv:
        return _back(_call("svd", torch.linalg.svdvals, X), out, device)
    u, s, vh = _call("svd", torch.linalg.svd, X, full_matrices=full_matrices)
    return _back(u, out, device), _back(s, out, device), _back(vh, out, device)


def eigh(x):
    (X,), out, device = _prep(x)
    _square("eigh", X)
    w, v = _call("eigh", torch.linalg.eigh, X)
    return _back(w, out, device), _back(v, out, device)


def eig(x):
    (X,), out, device = _prep(x)
    _square("eig", X)
    w, v = _call("eig", torch.linalg.eig, X)
    return _back(w, out, device), _back(v, out, device)


def eigvals(x):
    (X,), out, device = _prep(x)
    _square("eigvals", X)
    return _back(_call("eigvals", torch.linalg.eigvals, X), out, device)


def eigvalsh(x):
    (X,), out, device = _prep(x)
    _square("eigvalsh", X)
    return _back(_call("eigvalsh", torch.linalg.eigvalsh, X), out, device)


def det(x):
    (X,), out, device = _prep(x)
    _square("det", X)
    return _back(_call("det", torch.linalg.det, X), out, device)


def slogdet(x):
    (X,), out, device = _prep(x)
    _square("slogdet", X)
    sign, logabsdet = _call("slogdet", torch.linalg.slogdet, X)
    return _back(sign, out, device), _back(logabsdet, out, device)


def norm(x, ord=None, axis=None, keepdims=False):
    (X,), out, device = _prep(x)
    if isinstance(axis, (tuple, list)):
        axes = [normalize_axis(a, X.ndim) for a in axis]
        if len(axes) not in (1, 2) or len(set(axes)) != len(axes):
            raise ValueError(f"linalg.norm: axis must name 1 or 2 distinct axes, received {axis!r}")
        dim = axes[0] if len(axes) == 1 else tuple(axes)
    elif axis is not None:
        dim = normalize_axis(axis, X.ndim)
    elif ord is None:
        # NumPy: the 2-norm of the flattened array, whatever the rank.
        result = _call("norm", torch.linalg.vector_norm, X, 2)
        if keepdims:
            result = result.reshape((1,) * X.ndim)
        return _back(result, out, device)
    elif X.ndim == 1:
        dim = 0
    elif X.ndim == 2:
        dim = (0, 1)
    else:
        raise ValueError(f"linalg.norm: ord={ord!r} with axis=None needs a 1-D or 2-D array, received rank {X.ndim}")
    if isinstance(dim, tuple):
        if isinstance(ord, str) and ord not in ("fro", "nuc"):
            raise ValueError(f"linalg.norm: invalid matrix norm order {ord!r}")
        result = _call("norm", torch.linalg.matrix_norm, X, "fro" if ord is None else ord, dim=dim, keepdim=keepdims)
    else:
        if isinstance(ord, str):
            raise ValueError(f"linalg.norm: invalid norm order {ord!r} for vectors")
        result = _call("norm", torch.linalg.vector_norm, X, 2 if ord is None else ord, dim=dim, keepdim=keepdims)
    return _back(result, out, device)


def qr(x, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', received {mode!r}")
    (X,), out, device = _prep(x)
    if X.ndim < 2:
        raise ValueError(f"linalg.qr: expected a (batch of) matrix, received shape {tuple(X.shape)}")
    q, r = _call("qr", torch.linalg.qr, X, mode=mode)
    return _back(q, out, device), _back(r, out, device)


def cholesky(x):
    (X,), out, device = _prep(x)
    _square("cholesky", X)
    return _back(_call("cholesky", torch.linalg.cholesky, X), out, device)


def lstsq(a, b, rcond=None):
    (A, B), out, device = _prep(a, b)
    if A.ndim != 2:
        raise ValueError(f"linalg.lstsq: a must be a matrix, received shape {tuple(A.shape)}")
    vector = B.ndim == 1
    if vector:
        B = B.unsqueeze(-1)
    if B.shape[0] != A.shape[0]:
        raise ValueError(f"linalg.lstsq: a {tuple(A.shape)} and b {tuple(B.shape)} differ in rows")
    if A.device.type == "cpu":
        # gelsd: SVD based, minimum-norm solution for rank-deficient a (as NumPy).
        x = _call("lstsq", torch.linalg.lstsq, A, B, rcond=rcond, driver="gelsd").solution
    else:
        # CUDA only has the full-rank QR driver; the pseudo-inverse handles any rank.
        if rcond is None:
            pinv_ = _call("lstsq", torch.linalg.pinv, A)
        else:
            pinv_ = _call("lstsq", torch.linalg.pinv, A, rtol=rcond)
        x = pinv_ @ B
    if vector:
        x = x.squeeze(-1)
    return _back(x, out, device)


def pinv(x):
    (X,), out, device = _prep(x)
    if X.ndim < 2:
        raise ValueError(f"linalg.pinv: expected a (batch of) matrix, received shape {tuple(X.shape)}")
    return _back(_call("pinv", torch.linalg.pinv, X), out, device)


def diag(x, k=0):
    x = native(x)
    if x.ndim not in (1, 2):
        raise ValueError(f"linalg.diag: input must be 1-D or 2-D, received shape {tuple(x.shape)}")
    return torch.diag(x, int(k))


def diagonal(x, offset=0, axis1=0, axis2=1):
    x = native(x)
    if x.ndim < 2:
        raise ValueError(f"linalg.diagonal: input must have at least 2 axes, received shape {tuple(x.shape)}")
    a1 = normalize_axis(axis1, x.ndim, "axis1")
    a2 = normalize_axis(axis2, x.ndim, "axis2")
    if a1 == a2:
        raise ValueError("linalg.diagonal: axis1 and axis2 must differ")
    return torch.diagonal(x, offset=int(offset), dim1=a1, dim2=a2)


def trace(x, offset=0, axis1=0, axis2=1):
    d = diagonal(x, offset, axis1, axis2)
    return torch.sum(d, dim=-1, dtype=ACCUMULATE.get(d.dtype))
