"""Overlap and robust losses: Dice, Tversky, generalized crossentropy and the Circle metric-learning loss."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.global_settings import epsilon
from ember.serialization import register_serializable
from ember.training.losses.base import Loss, LossFunctionWrapper, as_float

_DEFAULT = "sum_over_batch_size"


@register_serializable(package="ember")
def dice(y_true: Any, y_pred: Any, axis: Any = None) -> Any:
    """``1 - 2 |y_true * y_pred| / (|y_true| + |y_pred|)``, sums over ``axis`` (None: everything).

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.dice([[1.0, 0.0]], [[1.0, 0.0]])), 6)
        0.0
    """
    y_pred = as_float(y_pred, "dice")
    y_true = ops.cast(ops.convert_to_tensor(y_true), ops.dtype(y_pred))
    intersection = ops.sum(ops.multiply(y_true, y_pred), axis=axis)
    total = ops.add(ops.add(ops.sum(y_true, axis=axis), ops.sum(y_pred, axis=axis)), epsilon())
    return ops.subtract(1.0, ops.divide(ops.multiply(2.0, intersection), total))


@register_serializable(package="ember")
def tversky(y_true: Any, y_pred: Any, alpha: float = 0.5, beta: float = 0.5, axis: Any = None) -> Any:
    """``1 - TP / (TP + alpha FP + beta FN)`` with Keras's soft counts (``FP = sum((1 - y_pred) y_true)``,
    ``FN = sum(y_pred (1 - y_true))``); alpha = beta = 0.5 is the Dice loss.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.tversky([[1.0, 0.0]], [[0.5, 0.5]])), 6)
        0.5
    """
    y_pred = as_float(y_pred, "tversky")
    y_true = ops.cast(ops.convert_to_tensor(y_true), ops.dtype(y_pred))
    intersection = ops.sum(ops.multiply(y_true, y_pred), axis=axis)
    false_positive = ops.sum(ops.multiply(ops.subtract(1.0, y_pred), y_true), axis=axis)
    false_negative = ops.sum(ops.multiply(y_pred, ops.subtract(1.0, y_true)), axis=axis)
    denominator = ops.add(ops.add(intersection, ops.add(ops.multiply(false_positive, alpha),
                                                        ops.multiply(false_negative, beta))), epsilon())
    return ops.subtract(1.0, ops.divide(intersection, denominator))


@register_serializable(package="ember")
def categorical_generalized_cross_entropy(y_true: Any, y_pred: Any, q: float) -> Any:
    """Generalized crossentropy (Zhang & Sabuncu, 2018) ``(1 - p_y ** q) / q`` for integer labels ``y_true``.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.categorical_generalized_cross_entropy([1], [[0.75, 0.25]], q=0.5)[0]), 6)
        1.0
    """
    owner = "categorical_generalized_cross_entropy"
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < q <= 1:
        raise ValueError(f"{owner}: q must be in (0, 1], received q={q!r}")
    y_pred = as_float(y_pred, owner)
    labels = ops.cast(ops.convert_to_tensor(y_true), "int32")
    hot = ops.one_hot(labels, ops.shape(y_pred)[-1], dtype=ops.dtype(y_pred))
    p = ops.sum(ops.multiply(y_pred, hot), axis=-1)
    return ops.divide(ops.subtract(1.0, ops.power(p, q)), q)


@register_serializable(package="ember")
def circle(y_true: Any, y_pred: Any, ref_labels: Any = None, ref_embeddings: Any = None, remove_diagonal: bool = True,
           gamma: float = 80.0, margin: float = 0.4) -> Any:
    """Circle loss (Sun et al., 2020) per embedding: ``y_pred`` are L2-normalised embeddings, ``y_true`` labels.

    Pairs with equal labels are positives, others negatives (the diagonal is left out when
    ``remove_diagonal``); the loss is ``softplus(logsumexp(pos) + logsumexp(neg))`` of the
    margin-weighted cosine distances.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> ops.shape(losses.circle([0, 0, 1], ops.eye(3)))
        (3,)
    """
    y_pred = as_float(y_pred, "circle")
    labels = ops.cast(ops.convert_to_tensor(y_true), "int32")
    reference = y_pred if ref_embeddings is None else ops.cast(ops.convert_to_tensor(ref_embeddings), ops.dtype(y_pred))
    reference_labels = labels if ref_labels is None else ops.cast(ops.convert_to_tensor(ref_labels), "int32")
    distances = ops.maximum(ops.subtract(1.0, ops.matmul(y_pred, ops.transpose(reference))), 0.0)
    same = ops.equal(
        ops.expand_dims(ops.reshape(labels, (-1,)), 1), ops.expand_dims(ops.reshape(reference_labels, (-1,)), 0)
    )
    positive, negative = same, ops.logical_not(same)
    if remove_diagonal and ops.shape(distances)[0] == ops.shape(distances)[1]:
        off_diagonal = ops.logical_not(ops.cast(ops.eye(ops.shape(distances)[0]), "bool"))
        positive = ops.logical_and(positive, off_diagonal)
    dtype = ops.dtype(distances)
    pos_weights = ops.maximum(ops.multiply(ops.add(margin, distances), ops.cast(positive, dtype)), 0.0)
    neg_weights = ops.maximum(ops.multiply(ops.subtract(1.0 + margin, distances), ops.cast(negative, dtype)), 0.0)
    pos_terms = ops.multiply(-gamma, ops.multiply(pos_weights, ops.subtract(margin, distances)))
    neg_terms = ops.multiply(gamma, ops.multiply(neg_weights, ops.subtract(1.0 - margin, distances)))
    minus_inf = ops.full_like(distances, float("-inf"))
    p_loss = ops.logsumexp(ops.where(positive, pos_terms, minus_inf), axis=1)
    n_loss = ops.logsumexp(ops.where(negative, neg_terms, minus_inf), axis=1)
    return ops.nn.softplus(ops.add(p_loss, n_loss))


@register_serializable(package="ember")
class Dice(LossFunctionWrapper):
    """Loss object of :func:`dice`.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.Dice()([[1.0, 0.0]], [[0.5, 0.5]])), 6)
        0.5
    """

    def __init__(self, reduction: str | None = _DEFAULT, name: str = "dice", axis: Any = None, dtype: Any = None):
        super().__init__(dice, reduction=reduction, name=name, dtype=dtype, axis=_axes(axis))


@register_serializable(package="ember")
class Tversky(LossFunctionWrapper):
    """Loss object of :func:`tversky`.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.Tversky(alpha=0.5, beta=0.5)([[1.0, 0.0]], [[0.5, 0.5]])), 6)
        0.5
    """

    def __init__(self, alpha: float = 0.5, beta: float = 0.5, reduction: str | None = _DEFAULT, name: str = "tversky",
                 axis: Any = None, dtype: Any = None):
        super().__init__(tversky, reduction=reduction, name=name, dtype=dtype, alpha=float(alpha), beta=float(beta),
                         axis=_axes(axis))


@register_serializable(package="ember")
class CategoricalGeneralizedCrossEntropy(LossFunctionWrapper):
    """Loss object of :func:`categorical_generalized_cross_entropy`.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.CategoricalGeneralizedCrossEntropy(q=1.0)([0], [[0.75, 0.25]])), 6)
        0.25
    """

    def __init__(self, q: float = 0.5, reduction: str | None = _DEFAULT,
                 name: str = "categorical_generalized_cross_entropy", dtype: Any = None):
        if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < q <= 1:
            raise ValueError(f"CategoricalGeneralizedCrossEntropy: q must be in (0, 1], received q={q!r}")
        super().__init__(categorical_generalized_cross_entropy, reduction=reduction, name=name, dtype=dtype, q=float(q))


@register_serializable(package="ember")
class Circle(Loss):
    """Loss object of :func:`circle`; only embeddings with a positive loss count in the mean (as Keras).

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> float(losses.Circle()([0, 1], ops.eye(2))) >= 0.0
        True
    """

    def __init__(self, gamma: float = 80.0, margin: float = 0.4, remove_diagonal: bool = True,
                 reduction: str | None = _DEFAULT, name: str = "circle", dtype: Any = None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.gamma, self.margin, self.remove_diagonal = float(gamma), float(margin), bool(remove_diagonal)

    def call(self, y_true: Any, y_pred: Any) -> Any:
        return circle(y_true, y_pred, remove_diagonal=self.remove_diagonal, gamma=self.gamma, margin=self.margin)

    def call_with_mask(self, y_true: Any, y_pred: Any) -> tuple[Any, Any]:
        values = self.call(y_true, y_pred)
        return values, ops.greater(values, 0.0)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(gamma=self.gamma, margin=self.margin, remove_diagonal=self.remove_diagonal)
        return config


def _axes(axis: Any) -> Any:
    if axis is None or isinstance(axis, int):
        return axis
    return [int(a) for a in axis]
