"""The composites ``nn.layer_norm`` and ``nn.fused_batch_norm``: normalizations written with ``ember.ops``.

NumPy binds both (it has no fused kernels), MLX binds ``fused_batch_norm`` (``mx.fast`` has a
layer norm, no batch norm); torch defines both with its fused kernels, and MLX its layer norm,
and their tests compare them with these. Like every composite (:mod:`ember.ops.extra.composites`),
they call ``ember.ops`` at call time, so a recording tape sees the ops they call one by one
and needs no rule of its own. Both compute ``x * inv + offset`` with ``inv = gamma /
sqrt(variance + epsilon)`` and ``offset = beta - mean * inv``: two passes over ``x``, the rest
on the (small) statistics.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.ops.extra.normalization import layer_norm
    >>> with ember.using_backend("numpy"):
    ...     ops.to_numpy(layer_norm(ops.convert_to_tensor([[1.0, 3.0]]), epsilon=0.0)).tolist()
    [[-1.0, 1.0]]
"""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.backends._normalization_checks import check_batch_norm, check_layer_norm, check_moving


def _array(x: Any) -> Any:
    return x if x is None or ops.is_array(x) else ops.convert_to_tensor(x)


def _shape(x: Any) -> tuple | None:
    return None if x is None else tuple(ops.shape(x))


def _broadcast(param: Any, axes: tuple[int, ...], shape: tuple, dtype: str) -> Any:
    """``param`` (x's sizes on ``axes``) in x's dtype, reshaped to broadcast against ``shape``."""
    if ops.dtype(param) != dtype:
        param = ops.cast(param, dtype)
    full = tuple(shape[a] if a in axes else 1 for a in range(len(shape)))
    return param if len(axes) == len(shape) else ops.reshape(param, full)


def _normalize(x: Any, mean: Any, variance: Any, gamma: Any, beta: Any, epsilon: float) -> Any:
    """``x * inv + (beta - mean * inv)`` with ``inv = gamma / sqrt(variance + epsilon)`` (broadcast operands)."""
    inv = ops.rsqrt(ops.add(variance, epsilon))
    if gamma is not None:
        inv = ops.multiply(inv, gamma)
    offset = ops.negative(ops.multiply(mean, inv))
    if beta is not None:
        offset = ops.add(offset, beta)
    return ops.add(ops.multiply(x, inv), offset)


def layer_norm(x, gamma=None, beta=None, axis=-1, epsilon=1e-3):
    # (Docstring: _spec.nn.layer_norm's, set by ember.ops.extra.composites.)
    x, gamma, beta = _array(x), _array(gamma), _array(beta)
    shape, dtype = tuple(ops.shape(x)), ops.dtype(x)
    axes = check_layer_norm(shape, axis, _shape(gamma), _shape(beta), epsilon, dtype)
    gamma, beta = (None if p is None else _broadcast(p, axes, shape, dtype) for p in (gamma, beta))
    mean, variance = ops.nn.moments(x, axes=axes, keepdims=True)
    return _normalize(x, mean, variance, gamma, beta, epsilon)


def fused_batch_norm(x, gamma=None, beta=None, axis=-1, epsilon=1e-3, moving_mean=None, moving_variance=None,
                     momentum=0.99):
    # (Docstring: _spec.nn.fused_batch_norm's, set by ember.ops.extra.composites.)
    x, gamma, beta = _array(x), _array(gamma), _array(beta)
    moving_mean, moving_variance = _array(moving_mean), _array(moving_variance)
    shape, dtype = tuple(ops.shape(x)), ops.dtype(x)
    feature = check_batch_norm(shape, axis, _shape(gamma), _shape(beta), epsilon, dtype)
    moving = check_moving(_shape(moving_mean), _shape(moving_variance), momentum, shape, feature)
    reduction = tuple(a for a in range(len(shape)) if a != feature)
    mean, variance = ops.nn.moments(x, axes=reduction)
    gamma, beta = (None if p is None else _broadcast(p, (feature,), shape, dtype) for p in (gamma, beta))
    outputs = _normalize(x, _broadcast(mean, (feature,), shape, dtype), _broadcast(variance, (feature,), shape, dtype),
                         gamma, beta, epsilon)
    if moving:
        mean = moving_average(moving_mean, mean, momentum)
        variance = moving_average(moving_variance, variance, momentum)
    return outputs, ops.stop_gradient(mean), ops.stop_gradient(variance)


def moving_average(moving: Any, batch: Any, momentum: float) -> Any:
    """``momentum * moving + (1 - momentum) * batch`` (Keras's moving averages), in ``moving``'s dtype."""
    dtype = ops.dtype(moving)
    moved = ops.add(ops.multiply(ops.cast(moving, ops.dtype(batch)), momentum), ops.multiply(batch, 1.0 - momentum))
    return ops.cast(moved, dtype)
