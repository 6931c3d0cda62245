"""Products and ``ops.linalg`` against NumPy float64 on well-conditioned float32 inputs."""

from __future__ import annotations

import numpy as np
import pytest

from ember import ops
from tests.helpers import assert_close, assert_equal, f32, f64, native


def _rng(seed):
    return np.random.default_rng(seed)


def well_conditioned(shape, seed=0):
    """float32 matrices ``U diag(s) V^T`` with singular values in [1, 3] (condition number <= 3)."""
    rng = _rng(seed)
    *batch, m, n = shape
    k = min(m, n)
    u, _ = np.linalg.qr(rng.standard_normal((*batch, m, m)))
    v, _ = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    s = rng.uniform(1.0, 3.0, (*batch, k))
    sigma = np.zeros((*batch, m, n))
    idx = np.arange(k)
    sigma[..., idx, idx] = s
    return f32(u @ sigma @ np.swapaxes(v, -1, -2))


def spd(shape, seed=0):
    """Symmetric positive definite float32 matrices with eigenvalues in [1, 3]."""
    rng = _rng(seed)
    *batch, n, _ = shape
    q, _ = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    w = rng.uniform(1.0, 3.0, (*batch, n))
    a = (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)
    return f32((a + np.swapaxes(a, -1, -2)) / 2)


def _mT(x):
    return np.swapaxes(x, -1, -2)


def _np(x):
    return f64(ops.to_numpy(x))


# Float32 factorizations are backward stable: residuals (A - QR, A - U S V^T, A V - V W) and Q^T Q - I lie
# within p(n) eps ||A||_2 (LAPACK Users' Guide, "Accuracy and stability": p(n) modest, taken as 1 there;
# here p(n) <= n <= 5, eps = 2**-23, ||A||_2 <= 3.05): 5 * 1.2e-7 * 3.05 = 1.8e-6, entrywise too. Eigenvalues
# of the nonsymmetric matrices move by that times their eigenvector matrix's condition (<= 1.4, Bauer-Fike):
# 2.6e-6. Margin 4 -> 1e-5, absolute; the same relative on the large entries.
RESIDUAL = {"rtol": 1e-5, "atol": 1e-5}


NAMESPACES = ["core", "linalg"]


def _ns(name):
    return ops if name == "core" else ops.linalg


# --------------------------------------------------------------------- products


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize(("a_shape", "b_shape"), [((3, 4), (4, 2)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)),
                                                  ((2, 1, 3, 4), (5, 4, 2)), ((2, 3, 4), (4, 3)), ((0, 4), (4, 2))])
def test_matmul(backend, namespace, a_shape, b_shape):
    rng = _rng(1)
    a, b = f32(rng.standard_normal(a_shape)), f32(rng.standard_normal(b_shape))
    assert_close(_ns(namespace).matmul(native(a), native(b)), f64(a) @ f64(b), dtype="float32")


def test_matmul_dtypes(backend):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.arange(6, dtype=np.int32).reshape(3, 2)
    assert_equal(ops.matmul(native(a), native(b)), a @ b, dtype="int32")
    assert_close(ops.matmul(native(a), native(f32(b))), f64(a) @ f64(b), dtype="float32")
    assert_close(ops.matmul(native(a.astype(np.float64)), native(b.astype(np.float64))), f64(a) @ f64(b),
                 dtype="float64")


def test_matmul_shape_mismatch_is_value_error(backend):
    with pytest.raises(ValueError):
        ops.matmul(native(np.ones((2, 3), np.float32)), native(np.ones((4, 2), np.float32)))


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize(("a_shape", "b_shape"), [((4,), (4,)), ((3, 4), (4, 2)), ((3, 4), (4,)), ((4,), (4, 3)),
                                                  ((2, 3, 4), (5, 4, 6)), ((), (3, 2)), ((2, 3), ())])
def test_dot(backend, namespace, a_shape, b_shape):
    rng = _rng(2)
    a, b = f32(rng.standard_normal(a_shape)), f32(rng.standard_normal(b_shape))
    assert_close(_ns(namespace).dot(native(a), native(b)), np.dot(f64(a), f64(b)), dtype="float32")


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize(("a_shape", "b_shape", "axes"), [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1),
                                                          ((2, 3), (4,), 0),
                                                          ((3, 2, 4), (2, 3, 5), ([1, 0], [0, 1])),
                                                          ((3, 4), (4, 3), ((1,), (0,)))])
