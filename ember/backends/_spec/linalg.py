"""The op protocol for ``ember.ops.linalg``: one stub per op (see :mod:`ember.backends._spec`)."""

# ruff: noqa: ARG001  (stubs: the signature is the specification)

from __future__ import annotations


class linalg:
    """``ember.ops.linalg``: NumPy ``linalg`` semantics, batched over leading axes."""

    def matmul(x1, x2):
        """Matrix product.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.matmul([[1.0, 2.0]], [[3.0], [4.0]])).tolist()
            [[11.0]]
        """

    def dot(x1, x2):
        """NumPy's ``dot``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.dot([1.0, 2.0], [3.0, 4.0])).tolist()
            11.0
        """

    def tensordot(x1, x2, axes=2):
        """NumPy's ``tensordot``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.tensordot([1.0, 2.0], [3.0, 4.0], axes=1)).tolist()
            11.0
        """

    def einsum(subscripts, *operands):
        """Einstein summation.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.einsum('ii->', [[1.0, 2.0], [3.0, 4.0]])).tolist()
            5.0
        """

    def solve(a, b):
        """Solution of ``a @ x = b``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.solve([[2.0, 1.0], [1.0, 2.0]], [3.0, 3.0])).astype(float).round(4).tolist()
            [1.0, 1.0]
        """

    def inv(x):
        """Matrix inverse.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.inv([[2.0, 1.0], [1.0, 2.0]])).astype(float).round(4).tolist()
            [[0.6667, -0.3333], [-0.3333, 0.6667]]
        """

    def svd(x, full_matrices=True, compute_uv=True):
        """``(u, s, vh)`` or just ``s``; singular values descending.

        Example:
            >>> from ember import ops
            >>> s = ops.linalg.svd([[2.0, 1.0], [1.0, 2.0]], compute_uv=False)
            >>> ops.to_numpy(s).astype(float).round(4).tolist()
            [3.0, 1.0]
        """

    def eigh(x):
        """``(eigenvalues ascending, eigenvectors)`` of a symmetric/Hermitian matrix.

        Example:
            >>> from ember import ops
            >>> w, v = ops.linalg.eigh([[2.0, 1.0], [1.0, 2.0]])
            >>> ops.to_numpy(w).astype(float).round(4).tolist()
            [1.0, 3.0]
            >>> ops.shape(v)
            (2, 2)
        """

    def eig(x):
        """``(eigenvalues, eigenvectors)`` of a general square matrix (complex results).

        Example:
            >>> from ember import ops
            >>> w, v = ops.linalg.eig([[2.0, 1.0], [1.0, 2.0]])
            >>> sorted(ops.to_numpy(w).real.astype(float).round(4).tolist())
            [1.0, 3.0]
        """

    def eigvals(x):
        """Eigenvalues of a general square matrix (complex).

        Example:
            >>> from ember import ops
            >>> sorted(ops.to_numpy(ops.linalg.eigvals([[2.0, 0.0], [0.0, 3.0]])).real.astype(float).round(4).tolist())
            [2.0, 3.0]
        """

    def eigvalsh(x):
        """Eigenvalues of a symmetric matrix, ascending.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.eigvalsh([[2.0, 1.0], [1.0, 2.0]])).astype(float).round(4).tolist()
            [1.0, 3.0]
        """

    def det(x):
        """Determinant.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.det([[2.0, 1.0], [1.0, 2.0]])).astype(float).round(4).tolist()
            3.0
        """

    def slogdet(x):
        """``(sign, log|det|)``.

        Example:
            >>> from ember import ops
            >>> sign, logdet = ops.linalg.slogdet([[2.0, 1.0], [1.0, 2.0]])
            >>> float(ops.to_numpy(sign)), round(float(ops.to_numpy(logdet)), 4)
            (1.0, 1.0986)
        """

    def norm(x, ord=None, axis=None, keepdims=False):
        """Vector or matrix norm, NumPy's ``ord`` values.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.norm([3.0, 4.0])).astype(float).round(4).tolist()
            5.0
            >>> ops.to_numpy(ops.linalg.norm([[1.0, 2.0], [2.0, 4.0]], ord='fro')).astype(float).round(4).tolist()
            5.0
        """

    def qr(x, mode="reduced"):
        """``(q, r)``; ``mode`` is ``"reduced"`` or ``"complete"``.

        Example:
            >>> from ember import ops
            >>> q, rr = ops.linalg.qr([[2.0, 1.0], [1.0, 2.0]])
            >>> ops.to_numpy(ops.matmul(q, rr)).astype(float).round(4).tolist()
            [[2.0, 1.0], [1.0, 2.0]]
        """

    def cholesky(x):
        """Lower-triangular Cholesky factor.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.cholesky([[4.0, 2.0], [2.0, 5.0]])).astype(float).round(4).tolist()
            [[2.0, 0.0], [1.0, 2.0]]
        """

    def lstsq(a, b, rcond=None):
        """Least-squares solution ``x`` of ``a @ x ~= b`` (solution only).

        Example:
            >>> from ember import ops
            >>> solution = ops.linalg.lstsq([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [1.0, 2.0, 3.0])
            >>> ops.to_numpy(solution).astype(float).round(4).tolist()
            [1.0, 2.0]
        """

    def pinv(x):
        """Moore-Penrose pseudo-inverse.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.pinv([[2.0, 0.0], [0.0, 4.0]])).astype(float).round(4).tolist()
            [[0.5, 0.0], [0.0, 0.25]]
        """

    def diag(x, k=0):
        """Diagonal of a matrix, or a matrix with vector ``x`` on its diagonal.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.diag([1, 2])).tolist()
            [[1, 0], [0, 2]]
            >>> ops.to_numpy(ops.linalg.diag([[1, 2], [3, 4]])).tolist()
            [1, 4]
        """

    def diagonal(x, offset=0, axis1=0, axis2=1):
        """NumPy's ``diagonal``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.diagonal([[1, 2], [3, 4]], offset=1)).tolist()
            [2]
        """

    def trace(x, offset=0, axis1=0, axis2=1):
        """Sum along a diagonal.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linalg.trace([[1, 2], [3, 4]])).tolist()
            5
        """
