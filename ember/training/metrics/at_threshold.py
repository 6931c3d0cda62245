"""One statistic at a constraint on another, over a grid of thresholds: ``PrecisionAtRecall``,
``RecallAtPrecision``, ``SensitivityAtSpecificity``, ``SpecificityAtSensitivity``.

The state holds TP/FP/TN/FN at ``num_thresholds`` thresholds evenly spread over [0, 1]
(Keras's grid); the result is the largest value of the statistic among the thresholds
where the constraint holds (0 when none does).

Example:
    >>> import ember
    >>> from ember import metrics
    >>> ember.set_backend("numpy")
    >>> float(metrics.PrecisionAtRecall(0.5)([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.8]))
    1.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops
from ember.serialization import register_serializable
from ember.training.losses.base import divide_no_nan
from ember.training.metrics.base import Metric
from ember.training.metrics.confusion import confusion_counts, prepare_confusion_inputs

_KEYS = ("true_positives", "false_positives", "true_negatives", "false_negatives")


class _AtConstraint(Metric):
    """Shared machinery; subclasses name the constrained statistic and the one maximised."""

    _argument = "value"

    def __init__(self, value: float, num_thresholds: int = 200, class_id: int | None = None, name: str | None = None,
                 dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        owner = type(self).__name__
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError(f"{owner}: {self._argument} must be in [0, 1], received {self._argument}={value!r}")
        if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, int) or num_thresholds < 2:
            raise ValueError(f"{owner}: num_thresholds must be an int >= 2, received num_thresholds={num_thresholds!r}")
        if class_id is not None and (isinstance(class_id, bool) or not isinstance(class_id, int) or class_id < 0):
            raise ValueError(f"{owner}: class_id must be a non-negative int or None, received class_id={class_id!r}")
        self.value, self.num_thresholds, self.class_id = float(value), num_thresholds, class_id
        inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        self.thresholds = [0.0] + inner + [1.0]

    def init_state(self, y_pred_shape: tuple | None = None) -> dict:
        return {key: ops.zeros((self.num_thresholds,), dtype=self.dtype) for key in _KEYS}

    def update_state(self, state: dict, y_true: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        self.check_state(state, _KEYS)
        dtype = ops.dtype(state["true_positives"])
        labels, y_pred, sample_weight = prepare_confusion_inputs(self.name, y_true, y_pred, sample_weight, dtype,
                                                                 class_id=self.class_id)
        # Keras's evenly spaced grid counts a prediction p as positive at thresholds below it,
        # with p = 0 below none and p = 1 at all but the last.
        thresholds = ops.convert_to_tensor(np.asarray(self.thresholds, dtype=np.float64), dtype=dtype)
        counts = confusion_counts(labels, y_pred, sample_weight, thresholds, ("tp", "fp", "tn", "fn"))
        names = dict(zip(("tp", "fp", "tn", "fn"), _KEYS))
        return {names[k]: ops.add(state[names[k]], v) for k, v in counts.items()}

    def _statistics(self, state: dict) -> tuple:
        raise NotImplementedError

    def result(self, state: dict) -> Any:
        constrained, dependent = self._statistics(state)
        feasible = ops.greater_equal(constrained, self.value)
        return ops.max(ops.where(feasible, dependent, ops.zeros_like(dependent)))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({self._argument: self.value, "num_thresholds": self.num_thresholds, "class_id": self.class_id})
        return config

    @classmethod
    def from_config(cls, config: dict) -> Metric:
        config = dict(config)
        return cls(config.pop(cls._argument), **config)


def _recall(s):
    return divide_no_nan(s["true_positives"], ops.add(s["true_positives"], s["false_negatives"]))


def _precision(s):
    return divide_no_nan(s["true_positives"], ops.add(s["true_positives"], s["false_positives"]))


def _specificity(s):
    return divide_no_nan(s["true_negatives"], ops.add(s["true_negatives"], s["false_positives"]))


@register_serializable(package="ember.metrics")
class PrecisionAtRecall(_AtConstraint):
    """The best precision at a recall of at least ``recall``.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.PrecisionAtRecall(1.0)([0, 1], [0.3, 0.7]))
        1.0
    """

    _argument = "recall"

    def __init__(self, recall: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: Any = None):
        super().__init__(recall, num_thresholds, class_id, name, dtype)

    def _statistics(self, state):
        return _recall(state), _precision(state)


@register_serializable(package="ember.metrics")
class RecallAtPrecision(_AtConstraint):
    """The best recall at a precision of at least ``precision``.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.RecallAtPrecision(1.0)([0, 1], [0.3, 0.7]))
        1.0
    """

    _argument = "precision"

    def __init__(self, precision: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: Any = None):
        super().__init__(precision, num_thresholds, class_id, name, dtype)

    def _statistics(self, state):
        return _precision(state), _recall(state)


@register_serializable(package="ember.metrics")
class SensitivityAtSpecificity(_AtConstraint):
    """The best sensitivity (recall) at a specificity of at least ``specificity``.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.SensitivityAtSpecificity(1.0)([0, 1], [0.3, 0.7]))
        1.0
    """

    _argument = "specificity"

    def __init__(self, specificity: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: Any = None):
        super().__init__(specificity, num_thresholds, class_id, name, dtype)

    def _statistics(self, state):
        return _specificity(state), _recall(state)


@register_serializable(package="ember.metrics")
class SpecificityAtSensitivity(_AtConstraint):
    """The best specificity at a sensitivity (recall) of at least ``sensitivity``.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.SpecificityAtSensitivity(1.0)([0, 1], [0.3, 0.7]))
        1.0
    """

    _argument = "sensitivity"

    def __init__(self, sensitivity: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: Any = None):
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)

    def _statistics(self, state):
        return _recall(state), _specificity(state)