def test_tensordot(backend, namespace, a_shape, b_shape, axes):
    rng = _rng(3)
    a, b = f32(rng.standard_normal(a_shape)), f32(rng.standard_normal(b_shape))
    assert_close(_ns(namespace).tensordot(native(a), native(b), axes=axes), np.tensordot(f64(a), f64(b), axes=axes),
                 dtype="float32")


EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 2)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
]


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize(("subscripts", "shapes"), EINSUM, ids=[s for s, _ in EINSUM])
def test_einsum(backend, namespace, subscripts, shapes):
    rng = _rng(4)
    operands = [f32(rng.standard_normal(shape)) for shape in shapes]
    expected = np.einsum(subscripts, *[f64(o) for o in operands])
    assert_close(_ns(namespace).einsum(subscripts, *[native(o) for o in operands]), expected, dtype="float32")


@pytest.mark.parametrize(("a_shape", "b_shape"), [((3,), (4,)), ((2, 2), (3,)), ((1,), (1,))])
def test_outer(backend, a_shape, b_shape):
    rng = _rng(5)
    a, b = f32(rng.standard_normal(a_shape)), f32(rng.standard_normal(b_shape))
    assert_close(ops.outer(native(a), native(b)), np.outer(f64(a), f64(b)), dtype="float32")


# ------------------------------------------------------------------- solvers


@pytest.mark.parametrize(("a_shape", "b_shape"), [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 3)),
                                                  ((2, 3, 3), (2, 3, 1))])
def test_solve(backend, a_shape, b_shape):
    a = well_conditioned(a_shape, seed=6)
    b = f32(_rng(7).standard_normal(b_shape))
    assert_close(ops.linalg.solve(native(a), native(b)), np.linalg.solve(f64(a), f64(b)), dtype="float32")


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4), (2, 2, 3, 3)])
def test_inv(backend, shape):
    a = well_conditioned(shape, seed=8)
    assert_close(ops.linalg.inv(native(a)), np.linalg.inv(f64(a)), dtype="float32")


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1)])
def test_det_slogdet(backend, shape):
    a = well_conditioned(shape, seed=9)
    a[..., 0, :] *= -1  # flip some signs of the determinant
    assert_close(ops.linalg.det(native(a)), np.linalg.det(f64(a)), dtype="float32")
    sign, logdet = ops.linalg.slogdet(native(a))
    ref_sign, ref_logdet = np.linalg.slogdet(f64(a))
    assert_close(sign, ref_sign, dtype="float32")
    assert_close(logdet, ref_logdet, dtype="float32")


def test_det_of_singular_matrix_is_zero(backend):
    a = f32([[1.0, 2.0], [2.0, 4.0]])
    assert_close(ops.linalg.det(native(a)), 0.0, dtype="float32")


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_cholesky(backend, shape):
    a = spd(shape, seed=10)
    lower = ops.linalg.cholesky(native(a))
    assert_close(lower, np.linalg.cholesky(f64(a)), dtype="float32")
    got = _np(lower)
    np.testing.assert_array_equal(np.triu(got, 1), 0)


@pytest.mark.parametrize(("a_shape", "b_shape"), [((6, 3), (6,)), ((6, 3), (6, 2)), ((3, 3), (3, 1))])
def test_lstsq(backend, a_shape, b_shape):
    a = well_conditioned(a_shape, seed=11)
    b = f32(_rng(12).standard_normal(b_shape))
    expected = np.linalg.lstsq(f64(a), f64(b), rcond=None)[0]
    assert_close(ops.linalg.lstsq(native(a), native(b)), expected, dtype="float32")


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 4, 3)])
def test_pinv(backend, shape):
    a = well_conditioned(shape, seed=13)
    assert_close(ops.linalg.pinv(native(a)), np.linalg.pinv(f64(a)), dtype="float32")


# ------------------------------------------------------------- decompositions


