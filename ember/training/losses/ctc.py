"""CTC loss (Keras's ``losses.CTC`` / ``losses.ctc``) over :func:`ember.ops.ctc_loss`."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.serialization import register_serializable
from ember.training.losses.base import LossFunctionWrapper, as_float


@register_serializable(package="ember")
def ctc(y_true: Any, y_pred: Any) -> Any:
    """CTC loss per sequence: ``y_true`` ``(batch, max_label_length)`` labels padded with 0 (the blank),
    ``y_pred`` ``(batch, time, num_classes)`` logits using every time step (Keras's convention).

    Raises:
        ValueError: inputs of the wrong rank.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> round(float(losses.ctc([[1]], ops.zeros((1, 2, 2)))[0]), 6)
        0.287682
    """
    y_pred = as_float(y_pred, "ctc")
    labels = ops.cast(ops.convert_to_tensor(y_true), "int32")
    if ops.ndim(labels) != 2:
        raise ValueError(f"ctc: y_true must be (batch_size, max_length) integer labels, received shape "
                         f"{ops.shape(labels)}")
    if ops.ndim(y_pred) != 3:
        raise ValueError(f"ctc: y_pred must be (batch_size, max_length, num_classes) logits, received shape "
                         f"{ops.shape(y_pred)}")
    batch, time = ops.shape(y_pred)[:2]
    label_length = ops.sum(ops.cast(ops.not_equal(labels, 0), "int32"), axis=-1)
    return ops.ctc_loss(labels, y_pred, label_length, ops.full((batch,), time, dtype="int32"), mask_index=0)


@register_serializable(package="ember")
class CTC(LossFunctionWrapper):
    """Loss object of :func:`ctc`.

    Example:
        >>> import ember
        >>> from ember import losses, ops
        >>> ember.set_backend("numpy")
        >>> round(float(losses.CTC()([[1]], ops.zeros((1, 2, 2)))), 6)
        0.287682
    """

    def __init__(self, reduction: str | None = "sum_over_batch_size", name: str = "ctc", dtype: Any = None):
        super().__init__(ctc, reduction=reduction, name=name, dtype=dtype)
