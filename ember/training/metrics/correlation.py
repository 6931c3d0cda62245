"""Correlation metrics: ``PearsonCorrelation`` and ``ConcordanceCorrelation`` (per-batch values, averaged)."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.global_settings import epsilon
from ember.serialization import register_serializable
from ember.training.losses.base import (
    as_float,
    check_axis,
    squeeze_or_expand_to_same_rank,
)
from ember.training.metrics.reduction import MeanMetricWrapper


def _inputs(owner: str, y_true: Any, y_pred: Any) -> tuple:
    y_pred = as_float(y_pred, owner)
    y_true = ops.cast(ops.convert_to_tensor(y_true), ops.dtype(y_pred))
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


@register_serializable(package="ember.metrics")
def pearson_correlation(y_true: Any, y_pred: Any, axis: int = -1) -> Any:
    """Pearson's correlation coefficient of ``y_true`` and ``y_pred`` along ``axis``.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.pearson_correlation([1.0, 2.0, 3.0], [2.0, 4.0, 7.0])), 4)
        0.9934
    """
    y_true, y_pred = _inputs("pearson_correlation", y_true, y_pred)
    true_centred = ops.subtract(y_true, ops.mean(y_true, axis=axis, keepdims=True))
    pred_centred = ops.subtract(y_pred, ops.mean(y_pred, axis=axis, keepdims=True))
    true_scaled = ops.divide(true_centred, ops.std(true_centred, axis=axis, keepdims=True))
    pred_scaled = ops.divide(pred_centred, ops.std(pred_centred, axis=axis, keepdims=True))
    return ops.mean(ops.multiply(true_scaled, pred_scaled), axis=axis)


@register_serializable(package="ember.metrics")
def concordance_correlation(y_true: Any, y_pred: Any, axis: int = -1) -> Any:
    """Lin's concordance correlation coefficient along ``axis``, in Keras's form.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.concordance_correlation([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])), 4)
        1.0
    """
    y_true, y_pred = _inputs("concordance_correlation", y_true, y_pred)
    true_mean = ops.mean(y_true, axis=axis, keepdims=True)
    pred_mean = ops.mean(y_pred, axis=axis, keepdims=True)
    true_var = ops.var(ops.subtract(y_true, true_mean), axis=axis, keepdims=True)
    pred_var = ops.var(ops.subtract(y_pred, pred_mean), axis=axis, keepdims=True)
    # Keras centres both factors on the prediction mean.
    covariance = ops.multiply(ops.subtract(y_true, pred_mean), ops.subtract(y_pred, pred_mean))
    norm = ops.add(ops.add(true_var, pred_var), ops.square(ops.subtract(true_mean, pred_mean)))
    return ops.mean(ops.divide(ops.multiply(2.0, covariance), ops.add(norm, epsilon())), axis=axis)


@register_serializable(package="ember.metrics")
class PearsonCorrelation(MeanMetricWrapper):
    """The mean over batches of :func:`pearson_correlation` (Keras's definition).

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.PearsonCorrelation()([[1.0, 2.0, 3.0]], [[1.0, 2.0, 4.0]])), 4)
        0.982
    """

    def __init__(self, name: str = "pearson_correlation", dtype: Any = None, axis: int = -1):
        super().__init__(pearson_correlation, name=name, dtype=dtype, axis=check_axis("PearsonCorrelation", axis))


@register_serializable(package="ember.metrics")
class ConcordanceCorrelation(MeanMetricWrapper):
    """The mean over batches of :func:`concordance_correlation` (Keras's definition).

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.ConcordanceCorrelation()([[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]])), 4)
        1.0
    """

    def __init__(self, name: str = "concordance_correlation", dtype: Any = None, axis: int = -1):
        super().__init__(concordance_correlation, name=name, dtype=dtype,
                         axis=check_axis("ConcordanceCorrelation", axis))
