"""``TextVectorization``: text to token ids or bag-of-words vectors, computed on the host (NumPy)."""

from __future__ import annotations

import re
import string
from typing import Any

import numpy as np

from ember import ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.preprocessing import _lookup
from ember.layers.preprocessing.normalization import host_array

_STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation")
_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}]")


class TextVectorization(_lookup.VocabularyLayer, DeclarativeLayer):
    """Standardizes, splits and n-grams text, then maps tokens by a vocabulary learnt with :meth:`adapt`.

    Strings live on the host: ``apply`` takes a NumPy array or list of strings (one per
    sample) and returns a native array of the active backend: int32 token ids
    (``output_mode="int"``, padded with 0 or cut to ``output_sequence_length``) or
    ``(batch, vocabulary_size)`` multi-hot, count or TF-IDF vectors. Feed those to the
    model (``Embedding`` ...). The vocabulary (and IDF weights) are part of the config,
    so ``layers.serialize``/``deserialize`` (JSON) keep them.
    Index 0 is the padding (mask) token ``""`` and 1 the OOV token ``"[UNK]"`` in
    ``"int"`` mode, as in Keras; the other modes have only the OOV index.

    Args:
        max_tokens: cap on the vocabulary size (including the special indices).
        standardize: ``"lower_and_strip_punctuation"``, ``"lower"``, ``"strip_punctuation"`` or None.
        split: ``"whitespace"`` or None (each string is one token).
        ngrams: None, an int ``n`` (1..n-grams) or a tuple of n-gram sizes.
        output_mode: ``"int"``, ``"multi_hot"``, ``"count"`` or ``"tf_idf"``.
        output_sequence_length: pad or cut ``"int"`` outputs to this length (None: the longest).
        pad_to_max_tokens: vector outputs are ``max_tokens`` wide.
        vocabulary: list of tokens (without the special ones).
        idf_weights: per-token weights for ``"tf_idf"``.
        sparse, ragged: must be False.
        encoding: the encoding of ``bytes`` inputs.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.TextVectorization(output_sequence_length=4).adapt(["the cat sat", "the dog"])
        >>> layer.get_vocabulary()
        ['', '[UNK]', 'the', 'cat', 'sat', 'dog']
        >>> y, _ = layer.apply(layer.build((None,)), ["The dog, the bird!"])
        >>> ops.to_numpy(y).tolist()
        [[2, 5, 2, 1]]
    """

    max_tokens: int | None = None
    standardize: Any = "lower_and_strip_punctuation"
    split: Any = "whitespace"
    ngrams: Any = None
    output_mode: str = "int"
    output_sequence_length: int | None = None
    pad_to_max_tokens: bool = False
    vocabulary: Any = None
    idf_weights: Any = None
    sparse: bool = False
    ragged: bool = False
    encoding: str = "utf-8"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.standardize is not None and self.standardize not in _STANDARDIZE:
            raise ValueError(f"{self.name}: standardize must be one of {_STANDARDIZE} or None (callables are not "
                             f"saved: standardize the text before the layer), received {self.standardize!r}")
        if self.split not in ("whitespace", None):
            raise ValueError(f"{self.name}: split must be 'whitespace' or None, received {self.split!r}")
        if self.output_mode not in ("int", "multi_hot", "count", "tf_idf"):
            raise ValueError(f"{self.name}: output_mode must be 'int', 'multi_hot', 'count' or 'tf_idf', received "
                             f"{self.output_mode!r}")
        if self.ragged:
            raise ValueError(f"{self.name}: ragged=True is not supported (Ember has no ragged arrays)")
        if self.ngrams is not None:
            sizes = list(range(1, self.ngrams + 1)) if isinstance(self.ngrams, int) else list(self.ngrams)
            if not sizes or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes):
                raise ValueError(f"{self.name}: ngrams must be None, a positive int or a tuple of them, "
                                 f"received {self.ngrams!r}")
            self._normalize("ngrams", self.ngrams if isinstance(self.ngrams, int) else sizes)
        if self.output_sequence_length is not None and (
                self.output_mode != "int" or isinstance(self.output_sequence_length, bool)
                or not isinstance(self.output_sequence_length, int) or self.output_sequence_length < 1):
            raise ValueError(f"{self.name}: output_sequence_length must be a positive int and needs "
                             f"output_mode='int', received {self.output_sequence_length!r}")
        if self.vocabulary is not None:
            self._normalize("vocabulary", [str(v) for v in self.vocabulary])
        if self.idf_weights is not None:
            self._normalize("idf_weights", [float(w) for w in self.idf_weights])
        _lookup.check_lookup(self)

    # The lookup fields _lookup expects: Keras's TextVectorization layout.
    @property
    def mask_token(self) -> str | None:
        return "" if self.output_mode == "int" else None

    @property
    def num_oov_indices(self) -> int:
        return 1

    @property
    def oov_token(self) -> str:
        return "[UNK]"

    @property
    def invert(self) -> bool:
        return False

    def _tokens(self, text: Any) -> list:
        if isinstance(text, bytes):
            text = text.decode(self.encoding)
        text = str(text)
        if self.standardize in ("lower_and_strip_punctuation", "lower"):
            text = text.lower()
        if self.standardize in ("lower_and_strip_punctuation", "strip_punctuation"):
            text = _PUNCTUATION.sub("", text)
        words = text.split() if self.split == "whitespace" else [text]
        if self.ngrams is None:
            return words
        sizes = range(1, self.ngrams + 1) if isinstance(self.ngrams, int) else self.ngrams
        return [" ".join(words[i:i + n]) for n in sizes for i in range(len(words) - n + 1)]

    def _documents(self, data: Any) -> list:
        array = host_array(data) if not isinstance(data, str) else np.asarray([data])
        return [self._tokens(t) for t in np.asarray(array, dtype=object).reshape(-1).tolist()]

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> TextVectorization:
        """A copy with the vocabulary (most frequent first) and, for tf_idf, the IDF weights of ``data``."""
        documents = self._documents(data)
        vocabulary = _lookup.ranked_tokens((t for doc in documents for t in doc), {""}, _lookup.token_limit(self))
        weights = _lookup.idf(documents, vocabulary) if self.output_mode == "tf_idf" else None
        return self.replace(vocabulary=vocabulary, idf_weights=weights)

    def call(self, params: dict, inputs: Any) -> Any:
        documents = self._documents(inputs)
        rows = [_lookup.host_indices(self, np.asarray(doc, dtype=object)).tolist() for doc in documents]
        if self.output_mode == "int":
            length = self.output_sequence_length or max([len(r) for r in rows] + [1])
            ids = np.zeros((len(rows), length), dtype=np.int32)
            for i, row in enumerate(rows):
                ids[i, :min(len(row), length)] = row[:length]
            return ops.convert_to_tensor(ids)
        depth = _lookup.vocabulary_size(self)
        counts = np.zeros((len(rows), depth), dtype=np.float64)
        for i, row in enumerate(rows):
            np.add.at(counts[i], row, 1.0)
        if self.output_mode == "multi_hot":
            counts = np.minimum(counts, 1.0)
        elif self.output_mode == "tf_idf":
            weights = np.zeros(depth)
            weights[_lookup.special_count(self):_lookup.special_count(self) + len(self.idf_weights)] = self.idf_weights
            counts = counts * weights
        return ops.convert_to_tensor(counts, dtype=self.compute_dtype if self.dtype else "float32")

    def compute_output_shape(self, input_shape: Any) -> tuple:
        batch = tuple(input_shape)[0] if input_shape else None
        if self.output_mode == "int":
            return (batch, self.output_sequence_length)
        return (batch, _lookup.vocabulary_size(self))
