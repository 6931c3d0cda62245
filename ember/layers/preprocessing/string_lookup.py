"""``StringLookup``: string tokens to vocabulary indices, computed on the host (NumPy)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.preprocessing import _lookup
from ember.layers.preprocessing.normalization import host_array


class StringLookup(_lookup.VocabularyLayer, DeclarativeLayer):
    """Maps string tokens to indices by a vocabulary (Keras's layout: mask, OOV, vocabulary).

    Backends have no string arrays, so the lookup runs on the host: ``apply`` takes a NumPy
    array (or nested list) of ``str``/``bytes`` and returns the indices as a native int32
    array of the active backend (or the encoded vectors). Use it on the data before the
    model (``ids = lookup.apply(state, texts)[0]``); the vocabulary is in the config, so
    ``layers.serialize``/``deserialize`` (JSON) keep it. With
    several OOV indices, an unknown token's bucket comes from a BLAKE2 hash (Keras uses
    FarmHash: the buckets differ). :meth:`adapt` returns a copy with the vocabulary of
    ``data``; ``invert`` maps indices back to a NumPy array of tokens.

    Args:
        max_tokens, num_oov_indices, mask_token, oov_token, vocabulary, idf_weights, invert,
        output_mode, pad_to_max_tokens, sparse: as :class:`IntegerLookup` (tokens are strings).
        encoding: the encoding of ``bytes`` tokens.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.StringLookup(vocabulary=["a", "b", "c"])
        >>> y, _ = layer.apply(layer.build((None, 3)), [["a", "c", "z"]])
        >>> ops.to_numpy(y).tolist()
        [[1, 3, 0]]
    """

    max_tokens: int | None = None
    num_oov_indices: int = 1
    mask_token: Any = None
    oov_token: str = "[UNK]"
    vocabulary: Any = None
    idf_weights: Any = None
    invert: bool = False
    output_mode: str = "int"
    pad_to_max_tokens: bool = False
    sparse: bool = False
    encoding: str = "utf-8"

    def __post_init__(self) -> None:
        super().__post_init__()
        _lookup.normalize_lookup(self, lambda v: v.decode(self.encoding) if isinstance(v, bytes) else str(v))

    def adapt(self, data: Any, steps: Any = None) -> StringLookup:
        """A copy with the vocabulary (and, for tf_idf, the IDF weights) of ``data``."""
        return _lookup.adapted(self, _strings(host_array(data), self.encoding), str)

    def call(self, params: dict, inputs: Any) -> Any:
        if self.invert:
            indices = np.asarray(ops.to_numpy(inputs) if ops.is_array(inputs) else inputs, dtype=np.int64)
            table = np.asarray(self.get_vocabulary(), dtype=object)
            return table[np.clip(indices, 0, len(table) - 1)]
        tokens = _strings(np.asarray(inputs, dtype=object), self.encoding)
        indices = ops.convert_to_tensor(_lookup.host_indices(self, tokens).astype(np.int32))
        return _lookup.encode_indices(self, indices)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _lookup.encoded_shape(self, tuple(input_shape))


def _strings(array: np.ndarray, encoding: str) -> np.ndarray:
    """``array`` as an object array of ``str`` (bytes decoded)."""
    out = np.empty(array.shape, dtype=object)
    flat = out.reshape(-1)
    for i, token in enumerate(array.reshape(-1).tolist()):
        flat[i] = token.decode(encoding) if isinstance(token, bytes) else str(token)
    return out
