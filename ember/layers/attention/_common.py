"""Helpers shared by the attention layers: masks, the masked softmax, dropout seeds.

Masks follow Keras: boolean, ``True`` where attention is allowed. A masked score is
replaced by a large negative number (``-1e9``; ``-3e4`` in float16) rather than
``-inf``, so a row whose every position is masked gives uniform weights instead of
NaN, and gradients stay finite.
"""

from __future__ import annotations

from typing import Any

from ember import dtypes, ops
from ember.distribute import batch_window
from ember.seeds import call_seed


def large_negative(dtype: str) -> float:
    """The fill value for masked scores: ``-1e9``, or ``-3e4`` in float16 (its range is ±65504)."""
    return -3e4 if dtypes.standardize_dtype(dtype) == "float16" else -1e9


def masked_softmax(scores: Any, mask: Any = None) -> Any:
    """Softmax over the last axis of ``scores``; positions where ``mask`` is False get ~0 weight.

    ``mask`` is None or a boolean array broadcastable to ``scores``.
    """
    if mask is not None:
        scores = ops.where(mask, scores, large_negative(ops.dtype(scores)))
    return ops.nn.softmax(scores, axis=-1)


def causal_mask(query_length: int, value_length: int) -> Any:
    """``(query_length, value_length)`` boolean lower-triangular mask: ``i`` attends to ``j <= i``."""
    rows = ops.expand_dims(ops.arange(query_length, dtype="int32"), 1)
    cols = ops.expand_dims(ops.arange(value_length, dtype="int32"), 0)
    return ops.greater_equal(rows, cols)


def as_bool_mask(layer_name: str, argument: str, mask: Any, expected_shape: tuple) -> Any:
    """``mask`` as a native boolean array of ``expected_shape`` (ValueError/TypeError otherwise)."""
    if getattr(type(mask), "__ember_tensor__", False):
        mask = mask._native
    elif not ops.is_array(mask):
        try:
            mask = ops.convert_to_tensor(mask)
        except Exception:  # noqa: BLE001 - any failure means "not an array"
            raise TypeError(
                f"layer {layer_name!r}: {argument} must be a boolean array of shape {expected_shape}, "
                f"received {type(mask).__name__}"
            ) from None
    shape = tuple(ops.shape(mask))
    if shape != tuple(expected_shape):
        raise ValueError(
            f"layer {layer_name!r}: {argument} must have shape {tuple(expected_shape)}, received shape {shape}"
        )
    if ops.dtype(mask) != "bool":
        mask = ops.cast(mask, "bool")
    return mask


def combine_masks(*masks: Any) -> Any:
    """The logical AND of the masks that are not None (None when all are)."""
    out = None
    for mask in masks:
        if mask is not None:
            out = mask if out is None else ops.logical_and(out, mask)
    return out


def dropout_weights(layer: Any, weights: Any, training: bool, rng: Any) -> Any:
    """Dropout on attention weights while training (seed: ``rng``, else the layer's ``seed``)."""
    if not training or layer.dropout == 0.0:
        return weights

    seed = call_seed(layer, rng)
    return batch_window.apply_rows(lambda w: ops.random.dropout(w, layer.dropout, seed=seed), weights)
