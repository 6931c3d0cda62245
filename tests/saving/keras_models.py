"""The table of Keras 3 models the interoperability tests move between Keras and Ember.

Each entry builds a small Keras model (torch backend) and its input batch; the tests fit it
briefly in Keras so that no weight (BatchNorm's moving statistics included) is at its
initial value.

``keras`` is None where Keras (or torch, its backend here) is not installed: the tests that use it
are marked ``needs("keras")`` or skip their whole file (``pytest.importorskip("keras")``).
"""

from __future__ import annotations

import os

import numpy as np

from tests.helpers import optional_import

os.environ["KERAS_BACKEND"] = "torch"  # before keras is imported anywhere in the test process
keras = optional_import("keras")
L = None if keras is None else keras.layers

RNG = np.random.default_rng(0)


def mlp():
    model = keras.Sequential([keras.Input((5,)), L.Dense(8, activation="relu"), L.Dropout(0.1),
                              L.Dense(3, activation="softmax")])
    return model, RNG.normal(size=(8, 5)).astype("float32")


def cnn_batchnorm():
    model = keras.Sequential([
        keras.Input((8, 8, 2)), L.Conv2D(4, 3, padding="same"), L.BatchNormalization(), L.Activation("relu"),
        L.MaxPooling2D(), L.Conv2D(3, 3), L.Flatten(), L.Dense(2)])
    return model, RNG.normal(size=(8, 8, 8, 2)).astype("float32")


def recurrent():
    inputs = keras.Input((6, 4))
    x = L.Bidirectional(L.LSTM(3, return_sequences=True))(inputs)
    x = L.GRU(3, return_sequences=True)(x)
    x = L.SimpleRNN(2)(x)
    return keras.Model(inputs, L.Dense(1)(x)), RNG.normal(size=(8, 6, 4)).astype("float32")


def embedding_attention():
    tokens = keras.Input((5,), dtype="int32")
    embedded = L.Embedding(10, 4)(tokens)
    attended = L.MultiHeadAttention(num_heads=2, key_dim=3)(embedded, embedded)
    x = L.LayerNormalization()(L.Add()([attended, embedded]))
    x = L.GlobalAveragePooling1D()(L.Conv1D(3, 2)(x))
    return keras.Model(tokens, L.Dense(2)(x)), RNG.integers(0, 10, size=(8, 5)).astype("int32")


def multi_output():
    a, b = keras.Input((4,), name="a"), keras.Input((3,), name="b")
    shared = L.Dense(4, activation="tanh", name="shared")
    h = L.Concatenate()([shared(a), L.Dense(4, name="proj")(b)])
    again = shared(L.Dense(4)(h))  # the shared layer's second call
    outputs = [L.Dense(1, name="regression")(again), L.Dense(3, activation="softmax", name="classes")(h)]
    inputs = [RNG.normal(size=(8, 4)).astype("float32"), RNG.normal(size=(8, 3)).astype("float32")]
    return keras.Model([a, b], outputs), inputs


MODELS = {"mlp": mlp, "cnn_batchnorm": cnn_batchnorm, "recurrent": recurrent,
          "embedding_attention": embedding_attention, "multi_output": multi_output}


def trained(name):
    """``(keras model fitted for one epoch, its input batch)``."""
    keras.utils.set_random_seed(0)
    model, x = MODELS[name]()
    outputs = model(x)
    targets = [np.asarray(o.detach().cpu()) + 0.5 for o in outputs] if isinstance(outputs, list) \
        else np.asarray(outputs.detach().cpu()) + 0.5
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    model.fit(x, targets, epochs=2, batch_size=4, verbose=0)
    return model, x


def as_list(outputs):
    return [np.asarray(o) for o in outputs] if isinstance(outputs, (list, tuple)) else [np.asarray(outputs)]
