"""The op protocol for ``ember.ops.linalg``: one stub per op (see :mod:`ember.backends._spec`)."""

# ruff: noqa: ARG001  (stubs: the signature is the specification)

from __future__ import annotations


class linalg:
    """``ember.ops.linalg``: NumPy ``linalg`` semantics, batched over leading axes."""

    def matmul(x1, x2):
        """Matrix product."""

    def dot(x1, x2):
        """NumPy's ``dot``."""

    def tensordot(x1, x2, axes=2):
        """NumPy's ``tensordot``."""

    def einsum(subscripts, *operands):
        """Einstein summation."""

    def solve(a, b):
        """Solution of ``a @ x = b``."""

    def inv(x):
        """Matrix inverse."""

    def svd(x, full_matrices=True, compute_uv=True):
        """``(u, s, vh)`` or just ``s``; singular values descending."""

    def eigh(x):
        """``(eigenvalues ascending, eigenvectors)`` of a symmetric/Hermitian matrix."""

    def eig(x):
        """``(eigenvalues, eigenvectors)`` of a general square matrix (complex results)."""

    def eigvals(x):
        """Eigenvalues of a general square matrix (complex)."""

    def eigvalsh(x):
        """Eigenvalues of a symmetric matrix, ascending."""

    def det(x):
        """Determinant."""

    def slogdet(x):
        """``(sign, log|det|)``."""

    def norm(x, ord=None, axis=None, keepdims=False):
        """Vector or matrix norm, NumPy's ``ord`` values."""

    def qr(x, mode="reduced"):
        """``(q, r)``; ``mode`` is ``"reduced"`` or ``"complete"``."""

    def cholesky(x):
        """Lower-triangular Cholesky factor."""

    def lstsq(a, b, rcond=None):
        """Least-squares solution ``x`` of ``a @ x ~= b`` (solution only)."""

    def pinv(x):
        """Moore-Penrose pseudo-inverse."""

    def diag(x, k=0):
        """Diagonal of a matrix, or a matrix with vector ``x`` on its diagonal."""

    def diagonal(x, offset=0, axis1=0, axis2=1):
        """NumPy's ``diagonal``."""

    def trace(x, offset=0, axis1=0, axis2=1):
        """Sum along a diagonal."""
