"""``IntegerLookup``: integer tokens to vocabulary indices (on the device), and back with ``invert``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes, ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.preprocessing import _lookup
from ember.layers.preprocessing.normalization import host_array


class IntegerLookup(_lookup.VocabularyLayer, DeclarativeLayer):
    """Maps integer tokens to indices by a vocabulary (Keras's layout: mask, OOV, vocabulary).

    The lookup compares each input with the vocabulary on the active backend, so the
    layer runs inside models on every backend; its vocabulary is part of its config and is
    saved with the model. Unknown tokens go to OOV index ``token mod num_oov_indices``.
    :meth:`adapt` returns a copy with the vocabulary of ``data`` (most frequent first).

    Args:
        max_tokens: cap on the vocabulary size including the mask and OOV indices.
        num_oov_indices: number of out-of-vocabulary indices.
        mask_token: a token mapped to index 0 (None: no mask index).
        oov_token: the token ``invert`` gives for OOV indices.
        vocabulary: list of int tokens.
        vocabulary_dtype: Keras's argument; Ember's indices are int32.
        idf_weights: per-token weights for ``output_mode="tf_idf"``.
        invert: map indices back to tokens.
        output_mode: ``"int"``, ``"one_hot"``, ``"multi_hot"``, ``"count"`` or ``"tf_idf"``.
        sparse: must be False.
        pad_to_max_tokens: encoded outputs are ``max_tokens`` wide.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.IntegerLookup(vocabulary=[12, 36, 1138])
        >>> y, _ = layer.apply(layer.build((None, 3)), ops.convert_to_tensor([[12, 1138, 7]]))
        >>> ops.to_numpy(y).tolist()
        [[1, 3, 0]]
    """

    max_tokens: int | None = None
    num_oov_indices: int = 1
    mask_token: Any = None
    oov_token: int = -1
    vocabulary: Any = None
    vocabulary_dtype: str = "int64"
    idf_weights: Any = None
    invert: bool = False
    output_mode: str = "int"
    sparse: bool = False
    pad_to_max_tokens: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        _lookup.normalize_lookup(self, int)

    def adapt(self, data: Any, steps: Any = None) -> IntegerLookup:
        """A copy with the vocabulary (and, for tf_idf, the IDF weights) of ``data``."""
        return _lookup.adapted(self, host_array(data), int)

    def call(self, params: dict, inputs: Any) -> Any:
        if dtypes.is_float(ops.dtype(inputs)):
            raise TypeError(f"layer {self.name!r} expects integer tokens, received dtype {ops.dtype(inputs)}")
        if self.invert:
            table = ops.convert_to_tensor(np.asarray(self.get_vocabulary(), dtype=np.int64), dtype="int32")
            return ops.take(table, ops.clip(ops.cast(inputs, "int32"), 0, len(self.get_vocabulary()) - 1))
        tokens = ops.cast(inputs, "int32")
        vocabulary = ops.convert_to_tensor(np.asarray(self.vocabulary, dtype=np.int64), dtype="int32")
        hits = ops.equal(ops.expand_dims(tokens, -1), vocabulary)
        found = ops.any(hits, axis=-1)
        index = ops.add(ops.cast(ops.argmax(ops.cast(hits, "int32"), axis=-1), "int32"), _lookup.special_count(self))
        oov_start = 0 if self.mask_token is None else 1
        oov = ops.add(ops.mod(tokens, max(self.num_oov_indices, 1)), oov_start)
        out = ops.where(found, index, oov)
        if self.mask_token is not None:
            out = ops.where(ops.equal(tokens, int(self.mask_token)), 0, out)
        return _lookup.encode_indices(self, out)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _lookup.encoded_shape(self, tuple(input_shape))
