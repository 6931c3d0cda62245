"""Matrix products of the MLX backend (re-exported by :mod:`.core` and :mod:`.linalg`).

MLX's ``matmul`` accepts floating types only: integer and bool products are computed
in float64 on the CPU (exact below 2**53) and cast back.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import mlx.core as mx

from ember.backends.mlx._base import (
    INEXACT,
    A,
    binary_same,
    normalize_axis,
    promote,
)

_CPU = mx.cpu

# ------------------------------------------------------------------------------- products


def _exact(function, arrays):
    """Run a product on inputs MLX's matmul rejects (ints, bool) in float64 on the CPU, cast back."""
    dtype = arrays[0].dtype
    if dtype in INEXACT:
        return function(*arrays)
    work = [mx.astype(a, mx.float64, stream=_CPU) for a in arrays]
    out = function(*work, stream=_CPU)
    if dtype == mx.bool_:
        return mx.not_equal(out, 0, stream=_CPU)
    return mx.astype(out, dtype, stream=_CPU)


_matmul = mx.matmul


def matmul(x1, x2):
    if type(x1) is A and type(x2) is A:
        dtype = x1.dtype
        if dtype == x2.dtype and dtype in INEXACT:
            return _matmul(x1, x2)  # MLX checks the shapes (ValueError naming both)
    x1, x2 = binary_same(x1, x2)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError(f"matmul: inputs must have at least one axis, received shapes {tuple(x1.shape)} and "
                         f"{tuple(x2.shape)}")
    k1 = x1.shape[-1]
    k2 = x2.shape[-2] if x2.ndim > 1 else x2.shape[0]
    if k1 != k2:
        raise ValueError(f"matmul: contracted axes differ: {tuple(x1.shape)} @ {tuple(x2.shape)}")
    return _exact(_matmul, (x1, x2))


def dot(x1, x2):
    x1, x2 = binary_same(x1, x2)
    if x1.ndim == 0 or x2.ndim == 0:
        return mx.multiply(x1, x2)
    if x2.ndim == 1 or x1.ndim == 1 and x2.ndim <= 2:
        return matmul(x1, x2)
    if x1.shape[-1] != x2.shape[-2]:
        raise ValueError(f"dot: shapes {tuple(x1.shape)} and {tuple(x2.shape)} are not aligned")
    return _exact(lambda a, b, stream=None: mx.tensordot(a, b, axes=[[a.ndim - 1], [b.ndim - 2]], stream=stream),
                  (x1, x2))


def tensordot(x1, x2, axes=2):
    x1, x2 = binary_same(x1, x2)
    spec: list[Sequence[int]]  # the axes of x1, then of x2, summed over pairwise
    if isinstance(axes, int):
        if axes < 0 or axes > builtins.min(x1.ndim, x2.ndim):
            raise ValueError(f"tensordot: axes={axes} is out of range for ranks {x1.ndim} and {x2.ndim}")
        spec = [list(range(x1.ndim - axes, x1.ndim)), list(range(axes))]
    else:
        first, second = axes
        first = [first] if isinstance(first, int) else list(first)
        second = [second] if isinstance(second, int) else list(second)
        first = [normalize_axis(a, x1.ndim, "axes") for a in first]
        second = [normalize_axis(a, x2.ndim, "axes") for a in second]
        if len(first) != len(second) or builtins.any(x1.shape[a] != x2.shape[b] for a, b in zip(first, second)):
            raise ValueError(f"tensordot: axes {axes} do not pair equal lengths of {tuple(x1.shape)} and "
                             f"{tuple(x2.shape)}")
        spec = [first, second]
    return _exact(lambda a, b, stream=None: mx.tensordot(a, b, axes=spec, stream=stream), (x1, x2))


def einsum(subscripts, *operands):
    arrays = promote(operands, "einsum: operands")
    return _exact(lambda *xs, stream=None: mx.einsum(subscripts, *xs, stream=stream), arrays)


def outer(x1, x2):
    x1, x2 = binary_same(x1, x2)
    return mx.multiply(mx.reshape(x1, (-1, 1)), mx.reshape(x2, (1, -1)))
