"""Standardization: ``(x - mean) / std``: the ``StandardScaler`` transformer and ``standardize``.

Zero-variance features are left unscaled (divided by 1, so they become 0 after
centring) instead of producing NaN or huge values. As in scikit-learn 1.9, a feature
counts as constant when its variance is within the round-off bound of the two-pass
algorithm (Chan, Golub & LeVeque): ``var <= n * eps * var + (n * mean * eps) ** 2``, with
the ``eps`` of the dtype the variance is computed in (float32 data: float32's eps).
Variance is the population variance (``ddof=0``), as scikit-learn.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ember import ops
from ember.features.transformer import Transformer, as_float, fitted_attribute, fitted_count, int_scalar


def _axes(axis: Any, ndim: int, where: str) -> tuple[int, ...]:
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    result = []
    for item in items:
        if not isinstance(item, (int, np.integer)) or isinstance(item, bool) or not -ndim <= item < ndim:
            raise ValueError(f"{where}: axis {axis!r} is out of range for an input of rank {ndim}")
        result.append(int(item) % ndim)
    if len(set(result)) != len(result):
        raise ValueError(f"{where}: repeated axis in {axis!r}")
    return tuple(result)


def _moments(x: Any, axes: tuple[int, ...]) -> tuple[Any, Any, int]:
    """Mean and scale (``sqrt(var)``, 1 for constant features) over ``axes``, and the count."""
    shape = ops.shape(x)
    count = int(np.prod([shape[a] for a in axes])) if axes else 1
    if count == 0:
        raise ValueError(f"cannot compute statistics over empty axes {axes} of an input of shape {shape}")
    # Shifted by the first sample: a constant feature gets its exact value as mean (so it
    # standardizes to exactly 0), and the sums are of smaller, better-conditioned terms.
    first = ops.getitem(x, tuple(slice(0, 1) if a in axes else slice(None) for a in range(len(shape))))
    shifted = ops.subtract(x, first)
    mean = ops.add(first, ops.mean(shifted, axis=axes, keepdims=True))
    var = ops.mean(ops.square(ops.subtract(x, mean)), axis=axes, keepdims=True)
    return mean, var, count


def _constant_mask(var: Any, mean: Any, count: int) -> Any:
    """True where a variance is indistinguishable from 0 by round-off (see the module docstring)."""
    eps = float(np.finfo(ops.dtype(var)).eps)
    bound = ops.add(ops.multiply(var, count * eps), ops.square(ops.multiply(mean, count * eps)))
    return ops.less_equal(var, bound)


def _safe_scale(var: Any, mean: Any, count: int) -> Any:
    """``sqrt(var)`` with 1 where the feature is constant."""
    return ops.where(_constant_mask(var, mean, count), ops.ones_like(var), ops.sqrt(var))


def standardize(x: Any, axis: Any = 0, with_mean: bool = True, with_std: bool = True) -> Any:
    """``(x - mean) / std`` with statistics over ``axis``; constant features become 0, not NaN.

    The functional form of :class:`StandardScaler` for arrays of any rank: statistics are
    computed over ``axis`` (an int or a tuple) of ``x`` itself. NaN propagates (as in any
    ``ops`` computation); use ``StandardScaler`` for validated input.

    Args:
        x: array (NumPy, list, native array or ``Tensor``); integers are computed in ``floatx()``.
        axis: axis or axes to reduce (scikit-learn's ``scale`` uses 0: per column).
        with_mean: subtract the mean.
        with_std: divide by the standard deviation (``ddof=0``).

    Returns:
        A floating native array of ``x``'s shape.

    Example:
        >>> import ember
        >>> from ember import features, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(features.standardize([[1.0, 5.0], [3.0, 5.0]])).tolist()
        [[-1.0, 0.0], [1.0, 0.0]]
    """
    x = as_float(x, "standardize: x")
    if not with_mean and not with_std:
        return x
    axes = _axes(axis, ops.ndim(x), "standardize")
    mean, var, count = _moments(x, axes)
    out = ops.subtract(x, mean) if with_mean else x
    return ops.divide(out, _safe_scale(var, mean, count)) if with_std else out


class StandardScaler(Transformer):
    """Standardize features (columns) to zero mean and unit variance.

    Args:
        with_mean: centre the data (``mean_`` is stored whenever either flag is on, as in
            scikit-learn).
        with_std: scale to unit variance (``var_`` and ``scale_`` are None without it).

    Fitted attributes: ``mean_``, ``var_``, ``scale_`` ``(n_features,)`` (or None),
    ``n_samples_seen_`` and ``n_features_in_`` (ints).

    Unlike scikit-learn, NaN in the input is an error (scikit-learn treats it as missing).

    Example:
        >>> import ember
        >>> from ember import features, ops
        >>> ember.set_backend("numpy")
        >>> scaler = features.StandardScaler().fit([[0.0, 1.0], [4.0, 1.0]])
        >>> ops.to_numpy(scaler.transform([[2.0, 1.0], [6.0, 3.0]])).tolist()
        [[0.0, 0.0], [2.0, 2.0]]
        >>> ops.to_numpy(scaler.scale_).tolist()
        [2.0, 1.0]
    """

    _required_state = ("n_samples_seen_", "n_features_in_")
    _optional_state = ("mean_", "var_", "scale_")

    with_mean: bool = dataclasses.field(default=True, kw_only=True)
    with_std: bool = dataclasses.field(default=True, kw_only=True)

    mean_ = fitted_attribute("mean_", "Per-feature mean (None when with_mean and with_std are both False).")
    var_ = fitted_attribute("var_", "Per-feature population variance (None without with_std).")
    scale_ = fitted_attribute("scale_", "Per-feature divisor: sqrt(var_), 1 for constant features.")

    def __post_init__(self) -> None:
        for name in ("with_mean", "with_std"):
            if not isinstance(getattr(self, name), bool):
                self._fail(f"{name} must be a bool, received {getattr(self, name)!r}", TypeError)

    n_samples_seen_ = fitted_count("n_samples_seen_", "Number of samples seen by ``fit``.")

    def _fit(self, x: Any) -> dict:
        x = self.check_input(x, "fit", fitted=False)
        n, p = ops.shape(x)
        state = {"n_samples_seen_": int_scalar(n), "n_features_in_": int_scalar(p)}
        if self.with_mean or self.with_std:
            mean, var, _ = _moments(x, (0,))
            state["mean_"] = ops.squeeze(mean, 0)
            if self.with_std:
                state["var_"] = ops.squeeze(var, 0)
                state["scale_"] = ops.squeeze(_safe_scale(var, mean, n), 0)
        return state

    def transform(self, x: Any) -> Any:
        """``(x - mean_) / scale_`` (each step only when configured).

        Raises:
            NotFittedError: before ``fit``. ValueError: wrong feature count, NaN, not 2-D.
        """
        x = self.check_input(x, "transform")
        if self.with_mean:
            x = ops.subtract(x, self._get("mean_"))
        if self.with_std:
            x = ops.divide(x, self._get("scale_"))
        return x

    def inverse_transform(self, x: Any) -> Any:
        """``x * scale_ + mean_``: back to the original units."""
        x = self.check_input(x, "inverse_transform")
        if self.with_std:
            x = ops.multiply(x, self._get("scale_"))
        if self.with_mean:
            x = ops.add(x, self._get("mean_"))
        return x
