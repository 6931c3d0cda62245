"""Focal crossentropies (Lin et al., 2017): crossentropy down-weighted on well-classified examples."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.global_settings import epsilon
from ember.serialization import register_serializable
from ember.training.losses.base import (
    LossFunctionWrapper,
    as_float,
    check_axis,
    check_fraction,
)

_DEFAULT = "sum_over_batch_size"


def _check_gamma(owner: str, gamma: Any) -> float:
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or gamma < 0:
        raise ValueError(f"{owner}: gamma must be a float >= 0, received gamma={gamma!r}")
    return float(gamma)


@register_serializable(package="ember")
def binary_focal_crossentropy(y_true: Any, y_pred: Any, apply_class_balancing: bool = False, alpha: float = 0.25,
                              gamma: float = 2.0, from_logits: bool = False, label_smoothing: float = 0.0,
                              axis: int = -1) -> Any:
    """Binary crossentropy times ``(1 - p_t) ** gamma`` (and ``alpha``/``1 - alpha`` class weights when
    ``apply_class_balancing``), averaged over ``axis``.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.binary_focal_crossentropy([[1.0]], [[0.5]])[0]), 6)
        0.173287
    """
    owner = "binary_focal_crossentropy"
    axis = check_axis(owner, axis)
    label_smoothing = check_fraction(owner, "label_smoothing", label_smoothing)
    gamma = _check_gamma(owner, gamma)
    y_pred = as_float(y_pred, owner)
    y_true = ops.cast(ops.convert_to_tensor(y_true), ops.dtype(y_pred))
    if label_smoothing:
        y_true = ops.add(ops.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    if from_logits:
        y_pred = ops.nn.sigmoid(y_pred)
    bce = ops.binary_crossentropy(y_true, y_pred)
    p_t = ops.add(ops.multiply(y_true, y_pred), ops.multiply(ops.subtract(1.0, y_true), ops.subtract(1.0, y_pred)))
    focal = ops.multiply(ops.power(ops.subtract(1.0, p_t), gamma), bce)
    if apply_class_balancing:
        weight = ops.add(ops.multiply(y_true, alpha), ops.multiply(ops.subtract(1.0, y_true), 1.0 - alpha))
        focal = ops.multiply(weight, focal)
    return ops.mean(focal, axis=axis)


@register_serializable(package="ember")
def categorical_focal_crossentropy(y_true: Any, y_pred: Any, alpha: float = 0.25, gamma: float = 2.0,
                                   from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1) -> Any:
    """Categorical crossentropy with each class term times ``alpha * (1 - p) ** gamma``, summed over ``axis``.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.categorical_focal_crossentropy([[0.0, 1.0]], [[0.5, 0.5]])[0]), 6)
        0.043322
    """
    owner = "categorical_focal_crossentropy"
    axis = check_axis(owner, axis)
    label_smoothing = check_fraction(owner, "label_smoothing", label_smoothing)
    gamma = _check_gamma(owner, gamma)
    y_pred = as_float(y_pred, owner)
    y_true = ops.cast(ops.convert_to_tensor(y_true), ops.dtype(y_pred))
    if ops.shape(y_true) != ops.shape(y_pred):
        raise ValueError(f"{owner}: y_true and y_pred must have the same shape, received {ops.shape(y_true)} "
                         f"and {ops.shape(y_pred)}")
    if label_smoothing:
        y_true = ops.add(ops.multiply(y_true, 1.0 - label_smoothing), label_smoothing / ops.shape(y_true)[-1])
    if from_logits:
        y_pred = ops.nn.softmax(y_pred, axis=axis)
    output = ops.divide(y_pred, ops.sum(y_pred, axis=axis, keepdims=True))
    output = ops.clip(output, epsilon(), 1.0 - epsilon())
    crossentropy = ops.negative(ops.multiply(y_true, ops.log(output)))
    weight = ops.multiply(ops.power(ops.subtract(1.0, output), gamma), alpha)
    return ops.sum(ops.multiply(weight, crossentropy), axis=axis)


@register_serializable(package="ember")
class BinaryFocalCrossentropy(LossFunctionWrapper):
    """Loss object of :func:`binary_focal_crossentropy` (Keras's arguments and defaults).

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.BinaryFocalCrossentropy(gamma=0.0)([[1.0]], [[0.5]])), 6)
        0.693147
    """

    def __init__(self, apply_class_balancing: bool = False, alpha: float = 0.25, gamma: float = 2.0,
                 from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str | None = _DEFAULT, name: str = "binary_focal_crossentropy", dtype: Any = None):
        owner = type(self).__name__
        super().__init__(binary_focal_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         apply_class_balancing=bool(apply_class_balancing), alpha=float(alpha),
                         gamma=_check_gamma(owner, gamma), from_logits=bool(from_logits),
                         label_smoothing=check_fraction(owner, "label_smoothing", label_smoothing),
                         axis=check_axis(owner, axis))


@register_serializable(package="ember")
class CategoricalFocalCrossentropy(LossFunctionWrapper):
    """Loss object of :func:`categorical_focal_crossentropy` (Keras's arguments and defaults).

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.CategoricalFocalCrossentropy(alpha=1.0, gamma=0.0)([[0.0, 1.0]], [[0.5, 0.5]])), 6)
        0.693147
    """

    def __init__(self, alpha: float = 0.25, gamma: float = 2.0, from_logits: bool = False,
                 label_smoothing: float = 0.0, axis: int = -1, reduction: str | None = _DEFAULT,
                 name: str = "categorical_focal_crossentropy", dtype: Any = None):
        owner = type(self).__name__
        super().__init__(categorical_focal_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         alpha=float(alpha), gamma=_check_gamma(owner, gamma), from_logits=bool(from_logits),
                         label_smoothing=check_fraction(owner, "label_smoothing", label_smoothing),
                         axis=check_axis(owner, axis))
