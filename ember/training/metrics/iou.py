"""Intersection-over-union metrics: ``IoU``, ``MeanIoU``, ``BinaryIoU``, ``OneHotIoU``, ``OneHotMeanIoU``.

The state is a ``(num_classes, num_classes)`` confusion matrix (rows: true class,
columns: predicted class) of summed sample weights; the result is the mean, over the
target classes with a non-empty union, of ``TP / (TP + FP + FN)``.

Example:
    >>> import ember
    >>> from ember import metrics
    >>> ember.set_backend("numpy")
    >>> round(float(metrics.MeanIoU(num_classes=2)([0, 0, 1, 1], [0, 1, 0, 1])), 4)
    0.3333
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops
from ember.global_settings import epsilon
from ember.serialization import register_serializable
from ember.training.metrics.base import Metric


def _positive_int(owner: str, argument: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{owner}: {argument} must be a positive int, received {argument}={value!r}")
    return int(value)


@register_serializable(package="ember.metrics")
class IoU(Metric):
    """IoU averaged over ``target_class_ids``.

    Args:
        num_classes: number of classes (the confusion matrix is ``num_classes`` square).
        target_class_ids: the classes whose IoU is averaged.
        ignore_class: a true class whose entries are left out (e.g. a "void" label).
        sparse_y_true: labels are class indices (False: one-hot / scores, argmax over ``axis``).
        sparse_y_pred: predictions are class indices (False: scores, argmax over ``axis``).
        axis: the class axis for the argmax.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.IoU(num_classes=2, target_class_ids=[0])([0, 0, 1, 1], [0, 1, 0, 1])), 4)
        0.3333
    """

    def __init__(self, num_classes: int, target_class_ids: Any, name: str | None = None, dtype: Any = None,
                 ignore_class: int | None = None, sparse_y_true: bool = True, sparse_y_pred: bool = True,
                 axis: int = -1):
        super().__init__(name=name, dtype=dtype)
        owner = type(self).__name__
        self.num_classes = _positive_int(owner, "num_classes", num_classes)
        ids = [int(i) for i in np.atleast_1d(np.asarray(target_class_ids))]
        if not ids or any(not 0 <= i < self.num_classes for i in ids):
            raise ValueError(f"{owner}: target_class_ids must be class ids in [0, {self.num_classes}), "
                             f"received {target_class_ids!r}")
        self.target_class_ids = ids
        self.ignore_class = None if ignore_class is None else int(ignore_class)
        self.sparse_y_true, self.sparse_y_pred, self.axis = bool(sparse_y_true), bool(sparse_y_pred), int(axis)

    def init_state(self, y_pred_shape: tuple | None = None) -> dict:
        return {"total_cm": ops.zeros((self.num_classes, self.num_classes), dtype=self.dtype)}

    def _classes(self, y_true: Any, y_pred: Any) -> tuple:
        y_true, y_pred = ops.convert_to_tensor(y_true), ops.convert_to_tensor(y_pred)
        if not self.sparse_y_true:
            y_true = ops.argmax(y_true, axis=self.axis)
        if not self.sparse_y_pred:
            y_pred = ops.argmax(y_pred, axis=self.axis)
        return ops.reshape(ops.cast(y_true, "int32"), (-1,)), ops.reshape(ops.cast(y_pred, "int32"), (-1,))

    def update_state(self, state: dict, y_true: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        self.check_state(state, ("total_cm",))
        dtype = ops.dtype(state["total_cm"])
        labels, predictions = self._classes(y_true, y_pred)
        if ops.shape(labels) != ops.shape(predictions):
            raise ValueError(f"{self.name}: y_true and y_pred hold {ops.shape(labels)[0]} and "
                             f"{ops.shape(predictions)[0]} class ids; they must match")
        weights = ops.ones(ops.shape(labels), dtype=dtype)
        if sample_weight is not None:
            weights = ops.reshape(ops.broadcast_to(ops.cast(ops.convert_to_tensor(sample_weight), dtype),
                                                   ops.shape(labels)), (-1,))
        if self.ignore_class is not None:
            weights = ops.where(ops.equal(labels, self.ignore_class), ops.zeros_like(weights), weights)
        true_hot = ops.one_hot(labels, self.num_classes, dtype=dtype)
        pred_hot = ops.multiply(ops.one_hot(predictions, self.num_classes, dtype=dtype), ops.expand_dims(weights, 1))
        return {"total_cm": ops.add(state["total_cm"], ops.matmul(ops.transpose(true_hot), pred_hot))}

    def result(self, state: dict) -> Any:
        matrix = state["total_cm"]
        predicted = ops.sum(matrix, axis=0)
        actual = ops.sum(matrix, axis=1)
        true_positives = ops.linalg.diagonal(matrix)
        union = ops.subtract(ops.add(predicted, actual), true_positives)
        ids = ops.convert_to_tensor(np.asarray(self.target_class_ids, dtype=np.int32))
        true_positives, union = ops.take(true_positives, ids), ops.take(union, ids)
        valid = ops.sum(ops.cast(ops.greater(union, 1e-9), ops.dtype(matrix)))
        iou = ops.divide(true_positives, ops.add(union, epsilon()))
        return ops.divide(ops.sum(iou), ops.add(valid, epsilon()))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_classes=self.num_classes, target_class_ids=list(self.target_class_ids),
                      ignore_class=self.ignore_class, sparse_y_true=self.sparse_y_true,
                      sparse_y_pred=self.sparse_y_pred, axis=self.axis)
        return config


@register_serializable(package="ember.metrics")
class MeanIoU(IoU):
    """IoU averaged over every class.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.MeanIoU(num_classes=2)([0, 1], [0, 1])), 4)
        1.0
    """

    def __init__(self, num_classes: int, name: str | None = None, dtype: Any = None, ignore_class: int | None = None,
                 sparse_y_true: bool = True, sparse_y_pred: bool = True, axis: int = -1):
        super().__init__(num_classes, list(range(_positive_int(type(self).__name__, "num_classes", num_classes))),
                         name=name, dtype=dtype, ignore_class=ignore_class, sparse_y_true=sparse_y_true,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["target_class_ids"]
        return config


@register_serializable(package="ember.metrics")
class BinaryIoU(IoU):
    """IoU of binary predictions: ``y_pred > threshold`` is class 1.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.BinaryIoU(target_class_ids=[1])([0, 1, 1], [0.2, 0.7, 0.9])), 4)
        1.0
    """

    def __init__(self, target_class_ids: Any = (0, 1), threshold: float = 0.5, name: str | None = None,
                 dtype: Any = None):
        super().__init__(2, target_class_ids, name=name, dtype=dtype)
        self.threshold = float(threshold)

    def update_state(self, state: dict, y_true: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        y_pred = ops.cast(ops.greater(ops.convert_to_tensor(y_pred), self.threshold), "int32")
        return super().update_state(state, y_true, y_pred, sample_weight)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self._dtype, "target_class_ids": list(self.target_class_ids),
                "threshold": self.threshold}


@register_serializable(package="ember.metrics")
class OneHotIoU(IoU):
    """IoU with one-hot labels (and, unless ``sparse_y_pred``, class scores as predictions).

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.OneHotIoU(num_classes=2, target_class_ids=[1])([[0, 1]], [[0.2, 0.8]])), 4)
        1.0
    """

    def __init__(self, num_classes: int, target_class_ids: Any, name: str | None = None, dtype: Any = None,
                 ignore_class: int | None = None, sparse_y_pred: bool = False, axis: int = -1):
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["sparse_y_true"]
        return config


@register_serializable(package="ember.metrics")
class OneHotMeanIoU(MeanIoU):
    """Mean IoU over every class with one-hot labels (and, unless ``sparse_y_pred``, class scores).

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.OneHotMeanIoU(num_classes=2)([[0, 1], [1, 0]], [[0.2, 0.8], [0.6, 0.4]])), 4)
        1.0
    """

    def __init__(self, num_classes: int, name: str | None = None, dtype: Any = None, ignore_class: int | None = None,
                 sparse_y_pred: bool = False, axis: int = -1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["sparse_y_true"]
        return config
