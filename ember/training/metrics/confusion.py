"""Confusion-matrix metrics: ``Precision``, ``Recall`` and the raw TP/FP/TN/FN counts.

A prediction counts as positive at a threshold when ``y_pred > threshold`` (strictly);
``top_k`` keeps only each row's ``k`` largest predictions and ``class_id`` scores one
class (one-vs-rest) of a multi-class output. The state holds one count per threshold.

Example:
    >>> import ember
    >>> from ember import metrics
    >>> ember.set_backend("numpy")
    >>> float(metrics.Precision()([0, 1, 1, 1], [1.0, 0.0, 1.0, 1.0]))
    0.6666666865348816
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops
from ember.serialization import register_serializable
from ember.training.losses.base import divide_no_nan, squeeze_or_expand_to_same_rank
from ember.training.metrics.base import Metric

NEG_INF = -1e10
"""Keras's stand-in for minus infinity: the default threshold with ``top_k`` and the score of
predictions ``top_k`` filters out."""

_COUNT_NAMES = {"tp": "true_positives", "fp": "false_positives", "tn": "true_negatives", "fn": "false_negatives"}


def parse_thresholds(owner: str, thresholds: Any, default: float) -> list[float]:
    """``thresholds`` (a float, a list of floats in [0, 1] or None for ``default``) as a list."""
    if thresholds is None:
        return [default]
    values = [thresholds] if np.ndim(thresholds) == 0 else list(np.asarray(thresholds, dtype=np.float64).ravel())
    if not values:
        raise ValueError(f"{owner}: thresholds must not be empty")
    for value in values:
        is_number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
        if not is_number or not 0 <= value <= 1:
            raise ValueError(f"{owner}: threshold values must be in [0, 1], received thresholds={thresholds!r}")
    return [float(v) for v in values]


def _filter_top_k(x: Any, k: int) -> Any:
    """``x`` with every entry outside its row's top ``k`` replaced by :data:`NEG_INF`."""
    _, indices = ops.top_k(x, k)
    mask = ops.sum(ops.one_hot(indices, ops.shape(x)[-1], dtype=ops.dtype(x)), axis=-2)
    return ops.where(ops.greater(mask, 0), x, NEG_INF)


def prepare_confusion_inputs(owner: str, y_true: Any, y_pred: Any, sample_weight: Any, dtype: str,
                             top_k: int | None = None, class_id: int | None = None) -> tuple[Any, Any, Any]:
    """Keras's input handling of ``update_confusion_matrix_variables``: rank fix-up, weights
    expanded to the predictions' shape, ``top_k`` filtering, ``class_id`` selection.

    Returns:
        ``(y_true as bool, y_pred, sample_weight broadcast to y_pred's shape or None)``.
    """
    y_pred = ops.cast(ops.convert_to_tensor(y_pred), dtype)
    y_true = ops.cast(ops.convert_to_tensor(y_true), dtype)
    y_pred, y_true = squeeze_or_expand_to_same_rank(y_pred, y_true)
    if ops.shape(y_true) != ops.shape(y_pred):
        raise ValueError(f"{owner}: y_true must have the shape of y_pred, expected {ops.shape(y_pred)}, received "
                         f"y_true.shape={ops.shape(y_true)} (y_pred.shape={ops.shape(y_pred)})")
    if sample_weight is not None:
        sample_weight = ops.expand_dims(ops.cast(ops.convert_to_tensor(sample_weight), dtype), -1)
        _, sample_weight = squeeze_or_expand_to_same_rank(y_true, sample_weight, expand_rank_1=False)
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, top_k)
    if class_id is not None:
        shape = ops.shape(y_pred)
        if len(shape) < 2:
            raise ValueError(f"{owner}: class_id needs y_pred of shape (num_samples, num_classes), received "
                             f"y_pred.shape={shape}")
        if not 0 <= class_id < shape[-1]:
            raise ValueError(f"{owner}: class_id={class_id} is out of range for {shape[-1]} classes "
                             f"(y_pred.shape={shape})")
        index = (Ellipsis, slice(class_id, class_id + 1))
        y_true, y_pred = ops.getitem(y_true, index), ops.getitem(y_pred, index)
    if sample_weight is not None:
        target = ops.shape(y_pred)
        try:
            fits = np.broadcast_shapes(ops.shape(sample_weight), target) == target
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{owner}: sample_weight does not match the predictions: expected shape {target[:1]}, "
                             f"received {ops.shape(sample_weight)[:-1] or ()} (y_pred.shape={target})")
        sample_weight = ops.broadcast_to(sample_weight, target)
    return ops.not_equal(y_true, 0), y_pred, sample_weight


