"""Hinge losses for maximum-margin classifiers: hinge, squared hinge, categorical hinge.

Binary labels in ``{0, 1}`` are mapped to ``{-1, 1}`` (Keras's rule: when every label is
0 or 1); labels already in ``{-1, 1}`` are used as they are. The mapping is an
``ops.where`` on the data, so it needs no host round trip and compiles.

Example:
    >>> import ember
    >>> from ember import losses, ops
    >>> ember.set_backend("numpy")
    >>> ops.to_numpy(losses.hinge([[1.0, 0.0]], [[0.5, -2.0]])).tolist()
    [0.25]
"""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.serialization import register_serializable
from ember.training.losses.base import LossFunctionWrapper, check_broadcastable, check_same_shape, prepare

_DEFAULT = "sum_over_batch_size"


def _to_signed_labels(y_true: Any) -> Any:
    """``2 * y - 1`` when every label is 0 or 1, else ``y`` unchanged."""
    is_binary = ops.all(ops.logical_or(ops.equal(y_true, 0.0), ops.equal(y_true, 1.0)))
    return ops.where(is_binary, ops.subtract(ops.multiply(y_true, 2.0), 1.0), y_true)


def _margins(owner: str, y_true: Any, y_pred: Any) -> Any:
    y_true, y_pred = prepare(y_true, y_pred, owner)
    check_broadcastable(owner, y_true, y_pred)
    y_true = _to_signed_labels(y_true)
    return ops.maximum(ops.subtract(1.0, ops.multiply(y_true, y_pred)), 0.0)


@register_serializable(package="ember")
def hinge(y_true: Any, y_pred: Any) -> Any:
    """``mean(maximum(1 - y_true * y_pred, 0), axis=-1)`` with labels in ``{-1, 1}`` (or ``{0, 1}``).

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(losses.hinge([[-1.0, 1.0]], [[0.5, 2.0]])).tolist()
        [0.75]
    """
    return ops.mean(_margins("hinge", y_true, y_pred), axis=-1)


@register_serializable(package="ember")
def squared_hinge(y_true: Any, y_pred: Any) -> Any:
    """``mean(maximum(1 - y_true * y_pred, 0) ** 2, axis=-1)``.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(losses.squared_hinge([[-1.0, 1.0]], [[0.5, 2.0]])).tolist()
        [1.125]
    """
    return ops.mean(ops.square(_margins("squared_hinge", y_true, y_pred)), axis=-1)


@register_serializable(package="ember")
def categorical_hinge(y_true: Any, y_pred: Any) -> Any:
    """``maximum(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)`` for one-hot labels.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(losses.categorical_hinge([[0.0, 1.0]], [[0.5, 0.25]])).tolist()
        [1.25]
    """
    y_true, y_pred = prepare(y_true, y_pred, "categorical_hinge")
    check_same_shape("categorical_hinge", y_true, y_pred)
    positive = ops.sum(ops.multiply(y_true, y_pred), axis=-1)
    negative = ops.max(ops.multiply(ops.subtract(1.0, y_true), y_pred), axis=-1)
    return ops.maximum(ops.add(ops.subtract(negative, positive), 1.0), 0.0)


@register_serializable(package="ember")
class Hinge(LossFunctionWrapper):
    """Hinge loss; see :func:`hinge`.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> float(losses.Hinge()([[-1.0, 1.0]], [[0.5, 2.0]]))
        0.75
    """

    def __init__(self, reduction: str | None = _DEFAULT, name: str = "hinge", dtype: Any = None):
        super().__init__(hinge, reduction=reduction, name=name, dtype=dtype)


@register_serializable(package="ember")
class SquaredHinge(LossFunctionWrapper):
    """Squared hinge loss; see :func:`squared_hinge`.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> float(losses.SquaredHinge()([[-1.0, 1.0]], [[0.5, 2.0]]))
        1.125
    """

    def __init__(self, reduction: str | None = _DEFAULT, name: str = "squared_hinge", dtype: Any = None):
        super().__init__(squared_hinge, reduction=reduction, name=name, dtype=dtype)


@register_serializable(package="ember")
class CategoricalHinge(LossFunctionWrapper):
    """Categorical hinge loss; see :func:`categorical_hinge`.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> float(losses.CategoricalHinge()([[0.0, 1.0]], [[0.5, 0.25]]))
        1.25
    """

    def __init__(self, reduction: str | None = _DEFAULT, name: str = "categorical_hinge", dtype: Any = None):
        super().__init__(categorical_hinge, reduction=reduction, name=name, dtype=dtype)
