"""Probabilistic losses: binary/categorical/sparse crossentropy, KL divergence, Poisson.

Computed stably: from logits through ``softplus`` (log-sigmoid) and ``log_softmax``
(log-sum-exp), so logits of +-1e4 give finite, exact values and gradients; from
probabilities by clipping to ``[1e-7, 1 - 1e-7]`` as Keras does.

Example:
    >>> import ember
    >>> from ember import losses, ops
    >>> ember.set_backend("numpy")
    >>> ops.to_numpy(losses.binary_crossentropy([[1.0]], [[10000.0]], from_logits=True)).tolist()
    [0.0]
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ember import dtypes, ops
from ember.global_settings import epsilon
from ember.serialization import register_serializable
from ember.training.losses.base import (
    LossFunctionWrapper,
    as_float,
    check_axis,
    check_broadcastable,
    check_fraction,
    check_same_shape,
    concrete,
    labels_to_tensor,
    prepare,
)
from ember.validation import values_checked

_DEFAULT = "sum_over_batch_size"


def _log_probabilities(y_pred: Any, from_logits: bool, axis: int) -> Any:
    """Log-probabilities along ``axis``: ``log_softmax`` of logits, or the log of the
    normalised, clipped probabilities (Keras's ``from_logits=False`` path)."""
    if from_logits:
        return ops.nn.log_softmax(y_pred, axis=axis)
    probabilities = ops.divide(y_pred, ops.sum(y_pred, axis=axis, keepdims=True))
    return ops.log(ops.clip(probabilities, epsilon(), 1.0 - epsilon()))


@register_serializable(package="ember")
def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False, label_smoothing: float = 0.0,
                        axis: int = -1) -> Any:
    """Binary crossentropy, averaged over ``axis``.

    Args:
        y_true: labels in ``[0, 1]`` (bool or numeric), the shape of ``y_pred``.
        y_pred: probabilities, or logits when ``from_logits``.
        from_logits: ``y_pred`` holds logits (computed as ``y * softplus(-x) + (1 - y) * softplus(x)``).
        label_smoothing: labels become ``y * (1 - s) + 0.5 * s``.
        axis: the axis averaged over.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> round(float(losses.binary_crossentropy([[1.0, 0.0]], [[0.5, 0.5]])[0]), 6)
        0.693147
    """
    owner = "binary_crossentropy"
    axis = check_axis(owner, axis)
    label_smoothing = check_fraction(owner, "label_smoothing", label_smoothing)
    y_true, y_pred = prepare(y_true, y_pred, owner)
    check_same_shape(owner, y_true, y_pred)
    if label_smoothing:
        y_true = ops.add(ops.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    if from_logits:
        negative = ops.nn.softplus(ops.negative(y_pred))  # -log(sigmoid(x))
        positive = ops.nn.softplus(y_pred)  # -log(1 - sigmoid(x))
        losses = ops.add(ops.multiply(y_true, negative), ops.multiply(ops.subtract(1.0, y_true), positive))
    else:
        p = ops.clip(y_pred, epsilon(), 1.0 - epsilon())
        losses = ops.negative(ops.add(ops.multiply(y_true, ops.log(p)),
                                      ops.multiply(ops.subtract(1.0, y_true), ops.log(ops.subtract(1.0, p)))))
    return ops.mean(losses, axis=axis)


@register_serializable(package="ember")
def categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False, label_smoothing: float = 0.0,
                             axis: int = -1) -> Any:
    """Crossentropy between one-hot (or soft) labels and predicted class probabilities.

    Args:
        y_true: one-hot labels or class probabilities, the shape of ``y_pred``.
        y_pred: probabilities (normalised to sum to 1 along ``axis``, then clipped), or
            logits when ``from_logits``.
        from_logits: ``y_pred`` holds logits (``log_softmax`` is used).
        label_smoothing: labels become ``y * (1 - s) + s / num_classes``.
        axis: the class axis.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> round(float(losses.categorical_crossentropy([[0.0, 1.0]], [[0.5, 0.5]])[0]), 6)
        0.693147
    """
    owner = "categorical_crossentropy"
    axis = check_axis(owner, axis)
    label_smoothing = check_fraction(owner, "label_smoothing", label_smoothing)
    y_pred = as_float(y_pred, owner)
    y_true = labels_to_tensor(y_true, owner)
    check_same_shape(owner, y_true, y_pred, hint=" (integer class indices go to sparse_categorical_crossentropy)")
    y_true = prepare(y_true, y_pred, owner)[0]
    shape = ops.shape(y_pred)
    if not shape:
        raise ValueError(f"{owner}: y_pred must have a class axis, received a scalar (shape ())")
    if shape[axis] == 1:
        warnings.warn(
            f"{owner}: expected y_pred of shape (batch_size, num_classes) with num_classes > 1, received "
            f"y_pred.shape={shape}; use binary_crossentropy for two classes", SyntaxWarning, stacklevel=2)
    if label_smoothing:
        y_true = ops.add(ops.multiply(y_true, 1.0 - label_smoothing), label_smoothing / shape[axis])
    log_p = _log_probabilities(y_pred, from_logits, axis)
    return ops.negative(ops.sum(ops.multiply(y_true, log_p), axis=axis))


