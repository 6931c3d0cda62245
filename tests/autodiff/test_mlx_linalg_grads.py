"""Gradients of ``ops.linalg`` on the MLX tape (ember/backends/mlx/_linalg_vjp.py).

MLX 0.32 has no VJP for inv, cholesky, eigh, qr, svd (and its solve fails backward); Ember
gives them the NumPy backend's rules. Each op's MLX-tape gradient is checked against
(1) the NumPy backend's tape gradient and (2) central finite differences of the NumPy
function, both in float64 (MLX computes its CPU linalg in float64 for float64 inputs),
and (3) the float32 MLX gradient against the float64 reference.

Functions of eigen/singular vectors are taken sign-invariant (``v * v``) so finite
differences see a smooth function; symmetric-input ops (eigh, eigvalsh, cholesky) read
one triangle, so they are compared along symmetric directions: the finite-difference
gradient of ``f((x + x^T) / 2)`` equals the symmetric part of the tape gradient.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import ops
from tests.tolerances import FLOAT64

mx = pytest.importorskip("mlx.core")  # a file all about the MLX backend (CONTRIBUTING.md, "Tests")
mlx_linalg = pytest.importorskip("ember.backends.mlx.linalg")

RNG = np.random.default_rng(20260)


def _spd(n):
    a = RNG.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def _general(m, n):
    a = RNG.standard_normal((m, n))
    if m == n:
        a = a + 2 * n * np.eye(n)  # well conditioned (cond < ~3): the float32 bound below holds
    return a


def _sym(x):
    return (x + np.swapaxes(x, -1, -2)) / 2


B = RNG.standard_normal((3, 2))
A_SPD = _spd(3)
W = {k: RNG.standard_normal(s) for k, s in
     {"33": (3, 3), "3": (3,), "32": (3, 2), "43": (4, 3), "34": (3, 4), "44": (4, 4), "33b": (3, 3),
      "23": (2, 3)}.items()}


def _w(key):
    return W[key]


# name -> (input, ember function of x -> scalar, numpy function of x -> scalar, symmetric?)
CASES = {
    "inv": (_general(3, 3), lambda x, t: ops.sum(ops.linalg.inv(x) * t(_w("33"))),
            lambda x: np.sum(np.linalg.inv(x) * _w("33")), False),
    "inv_batched": (np.stack([_general(3, 3), _general(3, 3)]),
                    lambda x, t: ops.sum(ops.linalg.inv(x) * t(_w("33"))),
                    lambda x: np.sum(np.linalg.inv(x) * _w("33")), False),
    "solve_a": (_general(3, 3), lambda x, t: ops.sum(ops.linalg.solve(x, t(B)) * t(_w("32"))),
                lambda x: np.sum(np.linalg.solve(x, B) * _w("32")), False),
    "solve_b": (RNG.standard_normal((3, 2)), lambda x, t: ops.sum(ops.linalg.solve(t(A_SPD), x) * t(_w("32"))),
                lambda x: np.sum(np.linalg.solve(A_SPD, x) * _w("32")), False),
    "cholesky": (_spd(3), lambda x, t: ops.sum(ops.linalg.cholesky(x) * t(_w("33"))),
                 lambda x: np.sum(np.linalg.cholesky(x) * _w("33")), True),
    "eigh": (_spd(3), lambda x, t: ops.sum(ops.linalg.eigh(x)[0] * t(_w("3")))
             + ops.sum(ops.square(ops.linalg.eigh(x)[1]) * t(_w("33"))),
             lambda x: np.sum(np.linalg.eigh(x)[0] * _w("3")) + np.sum(np.linalg.eigh(x)[1] ** 2 * _w("33")), True),
    "eigvalsh": (_spd(3), lambda x, t: ops.sum(ops.linalg.eigvalsh(x) * t(_w("3"))),
                 lambda x: np.sum(np.linalg.eigvalsh(x) * _w("3")), True),
    "qr_tall": (_general(4, 3), lambda x, t: ops.sum(ops.linalg.qr(x)[0] * t(_w("43")))
                + ops.sum(ops.linalg.qr(x)[1] * t(_w("33"))),
                lambda x: np.sum(np.linalg.qr(x)[0] * _w("43")) + np.sum(np.linalg.qr(x)[1] * _w("33")), False),
    "qr_wide": (_general(3, 4), lambda x, t: ops.sum(ops.linalg.qr(x)[0] * t(_w("33")))
                + ops.sum(ops.linalg.qr(x)[1] * t(_w("34"))),
                lambda x: np.sum(np.linalg.qr(x)[0] * _w("33")) + np.sum(np.linalg.qr(x)[1] * _w("34")), False),
    "svd": (_general(4, 3), lambda x, t: _svd_f(ops.linalg.svd(x, full_matrices=False), t, ops),
            lambda x: _svd_f(np.linalg.svd(x, full_matrices=False), np.asarray, np), False),
    "svd_full": (_general(3, 4), lambda x, t: _svd_full_f(ops.linalg.svd(x), t, ops),
                 lambda x: _svd_full_f(np.linalg.svd(x), np.asarray, np), False),
    "svdvals": (_general(3, 4), lambda x, t: ops.sum(ops.linalg.svd(x, compute_uv=False) * t(_w("3"))),
                lambda x: np.sum(np.linalg.svd(x, compute_uv=False) * _w("3")), False),
    "pinv": (_general(4, 3), lambda x, t: ops.sum(ops.linalg.pinv(x) * t(_w("34"))),
             lambda x: np.sum(np.linalg.pinv(x) * _w("34")), False),
    "lstsq": (_general(3, 3), lambda x, t: ops.sum(ops.linalg.lstsq(x, t(B)) * t(_w("32"))),
              lambda x: np.sum(np.linalg.lstsq(x, B, rcond=None)[0] * _w("32")), False),
    "det": (_general(3, 3), lambda x, t: ops.linalg.det(x), lambda x: np.linalg.det(x), False),
    "slogdet": (_general(3, 3), lambda x, t: ops.linalg.slogdet(x)[1], lambda x: np.linalg.slogdet(x)[1], False),
    "norm_nuc": (_general(4, 3), lambda x, t: ops.linalg.norm(x, ord="nuc"),
                 lambda x: np.linalg.norm(x, ord="nuc"), False),
    "norm_2": (_general(4, 3), lambda x, t: ops.linalg.norm(x, ord=2), lambda x: np.linalg.norm(x, ord=2), False),
}


def _svd_f(usv, t, lib):
    u, s, vh = usv
    return lib.sum(s * t(_w("3"))) + lib.sum(u * u * t(_w("43"))) + lib.sum(vh * vh * t(_w("33b")))


def _svd_full_f(usv, t, lib):
    u, s, vh = usv  # only the first k = 3 rows of vh (4 x 4) are unique: weigh those
    return lib.sum(s * t(_w("3"))) + lib.sum(u * u * t(_w("33"))) + lib.sum(vh[:3] * vh[:3] * t(_w("34")))


def _tape_grad(name, x, dtype):
    """The tape gradient of case ``name`` at ``x`` on the active backend, as float64 NumPy."""
    _, f, _, symmetric = CASES[name]

    def t(a):
        return ops.convert_to_tensor(np.asarray(a, dtype=dtype))

    xt = t(x)
    with ember.GradientTape() as tape:
        tape.watch(xt)
        y = f(xt, t)
    g = np.asarray(ops.convert_to_numpy(tape.gradient(y, xt)), dtype=np.float64)
    return _sym(g) if symmetric else g


def _on(backend_name, fn, *args):
    with ember.using_backend(backend_name):
        return fn(*args)


def _finite_difference(f, x, symmetric):
    h = 1e-6
    g = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[index] = h
        plus, minus = (x + e, x - e)
        if symmetric:
            plus, minus = _sym(plus), _sym(minus)
        g[index] = (f(plus) - f(minus)) / (2 * h)
    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_mlx_float64_gradient_matches_numpy_rule_and_finite_differences(mlx_backend, name):
    x, _, f_np, symmetric = CASES[name]
    got = _tape_grad(name, x, "float64")
    want = _on("numpy", _tape_grad, name, x, "float64")
    # Two float64 LAPACKs (MLX's and NumPy's) on matrices of condition < ~30; the rules are the same
    # arithmetic -> FLOAT64 (1e-10 relative allows condition numbers to ~1e3).
    np.testing.assert_allclose(got, want, **FLOAT64)
    if f_np is not None:
        fd = _finite_difference(f_np, x, symmetric)
        # Central differences with h = 1e-6: truncation h^2 |f'''| / 6 ~ 1e-12 * (cond ~ 30)^3 ~ 3e-8
        # on these unit-scale matrices; rounding u |f| / h ~ 1e-16 * 10 / 1e-6 = 1e-9 -> rtol 1e-6, atol 1e-7.
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_mlx_float32_gradient_matches_float64_reference(mlx_backend, name):
    x = CASES[name][0]
    got = _tape_grad(name, x, "float32")
    want = _on("numpy", _tape_grad, name, x, "float64")
    # float32 LAPACK on matrices of condition kappa <= ~30: a factorisation is within ~n kappa u of exact
    # (n = 4, u = 6e-8 -> 7e-6) and its adjoint (solves, gap divisions) multiplies that by another
    # kappa -> ~2e-4 relative; atol 2e-4 for entries that cancel to ~0 from unit-scale terms.
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_plain_mlx_grad_differentiates_the_backend_functions(mlx_backend):
    x = _general(3, 3)
    g = mx.grad(lambda a: mx.sum(mlx_linalg.inv(a)))(mx.array(x))
    y = np.linalg.inv(x)
    want = -(y.T @ np.ones((3, 3)) @ y.T)  # d sum(inv(x)) = -inv^T 1 inv^T
    # float32 inverse of a matrix of condition < 3: 3 * 3 * u = 5e-7 relative per factor, twice -> 1e-6 ->
    # FLOAT32 does not cover the product of three float32 matrices' roundings; 1e-5 with atol 1e-6 does.
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-6)


def test_complete_qr_with_more_rows_is_not_differentiable(mlx_backend):
    x = ops.convert_to_tensor(_general(4, 3))
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.linalg.qr(x, mode="complete")[0])
    with pytest.raises(NotImplementedError, match="linalg.qr"):
        tape.gradient(y, x)
