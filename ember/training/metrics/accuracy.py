"""Accuracy metrics: exact, binary, categorical, sparse categorical and top-k.

The functions return a 0/1 match per prediction (``floatx()``); the classes average
them (weighted) over every sample seen.

Example:
    >>> import ember
    >>> from ember import metrics
    >>> ember.set_backend("numpy")
    >>> float(metrics.SparseCategoricalAccuracy()([2, 0], [[0.1, 0.2, 0.7], [0.5, 0.4, 0.1]]))
    1.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes, ops
from ember.serialization import register_serializable
from ember.training.losses.base import (
    as_float,
    check_broadcastable,
    check_same_shape,
    labels_like,
    squeeze_or_expand_to_same_rank,
)
from ember.training.metrics.reduction import MeanMetricWrapper
from ember.validation import check_positive_int


def _matches(x1: Any, x2: Any) -> Any:
    return ops.cast(ops.equal(x1, x2), dtypes.floatx())


@register_serializable(package="ember.metrics")
def accuracy(y_true: Any, y_pred: Any) -> Any:
    """1.0 where ``y_pred == y_true`` exactly, else 0.0.

    Example:
        >>> import ember
        >>> from ember import metrics, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(metrics.accuracy([1, 2], [1, 3])).tolist()
        [1.0, 0.0]
    """
    y_pred = as_float(y_pred, "accuracy")
    y_true, y_pred = squeeze_or_expand_to_same_rank(labels_like(y_true, y_pred, "accuracy"), y_pred)
    check_broadcastable("accuracy", y_true, y_pred)
    return _matches(y_true, y_pred)


@register_serializable(package="ember.metrics")
def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Any:
    """1.0 where ``(y_pred > threshold) == y_true``, else 0.0.

    Example:
        >>> import ember
        >>> from ember import metrics, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(metrics.binary_accuracy([[1], [0]], [[0.6], [0.6]])).tolist()
        [[1.0], [0.0]]
    """
    y_pred = as_float(y_pred, "binary_accuracy")
    y_true, y_pred = squeeze_or_expand_to_same_rank(labels_like(y_true, y_pred, "binary_accuracy"), y_pred)
    check_broadcastable("binary_accuracy", y_true, y_pred)
    predicted = ops.cast(ops.greater(y_pred, float(threshold)), ops.dtype(y_true))
    return _matches(y_true, predicted)


@register_serializable(package="ember.metrics")
def categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1.0 where ``argmax(y_pred) == argmax(y_true)`` (one-hot labels), else 0.0.

    Example:
        >>> import ember
        >>> from ember import metrics, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(metrics.categorical_accuracy([[0, 1], [1, 0]], [[0.2, 0.8], [0.3, 0.7]])).tolist()
        [1.0, 0.0]
    """
    y_pred = ops.convert_to_tensor(y_pred)
    y_true = ops.convert_to_tensor(y_true)
    check_same_shape("categorical_accuracy", y_true, y_pred,
                     hint=" (integer class indices go to sparse_categorical_accuracy)")
    return _matches(ops.argmax(y_true, axis=-1), ops.argmax(y_pred, axis=-1))


def _sparse_labels(owner: str, y_true: Any, y_pred: Any) -> Any:
    """``y_true`` squeezed to ``y_pred.shape[:-1]`` (``ValueError`` naming ``owner`` otherwise)."""
    true_shape, pred_shape = ops.shape(y_true), ops.shape(y_pred)
    if not pred_shape:
        raise ValueError(f"{owner}: y_pred must have a class axis, received a scalar (shape ())")
    if len(true_shape) == len(pred_shape) and true_shape[-1] == 1:
        y_true = ops.squeeze(y_true, -1)
        true_shape = true_shape[:-1]
    if true_shape != pred_shape[:-1]:
        raise ValueError(f"{owner}: y_true must hold one class index per prediction, expected shape {pred_shape[:-1]} "
                         f"(or {pred_shape[:-1] + (1,)}), received y_true.shape={true_shape} for "
                         f"y_pred.shape={pred_shape}")
    if dtypes.is_complex(ops.dtype(y_true)):
        raise TypeError(f"{owner}: y_true must hold class indices, received dtype {ops.dtype(y_true)}")
    return y_true


@register_serializable(package="ember.metrics")
def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1.0 where ``argmax(y_pred) == y_true`` (integer labels), else 0.0.

    Example:
        >>> import ember
        >>> from ember import metrics, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(metrics.sparse_categorical_accuracy([[1], [1]], [[0.2, 0.8], [0.9, 0.1]])).tolist()
        [1.0, 0.0]
    """
    y_pred = ops.convert_to_tensor(y_pred)
    y_true = _sparse_labels("sparse_categorical_accuracy", ops.convert_to_tensor(y_true), y_pred)
    predicted = ops.cast(ops.argmax(y_pred, axis=-1), ops.dtype(y_true))
    return _matches(y_true, predicted)


def _in_top_k(targets: Any, predictions: Any, k: int) -> Any:
    """Whether each target's score ranks in the top ``k`` (ties count in; NaN scores never do)."""
    at_label = ops.take_along_axis(predictions, ops.expand_dims(targets, -1), axis=-1)
    at_label = ops.where(ops.isnan(at_label), -float("inf"), at_label)
    rank = ops.sum(ops.cast(ops.greater(predictions, at_label), "int32"), axis=-1)
    return ops.less(rank, k)


