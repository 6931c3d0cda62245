"""Regression losses: squared/absolute/percentage/log errors, Huber, log-cosh, cosine similarity.

Each function returns per-sample losses: the mean (cosine similarity: the sum) over the
last axis, with Keras's rank fix-up of ``(batch,)`` against ``(batch, 1)`` applied first.

Example:
    >>> import ember
    >>> from ember import losses, ops
    >>> ember.set_backend("numpy")
    >>> ops.to_numpy(losses.mean_absolute_error([[1.0, 2.0]], [[2.0, 4.0]])).tolist()
    [1.5]
"""

from __future__ import annotations

import math
from typing import Any

from ember import ops
from ember.global_settings import epsilon
from ember.serialization import register_serializable
from ember.training.losses.base import LossFunctionWrapper, check_axis, check_broadcastable, prepare

_DEFAULT = "sum_over_batch_size"


@register_serializable(package="ember")
def mean_squared_error(y_true: Any, y_pred: Any) -> Any:
    """``mean((y_true - y_pred) ** 2, axis=-1)``.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(losses.mean_squared_error([[0.0, 1.0]], [[1.0, 1.0]])).tolist()
        [0.5]
    """
    y_true, y_pred = prepare(y_true, y_pred, "mean_squared_error")
    check_broadcastable("mean_squared_error", y_true, y_pred)
    return ops.mean(ops.square(ops.subtract(y_true, y_pred)), axis=-1)


@register_serializable(package="ember")
def mean_absolute_error(y_true: Any, y_pred: Any) -> Any:
    """``mean(abs(y_true - y_pred), axis=-1)``.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(losses.mean_absolute_error([[0.0, 1.0]], [[2.0, 1.0]])).tolist()
        [1.0]
    """
    y_true, y_pred = prepare(y_true, y_pred, "mean_absolute_error")
    check_broadcastable("mean_absolute_error", y_true, y_pred)
    return ops.mean(ops.abs(ops.subtract(y_true, y_pred)), axis=-1)


@register_serializable(package="ember")
def mean_absolute_percentage_error(y_true: Any, y_pred: Any) -> Any:
    """``100 * mean(abs((y_true - y_pred) / max(abs(y_true), 1e-7)), axis=-1)``.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(losses.mean_absolute_percentage_error([[2.0, 4.0]], [[1.0, 4.0]])).tolist()
        [25.0]
    """
    y_true, y_pred = prepare(y_true, y_pred, "mean_absolute_percentage_error")
    check_broadcastable("mean_absolute_percentage_error", y_true, y_pred)
    diff = ops.abs(ops.divide(ops.subtract(y_true, y_pred), ops.maximum(ops.abs(y_true), epsilon())))
    return ops.multiply(ops.mean(diff, axis=-1), 100.0)


@register_serializable(package="ember")
def mean_squared_logarithmic_error(y_true: Any, y_pred: Any) -> Any:
    """``mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1)) ** 2, axis=-1)``.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> round(float(losses.mean_squared_logarithmic_error([[0.0]], [[1.718281828]])[0]), 6)
        1.0
    """
    y_true, y_pred = prepare(y_true, y_pred, "mean_squared_logarithmic_error")
    check_broadcastable("mean_squared_logarithmic_error", y_true, y_pred)
    first = ops.log1p(ops.maximum(y_pred, epsilon()))
    second = ops.log1p(ops.maximum(y_true, epsilon()))
    return ops.mean(ops.square(ops.subtract(first, second)), axis=-1)


@register_serializable(package="ember")
def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> Any:
    """Huber loss: ``0.5 * e**2`` where ``|e| <= delta``, else ``delta * |e| - 0.5 * delta**2``.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(losses.huber([[0.0, 0.0]], [[0.5, 3.0]])).tolist()
        [1.3125]
    """
    y_true, y_pred = prepare(y_true, y_pred, "huber")
    check_broadcastable("huber", y_true, y_pred)
    delta = float(delta)
    error = ops.subtract(y_pred, y_true)
    abs_error = ops.abs(error)
    quadratic = ops.multiply(ops.square(error), 0.5)
    linear = ops.subtract(ops.multiply(abs_error, delta), 0.5 * delta * delta)
    return ops.mean(ops.where(ops.less_equal(abs_error, delta), quadratic, linear), axis=-1)


