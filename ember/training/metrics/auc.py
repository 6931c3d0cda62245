"""``AUC``: the area under the ROC or precision-recall curve, by Keras's threshold method.

Predictions are counted against ``num_thresholds`` thresholds (``0 - eps``, ``1/(n-1)``,
..., ``1 + eps``) and the curve through those points is integrated by a Riemann sum
("interpolation": trapezoids for ROC, Davis & Goadrich's interpolation for PR). As Keras
documents, the result approximates the exact area: it is exact when no two distinct
predictions fall between the same pair of neighbouring thresholds, and within about
``1 / num_thresholds`` otherwise for predictions spread over ``[0, 1]``.

Example:
    >>> import ember
    >>> from ember import metrics
    >>> ember.set_backend("numpy")
    >>> round(float(metrics.AUC(num_thresholds=3)([0, 0, 1, 1], [0.0, 0.5, 0.3, 0.9])), 6)
    0.75
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops
from ember.global_settings import epsilon
from ember.serialization import register_serializable
from ember.training.losses.base import divide_no_nan
from ember.training.metrics.base import Metric
from ember.training.metrics.confusion import prepare_confusion_inputs
from ember.validation import check_positive_int

CURVES = ("ROC", "PR")
SUMMATION_METHODS = ("interpolation", "minoring", "majoring")
_KEYS = ("true_positives", "false_positives", "true_negatives", "false_negatives")


def is_evenly_distributed(thresholds: np.ndarray) -> bool:
    """Whether ``thresholds`` (including the 0 and 1 end points) are ``arange(n) / (n - 1)``."""
    n = len(thresholds)
    return n >= 3 and bool(np.allclose(thresholds, np.arange(n, dtype=np.float32) / (n - 1), atol=epsilon()))


def _head(x: Any) -> Any:
    return ops.getitem(x, slice(None, -1))


def _tail(x: Any) -> Any:
    return ops.getitem(x, slice(1, None))


@register_serializable(package="ember.metrics")
class AUC(Metric):
    """Area under the ROC curve or the precision-recall curve (Keras's ``AUC``).

    Args:
        num_thresholds: how many thresholds to discretise the curve with (> 1).
        curve: ``"ROC"`` or ``"PR"``.
        summation_method: ``"interpolation"``, ``"minoring"`` (left/lower Riemann sum) or
            ``"majoring"`` (upper).
        name, dtype: as for :class:`Metric`.
        thresholds: explicit thresholds in [0, 1] instead of ``num_thresholds`` even ones
            (``0 - eps`` and ``1 + eps`` are added).
        multi_label: treat each column of ``(batch, labels)`` data as its own binary problem
            and average the per-label areas (otherwise all entries are pooled).
        num_labels: the number of labels when ``multi_label`` (else taken from the data).
        label_weights: per-label weights: the averaging weights with ``multi_label``, else
            weights on each column's entries.
        from_logits: ``y_pred`` holds logits (a sigmoid is applied first).

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> auc = metrics.AUC(curve="PR", summation_method="majoring", num_thresholds=3)
        >>> float(auc([0, 0, 1, 1], [0.0, 0.5, 0.3, 0.9]))
        1.0
    """

    def __init__(self, num_thresholds: int = 200, curve: str = "ROC", summation_method: str = "interpolation",
                 name: str | None = None, dtype: Any = None, thresholds: Any = None, multi_label: bool = False,
                 num_labels: int | None = None, label_weights: Any = None, from_logits: bool = False):
        super().__init__(name=name, dtype=dtype)
        curve_name = curve.upper() if isinstance(curve, str) else curve
        if curve_name not in CURVES:
            raise ValueError(f"AUC: invalid curve={curve!r}; expected one of {CURVES}")
        method = summation_method.lower() if isinstance(summation_method, str) else summation_method
        if method not in SUMMATION_METHODS:
            raise ValueError(f"AUC: invalid summation_method={summation_method!r}; expected one of {SUMMATION_METHODS}")
        if thresholds is not None:
            values = sorted(float(t) for t in np.asarray(thresholds, dtype=np.float64).ravel())
            if not values or any(not 0 <= t <= 1 for t in values):
                raise ValueError(f"AUC: thresholds must be a non-empty list of floats in [0, 1], "
                                 f"received thresholds={thresholds!r}")
            self.num_thresholds = len(values) + 2
            inner = values
        else:
            if (isinstance(num_thresholds, bool) or not isinstance(num_thresholds, (int, np.integer))
                    or num_thresholds <= 1):
                raise ValueError(f"AUC: num_thresholds must be an int > 1, received num_thresholds={num_thresholds!r}")
            self.num_thresholds = int(num_thresholds)
            inner = [(i + 1) / (self.num_thresholds - 1) for i in range(self.num_thresholds - 2)]
        self._init_thresholds = None if thresholds is None else inner
        self._evenly = is_evenly_distributed(np.array([0.0] + inner + [1.0]))
        self.thresholds = [0.0 - epsilon()] + inner + [1.0 + epsilon()]
        self.curve = curve_name
        self.summation_method = method
        self.multi_label = bool(multi_label)
        if num_labels is not None:
            if not self.multi_label:
                raise ValueError("AUC: num_labels is needed only when multi_label=True")
            check_positive_int("AUC", "num_labels", num_labels)
        self.num_labels = None if num_labels is None else int(num_labels)
        if label_weights is not None:
            weights = np.asarray(label_weights, dtype=np.float64)
            if weights.ndim != 1 or np.any(weights < 0):
                raise ValueError(f"AUC: label_weights must be a 1-D list of non-negative weights, "
                                 f"received label_weights={label_weights!r}")
            label_weights = [float(w) for w in weights]
        self.label_weights = label_weights
        self.from_logits = bool(from_logits)
        self.state_needs_shape = self.multi_label and self.num_labels is None

    # ------------------------------------------------------------------ state
    def _labels_from_shape(self, y_pred_shape: tuple | None) -> int:
        if self.num_labels is not None:
            return self.num_labels
        if y_pred_shape is None or len(y_pred_shape) != 2 or y_pred_shape[-1] is None:
            raise ValueError(f"{self.name}: with multi_label=True the state needs the number of labels: pass "
                             f"num_labels=..., or init_state(y_pred_shape=(batch, labels)); received "
                             f"y_pred_shape={y_pred_shape}")
        return int(y_pred_shape[-1])

    def init_state(self, y_pred_shape: tuple | None = None) -> dict:
        shape: tuple[int, ...] = (self.num_thresholds,)
        if self.multi_label:
            shape += (self._labels_from_shape(y_pred_shape),)
        return {key: ops.zeros(shape, dtype=self.dtype) for key in _KEYS}

    def update_state(self, state: dict, y_true: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        self.check_state(state, _KEYS)
        dtype = ops.dtype(state["true_positives"])
        if self.from_logits:
            y_pred = ops.nn.sigmoid(ops.cast(ops.convert_to_tensor(y_pred), dtype))
        labels, y_pred, sample_weight = prepare_confusion_inputs(self.name, y_true, y_pred, sample_weight, dtype)
        shape = ops.shape(y_pred)
        state_shape = ops.shape(state["true_positives"])
        if self.multi_label and (len(shape) != 2 or shape[-1] != state_shape[-1]):
            raise ValueError(f"{self.name}: multi_label AUC expects y_pred of shape (batch, {state_shape[-1]}), "
                             f"received y_pred.shape={shape}")
        weights = sample_weight
        if self.label_weights is not None and not self.multi_label:
            if not shape or shape[-1] != len(self.label_weights):
                raise ValueError(f"{self.name}: label_weights has {len(self.label_weights)} entries but y_pred has "
                                 f"shape {shape}; expected a last axis of {len(self.label_weights)}")
            lw = ops.broadcast_to(ops.convert_to_tensor(np.asarray(self.label_weights), dtype=dtype), shape)
            weights = lw if weights is None else ops.multiply(weights, lw)
        columns = shape[-1] if self.multi_label else 1
        labels = ops.reshape(ops.cast(labels, dtype), (-1, columns))
        y_pred = ops.reshape(y_pred, (-1, columns))
        weights = ops.ones_like(y_pred) if weights is None else ops.reshape(weights, (-1, columns))
        if self._evenly:
            tp, fp, total_true, total_false = self._bucketed(labels, y_pred, weights)
        else:
            tp, fp, total_true, total_false = self._tiled(labels, y_pred, weights)
        if not self.multi_label:
            tp, fp = ops.reshape(tp, (-1,)), ops.reshape(fp, (-1,))
            total_true, total_false = ops.reshape(total_true, ()), ops.reshape(total_false, ())
        return {
            "true_positives": ops.add(state["true_positives"], tp),
            "false_positives": ops.add(state["false_positives"], fp),
            "true_negatives": ops.add(state["true_negatives"], ops.subtract(total_false, fp)),
            "false_negatives": ops.add(state["false_negatives"], ops.subtract(total_true, tp)),
        }

    def _bucketed(self, labels: Any, y_pred: Any, weights: Any) -> tuple:
        """Counts for evenly spaced thresholds in O(samples + thresholds): each prediction goes
        to the bucket of the highest threshold it exceeds, then a reversed cumulative sum."""
        n, columns = self.num_thresholds, ops.shape(y_pred)[-1]
        true_w = ops.multiply(labels, weights)
        false_w = ops.multiply(ops.subtract(1.0, labels), weights)
        p = ops.clip(y_pred, 0.0, 1.0)
        bucket = ops.nn.relu(ops.subtract(ops.ceil(ops.multiply(p, float(n - 1))), 1.0))
        ids = ops.add(ops.multiply(ops.cast(bucket, "int32"), columns),
                      ops.expand_dims(ops.arange(columns, dtype="int32"), 0))
        ids = ops.reshape(ids, (-1,))

        def per_threshold(values: Any) -> Any:
            sums = ops.reshape(ops.segment_sum(ops.reshape(values, (-1,)), ids, num_segments=n * columns), (n, columns))
            return ops.flip(ops.cumsum(ops.flip(sums, axis=0), axis=0), axis=0)

        return per_threshold(true_w), per_threshold(false_w), ops.sum(true_w, axis=0), ops.sum(false_w, axis=0)

    def _tiled(self, labels: Any, y_pred: Any, weights: Any) -> tuple:
        """Counts for arbitrary thresholds: compare every prediction with every threshold."""
        thresholds = ops.convert_to_tensor(np.asarray(self.thresholds), dtype=ops.dtype(y_pred))
        positive = ops.cast(ops.greater(ops.expand_dims(y_pred, 0), ops.reshape(thresholds, (-1, 1, 1))),
                            ops.dtype(y_pred))
        true_w = ops.expand_dims(ops.multiply(labels, weights), 0)
        false_w = ops.expand_dims(ops.multiply(ops.subtract(1.0, labels), weights), 0)
        tp = ops.sum(ops.multiply(positive, true_w), axis=1)
        fp = ops.sum(ops.multiply(positive, false_w), axis=1)
        return tp, fp, ops.sum(true_w, axis=(0, 1)), ops.sum(false_w, axis=(0, 1))

    # ----------------------------------------------------------------- result
    def _average(self, by_threshold: Any) -> Any:
        if not self.multi_label:
            return ops.sum(by_threshold)
        by_label = ops.sum(by_threshold, axis=0)
        if self.label_weights is None:
            return ops.mean(by_label)
        weights = ops.convert_to_tensor(np.asarray(self.label_weights), dtype=ops.dtype(by_label))
        return divide_no_nan(ops.sum(ops.multiply(by_label, weights)), ops.sum(weights))

    def _interpolate_pr_auc(self, state: dict) -> Any:
        """Davis & Goadrich's interpolation of the PR curve between thresholds."""
        tp, fp, fn = state["true_positives"], state["false_positives"], state["false_negatives"]
        dtp = ops.subtract(_head(tp), _tail(tp))
        p = ops.add(tp, fp)
        dp = ops.subtract(_head(p), _tail(p))
        slope = divide_no_nan(dtp, ops.maximum(dp, 0.0))
        intercept = ops.subtract(_tail(tp), ops.multiply(slope, _tail(p)))
        both_positive = ops.logical_and(ops.greater(_head(p), 0), ops.greater(_tail(p), 0))
        ratio = ops.where(both_positive, divide_no_nan(_head(p), ops.maximum(_tail(p), 0.0)), ops.ones_like(_tail(p)))
        increment = divide_no_nan(ops.multiply(slope, ops.add(dtp, ops.multiply(intercept, ops.log(ratio)))),
                                  ops.maximum(ops.add(_tail(tp), _tail(fn)), 0.0))
        return self._average(increment)

    def result(self, state: dict) -> Any:
        self.check_state(state, _KEYS)
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._interpolate_pr_auc(state)
        tp, fp = state["true_positives"], state["false_positives"]
        tn, fn = state["true_negatives"], state["false_negatives"]
        recall = divide_no_nan(tp, ops.add(tp, fn))
        if self.curve == "ROC":
            x, y = divide_no_nan(fp, ops.add(fp, tn)), recall
        else:
            x, y = recall, divide_no_nan(tp, ops.add(tp, fp))
        if self.summation_method == "interpolation":
            heights = ops.multiply(ops.add(_head(y), _tail(y)), 0.5)
        elif self.summation_method == "minoring":
            heights = ops.minimum(_head(y), _tail(y))
        else:
            heights = ops.maximum(_head(y), _tail(y))
        return self._average(ops.multiply(ops.subtract(_head(x), _tail(x)), heights))

    def get_config(self) -> dict:
        config = {
            "num_thresholds": self.num_thresholds, "curve": self.curve, "summation_method": self.summation_method,
            "thresholds": self._init_thresholds, "multi_label": self.multi_label, "num_labels": self.num_labels,
            "label_weights": self.label_weights, "from_logits": self.from_logits,
        }
        return {**super().get_config(), **config}