def _check_sparse_values(owner: str, labels: Any, num_classes: int, ignore_class: int | None) -> None:
    """Eager check of sparse label values: integral and in ``[0, num_classes)`` (or the
    ignored class). Two scalars leave the device (three for float labels); skipped while
    values are unknown (inside ``mx.compile``)."""
    if not values_checked():  # the trainer's steps (after it checked the first batch eagerly)
        return
    if ops.size(labels) == 0:
        return
    checked = labels if ignore_class is None else ops.where(ops.equal(labels, ignore_class), 0, labels)
    low = concrete(ops.min(checked))
    if low is None:
        return
    floating = dtypes.is_float(ops.dtype(labels))
    fine = low >= 0 and ops.to_numpy(ops.max(checked)) < num_classes
    if fine and floating:
        fine = not bool(ops.to_numpy(ops.any(ops.not_equal(labels, ops.floor(labels)))))
    if fine:
        return
    values = np.asarray(ops.to_numpy(labels))
    if floating and np.any(values != np.floor(values)):
        example = values[values != np.floor(values)].ravel()[0]
        raise ValueError(f"{owner}: y_true must hold integer class indices, received a non-integral "
                         f"value {example.item()!r} (one-hot labels go to categorical_crossentropy)")
    invalid = values[(values < 0) | (values >= num_classes)]
    if ignore_class is not None:
        invalid = invalid[invalid != ignore_class]
    raise ValueError(f"{owner}: class indices must be in [0, {num_classes}) for y_pred with {num_classes} "
                     f"classes, received {invalid.ravel()[0].item()!r}")


# Up to this many classes the label's log-probability is picked with a one-hot product
# (cheapest on every backend); above it, with take_along_axis (no (..., classes) one-hot).
_ONE_HOT_MAX_CLASSES = 1024


