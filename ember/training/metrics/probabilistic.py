"""Loss-valued metrics: the mean crossentropy, KL divergence, Poisson and hinge losses.

Each is a :class:`MeanMetricWrapper` around the loss function of the same name (Keras's
``metrics.BinaryCrossentropy``, ...), so the value tracks the unweighted loss.

Example:
    >>> import ember
    >>> from ember import metrics
    >>> ember.set_backend("numpy")
    >>> round(float(metrics.BinaryCrossentropy()([[1.0], [0.0]], [[0.5], [0.5]])), 6)
    0.693147
"""

from __future__ import annotations

from typing import Any

from ember.serialization import register_serializable
from ember.training.losses.base import check_axis, check_fraction
from ember.training.losses.hinge import categorical_hinge, hinge, squared_hinge
from ember.training.losses.probabilistic import (
    binary_crossentropy,
    categorical_crossentropy,
    kl_divergence,
    poisson,
    sparse_categorical_crossentropy,
)
from ember.training.metrics.reduction import MeanMetricWrapper


@register_serializable(package="ember.metrics")
class BinaryCrossentropy(MeanMetricWrapper):
    """The mean binary crossentropy.

    Args:
        name, dtype: as for :class:`Metric`.
        from_logits, label_smoothing: as for :func:`ember.losses.binary_crossentropy`.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.BinaryCrossentropy(from_logits=True)([[1.0]], [[0.0]])), 6)
        0.693147
    """

    def __init__(self, name: str = "binary_crossentropy", dtype: Any = None, from_logits: bool = False,
                 label_smoothing: float = 0.0):
        super().__init__(binary_crossentropy, name=name, dtype=dtype, from_logits=bool(from_logits),
                         label_smoothing=check_fraction("BinaryCrossentropy", "label_smoothing", label_smoothing))


@register_serializable(package="ember.metrics")
class CategoricalCrossentropy(MeanMetricWrapper):
    """The mean categorical crossentropy (one-hot labels).

    Args:
        name, dtype: as for :class:`Metric`.
        from_logits, label_smoothing, axis: as for :func:`ember.losses.categorical_crossentropy`.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.CategoricalCrossentropy()([[0.0, 1.0]], [[0.5, 0.5]])), 6)
        0.693147
    """

    def __init__(self, name: str = "categorical_crossentropy", dtype: Any = None, from_logits: bool = False,
                 label_smoothing: float = 0.0, axis: int = -1):
        super().__init__(categorical_crossentropy, name=name, dtype=dtype, from_logits=bool(from_logits),
                         label_smoothing=check_fraction("CategoricalCrossentropy", "label_smoothing", label_smoothing),
                         axis=check_axis("CategoricalCrossentropy", axis))


@register_serializable(package="ember.metrics")
class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """The mean sparse categorical crossentropy (integer labels).

    Args:
        name, dtype: as for :class:`Metric`.
        from_logits, axis: as for :func:`ember.losses.sparse_categorical_crossentropy`.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.SparseCategoricalCrossentropy()([1], [[0.5, 0.5]])), 6)
        0.693147
    """

    def __init__(self, name: str = "sparse_categorical_crossentropy", dtype: Any = None, from_logits: bool = False,
                 axis: int = -1):
        super().__init__(sparse_categorical_crossentropy, name=name, dtype=dtype, from_logits=bool(from_logits),
                         axis=check_axis("SparseCategoricalCrossentropy", axis))


@register_serializable(package="ember.metrics")
class KLDivergence(MeanMetricWrapper):
    """The mean Kullback-Leibler divergence.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> round(float(metrics.KLDivergence()([[1.0, 0.0]], [[0.5, 0.5]])), 6)
        0.693146
    """

    def __init__(self, name: str = "kl_divergence", dtype: Any = None):
        super().__init__(kl_divergence, name=name, dtype=dtype)


@register_serializable(package="ember.metrics")
class Poisson(MeanMetricWrapper):
    """The mean Poisson loss.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.Poisson()([[0.0, 0.0]], [[1.0, 3.0]]))
        2.0
    """

    def __init__(self, name: str = "poisson", dtype: Any = None):
        super().__init__(poisson, name=name, dtype=dtype)


@register_serializable(package="ember.metrics")
class Hinge(MeanMetricWrapper):
    """The mean hinge loss.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.Hinge()([[-1.0, 1.0]], [[0.5, 2.0]]))
        0.75
    """

    def __init__(self, name: str = "hinge", dtype: Any = None):
        super().__init__(hinge, name=name, dtype=dtype)


@register_serializable(package="ember.metrics")
class SquaredHinge(MeanMetricWrapper):
    """The mean squared hinge loss.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.SquaredHinge()([[-1.0, 1.0]], [[0.5, 2.0]]))
        1.125
    """

    def __init__(self, name: str = "squared_hinge", dtype: Any = None):
        super().__init__(squared_hinge, name=name, dtype=dtype)


@register_serializable(package="ember.metrics")
class CategoricalHinge(MeanMetricWrapper):
    """The mean categorical hinge loss.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> float(metrics.CategoricalHinge()([[0.0, 1.0]], [[0.5, 0.25]]))
        1.25
    """

    def __init__(self, name: str = "categorical_hinge", dtype: Any = None):
        super().__init__(categorical_hinge, name=name, dtype=dtype)
