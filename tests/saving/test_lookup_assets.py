"""Lookup layers' vocabularies through ``.keras`` files, with Keras 3 (torch backend) on the other side.

Keras's lookup layers need TensorFlow to be constructed (``keras.layers.IntegerLookup(...)``
raises ImportError without it, and it is not installed), so Keras's side is played by a
stand-in layer of the same class name that (a) binds every config argument to the real Keras
class's ``__init__`` signature (an argument Keras does not take fails there), (b) writes its
config as Keras's ``IndexLookup.get_config`` does (copied: ``vocabulary_size``, ``oov_method``,
``salt`` included) and (c) writes its adapted vocabulary as ``IndexLookup.save_assets`` does.
Keras's own ``saving_lib`` writes and reads the archives: the asset paths, the weights file
and the deserialization are Keras's.
"""

from __future__ import annotations

import inspect
import json
import os
import zipfile

import numpy as np
import pytest

import ember
from ember import layers
from ember.saving.format import CheckpointError
from ember.saving.keras_format.lookup_assets import parse_vocabulary, with_vocabularies
from tests.helpers import needs
from tests.saving.keras_models import keras
from tests.tolerances import FLOAT32

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
ADAPTED = [7, 3, 9]


def _stand_in(class_name):
    signature = inspect.signature(getattr(keras.layers, class_name).__init__)

    class StandIn(keras.layers.Layer):
        def __init__(self, adapted=None, **kwargs):
            signature.bind(None, **kwargs)  # TypeError on an argument Keras's real class does not take
            base = {key: kwargs.pop(key) for key in ("name", "trainable", "dtype") if key in kwargs}
            super().__init__(**base)
            self.arguments = kwargs
            self.adapted = adapted

        def call(self, inputs):
            return keras.ops.zeros_like(inputs)

        def _specials(self):
            mask = self.arguments.get("mask_token")
            return ([] if mask is None else [mask]) + [self.arguments.get("oov_token", -1)] * \
                self.arguments.get("num_oov_indices", 1)

        def get_config(self):  # keras/src/layers/preprocessing/index_lookup.py, get_config (IntegerLookup's ints)
            vocabulary = self.arguments.get("vocabulary")
            size = len(self._specials()) + len(vocabulary if vocabulary is not None else self.adapted or [])
            config = {"invert": False, "max_tokens": None, "num_oov_indices": 1, "oov_token": -1, "mask_token": None,
                      "output_mode": "int", "sparse": False, "pad_to_max_tokens": False, "vocabulary_dtype": "int64",
                      "idf_weights": None, "vocabulary": None, "vocabulary_size": size, "oov_method": "floormod",
                      "salt": None}
            config.update({k: v for k, v in self.arguments.items() if k in config})
            return {**super().get_config(), **config, "vocabulary_size": size}

        def save_assets(self, dir_path):  # index_lookup.py, save_assets
            if self.arguments.get("vocabulary") is not None:
                return
            with open(os.path.join(dir_path, "vocabulary.txt"), "w") as f:
                f.write("\n".join(str(w) for w in self._specials() + list(self.adapted)))

        def load_assets(self, dir_path):
            if self.arguments.get("vocabulary") is None:
                with open(os.path.join(dir_path, "vocabulary.txt")) as f:
                    self.adapted = [int(line) for line in f.read().splitlines() if line][len(self._specials()):]

    StandIn.__name__ = StandIn.__qualname__ = class_name
    return StandIn