@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 4, 3)])
def test_svd(backend, shape, full_matrices):
    a = well_conditioned(shape, seed=14)
    u, s, vh = ops.linalg.svd(native(a), full_matrices=full_matrices)
    m, n = shape[-2:]
    k = min(m, n)
    expected_s = np.linalg.svd(f64(a), compute_uv=False)
    assert_close(s, expected_s, dtype="float32")
    assert ops.dtype(u) == ops.dtype(vh) == "float32"
    u, s, vh = _np(u), _np(s), _np(vh)
    assert u.shape[-2:] == ((m, m) if full_matrices else (m, k))
    assert vh.shape[-2:] == ((n, n) if full_matrices else (k, n))
    # signs of singular vectors are arbitrary: compare the reconstruction and orthonormality
    reconstruction = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
    np.testing.assert_allclose(reconstruction, f64(a), **RESIDUAL)
    np.testing.assert_allclose(_mT(u) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2),
                               atol=RESIDUAL["atol"])
    np.testing.assert_allclose(vh @ _mT(vh), np.broadcast_to(np.eye(vh.shape[-2]), vh.shape[:-2] + (vh.shape[-2],) * 2),
                               atol=RESIDUAL["atol"])


def test_svd_values_only(backend):
    a = well_conditioned((2, 5, 3), seed=15)
    s = ops.linalg.svd(native(a), compute_uv=False)
    assert_close(s, np.linalg.svd(f64(a), compute_uv=False), dtype="float32")
    assert np.all(np.diff(_np(s), axis=-1) <= 0), "singular values must be descending"


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1)])
def test_eigh(backend, shape):
    a = spd(shape, seed=16) - 2 * np.eye(shape[-1], dtype=np.float32)  # some negative eigenvalues
    w, v = ops.linalg.eigh(native(a))
    expected = np.linalg.eigvalsh(f64(a))
    assert_close(w, expected, dtype="float32")
    assert ops.dtype(v) == "float32"
    w, v = _np(w), _np(v)
    # eigenvectors are defined up to sign: check A v = w v and orthonormality
    np.testing.assert_allclose(f64(a) @ v, v * w[..., None, :], atol=RESIDUAL["atol"])
    np.testing.assert_allclose(_mT(v) @ v, np.broadcast_to(np.eye(shape[-1]), shape), atol=RESIDUAL["atol"])
    assert_close(ops.linalg.eigvalsh(native(a)), expected, dtype="float32")


def _sorted_complex(w):
    w = np.asarray(w)
    order = np.lexsort((np.round(w.imag, 4), np.round(w.real, 4)), axis=-1)
    return np.take_along_axis(w, order, axis=-1)


EIG_MATRICES = {
    "real spectrum": lambda: f32(np.linalg.solve(well_conditioned((3, 3), seed=17).astype(np.float64),
                                                 np.diag([3.0, -1.0, 0.5]) @ well_conditioned((3, 3), seed=17))),
    "complex pair": lambda: f32([[1.0, -2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 3.0]]),
    "batched": lambda: np.stack([f32([[2.0, 1.0], [0.0, -1.0]]), f32([[0.0, -1.0], [1.0, 0.0]])]),
}


@pytest.mark.parametrize("label", list(EIG_MATRICES))
def test_eig_eigvals(backend, label):
    a = EIG_MATRICES[label]()
    expected = _sorted_complex(np.linalg.eigvals(f64(a)))
    w = ops.linalg.eigvals(native(a))
    assert ops.dtype(w) == "complex64"
    np.testing.assert_allclose(_sorted_complex(ops.to_numpy(w)), expected, **RESIDUAL)
    w, v = ops.linalg.eig(native(a))
    assert ops.dtype(w) == ops.dtype(v) == "complex64"
    w, v = ops.to_numpy(w).astype(np.complex128), ops.to_numpy(v).astype(np.complex128)
    np.testing.assert_allclose(_sorted_complex(w), expected, **RESIDUAL)
    np.testing.assert_allclose(f64(a) @ v, v * w[..., None, :], atol=RESIDUAL["atol"])


@pytest.mark.parametrize("mode", ["reduced", "complete"])
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 5, 3)])
def test_qr(backend, shape, mode):
    a = well_conditioned(shape, seed=18)
    q, r = ops.linalg.qr(native(a), mode=mode)
    assert ops.dtype(q) == ops.dtype(r) == "float32"
    ref_q, ref_r = np.linalg.qr(f64(a), mode=mode)
    q, r = _np(q), _np(r)
    assert q.shape == ref_q.shape and r.shape == ref_r.shape
    np.testing.assert_allclose(q @ r, f64(a), **RESIDUAL)
    np.testing.assert_array_equal(np.tril(r, -1), 0)  # exact: R is returned triangular
    eye = np.eye(q.shape[-1])
    np.testing.assert_allclose(_mT(q) @ q, np.broadcast_to(eye, q.shape[:-2] + eye.shape), atol=RESIDUAL["atol"])