def _check_k(owner: str, k: Any) -> int:
    return check_positive_int(owner, "k", k)


@register_serializable(package="ember.metrics")
def top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> Any:
    """1.0 where the one-hot label's class is among the ``k`` highest predictions.

    Example:
        >>> import ember
        >>> from ember import metrics, ops
        >>> ember.set_backend("numpy")
        >>> scores = [[0.1, 0.5, 0.4], [0.3, 0.6, 0.1]]
        >>> ops.to_numpy(metrics.top_k_categorical_accuracy([[0, 0, 1], [0, 0, 1]], scores, k=2)).tolist()
        [1.0, 0.0]
    """
    k = _check_k("top_k_categorical_accuracy", k)
    y_pred = as_float(y_pred, "top_k_categorical_accuracy")
    y_true = ops.convert_to_tensor(y_true)
    check_same_shape("top_k_categorical_accuracy", y_true, y_pred,
                     hint=" (integer class indices go to sparse_top_k_categorical_accuracy)")
    return ops.cast(_in_top_k(ops.argmax(y_true, axis=-1), y_pred, k), dtypes.floatx())


@register_serializable(package="ember.metrics")
def sparse_top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> Any:
    """1.0 where the integer label's class is among the ``k`` highest predictions.

    Example:
        >>> import ember
        >>> from ember import metrics, ops
        >>> ember.set_backend("numpy")
        >>> scores = [[0.1, 0.5, 0.4], [0.3, 0.6, 0.1]]
        >>> ops.to_numpy(metrics.sparse_top_k_categorical_accuracy([2, 2], scores, k=2)).tolist()
        [1.0, 0.0]
    """
    k = _check_k("sparse_top_k_categorical_accuracy", k)
    y_pred = as_float(y_pred, "sparse_top_k_categorical_accuracy")
    y_true = _sparse_labels("sparse_top_k_categorical_accuracy", ops.convert_to_tensor(y_true), y_pred)
    return ops.cast(_in_top_k(ops.cast(y_true, "int32"), y_pred, k), dtypes.floatx())


@register_serializable(package="ember.metrics")
class Accuracy(MeanMetricWrapper):
    """How often predictions equal labels exactly.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.Accuracy()([[1], [2], [3], [4]], [[0], [2], [3], [4]]))
        0.75
    """

    def __init__(self, name: str = "accuracy", dtype: Any = None):
        super().__init__(accuracy, name=name, dtype=dtype)


@register_serializable(package="ember.metrics")
class BinaryAccuracy(MeanMetricWrapper):
    """How often ``y_pred > threshold`` matches binary labels.

    Args:
        threshold: the decision threshold on ``y_pred``.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.BinaryAccuracy()([[1], [1], [0], [0]], [[0.98], [1.0], [0.0], [0.6]]))
        0.75
    """

    def __init__(self, name: str = "binary_accuracy", dtype: Any = None, threshold: float = 0.5):
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating)):
            raise TypeError(f"BinaryAccuracy: threshold must be a float, received threshold={threshold!r}")
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=float(threshold))


@register_serializable(package="ember.metrics")
class CategoricalAccuracy(MeanMetricWrapper):
    """How often the predicted class (argmax) matches one-hot labels.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.CategoricalAccuracy()([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0.0]]))
        0.5
    """

    def __init__(self, name: str = "categorical_accuracy", dtype: Any = None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


@register_serializable(package="ember.metrics")
class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often the predicted class (argmax) matches integer labels.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.SparseCategoricalAccuracy()([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0.0]]))
        0.5
    """

    def __init__(self, name: str = "sparse_categorical_accuracy", dtype: Any = None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


@register_serializable(package="ember.metrics")
class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot label is among the ``k`` highest predictions.

    Args:
        k: how many top predictions count.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.TopKCategoricalAccuracy(k=1)([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0.0]]))
        0.5
    """

    def __init__(self, k: int = 5, name: str = "top_k_categorical_accuracy", dtype: Any = None):
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=_check_k("TopKCategoricalAccuracy", k))


@register_serializable(package="ember.metrics")
class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """:class:`TopKCategoricalAccuracy` (the same ``k``) for integer labels.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.SparseTopKCategoricalAccuracy(k=1)([2, 1], [[0.1, 0.9, 0.8], [0.05, 0.95, 0.0]]))
        0.5
    """

    def __init__(self, k: int = 5, name: str = "sparse_top_k_categorical_accuracy", dtype: Any = None):
        super().__init__(sparse_top_k_categorical_accuracy, name=name, dtype=dtype,
                         k=_check_k("SparseTopKCategoricalAccuracy", k))