def sparse_crossentropy_with_mask(y_true: Any, y_pred: Any, from_logits: bool = False,
                                  ignore_class: int | None = None, axis: int = -1) -> tuple[Any, Any]:
    """``(per-sample losses, validity mask or None)`` of :func:`sparse_categorical_crossentropy`."""
    owner = "sparse_categorical_crossentropy"
    axis = check_axis(owner, axis)
    y_pred = as_float(y_pred, owner)
    y_true = labels_to_tensor(y_true, owner)
    pred_shape, true_shape = ops.shape(y_pred), ops.shape(y_true)
    if not pred_shape:
        raise ValueError(f"{owner}: y_pred must have a class axis, received a scalar (shape ())")
    if axis % len(pred_shape) != len(pred_shape) - 1:
        y_pred = ops.moveaxis(y_pred, axis, -1)
        pred_shape = ops.shape(y_pred)
    label_dtype = ops.dtype(y_true)
    if not (dtypes.is_integer(label_dtype) or dtypes.is_float(label_dtype)):
        raise TypeError(f"{owner}: y_true must hold integer class indices, received dtype {label_dtype}")
    if len(true_shape) == len(pred_shape) and true_shape and true_shape[-1] == 1:
        y_true = ops.squeeze(y_true, -1)
        true_shape = true_shape[:-1]
    if true_shape != pred_shape[:-1]:
        raise ValueError(
            f"{owner}: y_true must hold one integer class index per prediction, expected shape "
            f"{pred_shape[:-1]} (or {pred_shape[:-1] + (1,)}), received y_true.shape={true_shape} for "
            f"y_pred.shape={pred_shape} (one-hot labels go to categorical_crossentropy)")
    num_classes = pred_shape[-1]
    _check_sparse_values(owner, y_true, num_classes, ignore_class)
    labels = y_true if label_dtype == "int32" else ops.cast(y_true, "int32")
    valid = None
    if ignore_class is not None:
        valid = ops.not_equal(labels, int(ignore_class))
        labels = ops.where(valid, labels, ops.zeros_like(labels))
    log_p = _log_probabilities(y_pred, from_logits, -1)
    if num_classes <= _ONE_HOT_MAX_CLASSES:
        picked = ops.sum(ops.multiply(ops.one_hot(labels, num_classes, dtype=ops.dtype(log_p)), log_p), axis=-1)
    else:
        picked = ops.squeeze(ops.take_along_axis(log_p, ops.expand_dims(labels, -1), axis=-1), -1)
    losses = ops.negative(picked)
    if valid is not None:
        losses = ops.where(valid, losses, ops.zeros_like(losses))
    return losses, valid


@register_serializable(package="ember")
def sparse_categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                                    ignore_class: int | None = None, axis: int = -1) -> Any:
    """Crossentropy between integer class indices and predicted class probabilities.

    Args:
        y_true: integer class indices of shape ``y_pred.shape[:-1]`` (a trailing axis of 1 is
            allowed); integral floats are accepted.
        y_pred: probabilities (normalised, clipped), or logits when ``from_logits``.
        from_logits: ``y_pred`` holds logits.
        ignore_class: a label value whose entries get zero loss (and, in a :class:`Loss`,
            are left out of the mean).
        axis: the class axis of ``y_pred``.

    Raises:
        ValueError: labels of the wrong shape, non-integral or out of ``[0, classes)``. The
            value checks read the labels on the host (one small sync); they are skipped inside
            ``mx.compile`` and inside ``ember.validation.unchecked_values()`` (the
            trainer checks the first batch, then steps without syncs), where an out-of-range
            label is not diagnosed.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> round(float(losses.sparse_categorical_crossentropy([1], [[0.5, 0.5]])[0]), 6)
        0.693147
    """
    return sparse_crossentropy_with_mask(y_true, y_pred, from_logits, ignore_class, axis)[0]


@register_serializable(package="ember")
def kl_divergence(y_true: Any, y_pred: Any) -> Any:
    """``sum(y_true * log(y_true / y_pred), axis=-1)`` with both clipped to ``[1e-7, 1]``.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(losses.kl_divergence([[0.5, 0.5]], [[0.5, 0.5]])).tolist()
        [0.0]
    """
    y_true, y_pred = prepare(y_true, y_pred, "kl_divergence")
    check_broadcastable("kl_divergence", y_true, y_pred)
    y_true = ops.clip(y_true, epsilon(), 1.0)
    y_pred = ops.clip(y_pred, epsilon(), 1.0)
    return ops.sum(ops.multiply(y_true, ops.log(ops.divide(y_true, y_pred))), axis=-1)


