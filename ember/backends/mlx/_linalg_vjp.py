"""Differentiable MLX factorisations: ``mx.custom_function`` wrappers with the VJPs MLX lacks.

MLX 0.32 has no VJP for ``Inverse``, ``Cholesky``, ``Eigh``, ``QRF`` or ``SVD``, and its
``solve`` fails in the backward pass (a gather over LU pivots). Every wrapper here runs
MLX's CPU routine forward and the same rule as the NumPy backend's tape
(:mod:`ember.autodiff.rules.linalg`, the results PyTorch implements) backward, so
``ember.GradientTape``, ``ember.grad`` and plain ``mx.grad`` differentiate
:mod:`ember.backends.mlx.linalg` on every path. Real matrices only (MLX has no complex
linalg); the backward passes use MLX's non-differentiable routines, so these are
first-order rules (a second derivative through them raises MLX's own error).

Conventions, as on the NumPy backend: ``eigh``/``cholesky`` read the lower triangle and
their rules give the gradient for that convention; ``eigh``/``svd`` gradients divide by
eigenvalue/singular-value gaps (a degenerate spectrum gives inf/nan, as in PyTorch);
with full ``svd`` factors only the first ``k = min(m, n)`` columns of ``u``/rows of
``vh`` carry gradient.
"""

from __future__ import annotations

from typing import Any

import mlx.core as mx

_CPU = mx.cpu


def _mt(x: Any) -> Any:
    return mx.swapaxes(x, -1, -2)


def _eye(n: int, dtype: Any) -> Any:
    return mx.eye(n, dtype=dtype)


def _diag_embed(v: Any) -> Any:
    return mx.expand_dims(v, -1) * _eye(v.shape[-1], v.dtype)


def _only(primals: Any) -> Any:
    return primals[0] if isinstance(primals, (tuple, list)) else primals


# ------------------------------------------------------------------------------- inverse
@mx.custom_function
def _inv_fn(x: Any) -> Any:
    """``inv(x)``; VJP ``-inv(x)^T g inv(x)^T``.

    Example:
        >>> import mlx.core as mx
        >>> g = mx.grad(lambda a: _inv_fn(a).sum())(mx.array([[2.0]]))
        >>> round(g.item(), 4)
        -0.25
    """
    return mx.linalg.inv(x, stream=_CPU)


@_inv_fn.vjp
def _inv_vjp(primals: Any, cotangent: Any, output: Any) -> Any:
    inverse_t = _mt(output)
    return -(inverse_t @ cotangent @ inverse_t)


# --------------------------------------------------------------------------------- solve
@mx.custom_function
def _solve_fn(a: Any, b: Any) -> Any:
    """``solve(a, b)`` for matrices ``b`` of the same batch shape as ``a``; VJPs
    ``gb = solve(a^T, g)``, ``ga = -gb x^T``."""
    return mx.linalg.solve(a, b, stream=_CPU)


@_solve_fn.vjp
def _solve_vjp(primals: Any, cotangent: Any, output: Any) -> tuple:
    a, _ = primals
    gb = mx.linalg.solve(_mt(a), cotangent, stream=_CPU)
    return -(gb @ _mt(output)), gb


# ------------------------------------------------------------------------------ cholesky
@mx.custom_function
def _cholesky_fn(x: Any) -> Any:
    """Lower Cholesky factor; VJP ``L^-T phi L^-1`` with ``phi`` the lower part of
    ``L^T g`` (off-diagonal halves mirrored, as the NumPy rule)."""
    return mx.linalg.cholesky(x, stream=_CPU)


@_cholesky_fn.vjp
def _cholesky_vjp(primals: Any, cotangent: Any, output: Any) -> Any:
    lower = output
    p = mx.tril(_mt(lower) @ cotangent)
    phi = (p + _mt(mx.tril(p, -1))) * 0.5
    left = mx.linalg.solve_triangular(_mt(lower), phi, upper=True, stream=_CPU)  # L^-T phi
    return _mt(mx.linalg.solve_triangular(_mt(lower), _mt(left), upper=True, stream=_CPU))  # (L^-T phi) L^-1


# ---------------------------------------------------------------------------------- eigh
def _eigh_grad(gw: Any, gv: Any, w: Any, v: Any) -> Any:
    n = w.shape[-1]
    eye = _eye(n, mx.bool_)
    vtgv = _mt(v) @ gv
    skew = (vtgv - _mt(vtgv)) * 0.5
    gaps = mx.where(eye, 1.0, mx.expand_dims(w, -2) - mx.expand_dims(w, -1)).astype(w.dtype)  # w_j - w_i
    inner = mx.where(eye, 0.0, skew / gaps).astype(w.dtype) + _diag_embed(gw)
    return v @ inner @ _mt(v)


@mx.custom_function
def _eigh_fn(x: Any) -> tuple:
    """``(eigenvalues, eigenvectors)`` of a symmetric matrix (lower triangle read)."""
    return mx.linalg.eigh(x, stream=_CPU)


@_eigh_fn.vjp
def _eigh_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    w, v = outputs
    return _eigh_grad(cotangents[0], cotangents[1], w, v)


@mx.custom_function
def _eigvalsh_fn(x: Any) -> Any:
    """Eigenvalues of a symmetric matrix; VJP ``V diag(g) V^T``."""
    return mx.linalg.eigvalsh(x, stream=_CPU)


@_eigvalsh_fn.vjp
def _eigvalsh_vjp(primals: Any, cotangent: Any, output: Any) -> Any:
    _, v = mx.linalg.eigh(_only(primals), stream=_CPU)
    return v @ _diag_embed(cotangent) @ _mt(v)