def _as_keras_class(path, class_name):
    """Rewrite the archive's config so the stand-in's entry reads as Keras's own layer."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(members["config.json"])
    for entry in config["config"]["layers"]:
        if entry["class_name"] == class_name:
            entry["module"], entry["registered_name"] = "keras.layers", None
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return members


@needs("keras")
@pytest.mark.parametrize("in_config", [False, True])
def test_ember_loads_keras_integer_lookup(backend, tmp_path, in_config):
    cls = _stand_in("IntegerLookup")
    inputs = keras.Input((3,), dtype="int64")
    lookup = cls(vocabulary=ADAPTED) if in_config else cls(adapted=ADAPTED)
    embedding = keras.layers.Embedding(5, 2)
    model = keras.Model(inputs, embedding(lookup(inputs)))
    path = str(tmp_path / "keras.keras")
    model.save(path)
    members = _as_keras_class(path, "IntegerLookup")
    assert ("assets/layers/integer_lookup/vocabulary.txt" in members) is not in_config
    restored = ember.load_model(path)
    (ember_lookup,) = [layer for layer in restored.layers if type(layer).__name__ == "IntegerLookup"]
    assert list(ember_lookup.vocabulary) == ADAPTED
    tokens = np.array([[7, 9, 4], [3, 3, 8]])
    expected = np.asarray(embedding.embeddings.numpy())[np.array([[1, 3, 0], [2, 2, 0]])]
    np.testing.assert_allclose(restored.predict(tokens, verbose=0), expected, **FLOAT32)


@needs("keras")
def test_keras_loads_ember_integer_lookup(backend, tmp_path, monkeypatch):
    model = ember.Sequential([ember.Input((3,), dtype="int32"), layers.IntegerLookup(vocabulary=ADAPTED, name="ids"),
                              layers.Embedding(5, 2)])
    model.build(seed=0)
    path = str(tmp_path / "ember.keras")
    model.save(path)
    cls = _stand_in("IntegerLookup")
    from keras.src import api_export  # Keras's table of its public names, which its loader resolves through
    monkeypatch.setitem(api_export.REGISTERED_NAMES_TO_OBJS, "keras.layers.IntegerLookup", cls)
    loaded = keras.saving.load_model(path)
    (keras_lookup,) = [layer for layer in loaded.layers if isinstance(layer, cls)]
    assert keras_lookup.arguments["vocabulary"] == ADAPTED  # in the config: Keras's load_assets has nothing to do
    (embedding,) = [layer for layer in loaded.layers if isinstance(layer, keras.layers.Embedding)]
    (ember_embeddings,) = model.get_weights()
    np.testing.assert_array_equal(np.asarray(embedding.embeddings.numpy()), np.asarray(ember_embeddings))


# ------------------------------------------------------------------------------ the asset text, per class
@pytest.mark.parametrize("class_name,layer,text,expected", [
    ("IntegerLookup", {"mask_token": 0, "num_oov_indices": 2, "oov_token": -1}, "0\n-1\n-1\n5\n6\n", [5, 6]),
    ("StringLookup", {"mask_token": None}, "[UNK]\nthe\ncat", ["the", "cat"]),
    ("StringLookup", {"oov_token": "?", "num_oov_indices": 1}, "the\ncat", ["the", "cat"]),  # no specials: kept
    ("TextVectorization", {}, "\n[UNK]\nthe\ncat\n", ["the", "cat"]),
])
def test_vocabulary_text_as_keras_writes_it(class_name, layer, text, expected):
    assert parse_vocabulary(class_name, layer, text, "m.keras") == expected


def test_string_lookup_and_text_vectorization_configs_from_assets(backend):
    config = {"class_name": "Functional", "config": {"layers": [
        {"class_name": "StringLookup", "config": {"name": "words", "vocabulary": None, "vocabulary_size": 3,
                                                  "oov_method": "floormod", "salt": None, "mask_token": None}},
        {"class_name": "Sequential", "config": {"layers": [
            {"class_name": "TextVectorization", "config": {"name": "text", "vocabulary": None,
                                                           "vocabulary_size": 4}}]}}]}}
    assets = {"assets/layers/string_lookup/vocabulary.txt": b"[UNK]\nb\na",
              "assets/layers/sequential/layers/text_vectorization/vocabulary.txt": b"\n[UNK]\nx\ny"}
    converted = with_vocabularies(config, assets, "m.keras")
    words = converted["config"]["layers"][0]["config"]
    assert words == {"name": "words", "vocabulary": ["b", "a"], "mask_token": None}
    text = converted["config"]["layers"][1]["config"]["layers"][0]["config"]
    assert text == {"name": "text", "vocabulary": ["x", "y"]}
    lookup = layers.StringLookup(**words)
    y, _ = lookup.apply(lookup.build((None, 2)), [["a", "z"]])
    assert ember.ops.to_numpy(y).tolist() == [[2, 0]]
    assert config["config"]["layers"][0]["config"]["vocabulary"] is None  # the input config is left alone


def test_bad_assets_are_refused_with_the_layer_named():
    config = {"class_name": "Sequential", "config": {"layers": [
        {"class_name": "IntegerLookup", "config": {"name": "ids", "vocabulary": None, "vocabulary_size": 3}}]}}
    with pytest.raises(CheckpointError, match="'ids' has no vocabulary in its config.*integer_lookup/vocabulary"):
        with_vocabularies(config, {}, "m.keras")
    member = "assets/layers/integer_lookup/vocabulary.txt"
    with pytest.raises(CheckpointError, match="vocabulary_size=3 but"):
        with_vocabularies(config, {member: b"-1\n4\n5\n6"}, "m.keras")
    with pytest.raises(CheckpointError, match="not an integer"):
        with_vocabularies(config, {member: b"-1\n4\nfive"}, "m.keras")
