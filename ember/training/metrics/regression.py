"""Regression metrics: mean squared/absolute/percentage/log errors, RMSE, log-cosh,
cosine similarity and the coefficient of determination (``R2Score``).

Example:
    >>> import ember
    >>> from ember import metrics
    >>> ember.set_backend("numpy")
    >>> float(metrics.RootMeanSquaredError()([[0.0], [0.0]], [[3.0], [4.0]]))
    3.535533905029297
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops
from ember.serialization import register_serializable
from ember.training.losses.base import check_axis, check_broadcastable, prepare
from ember.training.losses.regression import (
    l2_normalize,
    log_cosh,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
)
from ember.training.metrics.base import Metric
from ember.training.metrics.reduction import Mean, MeanMetricWrapper


@register_serializable(package="ember.metrics")
def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Any:
    """Cosine similarity along ``axis`` (the metric's sign: +1 for parallel vectors).

    Example:
        >>> import ember
        >>> from ember import metrics, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(metrics.cosine_similarity([[0.0, 1.0]], [[0.0, 3.0]])).round(6).tolist()
        [1.0]
    """
    axis = check_axis("cosine_similarity", axis)
    y_true, y_pred = prepare(y_true, y_pred, "cosine_similarity")
    check_broadcastable("cosine_similarity", y_true, y_pred)
    return ops.sum(ops.multiply(l2_normalize(y_true, axis), l2_normalize(y_pred, axis)), axis=axis)


@register_serializable(package="ember.metrics")
class MeanSquaredError(MeanMetricWrapper):
    """The mean of squared errors over every sample seen.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.MeanSquaredError()([[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]]))
        0.25
    """

    def __init__(self, name: str = "mean_squared_error", dtype: Any = None):
        super().__init__(mean_squared_error, name=name, dtype=dtype)


@register_serializable(package="ember.metrics")
class MeanAbsoluteError(MeanMetricWrapper):
    """The mean of absolute errors over every sample seen.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.MeanAbsoluteError()([[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]]))
        0.25
    """

    def __init__(self, name: str = "mean_absolute_error", dtype: Any = None):
        super().__init__(mean_absolute_error, name=name, dtype=dtype)


@register_serializable(package="ember.metrics")
class MeanAbsolutePercentageError(MeanMetricWrapper):
    """The mean absolute percentage error over every sample seen.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.MeanAbsolutePercentageError()([[2.0], [4.0]], [[1.0], [4.0]]))
        25.0
    """

    def __init__(self, name: str = "mean_absolute_percentage_error", dtype: Any = None):
        super().__init__(mean_absolute_percentage_error, name=name, dtype=dtype)


@register_serializable(package="ember.metrics")
class MeanSquaredLogarithmicError(MeanMetricWrapper):
    """The mean squared logarithmic error over every sample seen.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.MeanSquaredLogarithmicError()([[0.0], [0.0]], [[1.718281828], [0.0]])), 6)
        0.5
    """

    def __init__(self, name: str = "mean_squared_logarithmic_error", dtype: Any = None):
        super().__init__(mean_squared_logarithmic_error, name=name, dtype=dtype)


@register_serializable(package="ember.metrics")
class LogCoshError(MeanMetricWrapper):
    """The mean of ``log(cosh(y_pred - y_true))`` over every sample seen.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.LogCoshError()([[0.0], [0.0]], [[1.0], [0.0]])), 6)
        0.21689
    """

    def __init__(self, name: str = "logcosh", dtype: Any = None):
        super().__init__(log_cosh, name=name, dtype=dtype)


@register_serializable(package="ember.metrics")
class CosineSimilarity(MeanMetricWrapper):
    """The mean cosine similarity between labels and predictions along ``axis``.

    Args:
        name, dtype: as for :class:`Metric`.
        axis: the axis holding the vectors.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.CosineSimilarity()([[0.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]])), 6)
        0.5
    """

    def __init__(self, name: str = "cosine_similarity", dtype: Any = None, axis: int = -1):
        super().__init__(cosine_similarity, name=name, dtype=dtype, axis=check_axis("CosineSimilarity", axis))


@register_serializable(package="ember.metrics")
class RootMeanSquaredError(Mean):
    """The square root of the (weighted) mean squared error over every sample seen.

    Pure update: ``update_state(state, y_true, y_pred, sample_weight=None)``.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.RootMeanSquaredError()([[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]]))
        0.5
    """

    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)

    def update_state(  # type: ignore[override]  # a Mean of squared errors, updated from (y_true, y_pred) as Keras's
        self, state: dict, y_true: Any, y_pred: Any, sample_weight: Any = None
    ) -> dict:
        y_true, y_pred = prepare(y_true, y_pred, self.name)
        check_broadcastable(self.name, y_true, y_pred)
        return self.accumulate(state, ops.square(ops.subtract(y_pred, y_true)), sample_weight)

    def result(self, state: dict) -> Any:
        return ops.sqrt(super().result(state))


AGGREGATIONS = ("uniform_average", "variance_weighted_average", None)
_R2_KEYS = ("squared_sum", "sum", "total_mse", "count", "num_samples")


@register_serializable(package="ember.metrics")
class R2Score(Metric):
    """The coefficient of determination, ``1 - SS_res / SS_tot`` per output.

    Args:
        class_aggregation: ``"uniform_average"`` (mean over outputs),
            ``"variance_weighted_average"`` (weighted by each output's variance) or ``None``
            (one score per output).
        num_regressors: with ``p > 0``, the adjusted R2 ``1 - (1 - R2) (n - 1) / (n - p - 1)``
            (left unadjusted when ``n - p - 1 <= 0``; ``n`` counts label entries, as in Keras).
        name, dtype: as for :class:`Metric`.

    Inputs are ``(batch, outputs)``; 1-D inputs count as one output (an Ember addition).
    The per-output state size comes from the data (``init_state(y_pred_shape=...)``).

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.R2Score()([[1.0], [4.0], [3.0]], [[2.0], [4.0], [4.0]])), 6)
        0.571429
    """

    state_needs_shape = True

    def __init__(self, class_aggregation: str | None = "uniform_average", num_regressors: int = 0,
                 name: str = "r2_score", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        known = class_aggregation is None or isinstance(class_aggregation, str)
        if not known or class_aggregation not in AGGREGATIONS:
            raise ValueError(
                f"R2Score: invalid class_aggregation={class_aggregation!r}; expected one of {AGGREGATIONS}"
            )
        if isinstance(num_regressors, bool) or not isinstance(num_regressors, (int, np.integer)) or num_regressors < 0:
            raise ValueError(f"R2Score: num_regressors must be a non-negative int, received {num_regressors!r}")
        self.class_aggregation = class_aggregation
        self.num_regressors = int(num_regressors)

    def init_state(self, y_pred_shape: tuple | None = None) -> dict:
        if y_pred_shape is None or len(y_pred_shape) not in (1, 2):
            raise ValueError(f"{self.name}: the state holds one sum per output: call "
                             f"init_state(y_pred_shape=(batch_size, outputs)); received y_pred_shape={y_pred_shape}")
        outputs = 1 if len(y_pred_shape) == 1 else y_pred_shape[-1]
        state = {key: ops.zeros((int(outputs),), dtype=self.dtype) for key in _R2_KEYS[:4]}
        state["num_samples"] = ops.zeros((), dtype=self.dtype)
        return state

    def update_state(self, state: dict, y_true: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        self.check_state(state, _R2_KEYS)
        dtype = ops.dtype(state["sum"])
        y_true, y_pred = prepare(ops.cast(ops.convert_to_tensor(y_true), dtype),
                                 ops.cast(ops.convert_to_tensor(y_pred), dtype), self.name)
        if len(ops.shape(y_pred)) == 1 and len(ops.shape(y_true)) == 1:
            y_true, y_pred = ops.expand_dims(y_true, -1), ops.expand_dims(y_pred, -1)
        shape = ops.shape(y_pred)
        if len(shape) != 2 or ops.shape(y_true) != shape:
            raise ValueError(f"{self.name}: expects y_true and y_pred of one shape (batch_size, outputs); received "
                             f"y_true.shape={ops.shape(y_true)}, y_pred.shape={shape}")
        if shape[-1] != ops.shape(state["sum"])[0]:
            raise ValueError(f"{self.name}: the state has {ops.shape(state['sum'])[0]} outputs but y_pred has "
                             f"{shape[-1]} (y_pred.shape={shape})")
        if sample_weight is None:
            weight = ops.ones(shape, dtype=dtype)
        else:
            weight = ops.cast(ops.convert_to_tensor(sample_weight), dtype)
            if len(ops.shape(weight)) == 1:
                weight = ops.expand_dims(weight, 1)
            try:
                fits = np.broadcast_shapes(ops.shape(weight), shape) == shape
            except ValueError:
                fits = False
            if not fits:
                raise ValueError(f"{self.name}: sample_weight must have shape ({shape[0]},) or {shape}, received "
                                 f"{ops.shape(sample_weight)}")
            weight = ops.broadcast_to(weight, shape)
        weighted = ops.multiply(y_true, weight)
        return {
            "sum": ops.add(state["sum"], ops.sum(weighted, axis=0)),
            "squared_sum": ops.add(state["squared_sum"], ops.sum(ops.multiply(y_true, weighted), axis=0)),
            "total_mse": ops.add(state["total_mse"],
                                 ops.sum(ops.multiply(ops.square(ops.subtract(y_true, y_pred)), weight), axis=0)),
            "count": ops.add(state["count"], ops.sum(weight, axis=0)),
            "num_samples": ops.add(state["num_samples"], float(ops.size(y_true))),
        }

    def result(self, state: dict) -> Any:
        self.check_state(state, _R2_KEYS)
        mean = ops.divide(state["sum"], state["count"])
        total = ops.subtract(state["squared_sum"], ops.multiply(state["sum"], mean))
        raw = ops.subtract(1.0, ops.divide(state["total_mse"], total))
        raw = ops.where(ops.isinf(raw), ops.zeros_like(raw), raw)
        if self.class_aggregation == "uniform_average":
            score = ops.mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            score = ops.divide(ops.sum(ops.multiply(total, raw)), ops.sum(total))
        else:
            score = raw
        if self.num_regressors:
            n, p = state["num_samples"], float(self.num_regressors)
            denominator = ops.subtract(ops.subtract(n, p), 1.0)
            safe = ops.where(ops.greater(denominator, 0), denominator, ops.ones_like(denominator))
            adjusted = ops.subtract(1.0, ops.divide(ops.multiply(ops.subtract(1.0, score), ops.subtract(n, 1.0)), safe))
            score = ops.where(ops.greater(denominator, 0), adjusted, score)
        return score

    def get_config(self) -> dict:
        config = {"class_aggregation": self.class_aggregation, "num_regressors": self.num_regressors}
        return {**super().get_config(), **config}
