"""Reducing metrics: ``Mean``, ``Sum`` and ``MeanMetricWrapper`` (a function's mean).

``Mean``/``Sum`` take values directly (``update_state(state, values, sample_weight=None)``,
Keras's signature); ``MeanMetricWrapper(fn)`` averages ``fn(y_true, y_pred)`` and is the
base of the accuracy and loss-like metrics.

Example:
    >>> import ember
    >>> from ember import metrics
    >>> ember.set_backend("numpy")
    >>> float(metrics.Mean()([1.0, 2.0, 3.0], sample_weight=[1.0, 0.0, 1.0]))
    2.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember import ops
from ember.serialization import deserialize, register_serializable, serialize
from ember.training.losses.base import divide_no_nan, squeeze_or_expand_to_same_rank
from ember.training.metrics.base import Metric

_KEYS = ("total", "count")


def reduce_to_samplewise_values(owner: str, values: Any, sample_weight: Any, reduce_fn: Callable,
                                dtype: str) -> tuple[Any, Any]:
    """Keras's ``reduce_to_samplewise_values``: weight ``values`` and reduce them (and the
    weights) to one entry per sample.

    Returns:
        ``(per-sample weighted values, per-sample weights or None)``.
    """
    values = ops.convert_to_tensor(values)
    if ops.dtype(values) != dtype:
        values = ops.cast(values, dtype)
    if sample_weight is not None:
        sample_weight = ops.convert_to_tensor(sample_weight)
        if ops.dtype(sample_weight) != dtype:
            sample_weight = ops.cast(sample_weight, dtype)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        weight_ndim, values_ndim = len(ops.shape(sample_weight)), len(ops.shape(values))
        if values_ndim > weight_ndim:
            values = reduce_fn(values, axis=tuple(range(weight_ndim, values_ndim)))
        target = ops.shape(values)
        try:
            fits = np.broadcast_shapes(ops.shape(sample_weight), target) == target
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{owner}: sample_weight of shape {ops.shape(sample_weight)} does not match the "
                             f"values of shape {target}; expected shape {target[:1]}")
        sample_weight = ops.broadcast_to(sample_weight, target)
        values = ops.multiply(values, sample_weight)
        if weight_ndim > 1:
            sample_weight = reduce_fn(sample_weight, axis=tuple(range(1, weight_ndim)))
    values_ndim = len(ops.shape(values))
    if values_ndim > 1:
        values = reduce_fn(values, axis=tuple(range(1, values_ndim)))
    return values, sample_weight


@register_serializable(package="ember.metrics")
class Mean(Metric):
    """The (weighted) mean of the values seen: ``sum(w * v) / sum(w)``.

    Pure update: ``update_state(state, values, sample_weight=None)``; values of rank > 1
    are first averaged to one value per sample (axis 0), as in Keras.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> m = metrics.Mean()
        >>> s = m.update_state(m.init_state(), [1.0, 3.0])
        >>> float(m.result(m.update_state(s, [8.0])))
        4.0
    """

    def init_state(self, y_pred_shape: tuple | None = None) -> dict:
        return {"total": ops.zeros((), dtype=self.dtype), "count": ops.zeros((), dtype=self.dtype)}

    def update_state(self, state: dict, values: Any, sample_weight: Any = None) -> dict:
        return self.accumulate(state, values, sample_weight)

    def accumulate(self, state: dict, values: Any, sample_weight: Any = None) -> dict:
        """The pure update shared with :class:`MeanMetricWrapper`."""
        self.check_state(state, _KEYS)
        dtype = ops.dtype(state["total"])
        values, sample_weight = reduce_to_samplewise_values(self.name, values, sample_weight, ops.mean, dtype)
        if sample_weight is not None:
            count = ops.sum(sample_weight)
        else:
            shape = ops.shape(values)
            count = float(shape[0]) if shape else 1.0
        return {"total": ops.add(state["total"], ops.sum(values)), "count": ops.add(state["count"], count)}

    def result(self, state: dict) -> Any:
        self.check_state(state, _KEYS)
        return divide_no_nan(state["total"], state["count"])


@register_serializable(package="ember.metrics")
class Sum(Metric):
    """The (weighted) sum of the values seen.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.Sum()([1.0, 3.0], sample_weight=[2.0, 1.0]))
        5.0
    """

    def init_state(self, y_pred_shape: tuple | None = None) -> dict:
        return {"total": ops.zeros((), dtype=self.dtype)}

    def update_state(self, state: dict, values: Any, sample_weight: Any = None) -> dict:
        self.check_state(state, ("total",))
        values, _ = reduce_to_samplewise_values(self.name, values, sample_weight, ops.sum, ops.dtype(state["total"]))
        return {"total": ops.add(state["total"], ops.sum(values))}

    def result(self, state: dict) -> Any:
        self.check_state(state, ("total",))
        return state["total"]


@register_serializable(package="ember.metrics")
class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred, **kwargs)`` over every sample seen.

    Args:
        fn: a per-sample function (any loss function works).
        name: defaults to ``fn.__name__``.
        dtype: the state dtype.
        **kwargs: passed to ``fn`` (and saved in the config).

    Example:
        >>> import ember
        >>> from ember import losses, metrics
        >>> ember.set_backend("numpy")
        >>> m = metrics.MeanMetricWrapper(losses.mean_absolute_error)
        >>> m.name, float(m([[1.0], [2.0]], [[2.0], [2.0]]))
        ('mean_absolute_error', 0.5)
    """

    def __init__(self, fn: Callable, name: str | None = None, dtype: Any = None, **kwargs: Any):
        if not callable(fn):
            raise TypeError(f"{type(self).__name__}: fn must be callable, received {fn!r}")
        super().__init__(name=name if name is not None else getattr(fn, "__name__", None), dtype=dtype)
        self.fn = fn
        self._fn_kwargs = dict(kwargs)

    # Keras's MeanMetricWrapper is a Mean whose update takes (y_true, y_pred), not values.
    def update_state(  # type: ignore[override]  # the (y_true, y_pred) form of Keras's class tree
        self, state: dict, y_true: Any, y_pred: Any, sample_weight: Any = None
    ) -> dict:
        return self.accumulate(state, self.fn(y_true, y_pred, **self._fn_kwargs), sample_weight)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(self._fn_kwargs)
        if type(self) is MeanMetricWrapper:
            config["fn"] = serialize(self.fn)
        return config

    @classmethod
    def from_config(cls, config: dict) -> Metric:
        config = dict(config)
        if "fn" in config:
            config["fn"] = deserialize(config["fn"])
        return cls(**config)