def confusion_counts(labels: Any, y_pred: Any, sample_weight: Any, thresholds: Any, which: tuple) -> dict:
    """Weighted TP/FP/TN/FN counts (``which`` among ``"tp", "fp", "tn", "fn"``) per threshold.

    ``labels`` (bool), ``y_pred`` and ``sample_weight`` share one shape; ``thresholds`` is
    a 1-D array. Each count has shape ``(len(thresholds),)``.
    """
    dtype = ops.dtype(y_pred)
    predictions = ops.reshape(y_pred, (1, -1))
    positive = ops.greater(predictions, ops.reshape(thresholds, (-1, 1)))  # (thresholds, samples)
    is_true = ops.reshape(labels, (1, -1))
    weights = None if sample_weight is None else ops.reshape(sample_weight, (1, -1))
    cases = {
        "tp": lambda: ops.logical_and(is_true, positive),
        "fp": lambda: ops.logical_and(ops.logical_not(is_true), positive),
        "tn": lambda: ops.logical_and(ops.logical_not(is_true), ops.logical_not(positive)),
        "fn": lambda: ops.logical_and(is_true, ops.logical_not(positive)),
    }
    counts = {}
    for key in which:
        hits = ops.cast(cases[key](), dtype)
        if weights is not None:
            hits = ops.multiply(hits, weights)
        counts[key] = ops.sum(hits, axis=1)
    return counts


