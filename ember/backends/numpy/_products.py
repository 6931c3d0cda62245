"""NumPy backend: matrix products (re-exported by ``core`` and ``linalg``).

float16/bfloat16 operands are multiplied in float32 and rounded back once (NumPy's
float16 matmul accumulates in float16, and ml_dtypes' bfloat16 matmul returns float32).
"""

from __future__ import annotations

import numpy as np

from ember.backends.numpy._base import F32, HALF, ND, binary, out, promote_all


def _pair(x1, x2):
    x1, x2 = binary(x1, x2)
    if x1.dtype in HALF:
        return x1.astype(F32), x2.astype(F32), x1.dtype
    return x1, x2, None


def _finish(r, final):
    r = out(r)
    return r if final is None else r.astype(final)


_HALF_SET = frozenset(HALF)
_matmul = np.matmul


def matmul(x1, x2):
    if type(x1) is ND and type(x2) is ND and x1.dtype is x2.dtype and x1.dtype not in _HALF_SET:
        if x1.ndim and x2.ndim:  # the common case, with no conversion to do
            try:
                r = _matmul(x1, x2)
            except ValueError:
                raise ValueError(f"matmul: contracted axes differ: {x1.shape} @ {x2.shape}") from None
            return r if type(r) is ND else out(r)
    x1, x2, final = _pair(x1, x2)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError(f"matmul: inputs must have at least one axis, received shapes {x1.shape} and {x2.shape}")
    try:
        return _finish(np.matmul(x1, x2), final)
    except ValueError:
        raise ValueError(f"matmul: contracted axes differ: {tuple(x1.shape)} @ {tuple(x2.shape)}") from None


def dot(x1, x2):
    x1, x2, final = _pair(x1, x2)
    return _finish(np.dot(x1, x2), final)


def tensordot(x1, x2, axes=2):
    x1, x2, final = _pair(x1, x2)
    if not isinstance(axes, int):
        axes = [list(a) if isinstance(a, (list, tuple)) else int(a) for a in axes]
    return _finish(np.tensordot(x1, x2, axes=axes), final)


def einsum(subscripts, *operands):
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a string, received {subscripts!r}")
    arrays = promote_all(operands, "operands")
    final = None
    if arrays and arrays[0].dtype in HALF:
        final = arrays[0].dtype
        arrays = [a.astype(F32) for a in arrays]
    # With several operands let NumPy pick a contraction order (and BLAS) for speed.
    return _finish(np.einsum(subscripts, *arrays, optimize=len(arrays) > 1), final)


def outer(x1, x2):
    x1, x2, final = _pair(x1, x2)
    return _finish(np.outer(x1, x2), final)
