"""One set of weights per layer object (Keras's rule), on every backend.

A model built over layers that already have weights reuses them; training, ``set_weights`` or
``load_weights`` through any model that holds a layer changes that layer everywhere; sub-models
built from a trained model's layers (feature extractors, an autoencoder's encoder and decoder,
a seq2seq's inference models) compute with the trained weights. References: the trained model
itself (the same weights must give the same outputs), and Keras 3 (torch backend) given the same
weights through ``get_weights``/``set_weights`` in Keras's order.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import layers
from tests.helpers import needs, optional_import
from tests.tolerances import FLOAT32_PAIR

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported (the reference)
keras = optional_import("keras")  # None on a core-only install: the comparisons with Keras skip

RNG = np.random.default_rng(0)


def _data(*shape):
    return RNG.normal(size=shape).astype("float32")


def _np(x):
    return np.asarray(ember.ops.to_numpy(x), dtype=np.float64)


def _assert_same_weights(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _differs(a: list, b: list) -> bool:
    return any(not np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(a, b))


# --- a layer shared by two models ------------------------------------------------------------
def test_a_layer_shared_by_two_models_has_one_set_of_weights(backend):
    shared = layers.Dense(3, name="shared")
    a_in, b_in = ember.Input((4,)), ember.Input((4,))
    model_a = ember.Model(a_in, layers.Dense(2, name="head_a")(shared(a_in)))
    model_b = ember.Model(b_in, layers.Dense(1, name="head_b")(shared(b_in)))
    model_a.build(seed=0)
    model_b.build(seed=1)  # "shared" has weights already: model_b reuses them
    _assert_same_weights(model_a.get_layer("shared").get_weights(), model_b.get_layer("shared").get_weights())

    model_a.compile(optimizer=ember.optimizers.SGD(0.1), loss="mse")
    x, y = _data(16, 4), _data(16, 2)
    before = shared.get_weights()
    model_a.fit(x, y, epochs=2, batch_size=8, verbose=0)
    after = shared.get_weights()
    assert _differs(before, after)  # trained through model_a ...
    _assert_same_weights(model_b.get_layer("shared").get_weights(), after)  # ... seen through model_b

    kernel = np.full((4, 3), 0.5, "float32")
    model_b.get_layer("shared").set_weights([kernel, np.zeros(3, "float32")])
    _assert_same_weights(model_a.get_layer("shared").get_weights(), [kernel, np.zeros(3, "float32")])
    # model_a's predictions use the new kernel: its own forward pass, written out
    head = model_a.get_layer("head_a").get_weights()
    expected = (x.astype(np.float64) @ kernel) @ head[0] + head[1]
    np.testing.assert_allclose(_np(model_a.predict(x, verbose=0)), expected, **FLOAT32_PAIR)


def test_building_again_never_reinitialises(backend):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(4, name="d"), layers.Dense(1, name="out")])
    model.build(seed=0)
    weights = model.get_weights()
    model.build(seed=1)
    _assert_same_weights(model.get_weights(), weights)
    # a new model over the same layers starts with their weights
    again = ember.Sequential([ember.Input((3,)), model.get_layer("d"), model.get_layer("out")])
    again.build(seed=2)
    _assert_same_weights(again.get_weights(), weights)


def test_a_layer_used_eagerly_keeps_its_weights_in_a_model(backend):
    dense = layers.Dense(2, name="eager")
    x = _data(5, 3)
    eager = _np(dense(x))
    inputs = ember.Input((3,))
    model = ember.Model(inputs, dense(inputs))
    np.testing.assert_allclose(_np(model.predict(x, verbose=0)), eager, **FLOAT32_PAIR)


def test_build_then_set_weights_on_a_standalone_keras_style_layer(backend):
    class Scale(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, inputs):
            return inputs * self.w

    layer = Scale(name="scale")
    layer.build((None, 3))
    assert [w.path for w in layer.weights] == ["w"]
    layer.set_weights([np.array([1.0, 2.0, 3.0], "float32")])
    inputs = ember.Input((3,))
    model = ember.Model(inputs, layer(inputs))  # the model reuses the weights just set
    np.testing.assert_array_equal(model.get_weights()[0], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(_np(model.predict(np.ones((1, 3), "float32"), verbose=0)), [[1.0, 2.0, 3.0]],
                               **FLOAT32_PAIR)


def test_load_weights_reaches_every_model_that_holds_the_layers(backend, tmp_path):
    def make():
        inputs = ember.Input((4,))
        hidden = layers.Dense(3, name="hidden")
        return ember.Model(inputs, layers.Dense(2, name="out")(hidden(inputs))), hidden, inputs

    trained, _, _ = make()
    trained.build(seed=0)
    path = tmp_path / "w.h5"
    trained.save_weights(path)
    target, hidden, inputs = make()
    features = ember.Model(inputs, hidden(inputs))  # a second model over the same "hidden" layer
    features.build(seed=5)
    target.load_weights(path)
    _assert_same_weights(features.get_weights(), trained.get_layer("hidden").get_weights())


def test_save_after_compile_without_fit(backend, tmp_path):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(4, name="d"), layers.Dense(1, name="out")])
    model.compile(optimizer="adam", loss="mse")
    path = tmp_path / "model.h5"
    model.save(path)
    loaded = ember.load_model(path)
    _assert_same_weights(loaded.get_weights(), model.get_weights())


# --- a nested base model sees the training done through the outer one -----------------------
def test_nested_base_model_reflects_training_through_the_outer_model(backend):
    base = ember.Sequential([ember.Input((4,)), layers.Dense(6, activation="relu", name="b1"),
                             layers.Dense(3, name="b2")], name="base")
    inputs = ember.Input((4,))
    outer = ember.Model(inputs, layers.Dense(2, name="head")(base(inputs)))
    outer.compile(optimizer=ember.optimizers.Adam(0.05), loss="mse")
    x, y = _data(32, 4), _data(32, 2)
    outer.fit(x, y, epochs=2, batch_size=8, verbose=0)
    entry = outer.get_layer("base").get_weights()
    _assert_same_weights(base.get_weights(), entry)
    # the base model alone computes with the trained weights: Dense(relu) then Dense, written out
    k1, b1, k2, b2 = (np.asarray(w, np.float64) for w in entry)
    expected = np.maximum(x @ k1 + b1, 0.0) @ k2 + b2
    np.testing.assert_allclose(_np(base.predict(x, verbose=0)), expected, **FLOAT32_PAIR)


# --- a GAN: one discriminator, toggled trainable before each compile --------------------------
def test_gan_with_a_shared_discriminator_toggled_before_each_compile(backend):
    discriminator = ember.Sequential([ember.Input((4,)), layers.Dense(8, activation="relu", name="d1"),
                                      layers.Dense(1, name="d2")], name="discriminator")
    generator = ember.Sequential([ember.Input((2,)), layers.Dense(4, name="g1")], name="generator")
    z = ember.Input((2,))
    gan = ember.Model(z, discriminator(generator(z)), name="gan")
    loss = ember.losses.BinaryCrossentropy(from_logits=True)
    real, noise = _data(8, 4), _data(8, 2)
    for _ in range(2):
        discriminator.trainable = True
        discriminator.compile(optimizer=ember.optimizers.SGD(0.1), loss=loss)
        fake = generator.predict(noise, verbose=0)
        before = discriminator.get_weights()
        discriminator.train_on_batch(np.concatenate([real, fake]), np.r_[np.ones(8), np.zeros(8)][:, None])
        trained = discriminator.get_weights()
        assert _differs(before, trained)
        _assert_same_weights(gan.get_layer("discriminator").get_weights(), trained)

        discriminator.trainable = False
        gan.compile(optimizer=ember.optimizers.SGD(0.1), loss=loss)
        g_before = generator.get_weights()
        gan.train_on_batch(noise, np.ones((8, 1)))
        _assert_same_weights(discriminator.get_weights(), trained)  # frozen in the GAN's compile
        assert _differs(g_before, generator.get_weights())  # the generator learned through the GAN
    np.testing.assert_allclose(_np(gan.predict(noise, verbose=0)),
                               _np(discriminator.predict(generator.predict(noise, verbose=0), verbose=0)),
                               **FLOAT32_PAIR)


# --- sub-models over a trained model's layers, against Keras ----------------------------------
def _autoencoder(lib):
    inputs = lib.Input((6,), name="x")
    hidden = lib.layers.Dense(5, activation="relu", name="enc_hidden")(inputs)
    code = lib.layers.Dense(3, activation="tanh", name="code")(hidden)
    dec_hidden = lib.layers.Dense(5, activation="relu", name="dec_hidden")
    recon = lib.layers.Dense(6, name="recon")
    model = lib.Model(inputs, recon(dec_hidden(code)))
    code_in = lib.Input((3,), name="code_in")
    decoder = lib.Model(code_in, recon(dec_hidden(code_in)))
    return model, lib.Model(inputs, code), decoder


@needs("keras")
def test_autoencoder_trained_end_to_end_then_encoder_and_decoder_alone(backend):
    autoencoder, encoder, decoder = _autoencoder(ember)
    autoencoder.compile(optimizer=ember.optimizers.Adam(0.01), loss="mse")
    x = _data(64, 6)
    autoencoder.fit(x, x, epochs=3, batch_size=16, verbose=0)
    trained = autoencoder.get_weights()
    _assert_same_weights(encoder.get_weights() + decoder.get_weights(), trained)

    k_auto, k_encoder, k_decoder = _autoencoder(keras)
    k_auto.set_weights(trained)  # the sub-models share the Keras layers, hence the weights
    codes = encoder.predict(x, verbose=0)
    np.testing.assert_allclose(codes, k_encoder.predict(x, verbose=0), **FLOAT32_PAIR)
    np.testing.assert_allclose(decoder.predict(codes, verbose=0), k_decoder.predict(codes, verbose=0),
                               **FLOAT32_PAIR)
    # decoder(encoder(x)) is the autoencoder: the same layers, the same weights, the same operations
    np.testing.assert_allclose(decoder.predict(codes, verbose=0), autoencoder.predict(x, verbose=0),
                               **FLOAT32_PAIR)


def _cnn(lib):
    inputs = lib.Input((8, 8, 1))
    tensors = [lib.layers.Conv2D(4, 3, activation="relu", name="conv1")(inputs)]
    tensors.append(lib.layers.MaxPooling2D(2, name="pool")(tensors[-1]))
    tensors.append(lib.layers.Conv2D(6, 3, activation="relu", name="conv2")(tensors[-1]))
    tensors.append(lib.layers.Flatten(name="flat")(tensors[-1]))
    tensors.append(lib.layers.Dense(3, name="logits")(tensors[-1]))
    return lib.Model(inputs, tensors[-1]), lib.Model(inputs, tensors)


@needs("keras")
def test_feature_extractor_over_a_trained_cnn_gives_every_intermediate_output(backend):
    model, extractor = _cnn(ember)
    model.compile(optimizer=ember.optimizers.Adam(0.01),
                  loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = _data(16, 8, 8, 1), RNG.integers(0, 3, 16)
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    _assert_same_weights(extractor.get_weights(), model.get_weights())
    k_model, k_extractor = _cnn(keras)
    k_model.set_weights(model.get_weights())
    for ours, theirs in zip(extractor.predict(x, verbose=0), k_extractor.predict(x, verbose=0)):
        np.testing.assert_allclose(ours, theirs, **FLOAT32_PAIR)


def _seq2seq(lib, tokens=5, units=8):
    enc_in = lib.Input((None, tokens), name="encoder_inputs")
    _, h, c = lib.layers.LSTM(units, return_state=True, name="encoder")(enc_in)
    dec_in = lib.Input((None, tokens), name="decoder_inputs")
    decoder = lib.layers.LSTM(units, return_sequences=True, return_state=True, name="decoder")
    dense = lib.layers.Dense(tokens, activation="softmax", name="decoder_dense")
    seq, _, _ = decoder(dec_in, initial_state=[h, c])
    return lib.Model([enc_in, dec_in], dense(seq)), (enc_in, h, c, decoder, dense)


def test_seq2seq_inference_models_rebuilt_from_the_trained_layers(backend):
    """keras-io's lstm_seq2seq: train with teacher forcing, then decode step by step with an encoder
    model and a decoder model made of the trained layers; each step's output equals the training
    model's output at that step (the same inputs and states)."""
    tokens, units = 5, 8
    training, (enc_in, h, c, decoder, dense) = _seq2seq(ember, tokens, units)
    training.compile(optimizer=ember.optimizers.Adam(0.02), loss="categorical_crossentropy")
    enc_x = np.eye(tokens, dtype="float32")[RNG.integers(0, tokens, (8, 4))]
    dec_x = np.eye(tokens, dtype="float32")[RNG.integers(0, tokens, (8, 3))]
    target = np.eye(tokens, dtype="float32")[RNG.integers(0, tokens, (8, 3))]
    training.fit([enc_x, dec_x], target, epochs=3, batch_size=4, verbose=0)

    encoder_model = ember.Model(enc_in, [h, c])
    state_h, state_c = ember.Input((units,)), ember.Input((units,))
    step_in = ember.Input((None, tokens))
    seq, h2, c2 = decoder(step_in, initial_state=[state_h, state_c])
    decoder_model = ember.Model([step_in, state_h, state_c], [dense(seq), h2, c2])
    _assert_same_weights(encoder_model.get_weights() + decoder_model.get_weights(), training.get_weights())

    expected = training.predict([enc_x, dec_x], verbose=0)
    states = encoder_model.predict(enc_x, verbose=0)
    for step in range(dec_x.shape[1]):
        out, *states = decoder_model.predict([dec_x[:, step:step + 1], *states], verbose=0)
        np.testing.assert_allclose(out[:, 0], expected[:, step], **FLOAT32_PAIR)