# --------------------------------------------------------------------- norms


VECTOR_ORDS = [None, 1, 2, np.inf, -np.inf, 3]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norm(backend, ord, keepdims):
    x = f32(_rng(19).standard_normal((3, 5)))
    assert_close(ops.linalg.norm(native(x[0]), ord=ord, keepdims=keepdims),
                 np.linalg.norm(f64(x[0]), ord=ord, keepdims=keepdims), dtype="float32")
    for axis in (1, -1, 0):
        assert_close(ops.linalg.norm(native(x), ord=ord, axis=axis, keepdims=keepdims),
                     np.linalg.norm(f64(x), ord=ord, axis=axis, keepdims=keepdims), dtype="float32")


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norm(backend, ord, keepdims):
    x = f32(_rng(20).standard_normal((2, 3, 4)))
    assert_close(ops.linalg.norm(native(x[0]), ord=ord, keepdims=keepdims),
                 np.linalg.norm(f64(x[0]), ord=ord, keepdims=keepdims), dtype="float32")
    for axis in ((1, 2), (-1, -2), (0, 2)):
        assert_close(ops.linalg.norm(native(x), ord=ord, axis=axis, keepdims=keepdims),
                     np.linalg.norm(f64(x), ord=ord, axis=axis, keepdims=keepdims), dtype="float32")


def test_norm_default_flattens(backend):
    x = f32(_rng(21).standard_normal((2, 3, 4)))
    assert_close(ops.linalg.norm(native(x)), np.linalg.norm(f64(x)), dtype="float32")


# -------------------------------------------------------- diagonals and trace


@pytest.mark.parametrize("k", [0, 1, -1, 2])
def test_diag(backend, k):
    v = f32([1.0, 2.0, 3.0])
    assert_equal(ops.linalg.diag(native(v), k=k), np.diag(v, k=k), dtype="float32")
    m = f32(np.arange(12).reshape(3, 4))
    assert_equal(ops.linalg.diag(native(m), k=k), np.diag(m, k=k), dtype="float32")


@pytest.mark.parametrize(("offset", "axis1", "axis2"), [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (0, 1, 2), (1, 0, 2),
                                                        (0, -1, -2), (2, 2, 0)])
def test_diagonal_and_trace(backend, offset, axis1, axis2):
    x = f32(np.arange(60).reshape(3, 4, 5))
    assert_equal(ops.linalg.diagonal(native(x), offset=offset, axis1=axis1, axis2=axis2),
                 np.diagonal(x, offset=offset, axis1=axis1, axis2=axis2), dtype="float32")
    assert_close(ops.linalg.trace(native(x), offset=offset, axis1=axis1, axis2=axis2),
                 np.trace(f64(x), offset=offset, axis1=axis1, axis2=axis2), dtype="float32")


def test_diagonal_trace_defaults_2d(backend):
    m = f32(np.arange(12).reshape(3, 4))
    assert_equal(ops.linalg.diagonal(native(m)), np.diagonal(m), dtype="float32")
    assert_close(ops.linalg.trace(native(m)), np.trace(f64(m)), dtype="float32")
    i = np.arange(9, dtype=np.int32).reshape(3, 3)
    assert_equal(ops.linalg.trace(native(i)), np.array(12), dtype="int32")


# ------------------------------------------------------------------ float64


def test_float64_paths_are_float64_precise(backend):
    a = f64(well_conditioned((4, 4), seed=22))
    b = f64(_rng(23).standard_normal((4, 2)))
    s = f64(spd((4, 4), seed=24))
    tol = dict(rtol=1e-10, atol=1e-10, dtype="float64")
    assert_close(ops.linalg.inv(native(a)), np.linalg.inv(a), **tol)
    assert_close(ops.linalg.solve(native(a), native(b)), np.linalg.solve(a, b), **tol)
    assert_close(ops.linalg.det(native(a)), np.linalg.det(a), **tol)
    assert_close(ops.linalg.cholesky(native(s)), np.linalg.cholesky(s), **tol)
    assert_close(ops.linalg.eigvalsh(native(s)), np.linalg.eigvalsh(s), **tol)
    assert_close(ops.linalg.svd(native(a), compute_uv=False), np.linalg.svd(a, compute_uv=False), **tol)
    assert_close(ops.matmul(native(a), native(b)), a @ b, **tol)