class _ConfusionMetric(Metric):
    """Shared machinery: per-threshold counts of the kinds in ``_KINDS``."""

    _KINDS: tuple = ()

    def __init__(self, thresholds: Any = None, top_k: int | None = None, class_id: int | None = None,
                 name: str | None = None, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        owner = type(self).__name__
        for argument, value in (("top_k", top_k), ("class_id", class_id)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0
                                      or (argument == "top_k" and value < 1)):
                kind = "positive" if argument == "top_k" else "non-negative"
                raise ValueError(f"{owner}: {argument} must be a {kind} int or None, received {argument}={value!r}")
        self.top_k = None if top_k is None else int(top_k)
        self.class_id = None if class_id is None else int(class_id)
        self.thresholds = parse_thresholds(owner, thresholds, 0.5 if top_k is None else NEG_INF)
        # The constructor argument in JSON form (for get_config).
        self.init_thresholds = (None if thresholds is None else
                                self.thresholds[0] if np.ndim(thresholds) == 0 else list(self.thresholds))

    @property
    def _keys(self) -> tuple:
        return tuple(_COUNT_NAMES[kind] for kind in self._KINDS)

    def init_state(self, y_pred_shape: tuple | None = None) -> dict:
        return {key: ops.zeros((len(self.thresholds),), dtype=self.dtype) for key in self._keys}

    def update_state(self, state: dict, y_true: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        self.check_state(state, self._keys)
        dtype = ops.dtype(state[self._keys[0]])
        labels, y_pred, sample_weight = prepare_confusion_inputs(self.name, y_true, y_pred, sample_weight, dtype,
                                                                 self.top_k, self.class_id)
        thresholds = ops.convert_to_tensor(np.asarray(self.thresholds, dtype=np.float64), dtype=dtype)
        counts = confusion_counts(labels, y_pred, sample_weight, thresholds, self._KINDS)
        return {_COUNT_NAMES[kind]: ops.add(state[_COUNT_NAMES[kind]], counts[kind]) for kind in self._KINDS}

    def _single(self, value: Any) -> Any:
        return ops.reshape(value, ()) if len(self.thresholds) == 1 else value

    def get_config(self) -> dict:
        config = {"thresholds": self.init_thresholds, "top_k": self.top_k, "class_id": self.class_id}
        return {**config, **super().get_config()}


@register_serializable(package="ember.metrics")
class Precision(_ConfusionMetric):
    """``TP / (TP + FP)``: the fraction of positive predictions that are right.

    Args:
        thresholds: a float or list of floats in [0, 1] (default 0.5; without
            thresholds and with ``top_k``, every top-k prediction counts as positive). With
            several thresholds the result has one value per threshold.
        top_k: score only each row's ``k`` largest predictions as positive candidates.
        class_id: score only this class (one-vs-rest).
        name, dtype: as for :class:`Metric`.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.Precision(top_k=1)([[0, 0, 1, 1]], [[1.0, 1.0, 1.0, 0.0]]))
        0.0
    """

    _KINDS = ("tp", "fp")

    def result(self, state: dict) -> Any:
        self.check_state(state, self._keys)
        tp, fp = state["true_positives"], state["false_positives"]
        return self._single(divide_no_nan(tp, ops.add(tp, fp)))


@register_serializable(package="ember.metrics")
class Recall(_ConfusionMetric):
    """``TP / (TP + FN)``: the fraction of positives that are found.

    Args:
        thresholds, top_k, class_id, name, dtype: as for :class:`Precision`.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.Recall()([0, 1, 1, 1], [1.0, 0.0, 1.0, 1.0]))
        0.6666666865348816
    """

    _KINDS = ("tp", "fn")

    def result(self, state: dict) -> Any:
        self.check_state(state, self._keys)
        tp, fn = state["true_positives"], state["false_negatives"]
        return self._single(divide_no_nan(tp, ops.add(tp, fn)))


class _Count(_ConfusionMetric):
    """One weighted count per threshold (Keras's ``TruePositives`` family)."""

    def __init__(self, thresholds: Any = None, name: str | None = None, dtype: Any = None):
        super().__init__(thresholds=thresholds, name=name, dtype=dtype)

    def result(self, state: dict) -> Any:
        self.check_state(state, self._keys)
        return self._single(state[self._keys[0]])

    def get_config(self) -> dict:
        return {"thresholds": self.init_thresholds, **Metric.get_config(self)}


@register_serializable(package="ember.metrics")
class TruePositives(_Count):
    """The (weighted) number of true positives, per threshold (default 0.5).

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.TruePositives()([0, 1, 1, 1], [1.0, 0.0, 1.0, 1.0]))
        2.0
    """

    _KINDS = ("tp",)


@register_serializable(package="ember.metrics")
class FalsePositives(_Count):
    """The (weighted) number of false positives, per threshold (default 0.5).

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.FalsePositives()([0, 1, 0, 0], [0.0, 0.0, 1.0, 1.0]))
        2.0
    """

    _KINDS = ("fp",)


@register_serializable(package="ember.metrics")
class TrueNegatives(_Count):
    """The (weighted) number of true negatives, per threshold (default 0.5).

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.TrueNegatives()([0, 1, 0, 0], [0.0, 0.0, 1.0, 0.0]))
        2.0
    """

    _KINDS = ("tn",)


@register_serializable(package="ember.metrics")
class FalseNegatives(_Count):
    """The (weighted) number of false negatives, per threshold (default 0.5).

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.FalseNegatives()([0, 1, 1, 1], [0.0, 1.0, 0.0, 0.0]))
        2.0
    """

    _KINDS = ("fn",)