@needs("keras")
def test_seq2seq_inference_models_match_keras(backend):
    training, (enc_in, h, c, decoder, dense) = _seq2seq(ember)
    training.compile(optimizer=ember.optimizers.Adam(0.02), loss="categorical_crossentropy")
    enc_x = np.eye(5, dtype="float32")[RNG.integers(0, 5, (4, 4))]
    dec_x = np.eye(5, dtype="float32")[RNG.integers(0, 5, (4, 2))]
    training.fit([enc_x, dec_x], dec_x, epochs=2, batch_size=2, verbose=0)
    encoder_model = ember.Model(enc_in, [h, c])
    k_training, (k_enc_in, k_h, k_c, _, _) = _seq2seq(keras)
    k_training.set_weights(training.get_weights())
    k_encoder = keras.Model(k_enc_in, [k_h, k_c])
    for ours, theirs in zip(encoder_model.predict(enc_x, verbose=0), k_encoder.predict(enc_x, verbose=0)):
        np.testing.assert_allclose(ours, theirs, **FLOAT32_PAIR)


@pytest.mark.parametrize("reader", ["layer", "model"])
def test_set_weights_through_a_layer_reaches_the_model_state(backend, reader):
    model = ember.Sequential([ember.Input((2,)), layers.Dense(2, name="d")])
    model.build(seed=0)
    new = [np.eye(2, dtype="float32"), np.ones(2, "float32")]
    if reader == "layer":
        model.get_layer("d").set_weights(new)
    else:
        model.set_weights(new)
    np.testing.assert_array_equal(_np(model.state["params"]["d"]["kernel"]), np.eye(2))
    _assert_same_weights(model.get_layer("d").get_weights(), new)


def test_a_graph_model_inside_a_keras_style_layer_gets_real_weights(backend):
    """Inferring the Keras-style layer's output shape builds its sub-model on placeholder zeros;
    those never become the sub-model's weights (a later build would reuse them)."""
    inner_in = ember.Input((3,))
    inner = ember.Model(inner_in, layers.Dense(2, name="inner_dense")(inner_in))

    class Wrap(layers.Layer):
        def __init__(self, model, **kwargs):
            super().__init__(**kwargs)
            self.model = model

        def call(self, inputs):
            return self.model(inputs)

    inputs = ember.Input((3,))
    outer = ember.Model(inputs, Wrap(inner, name="wrap")(inputs))
    assert inner.state is None
    outer.build(seed=0)
    kernel = outer.get_weights()[0]
    assert kernel.shape == (3, 2) and np.abs(kernel).sum() > 0