@register_serializable(package="ember")
def log_cosh(y_true: Any, y_pred: Any) -> Any:
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, computed stably as
    ``x + softplus(-2x) - log(2)``.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> round(float(losses.log_cosh([[0.0]], [[1.0]])[0]), 6)
        0.433781
    """
    y_true, y_pred = prepare(y_true, y_pred, "log_cosh")
    check_broadcastable("log_cosh", y_true, y_pred)
    x = ops.subtract(y_pred, y_true)
    value = ops.subtract(ops.add(x, ops.nn.softplus(ops.multiply(x, -2.0))), math.log(2.0))
    return ops.mean(value, axis=-1)


def l2_normalize(x: Any, axis: int = -1) -> Any:
    """``x / max(||x||, eps)`` along ``axis`` (Keras's ``x * min(rsqrt(sum(x**2)), 1/eps)``,
    written with ``maximum`` inside the root so the gradient at ``x = 0`` stays finite)."""
    square_sum = ops.sum(ops.square(x), axis=axis, keepdims=True)
    return ops.multiply(x, ops.rsqrt(ops.maximum(square_sum, epsilon() * epsilon())))


@register_serializable(package="ember")
def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Any:
    """Negative cosine similarity along ``axis`` (``-1`` for parallel vectors; 0 when either is 0).

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> loss = losses.cosine_similarity([[0.0, 1.0], [1.0, 1.0]], [[0.0, 2.0], [-1.0, -1.0]])
        >>> ops.to_numpy(loss).round(6).tolist()
        [-1.0, 1.0]
    """
    axis = check_axis("cosine_similarity", axis)
    y_true, y_pred = prepare(y_true, y_pred, "cosine_similarity")
    check_broadcastable("cosine_similarity", y_true, y_pred)
    product = ops.multiply(l2_normalize(y_true, axis), l2_normalize(y_pred, axis))
    return ops.negative(ops.sum(product, axis=axis))


@register_serializable(package="ember")
class MeanSquaredError(LossFunctionWrapper):
    """Mean of squared errors (alias ``"mse"``).

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> float(losses.MeanSquaredError()([[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 0.0]]))
        0.5
    """

    def __init__(self, reduction: str | None = _DEFAULT, name: str = "mean_squared_error", dtype: Any = None):
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)


@register_serializable(package="ember")
class MeanAbsoluteError(LossFunctionWrapper):
    """Mean of absolute errors (alias ``"mae"``).

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> float(losses.MeanAbsoluteError()([[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 0.0]]))
        0.5
    """

    def __init__(self, reduction: str | None = _DEFAULT, name: str = "mean_absolute_error", dtype: Any = None):
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)


@register_serializable(package="ember")
class MeanAbsolutePercentageError(LossFunctionWrapper):
    """Mean absolute percentage error (alias ``"mape"``).

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> float(losses.MeanAbsolutePercentageError()([[2.0, 4.0]], [[1.0, 4.0]]))
        25.0
    """

    def __init__(self, reduction: str | None = _DEFAULT, name: str = "mean_absolute_percentage_error",
                 dtype: Any = None):
        super().__init__(mean_absolute_percentage_error, reduction=reduction, name=name, dtype=dtype)


@register_serializable(package="ember")
class MeanSquaredLogarithmicError(LossFunctionWrapper):
    """Mean squared logarithmic error (alias ``"msle"``).

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.MeanSquaredLogarithmicError()([[0.0, 0.0]], [[1.718281828, 0.0]])), 6)
        0.5
    """

    def __init__(self, reduction: str | None = _DEFAULT, name: str = "mean_squared_logarithmic_error",
                 dtype: Any = None):
        super().__init__(mean_squared_logarithmic_error, reduction=reduction, name=name, dtype=dtype)


@register_serializable(package="ember")
class Huber(LossFunctionWrapper):
    """Huber loss: quadratic for errors up to ``delta``, linear beyond.

    Args:
        delta: the error at which the loss turns linear (``> 0``).

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> float(losses.Huber(delta=1.0)([[0.0, 0.0]], [[0.5, 3.0]]))
        1.3125
    """

    def __init__(self, delta: float = 1.0, reduction: str | None = _DEFAULT, name: str = "huber_loss",
                 dtype: Any = None):
        if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not delta > 0:
            raise ValueError(f"Huber: delta must be a positive float, received delta={delta!r}")
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=float(delta))


@register_serializable(package="ember")
class LogCosh(LossFunctionWrapper):
    """Logarithm of the hyperbolic cosine of the error.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.LogCosh()([[0.0], [0.0]], [[1.0], [-1.0]])), 6)
        0.433781
    """

    def __init__(self, reduction: str | None = _DEFAULT, name: str = "log_cosh", dtype: Any = None):
        super().__init__(log_cosh, reduction=reduction, name=name, dtype=dtype)


@register_serializable(package="ember")
class CosineSimilarity(LossFunctionWrapper):
    """Negative cosine similarity between ``y_true`` and ``y_pred`` along ``axis``.

    Args:
        axis: the axis holding the vectors.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.CosineSimilarity()([[0.0, 1.0], [1.0, 1.0]], [[0.0, 2.0], [1.0, 1.0]])), 6)
        -1.0
    """

    def __init__(self, axis: int = -1, reduction: str | None = _DEFAULT, name: str = "cosine_similarity",
                 dtype: Any = None):
        super().__init__(cosine_similarity, reduction=reduction, name=name, dtype=dtype,
                         axis=check_axis("CosineSimilarity", axis))
