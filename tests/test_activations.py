"""``ember.activations``: every Keras activation function, against ``keras.activations`` (torch backend)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ember import activations, layers, ops
from tests.tolerances import FLOAT32, FLOAT32_PAIR

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")

X = np.random.default_rng(1).normal(scale=2.0, size=(3, 4)).astype(np.float32)
# lecun_tanh: Ember's own (NCP cells); sparsemax: keras.activations.sparsemax on torch returns rows
# that do not sum to 1, so it is checked against the closed form in tests/ops/test_keras_ops.py.
KERAS_NAMES = [n for n in activations.NAMES if n not in ("lecun_tanh", "sparsemax")]


@pytest.mark.parametrize("name", KERAS_NAMES)
def test_activation_matches_keras(backend, name):
    expected = keras.ops.convert_to_numpy(getattr(keras.activations, name)(keras.ops.convert_to_tensor(X)))
    actual = ops.to_numpy(getattr(activations, name)(ops.convert_to_tensor(X)))
    np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=2e-6)  # two float32 computations
    assert activations.get(name) is getattr(activations, name)
    assert activations.deserialize(activations.serialize(getattr(activations, name))) is getattr(activations, name)


@pytest.mark.parametrize("kwargs", [{"negative_slope": 0.1}, {"max_value": 1.5}, {"threshold": 0.5},
                                    {"negative_slope": 0.2, "max_value": 2.0, "threshold": -0.5}])
def test_relu_options_match_keras(backend, kwargs):
    expected = keras.ops.convert_to_numpy(keras.activations.relu(keras.ops.convert_to_tensor(X), **kwargs))
    np.testing.assert_allclose(ops.to_numpy(activations.relu(ops.convert_to_tensor(X), **kwargs)), expected,
                               **FLOAT32_PAIR)


def test_lecun_tanh_and_layers_accept_new_names(backend):
    np.testing.assert_allclose(ops.to_numpy(activations.lecun_tanh(ops.convert_to_tensor(X))),
                               1.7159 * np.tanh(0.666 * X.astype(np.float64)), **FLOAT32)
    layer = layers.Dense(2, activation="mish")
    y, _ = layer.apply(layer.build((None, 4), seed=0), ops.convert_to_tensor(X))
    assert ops.shape(y) == (3, 2)


def test_bad_activation_names_are_refused():
    with pytest.raises(ValueError, match="unknown activation 'nope'"):
        activations.get("nope")
    with pytest.raises(ValueError, match="not a built-in activation"):
        activations.serialize(lambda x: x)
