"""Vocabulary layout shared by ``IntegerLookup``, ``StringLookup`` and ``TextVectorization`` (Keras's rules).

Indices: the mask token (when set) is 0, then ``num_oov_indices`` out-of-vocabulary
indices, then the vocabulary in order. ``adapt`` ranks tokens by frequency (ties by
first appearance) and keeps at most ``max_tokens`` indices in total.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ember import dtypes, ops
from ember.layers.preprocessing.category_encoding import encode

OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")


def check_lookup(layer: Any) -> None:
    """Validate the shared lookup fields (ValueError naming the layer)."""
    if layer.output_mode not in OUTPUT_MODES:
        raise ValueError(f"{layer.name}: output_mode must be one of {OUTPUT_MODES}, received {layer.output_mode!r}")
    num_oov = layer.num_oov_indices
    if isinstance(num_oov, bool) or not isinstance(num_oov, int) or num_oov < 0:
        raise ValueError(f"{layer.name}: num_oov_indices must be an int >= 0, received {layer.num_oov_indices!r}")
    if layer.max_tokens is not None and (isinstance(layer.max_tokens, bool) or not isinstance(layer.max_tokens, int)
                                         or layer.max_tokens <= special_count(layer)):
        raise ValueError(f"{layer.name}: max_tokens must be an int greater than the {special_count(layer)} mask and "
                         f"OOV indices, received {layer.max_tokens!r}")
    if getattr(layer, "sparse", False):
        raise ValueError(f"{layer.name}: sparse=True is not supported (Ember has no sparse arrays)")
    if layer.output_mode == "tf_idf" and layer.vocabulary is not None and layer.idf_weights is None:
        raise ValueError(f"{layer.name}: output_mode='tf_idf' needs idf_weights with the vocabulary (or adapt)")
    if layer.invert and layer.output_mode != "int":
        raise ValueError(f"{layer.name}: invert=True needs output_mode='int', received {layer.output_mode!r}")


def normalize_lookup(layer: Any, token: Callable[[Any], Any]) -> None:
    """The fields of a lookup layer (``IntegerLookup``, ``StringLookup``) as it keeps them: the
    vocabulary as ``token(v)`` for each entry (no entry twice), the IDF weights as floats; then
    :func:`check_lookup`."""
    if layer.vocabulary is not None:
        vocabulary = [token(v) for v in layer.vocabulary]
        if len(set(vocabulary)) != len(vocabulary):
            raise ValueError(f"{layer.name}: the vocabulary has repeated tokens")
        layer._normalize("vocabulary", vocabulary)
    if layer.idf_weights is not None:
        layer._normalize("idf_weights", [float(w) for w in layer.idf_weights])
    check_lookup(layer)


def token_limit(layer: Any) -> int | None:
    """How many vocabulary tokens ``adapt`` keeps: ``max_tokens`` less the mask and OOV indices."""
    return None if layer.max_tokens is None else layer.max_tokens - special_count(layer)


def adapted(layer: Any, array: np.ndarray, token: Callable[[Any], Any]) -> Any:
    """A copy of a lookup layer with the vocabulary of the host ``array`` (its tokens ranked, each
    as ``token(t)``) and, for tf_idf, the IDF weights of its rows."""
    exclude = {layer.mask_token} if layer.mask_token is not None else set()
    vocabulary = [token(t) for t in ranked_tokens(array.ravel().tolist(), exclude, token_limit(layer))]
    weights = None
    if layer.output_mode == "tf_idf":
        rows = array.reshape(array.shape[0], -1).tolist() if array.ndim > 1 else [[t] for t in array.tolist()]
        weights = idf(rows, vocabulary)
    return layer.replace(vocabulary=vocabulary, idf_weights=weights)


class VocabularyLayer:
    """What the layers with a vocabulary (``IntegerLookup``, ``StringLookup``, ``TextVectorization``)
    share, listed before their layer base: Keras's ``get_vocabulary`` and ``vocabulary_size``, and
    the refusal to build without a vocabulary.

    Example:
        >>> from ember import layers
        >>> layers.StringLookup(vocabulary=["a", "b"]).get_vocabulary()
        ['[UNK]', 'a', 'b']
    """

    def get_vocabulary(self) -> list:
        """Mask token, OOV token(s), then the vocabulary (Keras's ``get_vocabulary``)."""
        return full_vocabulary(self)

    def vocabulary_size(self) -> int:
        return vocabulary_size(self)

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        layer: Any = self
        if layer.vocabulary is None:
            raise ValueError(f"layer {layer.name!r} has no vocabulary: pass one, or adapt it first with "
                             "layer = layer.adapt(data) (adapt returns the new layer)")
        return super().build(input_shape, seed)  # type: ignore[misc]  # the layer base's


def special_count(layer: Any) -> int:
    return (0 if layer.mask_token is None else 1) + layer.num_oov_indices


def vocabulary_size(layer: Any) -> int:
    size = special_count(layer) + len(layer.vocabulary or ())
    if getattr(layer, "pad_to_max_tokens", False) and layer.max_tokens is not None:
        size = max(size, layer.max_tokens)
    return size


def full_vocabulary(layer: Any) -> list:
    """Keras's ``get_vocabulary()``: mask token, OOV token(s), then the vocabulary."""
    head = [] if layer.mask_token is None else [layer.mask_token]
    return head + [layer.oov_token] * layer.num_oov_indices + list(layer.vocabulary or ())


def ranked_tokens(tokens: Iterable, exclude: set, limit: int | None) -> list:
    """Tokens by decreasing frequency (ties: first appearance), without ``exclude``, at most ``limit``."""
    counts = collections.Counter(t for t in tokens if t not in exclude)
    ranked = [t for t, _ in sorted(counts.items(), key=lambda item: -item[1])]
    return ranked if limit is None else ranked[:limit]


def idf(tokens_per_document: list, vocabulary: list) -> list:
    """Keras's smoothed inverse document frequencies ``log(1 + documents / (1 + df))``."""
    documents = len(tokens_per_document)
    frequency = collections.Counter(t for doc in tokens_per_document for t in set(doc))
    return [float(np.log1p(documents / (1.0 + frequency.get(t, 0)))) for t in vocabulary]


def _stable_hash(token: Any) -> int:
    return int.from_bytes(hashlib.blake2b(str(token).encode("utf-8"), digest_size=8).digest(), "little")


def host_indices(layer: Any, tokens: np.ndarray) -> np.ndarray:
    """Index of every token of a host array (int64), by Keras's layout."""
    offset = special_count(layer)
    table = {token: offset + i for i, token in enumerate(layer.vocabulary or ())}
    oov_start = 0 if layer.mask_token is None else 1
    flat = tokens.ravel().tolist()
    out = np.empty(len(flat), dtype=np.int64)
    for i, token in enumerate(flat):
        if isinstance(token, bytes):
            token = token.decode("utf-8")
        if layer.mask_token is not None and token == layer.mask_token:
            out[i] = 0
        elif token in table:
            out[i] = table[token]
        elif layer.num_oov_indices == 0:
            raise ValueError(f"layer {layer.name!r}: token {token!r} is not in the vocabulary and num_oov_indices=0")
        else:
            bucket = token if isinstance(token, (int, np.integer)) else _stable_hash(token)
            out[i] = oov_start + int(bucket) % layer.num_oov_indices
    return out.reshape(tokens.shape)


def encode_indices(layer: Any, indices: Any) -> Any:
    """Native int indices as ``layer.output_mode`` (int, one_hot, multi_hot, count, tf_idf)."""
    if layer.output_mode == "int":
        return indices
    depth = vocabulary_size(layer)
    dtype = layer.dtype or dtypes.floatx()
    mode = "count" if layer.output_mode == "tf_idf" else layer.output_mode
    out = encode(indices, depth, mode, dtype)
    if layer.output_mode == "tf_idf":
        weights = [0.0] * special_count(layer) + list(layer.idf_weights)
        weights += [0.0] * (depth - len(weights))
        out = ops.multiply(out, ops.convert_to_tensor(weights, dtype=dtype))
    return out


def encoded_shape(layer: Any, input_shape: tuple) -> tuple:
    if layer.output_mode == "int":
        return tuple(input_shape)
    depth = vocabulary_size(layer)
    if layer.output_mode == "one_hot":
        return tuple(input_shape) + (depth,) if not input_shape or input_shape[-1] != 1 else \
            tuple(input_shape[:-1]) + (depth,)
    return (tuple(input_shape[:-1]) if len(input_shape) > 1 else ()) + (depth,)
