"""``FBetaScore`` and ``F1Score`` for (multi-label or one-hot multi-class) classification.

Inputs are ``(batch, num_classes)``. Predictions become 0/1 by ``threshold`` (``y_pred >
threshold``) or, without one, by marking each row's maximum (Keras's rule). The state
holds per-class weighted counts, so the result follows scikit-learn's ``fbeta_score``
averages (``None``: per class; ``"micro"``, ``"macro"``, ``"weighted"``).

Example:
    >>> import ember
    >>> from ember import metrics
    >>> ember.set_backend("numpy")
    >>> f1 = metrics.F1Score(average="macro", threshold=0.5)
    >>> round(float(f1([[1, 0], [0, 1], [1, 1]], [[0.9, 0.2], [0.6, 0.7], [0.8, 0.1]])), 4)
    0.7333
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops
from ember.global_settings import epsilon
from ember.serialization import register_serializable
from ember.training.metrics.base import Metric

AVERAGES = (None, "micro", "macro", "weighted")
_KEYS = ("true_positives", "false_positives", "false_negatives", "intermediate_weights")


@register_serializable(package="ember.metrics")
class FBetaScore(Metric):
    """The F-beta score: ``(1 + b**2) * P * R / (b**2 * P + R)``.

    Args:
        average: ``None`` (one score per class), ``"micro"`` (pooled counts), ``"macro"``
            (unweighted mean over classes) or ``"weighted"`` (mean weighted by each class's
            number of true instances).
        beta: how much more recall weighs than precision (a float > 0).
        threshold: a float in ``(0, 1]``; ``None`` marks the largest prediction of each row.
        name, dtype: as for :class:`Metric`.

    The per-class state size comes from the data: use ``init_state(y_pred_shape=...)``
    (the stateful handle does this on its first update).

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> f = metrics.FBetaScore(beta=2.0, threshold=0.5, average="micro")
        >>> round(float(f([[1, 0], [0, 1]], [[0.9, 0.8], [0.1, 0.2]])), 4)
        0.5
    """

    def __init__(self, average: str | None = None, beta: float = 1.0, threshold: float | None = None,
                 name: str = "fbeta_score", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        owner = type(self).__name__
        if not (average is None or isinstance(average, str)) or average not in AVERAGES:
            raise ValueError(f"{owner}: invalid average={average!r}; expected one of {AVERAGES}")
        if isinstance(beta, bool) or not isinstance(beta, (int, float, np.floating)) or not beta > 0:
            raise ValueError(f"{owner}: beta must be a float > 0, received beta={beta!r}")
        threshold_is_number = isinstance(threshold, (int, float, np.floating)) and not isinstance(threshold, bool)
        if threshold is not None and (not threshold_is_number or not 0 < threshold <= 1):
            raise ValueError(f"{owner}: threshold must be a float in (0, 1] or None, received threshold={threshold!r}")
        self.average = average
        self.beta = float(beta)
        self.threshold = None if threshold is None else float(threshold)
        self.state_needs_shape = average != "micro"

    def init_state(self, y_pred_shape: tuple | None = None) -> dict:
        shape: tuple[int, ...]
        if self.average == "micro":
            shape = ()
        else:
            if y_pred_shape is None or len(y_pred_shape) != 2 or y_pred_shape[-1] is None:
                raise ValueError(f"{self.name}: the state holds one count per class: call "
                                 f"init_state(y_pred_shape=(batch_size, num_classes)); received "
                                 f"y_pred_shape={y_pred_shape}")
            shape = (int(y_pred_shape[-1]),)
        return {key: ops.zeros(shape, dtype=self.dtype) for key in _KEYS}

    def update_state(self, state: dict, y_true: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        self.check_state(state, _KEYS)
        dtype = ops.dtype(state["true_positives"])
        y_true = ops.cast(ops.convert_to_tensor(y_true), dtype)
        y_pred = ops.cast(ops.convert_to_tensor(y_pred), dtype)
        true_shape, pred_shape = ops.shape(y_true), ops.shape(y_pred)
        if len(pred_shape) != 2 or true_shape != pred_shape:
            raise ValueError(f"{self.name}: expects y_true and y_pred of one shape (batch_size, num_classes); received "
                             f"y_true.shape={true_shape}, y_pred.shape={pred_shape}")
        state_shape = ops.shape(state["true_positives"])
        if state_shape and state_shape[0] != pred_shape[-1]:
            raise ValueError(f"{self.name}: the state counts {state_shape[0]} classes but y_pred has "
                             f"{pred_shape[-1]} (y_pred.shape={pred_shape})")
        if self.threshold is None:
            row_max = ops.max(y_pred, axis=-1, keepdims=True)
            predicted = ops.logical_and(ops.greater_equal(y_pred, row_max), ops.greater(ops.abs(y_pred), 1e-9))
        else:
            predicted = ops.greater(y_pred, self.threshold)
        predicted = ops.cast(predicted, dtype)
        axis = None if self.average == "micro" else 0
        if sample_weight is not None:
            sample_weight = ops.cast(ops.convert_to_tensor(sample_weight), dtype)
            if ops.shape(sample_weight) not in ((pred_shape[0],), (pred_shape[0], 1)):
                raise ValueError(f"{self.name}: sample_weight must have shape ({pred_shape[0]},), received "
                                 f"{ops.shape(sample_weight)}")
            sample_weight = ops.reshape(sample_weight, (pred_shape[0], 1))

        def weighted_sum(value: Any) -> Any:
            if sample_weight is not None:
                value = ops.multiply(value, sample_weight)
            return ops.sum(value, axis=axis)

        not_true, not_predicted = ops.subtract(1.0, y_true), ops.subtract(1.0, predicted)
        updates = {
            "true_positives": weighted_sum(ops.multiply(predicted, y_true)),
            "false_positives": weighted_sum(ops.multiply(predicted, not_true)),
            "false_negatives": weighted_sum(ops.multiply(not_predicted, y_true)),
            "intermediate_weights": weighted_sum(y_true),
        }
        return {key: ops.add(state[key], updates[key]) for key in _KEYS}

    def result(self, state: dict) -> Any:
        self.check_state(state, _KEYS)
        tp, fp, fn = state["true_positives"], state["false_positives"], state["false_negatives"]
        precision = ops.divide(tp, ops.add(ops.add(tp, fp), epsilon()))
        recall = ops.divide(tp, ops.add(ops.add(tp, fn), epsilon()))
        beta2 = self.beta * self.beta
        score = ops.divide(ops.multiply(precision, recall),
                           ops.add(ops.add(ops.multiply(precision, beta2), recall), epsilon()))
        score = ops.multiply(score, 1.0 + beta2)
        if self.average == "weighted":
            weights = state["intermediate_weights"]
            weights = ops.divide(weights, ops.add(ops.sum(weights), epsilon()))
            return ops.sum(ops.multiply(score, weights))
        if self.average is not None:
            return ops.mean(score)
        return score

    def get_config(self) -> dict:
        config = {"average": self.average, "beta": self.beta, "threshold": self.threshold}
        return {**super().get_config(), **config}


@register_serializable(package="ember.metrics")
class F1Score(FBetaScore):
    """The F1 score (``FBetaScore`` with ``beta=1``): the harmonic mean of precision and recall.

    Args:
        average, threshold, name, dtype: as for :class:`FBetaScore`.

    Example:
        >>> import ember
        >>> from ember import metrics, ops
        >>> ember.set_backend("numpy")
        >>> f1 = metrics.F1Score(threshold=0.5)
        >>> [round(float(v), 4) for v in ops.to_numpy(f1([[1, 0], [0, 1]], [[0.9, 0.8], [0.1, 0.7]]))]
        [1.0, 0.6667]
    """

    def __init__(self, average: str | None = None, threshold: float | None = None, name: str = "f1_score",
                 dtype: Any = None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["beta"]
        return config