@register_serializable(package="ember")
def poisson(y_true: Any, y_pred: Any) -> Any:
    """``mean(y_pred - y_true * log(y_pred + 1e-7), axis=-1)``.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(losses.poisson([[0.0, 0.0]], [[1.0, 3.0]])).tolist()
        [2.0]
    """
    y_true, y_pred = prepare(y_true, y_pred, "poisson")
    check_broadcastable("poisson", y_true, y_pred)
    return ops.mean(ops.subtract(y_pred, ops.multiply(y_true, ops.log(ops.add(y_pred, epsilon())))), axis=-1)


@register_serializable(package="ember")
class BinaryCrossentropy(LossFunctionWrapper):
    """Binary crossentropy (alias ``"bce"``); see :func:`binary_crossentropy`.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.BinaryCrossentropy(from_logits=True)([[1.0], [0.0]], [[0.0], [0.0]])), 6)
        0.693147
    """

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str | None = _DEFAULT, name: str = "binary_crossentropy", dtype: Any = None):
        super().__init__(binary_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=bool(from_logits),
                         label_smoothing=check_fraction("BinaryCrossentropy", "label_smoothing", label_smoothing),
                         axis=check_axis("BinaryCrossentropy", axis))


@register_serializable(package="ember")
class CategoricalCrossentropy(LossFunctionWrapper):
    """Categorical crossentropy for one-hot labels; see :func:`categorical_crossentropy`.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.CategoricalCrossentropy()([[0.0, 1.0]], [[0.5, 0.5]])), 6)
        0.693147
    """

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str | None = _DEFAULT, name: str = "categorical_crossentropy", dtype: Any = None):
        super().__init__(categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=bool(from_logits),
                         label_smoothing=check_fraction("CategoricalCrossentropy", "label_smoothing", label_smoothing),
                         axis=check_axis("CategoricalCrossentropy", axis))


@register_serializable(package="ember")
class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Categorical crossentropy for integer labels; see :func:`sparse_categorical_crossentropy`.

    With ``ignore_class``, entries labelled with it get zero loss and, under the
    ``"sum_over_batch_size"``/``"mean"`` reductions, the mean runs over the other entries
    only (Keras's mask semantics).

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> loss = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)
        >>> round(float(loss([0, -1], [[0.0, 0.0], [5.0, 0.0]])), 6)
        0.693147
    """

    def __init__(self, from_logits: bool = False, ignore_class: int | None = None,
                 reduction: str | None = _DEFAULT, name: str = "sparse_categorical_crossentropy", dtype: Any = None):
        if ignore_class is not None and (
            isinstance(ignore_class, bool) or not isinstance(ignore_class, (int, np.integer))
        ):
            raise TypeError(f"SparseCategoricalCrossentropy: ignore_class must be an int or None, "
                            f"received ignore_class={ignore_class!r}")
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=bool(from_logits),
                         ignore_class=None if ignore_class is None else int(ignore_class))

    def call_with_mask(self, y_true: Any, y_pred: Any) -> tuple[Any, Any]:
        return sparse_crossentropy_with_mask(y_true, y_pred, **self._fn_kwargs)


@register_serializable(package="ember")
class KLDivergence(LossFunctionWrapper):
    """Kullback-Leibler divergence (alias ``"kld"``); see :func:`kl_divergence`.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> round(float(losses.KLDivergence()([[1.0, 0.0]], [[0.5, 0.5]])), 6)
        0.693146
    """

    def __init__(self, reduction: str | None = _DEFAULT, name: str = "kl_divergence", dtype: Any = None):
        super().__init__(kl_divergence, reduction=reduction, name=name, dtype=dtype)


@register_serializable(package="ember")
class Poisson(LossFunctionWrapper):
    """Poisson negative log-likelihood (up to a constant); see :func:`poisson`.

    Example:
        >>> import ember
        >>> from ember import losses
        >>> ember.set_backend("numpy")
        >>> float(losses.Poisson()([[0.0, 0.0]], [[1.0, 3.0]]))
        2.0
    """

    def __init__(self, reduction: str | None = _DEFAULT, name: str = "poisson", dtype: Any = None):
        super().__init__(poisson, reduction=reduction, name=name, dtype=dtype)