# ------------------------------------------------------------------------------------ qr
def _right_solve_rt(x: Any, r: Any) -> Any:
    """``x @ r^-T`` for an upper-triangular ``r``."""
    return _mt(mx.linalg.solve_triangular(r, _mt(x), upper=True, stream=_CPU))


def _qr_grad_tall(q: Any, r: Any, gq: Any, gr: Any) -> Any:
    qdq = _mt(q) @ gq
    rdr = r @ _mt(gr)
    lower = mx.tril(qdq - _mt(qdq) + rdr - _mt(rdr))
    grad_a = q @ (gr + _right_solve_rt(lower, r))
    grad_b = _right_solve_rt(gq - q @ qdq, r)
    return grad_a + grad_b


@mx.custom_function
def _qr_fn(x: Any) -> tuple:
    """Reduced QR; the NumPy rule's VJP (``m >= n`` classic, ``m < n`` split ``x = [x1 | y]``)."""
    return mx.linalg.qr(x, stream=_CPU)


@_qr_fn.vjp
def _qr_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    x = _only(primals)
    q, r = outputs
    gq, gr = cotangents
    m, n = x.shape[-2], x.shape[-1]
    if m >= n:
        return _qr_grad_tall(q, r, gq, gr)
    y = x[..., m:]
    u = r[..., :m]
    dv = gr[..., m:]
    dx = _qr_grad_tall(q, u, gq + y @ _mt(dv), gr[..., :m])
    return mx.concatenate([dx, q @ dv], axis=-1)


# ----------------------------------------------------------------------------------- svd
def _svd_grad(gu: Any, gs: Any, gvh: Any, u: Any, s: Any, vh: Any) -> Any:
    """The NumPy rule's SVD adjoint for reduced factors ``u (m, k)``, ``s (k)``, ``vh (k, n)``."""
    m, n = u.shape[-2], vh.shape[-1]
    k = s.shape[-1]
    eye = _eye(k, mx.bool_)
    s2 = mx.square(s)
    gaps = mx.where(eye, 1.0, mx.expand_dims(s2, -2) - mx.expand_dims(s2, -1)).astype(s.dtype)  # s_j^2 - s_i^2
    s_row, s_col = mx.expand_dims(s, -2), mx.expand_dims(s, -1)
    uhgu = _mt(u) @ gu
    vhgv = vh @ _mt(gvh)
    inner = (uhgu - _mt(uhgu)) * s_row + s_col * (vhgv - _mt(vhgv))
    inner = mx.where(eye, 0.0, inner / gaps).astype(s.dtype) + _diag_embed(gs)
    if m > n:
        gu_sinv = gu / s_row
        return (u @ inner + gu_sinv - u @ (_mt(u) @ gu_sinv)) @ vh
    if m < n:
        sinv_gvh = gvh / s_col
        return u @ (inner @ vh + sinv_gvh - (sinv_gvh @ _mt(vh)) @ vh)
    return u @ inner @ vh


@mx.custom_function
def _svd_fn(x: Any) -> tuple:
    """``(u, s, vh)`` with full ``u``/``vh`` (MLX's factors); only their first ``k`` columns/rows
    carry gradient."""
    return mx.linalg.svd(x, compute_uv=True, stream=_CPU)


@_svd_fn.vjp
def _svd_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    u, s, vh = outputs
    gu, gs, gvh = cotangents
    k = s.shape[-1]
    return _svd_grad(gu[..., :, :k], gs, gvh[..., :k, :], u[..., :, :k], s, vh[..., :k, :])


@mx.custom_function
def _svdvals_fn(x: Any) -> Any:
    """Singular values; VJP ``u diag(g) vh`` (reduced factors)."""
    return mx.linalg.svd(x, compute_uv=False, stream=_CPU)


@_svdvals_fn.vjp
def _svdvals_vjp(primals: Any, cotangent: Any, output: Any) -> Any:
    u, _, vh = mx.linalg.svd(_only(primals), compute_uv=True, stream=_CPU)
    k = output.shape[-1]
    return (u[..., :, :k] * mx.expand_dims(cotangent, -2)) @ vh[..., :k, :]


# ------------------------------------------------------------------- typed entry points
# (``mx.custom_function`` objects are typed as returning ``object``; these say what comes back.)


def inv(x: Any) -> Any:
    """Differentiable ``mx.linalg.inv`` (CPU)."""
    return _inv_fn(x)


def solve(a: Any, b: Any) -> Any:
    """Differentiable ``mx.linalg.solve`` (CPU; ``b`` a matrix with ``a``'s batch shape)."""
    return _solve_fn(a, b)


def cholesky(x: Any) -> Any:
    """Differentiable ``mx.linalg.cholesky`` (CPU, lower factor)."""
    return _cholesky_fn(x)


def eigh(x: Any) -> tuple[Any, Any]:
    """Differentiable ``mx.linalg.eigh`` (CPU): ``(eigenvalues, eigenvectors)``."""
    out: Any = _eigh_fn(x)  # a custom_function returns the forward's tuple
    return out[0], out[1]


def eigvalsh(x: Any) -> Any:
    """Differentiable ``mx.linalg.eigvalsh`` (CPU)."""
    return _eigvalsh_fn(x)


def qr(x: Any) -> tuple[Any, Any]:
    """Differentiable reduced ``mx.linalg.qr`` (CPU): ``(q, r)``."""
    out: Any = _qr_fn(x)  # a custom_function returns the forward's tuple
    return out[0], out[1]


def svd(x: Any) -> tuple[Any, Any, Any]:
    """Differentiable ``mx.linalg.svd`` (CPU, full ``u``/``vh``): ``(u, s, vh)``."""
    out: Any = _svd_fn(x)  # a custom_function returns the forward's tuple
    return out[0], out[1], out[2]


def svdvals(x: Any) -> Any:
    """Differentiable singular values (CPU)."""
    return _svdvals_fn(x)
