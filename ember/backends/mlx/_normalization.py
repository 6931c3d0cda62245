"""``nn.layer_norm`` on MLX: ``mx.fast.layer_norm``.

The fused kernel normalizes the last axis: several trailing axes are flattened into one (a
reshape), other axes are moved to the end first (a transpose) and back after. float64 runs the unfused
computation in MLX ops (the fused kernel is float32-grade there: ~2e-7 relative). Only
``mx`` functions, no ``mx.array`` operators or methods (which a recording tape patches).
``nn.fused_batch_norm`` has no MLX kernel (``mx.fast`` has none): MLX binds the composite.

Example:
    >>> import mlx.core as mx
    >>> from ember.backends.mlx._normalization import layer_norm
    >>> layer_norm(mx.array([[1.0, 3.0]]), epsilon=0.0).tolist()
    [[-1.0, 1.0]]
"""

from __future__ import annotations

import math

import mlx.core as mx

from ember.backends._normalization_checks import check_layer_norm
from ember.backends.mlx._base import name_of, to_mx

_FUSED_DTYPES = (mx.float32, mx.float16, mx.bfloat16)


def _param(value, name: str, dtype) -> mx.array | None:
    if value is None:
        return None
    a = to_mx(value, name)
    return a if a.dtype == dtype else mx.astype(a, dtype)


def _unfused(x: mx.array, g, b, axes: tuple[int, ...], epsilon: float) -> mx.array:
    """The reference computation in MLX ops (float64)."""
    mean = mx.mean(x, axis=axes, keepdims=True)
    variance = mx.var(x, axis=axes, keepdims=True)
    full = tuple(x.shape[a] if a in axes else 1 for a in range(x.ndim))
    inv = mx.rsqrt(mx.add(variance, epsilon))
    if g is not None:
        inv = mx.multiply(inv, mx.reshape(g, full))
    offset = mx.negative(mx.multiply(mean, inv))
    if b is not None:
        offset = mx.add(offset, mx.reshape(b, full))
    return mx.add(mx.multiply(x, inv), offset)


def layer_norm(x, gamma=None, beta=None, axis=-1, epsilon=1e-3):
    a = to_mx(x, "x")
    g, b = (None if p is None else to_mx(p, name) for p, name in ((gamma, "gamma"), (beta, "beta")))
    axes = check_layer_norm(tuple(a.shape), axis, None if g is None else tuple(g.shape),
                            None if b is None else tuple(b.shape), epsilon, name_of(a))
    g, b = _param(g, "gamma", a.dtype), _param(b, "beta", a.dtype)
    if a.dtype not in _FUSED_DTYPES:
        return _unfused(a, g, b, axes, float(epsilon))
    rank, count = a.ndim, len(axes)
    trailing = tuple(range(rank - count, rank))
    order = tuple(d for d in range(rank) if d not in axes) + axes  # the normalized axes last, in order
    moved = a if axes == trailing else mx.transpose(a, order)
    size = math.prod(moved.shape[rank - count:])
    flat = moved if count == 1 else mx.reshape(moved, (*moved.shape[:rank - count], size))
    y = mx.fast.layer_norm(flat, None if g is None else mx.reshape(g, (size,)),
                           None if b is None else mx.reshape(b, (size,)), float(epsilon))
    y = y if count == 1 else mx.reshape(y, moved.shape)
    if axes == trailing:
        return y
    inverse = [0] * rank
    for position, d in enumerate(order):
        inverse[d] = position
    return mx.transpose(y, inverse)
