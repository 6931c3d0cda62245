"""``MinMaxScaler``: scale each feature linearly to a given range (scikit-learn's attributes)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ember import ops
from ember.features.transformer import Transformer, fitted_attribute, fitted_count, int_scalar


class MinMaxScaler(Transformer):
    """Scale each feature (column) so the training data spans ``feature_range``.

    ``transform(x) = x * scale_ + min_`` with ``scale_ = (hi - lo) / (data_max_ - data_min_)``
    and ``min_ = lo - data_min_ * scale_``. A constant feature (zero range) is scaled by
    ``hi - lo`` instead of dividing by zero, as scikit-learn: it maps to ``lo``.

    Args:
        feature_range: ``(lo, hi)`` with ``lo < hi``.
        clip: clip transformed values to ``feature_range`` (for data outside the
            training range).

    Fitted attributes: ``min_``, ``scale_``, ``data_min_``, ``data_max_``, ``data_range_``
    ``(n_features,)``, ``n_samples_seen_`` and ``n_features_in_`` (ints).

    Example:
        >>> import ember
        >>> from ember import features, ops
        >>> ember.set_backend("numpy")
        >>> scaler = features.MinMaxScaler(feature_range=(-1, 1)).fit([[0.0, 10.0], [2.0, 20.0]])
        >>> ops.to_numpy(scaler.transform([[1.0, 20.0], [4.0, 10.0]])).tolist()
        [[0.0, 1.0], [3.0, -1.0]]
        >>> ops.to_numpy(scaler.inverse_transform([[0.0, 1.0]])).tolist()
        [[1.0, 20.0]]
    """

    _required_state = ("min_", "scale_", "data_min_", "data_max_", "data_range_", "n_samples_seen_",
                       "n_features_in_")

    feature_range: tuple = (0, 1)
    clip: bool = dataclasses.field(default=False, kw_only=True)

    min_ = fitted_attribute("min_", "Per-feature offset of the transform.")
    scale_ = fitted_attribute("scale_", "Per-feature factor of the transform.")
    data_min_ = fitted_attribute("data_min_", "Per-feature minimum of the training data.")
    data_max_ = fitted_attribute("data_max_", "Per-feature maximum of the training data.")
    data_range_ = fitted_attribute("data_range_", "Per-feature ``data_max_ - data_min_``.")

    def __post_init__(self) -> None:
        bounds = self.feature_range
        if not isinstance(bounds, (tuple, list)) or len(bounds) != 2 or not all(
                isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds):
            self._fail(f"feature_range must be a pair of numbers (lo, hi), received {bounds!r}", TypeError)
        if not bounds[0] < bounds[1]:
            self._fail(f"feature_range must satisfy lo < hi, received {tuple(bounds)!r}")
        object.__setattr__(self, "feature_range", tuple(bounds))
        if not isinstance(self.clip, bool):
            self._fail(f"clip must be a bool, received {self.clip!r}", TypeError)

    n_samples_seen_ = fitted_count("n_samples_seen_", "Number of samples seen by ``fit``.")

    def _fit(self, x: Any) -> dict:
        x = self.check_input(x, "fit", fitted=False)
        n, p = ops.shape(x)
        lo, hi = self.feature_range
        data_min = ops.min(x, axis=0)
        data_max = ops.max(x, axis=0)
        data_range = ops.subtract(data_max, data_min)
        safe_range = ops.where(ops.equal(data_range, 0), ops.ones_like(data_range), data_range)
        scale = ops.divide(ops.full_like(data_range, hi - lo), safe_range)
        return {
            "min_": ops.subtract(ops.full_like(data_min, lo), ops.multiply(data_min, scale)),
            "scale_": scale,
            "data_min_": data_min,
            "data_max_": data_max,
            "data_range_": data_range,
            "n_samples_seen_": int_scalar(n),
            "n_features_in_": int_scalar(p),
        }

    def transform(self, x: Any) -> Any:
        """``x * scale_ + min_`` (clipped to ``feature_range`` when ``clip``).

        Raises:
            NotFittedError: before ``fit``. ValueError: wrong feature count, NaN, not 2-D.
        """
        x = self.check_input(x, "transform")
        out = ops.add(ops.multiply(x, self._get("scale_")), self._get("min_"))
        return ops.clip(out, *self.feature_range) if self.clip else out

    def inverse_transform(self, x: Any) -> Any:
        """``(x - min_) / scale_``: back to the original units."""
        x = self.check_input(x, "inverse_transform")
        return ops.divide(ops.subtract(x, self._get("min_")), self._get("scale_"))
