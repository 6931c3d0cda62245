"""Singular and non-positive-definite inputs raise NumPy's ``LinAlgError`` on every backend
(MLX returned a partial Cholesky factor and raised a RuntimeError only when a result was read)."""

from __future__ import annotations

import numpy as np
import pytest

from ember import ops
from tests.tolerances import FLOAT32

SINGULAR = [np.zeros((2, 2)), np.array([[1.0, 2.0], [2.0, 4.0]]), np.stack([np.eye(3), np.zeros((3, 3))])]
NOT_POSITIVE_DEFINITE = [-np.eye(2), np.array([[1.0, 2.0], [2.0, 1.0]]), np.stack([np.eye(3), -np.eye(3)]),
                         np.diag([4.0, 1.0, -1e-3])]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index", range(len(SINGULAR)))
def test_inverse_and_solve_of_a_singular_matrix_raise(backend, dtype, index):
    a = SINGULAR[index].astype(dtype)
    with pytest.raises(np.linalg.LinAlgError):
        ops.linalg.inv(a)
    with pytest.raises(np.linalg.LinAlgError):
        ops.linalg.solve(a, np.ones(a.shape[:-1] + (1,), dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("index", range(len(NOT_POSITIVE_DEFINITE)))
def test_cholesky_of_a_non_positive_definite_matrix_raises(backend, dtype, index):
    with pytest.raises(np.linalg.LinAlgError):
        ops.linalg.cholesky(NOT_POSITIVE_DEFINITE[index].astype(dtype))


def test_valid_inputs_still_factor(backend):
    a = np.array([[4.0, 2.0, 0.6], [2.0, 3.0, 0.4], [0.6, 0.4, 2.0]])
    factor = ops.to_numpy(ops.linalg.cholesky(a.astype("float32"))).astype(np.float64)
    np.testing.assert_allclose(factor, np.linalg.cholesky(a), **FLOAT32)  # 3 x 3, condition number ~4
    inverse = ops.to_numpy(ops.linalg.inv(a.astype("float32"))).astype(np.float64)
    np.testing.assert_allclose(inverse, np.linalg.inv(a), **FLOAT32)
