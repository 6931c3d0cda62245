"""Lookup, hashing and text layers against written-out references (Keras's string and integer
lookup layers need TensorFlow), and the text pipeline (TextVectorization -> Embedding ->
GlobalAveragePooling1D) trained and saved with its vocabulary."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ember
from ember import layers, ops
from tests.tolerances import FLOAT32

# Token counts are all distinct, so the frequency order of the vocabulary has no ties.
CORPUS = ["the cat sat on the mat", "the dog ate the bone", "The cat! the cat?", "a dog, a cat and the mat",
          "dog dog dog sat"]


def _apply(layer, x):
    y, _ = layer.apply(layer.build((None,)), x)
    return y


def _reference_tokens(text, lower=True, strip=True):
    if lower:
        text = text.lower()
    if strip:
        text = "".join(ch for ch in text if ch not in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
    return text.split()


def test_text_vectorization_vocabulary_and_outputs(backend):
    # Keras's TextVectorization and StringLookup need TensorFlow, which the tests do not install:
    # the references are written out here from Keras's documented rules.
    counts = {}
    for text in CORPUS:
        for token in _reference_tokens(text):
            counts[token] = counts.get(token, 0) + 1
    vocabulary = sorted(counts, key=lambda t: -counts[t])  # counts: the 8, cat 5, dog 5, ... (ties: first seen)
    layer = layers.TextVectorization(output_sequence_length=6).adapt(CORPUS)
    assert layer.get_vocabulary() == ["", "[UNK]"] + vocabulary
    index = {t: i + 2 for i, t in enumerate(vocabulary)}
    texts = ["the cat ate the mat", "a bird? the dog!"]
    expected = np.zeros((2, 6), np.int32)
    for row, text in enumerate(texts):
        ids = [index.get(t, 1) for t in _reference_tokens(text)]
        expected[row, :len(ids)] = ids
    np.testing.assert_array_equal(ops.to_numpy(_apply(layer, texts)), expected)
    counted = layers.TextVectorization(output_mode="count", max_tokens=6).adapt(CORPUS)
    assert counted.get_vocabulary() == ["[UNK]"] + vocabulary[:5]
    reference = np.zeros((2, 6))
    for row, text in enumerate(texts):
        for token in _reference_tokens(text):
            reference[row, 1 + vocabulary[:5].index(token) if token in vocabulary[:5] else 0] += 1
    np.testing.assert_array_equal(ops.to_numpy(_apply(counted, texts)), reference)
    multi = layers.TextVectorization(output_mode="multi_hot", max_tokens=6).adapt(CORPUS)
    np.testing.assert_array_equal(ops.to_numpy(_apply(multi, texts)), np.minimum(reference, 1))
    tfidf = layers.TextVectorization(output_mode="tf_idf").adapt(CORPUS)
    documents = [set(_reference_tokens(t)) for t in CORPUS]
    idf = [np.log1p(len(CORPUS) / (1 + sum(t in d for d in documents))) for t in vocabulary]
    np.testing.assert_array_equal(tfidf.idf_weights, idf)  # exact: the same float64 log1p of a ratio of integers
    out = ops.to_numpy(_apply(tfidf, ["the the cat"]))
    np.testing.assert_allclose(out[0, 1 + vocabulary.index("the")], 2 * idf[vocabulary.index("the")], **FLOAT32)
    bigrams = layers.TextVectorization(ngrams=2, standardize="lower", output_sequence_length=8).adapt(["a b a b"])
    assert set(bigrams.get_vocabulary()[2:]) == {"a", "b", "a b", "b a"}


def test_string_and_integer_lookup(backend):
    tokens = np.array([["a", "c", "zz"], ["b", "", "a"]])
    cases = [({}, [[1, 3, 0], [2, 0, 1]]), ({"mask_token": ""}, [[2, 4, 1], [3, 0, 2]]),
             ({"num_oov_indices": 0, "vocabulary": ["a", "b", "c", "", "zz"]}, [[0, 2, 4], [1, 3, 0]])]
    for kwargs, expected in cases:
        layer = layers.StringLookup(**{"vocabulary": ["a", "b", "c"], **kwargs})
        np.testing.assert_array_equal(ops.to_numpy(layer.apply(layer.build((None, 3)), tokens)[0]), expected)
    counted = layers.StringLookup(vocabulary=["a", "b", "c"], output_mode="count")
    np.testing.assert_array_equal(ops.to_numpy(counted.apply(counted.build((None, 3)), tokens)[0]),
                                  [[1, 1, 0, 1], [1, 1, 1, 0]])
    inverse = layers.StringLookup(vocabulary=["a", "b", "c"], invert=True)
    assert inverse.apply(inverse.build((None, 2)), ops.convert_to_tensor([[1, 0]]))[0].tolist() == [["a", "[UNK]"]]
    assert layers.StringLookup().adapt([["x", "y", "x"]]).get_vocabulary() == ["[UNK]", "x", "y"]
    ints = np.array([[12, 7, 1138], [36, 0, 12]], dtype=np.int32)
    # Keras's layout: [mask], OOV index(es) (token mod num_oov), then the vocabulary.
    int_cases = [({}, [[1, 0, 3], [2, 0, 1]]), ({"mask_token": 0}, [[2, 1, 4], [3, 0, 2]]),
                 ({"num_oov_indices": 2}, [[2, 1, 4], [3, 0, 2]]),
                 ({"output_mode": "count"}, [[1, 1, 0, 1], [1, 1, 1, 0]]),
                 ({"output_mode": "multi_hot"}, [[1, 1, 0, 1], [1, 1, 1, 0]])]
    for kwargs, expected in int_cases:
        kwargs = {"vocabulary": [12, 36, 1138], **kwargs}
        layer = layers.IntegerLookup(**kwargs)
        y, _ = layer.apply(layer.build((None, 3)), ops.convert_to_tensor(ints))
        np.testing.assert_array_equal(ops.to_numpy(y), expected)
    adapted = layers.IntegerLookup().adapt(np.array([5, 5, 5, 9, 9, 2]))
    assert adapted.get_vocabulary() == [-1, 5, 9, 2]


def test_hashing_is_stable_and_in_range(backend):
    layer = layers.Hashing(num_bins=5, salt=[1, 2])
    first = ops.to_numpy(_apply(layer, np.array(["a", "b", "c", "a"])))
    assert first[0] == first[3] and ((0 <= first) & (first < 5)).all()
    ember.set_backend("numpy")
    np.testing.assert_array_equal(ops.to_numpy(_apply(layers.Hashing(num_bins=5, salt=[1, 2]),
                                                      np.array(["a", "b", "c", "a"]))), first)
    masked = ops.to_numpy(_apply(layers.Hashing(num_bins=4, mask_value=0), np.array([0, 3, 8])))
    assert masked[0] == 0 and (masked[1:] >= 1).all()
    hot = ops.to_numpy(_apply(layers.Hashing(num_bins=4, output_mode="multi_hot"), np.array([[3, 8]])))
    assert hot.shape == (1, 4) and hot.sum() in (1.0, 2.0)


def test_text_pipeline_trains_and_saves_with_its_vocabulary(backend, tmp_path):
    rng = np.random.default_rng(0)
    positive, negative = ["good great fine", "nice good", "great day"], ["bad awful", "poor bad day", "awful poor"]
    texts = [str(rng.choice(positive if i % 2 else negative)) for i in range(40)]
    labels = np.array([i % 2 for i in range(40)], dtype=np.float32)[:, None]
    vectorizer = layers.TextVectorization(output_sequence_length=6).adapt(texts)
    ids = vectorizer.apply(vectorizer.build((None,)), texts)[0]
    model = ember.Sequential([ember.Input((6,), dtype="int32"), layers.Embedding(vectorizer.vocabulary_size(), 8),
                              layers.GlobalAveragePooling1D(), layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=ember.optimizers.Adam(0.05), loss="binary_crossentropy", metrics=["accuracy"])
    history = model.fit(ids, labels, epochs=15, batch_size=8, verbose=0)
    assert history.history["accuracy"][-1] == 1.0
    model.save(str(tmp_path / "text.h5"))
    (tmp_path / "vectorizer.json").write_text(json.dumps(layers.serialize(vectorizer)))
    restored = layers.deserialize(json.loads((tmp_path / "vectorizer.json").read_text()))
    loaded = ember.load_model(str(tmp_path / "text.h5"))
    assert restored.get_vocabulary() == vectorizer.get_vocabulary()
    new_ids = restored.apply(restored.build((None,)), ["good great", "awful bad"])[0]
    # exact: the same weights through the same kernels (tests/saving checks bit-equal predictions too)
    np.testing.assert_array_equal(loaded.predict(new_ids, verbose=0), model.predict(new_ids, verbose=0))
    scores = loaded.predict(new_ids, verbose=0)
    assert scores[0, 0] > scores[1, 0]  # the positive words score above the negative ones


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="adapt"):
        layers.TextVectorization().build((None,))
    with pytest.raises(ValueError, match="output_mode"):
        layers.StringLookup(output_mode="bag")
    with pytest.raises(ValueError, match="repeated"):
        layers.IntegerLookup(vocabulary=[1, 1])
    with pytest.raises(ValueError, match="standardize"):
        layers.TextVectorization(standardize=str.lower)
    with pytest.raises(ValueError, match="num_bins"):
        layers.Hashing(num_bins=1, mask_value=0)
    with pytest.raises(TypeError, match="integer tokens"):
        lookup = layers.IntegerLookup(vocabulary=[1])
        lookup.apply(lookup.build((None,)), ops.ones((2,)))
