"""Gradient clipping as Keras 3 does it: per-array L2 norm, global L2 norm (and, in the base, by value).

Pure ``ember.ops`` (no host reads), so it runs inside ``mx.compile``. Norms of float16 /
bfloat16 gradients are accumulated in float32.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.training.optimizers.clipping import global_norm
    >>> ember.set_backend("numpy")
    >>> float(ops.to_numpy(global_norm([ops.convert_to_tensor([3.0]), None, ops.convert_to_tensor([4.0])])))
    5.0
"""

from __future__ import annotations

from typing import Any

from ember import dtypes, ops

_LOW_PRECISION = ("float16", "bfloat16")


def clip_by_norm(grad: Any, clipnorm: float) -> Any:
    """``grad * clipnorm / max(||grad||_2, clipnorm)`` (unchanged when the norm is at most ``clipnorm``).

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.training.optimizers.clipping import clip_by_norm
        >>> ember.set_backend("numpy")
        >>> [round(v, 4) for v in ops.to_numpy(clip_by_norm(ops.convert_to_tensor([3.0, 4.0]), 1.0)).tolist()]
        [0.6, 0.8]
    """
    norm = ops.sqrt(ops.sum(ops.square(_norm_dtype(grad))))
    factor = ops.divide(clipnorm, ops.maximum(norm, clipnorm))
    return ops.multiply(grad, ops.cast(factor, ops.dtype(grad)))


def global_norm(grads: list) -> Any:
    """The L2 norm of all arrays in ``grads`` together (``None`` entries skipped).

    Example:
        >>> from ember import ops, optimizers
        >>> float(optimizers.global_norm([ops.convert_to_tensor([3.0]), None, ops.convert_to_tensor([4.0])]))
        5.0
    """
    total = None
    for g in grads:
        if g is None:
            continue
        part = ops.sum(ops.square(_norm_dtype(g)))
        part = ops.cast(part, "float32") if ops.dtype(part) in _LOW_PRECISION else part
        total = part if total is None else ops.add(total, part)
    if total is None:
        return ops.zeros((), dtype=dtypes.floatx())
    return ops.sqrt(total)


def clip_by_global_norm(grads: list, clipnorm: float) -> list:
    """Scale every array by ``clipnorm / max(global_norm, clipnorm)`` (NaN when the norm is not finite, as Keras).

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.training.optimizers.clipping import clip_by_global_norm
        >>> ember.set_backend("numpy")
        >>> a, b = clip_by_global_norm([ops.convert_to_tensor([3.0]), ops.convert_to_tensor([4.0])], 1.0)
        >>> round(float(ops.to_numpy(a)[0]), 4), round(float(ops.to_numpy(b)[0]), 4)
        (0.6, 0.8)
    """
    norm = global_norm(grads)
    scale = ops.add(ops.divide(clipnorm, ops.maximum(norm, clipnorm)), ops.subtract(norm, norm))
    return [None if g is None else ops.multiply(g, ops.cast(scale, ops.dtype(g))) for g in grads]


def _norm_dtype(x: Any) -> Any:
    return ops.cast(x, "float32") if ops.dtype(x) in _LOW_PRECISION else x
