"""One set of weights per layer object (Keras's rule), on every backend.

A model built over layers that already have weights reuses them; training, ``set_weights`` or
``load_weights`` through any model that holds a layer changes that layer everywhere; sub-models
built from a trained model's layers (feature extractors, an autoencoder's encoder and decoder,
a seq2seq's inference models) compute with the trained weights. References: the trained model
itself (the same weights must give the same outputs), and Keras 3 (torch backend) given the same
weights through ``get_weights``/``set_weights`` in Keras's order.
"""

from __future__ import annotations

import gc
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
        assert all(layer.trainable for layer in discriminator.layers)
        discriminator.compile(optimizer=ember.optimizers.SGD(0.1), loss=loss)
        fake = generator.predict(noise, verbose=0)
        before = discriminator.get_weights()
        discriminator.train_on_batch(np.concatenate([real, fake]), np.r_[np.ones(8), np.zeros(8)][:, None])
        trained = discriminator.get_weights()
        assert _differs(before, trained)
        _assert_same_weights(gan.get_layer("discriminator").get_weights(), trained)

        discriminator.trainable = False  # Keras's rule: every layer inside too
        assert not any(layer.trainable for layer in discriminator.layers)
        assert not discriminator.trainable_weights and len(gan.trainable_weights) == 2
        gan.compile(optimizer=ember.optimizers.SGD(0.1), loss=loss)
        g_before = generator.get_weights()
        gan.train_on_batch(noise, np.ones((8, 1)))
        _assert_same_weights(discriminator.get_weights(), trained)  # frozen in the GAN's compile
        assert _differs(g_before, generator.get_weights())  # the generator learned through the GAN
    np.testing.assert_allclose(_np(gan.predict(noise, verbose=0)),
                               _np(discriminator.predict(generator.predict(noise, verbose=0), verbose=0)),
                               **FLOAT32_PAIR)


@pytest.mark.parametrize("lib_name", ["ember", "keras"])
def test_trainable_is_set_on_every_layer_inside_recursively(lib_name, backend):
    """keras.io's transfer-learning guide: ``model.trainable = False`` freezes every layer inside,
    nested models included; ``True`` unfreezes them all again."""
    lib = ember if lib_name == "ember" else keras
    if lib is None:
        pytest.skip("keras is not installed")
    inner_in = lib.Input((3,))
    bn = lib.layers.BatchNormalization(name="bn")
    inner = lib.Model(inner_in, bn(lib.layers.Dense(4, name="inner_dense")(inner_in)), name="inner")
    inputs = lib.Input((3,))
    model = lib.Model(inputs, lib.layers.Dense(1, name="head")(inner(inputs)), name="outer")
    model.trainable = False
    assert not inner.trainable and not bn.trainable and not model.get_layer("head").trainable
    assert not model.trainable_weights and len(model.non_trainable_weights) == 8
    inner.trainable = True  # the inner model and its layers; the outer stays frozen
    assert bn.trainable and inner.get_layer("inner_dense").trainable and not model.get_layer("head").trainable
    model.trainable = True
    assert all(layer.trainable for layer in model.layers + inner.layers)
    assert len(model.trainable_weights) == 6 and len(model.non_trainable_weights) == 2


def test_a_frozen_base_trains_nothing_and_its_batch_norm_infers(backend):
    """After ``base.trainable = False`` the optimizer updates only the head, and the base's
    BatchNormalization (frozen with it) runs in inference mode: its moving statistics stay."""
    base_in = ember.Input((4,))
    base = ember.Model(base_in, layers.BatchNormalization(name="bn")(layers.Dense(3, name="dense")(base_in)),
                       name="base")
    inputs = ember.Input((4,))
    model = ember.Model(inputs, layers.Dense(1, name="head")(base(inputs)))
    model.build(seed=0)
    base.trainable = False
    assert not base.get_layer("bn").trainable
    model.compile(optimizer=ember.optimizers.SGD(0.1), loss="mse")
    frozen, head = base.get_weights(), model.get_layer("head").get_weights()
    model.fit(_data(16, 4), _data(16, 1), epochs=1, batch_size=8, verbose=0)
    _assert_same_weights(base.get_weights(), frozen)
    assert _differs(model.get_layer("head").get_weights(), head)


def test_summary_show_trainable_column(backend):
    inputs = ember.Input((3,))
    hidden = layers.Dense(4, name="hidden")
    model = ember.Model(inputs, layers.Dense(1, name="out")(layers.Dropout(0.5, name="drop")(hidden(inputs))))
    hidden.trainable = False
    lines: list[str] = []
    model.summary(print_fn=lines.append, line_length=120, show_trainable=True)
    header = next(line for line in lines if line.startswith("Layer (type)"))
    assert header.split()[-1] == "Trainable"
    cells = {line.split()[0]: line.split()[-1] for line in lines if line.split() and line.split()[0] in
             ("hidden", "drop", "out")}
    assert cells == {"hidden": "N", "drop": "-", "out": "Y"}
    plain: list[str] = []
    model.summary(print_fn=plain.append, line_length=120)
    assert not any("Trainable" in line for line in plain if line.startswith("Layer"))


# --- sub-models over a trained model's layers, against Keras ----------------------------------
def _autoencoder(lib):
    """The autoencoder, then its encoder and decoder taken apart as Keras programs do: the encoder
    from ``model.input`` to a layer's ``output``, the decoder by calling the trained layers anew."""
    inputs = lib.Input((6,), name="x")
    hidden = lib.layers.Dense(5, activation="relu", name="enc_hidden")(inputs)
    code = lib.layers.Dense(3, activation="tanh", name="code")(hidden)
    hidden = lib.layers.Dense(5, activation="relu", name="dec_hidden")(code)
    model = lib.Model(inputs, lib.layers.Dense(6, name="recon")(hidden))
    encoder = lib.Model(inputs=model.input, outputs=model.get_layer("code").output)
    code_in = lib.Input((3,), name="code_in")
    x = code_in
    for layer in model.layers[-2:]:
        x = layer(x)
    return model, encoder, lib.Model(code_in, x)


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
    """A CNN and the feature extractor of Keras's FAQ: every layer's output (the input layer's is the
    input itself)."""
    inputs = lib.Input((8, 8, 1))
    x = lib.layers.Conv2D(4, 3, activation="relu", name="conv1")(inputs)
    x = lib.layers.MaxPooling2D(2, name="pool")(x)
    x = lib.layers.Conv2D(6, 3, activation="relu", name="conv2")(x)
    x = lib.layers.Flatten(name="flat")(x)
    model = lib.Model(inputs, lib.layers.Dense(3, name="logits")(x))
    return model, lib.Model(inputs=model.inputs, outputs=[layer.output for layer in model.layers])


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
    return lib.Model([enc_in, dec_in], dense(seq))


def _inference_models(lib, model, units=8):
    """keras-io's lstm_seq2seq, "restore the model and construct the encoder and decoder": the
    encoder from ``model.input[0]`` to the encoder LSTM's states, the decoder by calling the trained
    decoder layers on new state inputs."""
    encoder_inputs = model.input[0]
    _, state_h_enc, state_c_enc = model.get_layer("encoder").output
    encoder_model = lib.Model(encoder_inputs, [state_h_enc, state_c_enc])
    decoder_inputs = model.input[1]
    state_h, state_c = lib.Input((units,)), lib.Input((units,))
    seq, h, c = model.get_layer("decoder")(decoder_inputs, initial_state=[state_h, state_c])
    outputs = model.get_layer("decoder_dense")(seq)
    return encoder_model, lib.Model([decoder_inputs, state_h, state_c], [outputs, h, c])


def test_seq2seq_inference_models_rebuilt_from_the_trained_layers(backend):
    """Train with teacher forcing, then decode step by step with the inference models; each step's
    output equals the training model's output at that step (the same inputs and states)."""
    tokens, units = 5, 8
    training = _seq2seq(ember, tokens, units)
    training.compile(optimizer=ember.optimizers.Adam(0.02), loss="categorical_crossentropy")
    enc_x = np.eye(tokens, dtype="float32")[RNG.integers(0, tokens, (8, 4))]
    dec_x = np.eye(tokens, dtype="float32")[RNG.integers(0, tokens, (8, 3))]
    target = np.eye(tokens, dtype="float32")[RNG.integers(0, tokens, (8, 3))]
    training.fit([enc_x, dec_x], target, epochs=3, batch_size=4, verbose=0)

    encoder_model, decoder_model = _inference_models(ember, training, units)
    _assert_same_weights(encoder_model.get_weights() + decoder_model.get_weights(), training.get_weights())
    expected = training.predict([enc_x, dec_x], verbose=0)
    states = encoder_model.predict(enc_x, verbose=0)
    for step in range(dec_x.shape[1]):
        out, *states = decoder_model.predict([dec_x[:, step:step + 1], *states], verbose=0)
        np.testing.assert_allclose(out[:, 0], expected[:, step], **FLOAT32_PAIR)


@needs("keras")
def test_seq2seq_inference_models_match_keras(backend):
    training = _seq2seq(ember)
    training.compile(optimizer=ember.optimizers.Adam(0.02), loss="categorical_crossentropy")
    enc_x = np.eye(5, dtype="float32")[RNG.integers(0, 5, (4, 4))]
    dec_x = np.eye(5, dtype="float32")[RNG.integers(0, 5, (4, 2))]
    training.fit([enc_x, dec_x], dec_x, epochs=2, batch_size=2, verbose=0)
    k_training = _seq2seq(keras)
    k_training.set_weights(training.get_weights())
    models, k_models = _inference_models(ember, training), _inference_models(keras, k_training)
    for ours, theirs in zip(models[0].predict(enc_x, verbose=0), k_models[0].predict(enc_x, verbose=0)):
        np.testing.assert_allclose(ours, theirs, **FLOAT32_PAIR)
    states = models[0].predict(enc_x, verbose=0)
    step = [dec_x[:, :1], *states]
    for ours, theirs in zip(models[1].predict(step, verbose=0), k_models[1].predict(step, verbose=0)):
        np.testing.assert_allclose(ours, theirs, **FLOAT32_PAIR)


# --- the symbolic surface: Keras's rules -----------------------------------------------------------
@pytest.mark.parametrize("lib_name", ["ember", "keras"])
def test_inputs_and_outputs_are_lists_input_and_output_as_given(lib_name, backend):
    lib = ember if lib_name == "ember" else keras
    if lib is None:
        pytest.skip("keras is not installed")
    x = lib.Input((3,), name="x")
    y = lib.layers.Dense(2, name="y")(x)
    single = lib.Model(x, y)
    assert single.inputs == [x] and single.outputs == [y]
    assert single.input is x and single.output is y
    assert tuple(single.input_shape) == (None, 3) and tuple(single.output_shape) == (None, 2)
    a, b = lib.Input((3,), name="a"), lib.Input((4,), name="b")
    merged = lib.layers.Concatenate(name="cat")([a, b])
    projected = lib.layers.Dense(2, name="proj")(merged)
    several = lib.Model([a, b], [merged, projected])
    assert several.inputs == [a, b] and several.input == [a, b] and several.output == [merged, projected]
    assert [tuple(s) for s in several.input_shape] == [(None, 3), (None, 4)]
    concat = several.get_layer("cat")
    assert concat.input == [a, b] and concat.output is merged
    if lib is ember:  # a layer's input_shape/output_shape: tf.keras's, which Keras 3 keeps on models only
        assert concat.input_shape == [(None, 3), (None, 4)] and concat.output_shape == (None, 7)


def test_a_collected_temporary_sub_model_leaves_the_trained_weights(backend):
    """``ember.Model(model.input, layer.output).predict(x)`` inline: the sub-model borrows the layers'
    weights; once it is garbage-collected they are the layers' (and the trained model's) again."""
    import gc

    inputs = ember.Input((3,))
    model = ember.Model(inputs, layers.Dense(1, name="out")(layers.Dense(4, name="hidden")(inputs)))
    model.compile(optimizer=ember.optimizers.SGD(0.1), loss="mse")
    model.fit(_data(8, 3), _data(8, 1), epochs=1, verbose=0)
    trained = model.get_weights()
    x = _data(2, 3)
    features = ember.Model(model.input, model.get_layer("hidden").output).predict(x, verbose=0)
    gc.collect()
    _assert_same_weights(model.get_weights(), trained)
    np.testing.assert_allclose(_np(model.get_layer("hidden")(x)), _np(features), **FLOAT32_PAIR)


def test_layer_input_and_output_after_symbolic_calls(backend):
    dense = layers.Dense(2, name="shared")
    with pytest.raises(AttributeError, match="never been called"):
        _ = dense.output
    with pytest.raises(AttributeError, match="never been called"):
        _ = dense.input_shape
    a, b = ember.Input((3,)), ember.Input((3,))
    first, second = dense(a), dense(b)
    assert dense.input is a and dense.output is first  # the first call's, as Keras 3
    assert second is not first and dense.output_shape == (None, 2)  # the same shape at both calls
    c = ember.Input((4,))
    dense_c = layers.Dense(2, name="twice")
    dense_c(a)
    dense_c(c)
    with pytest.raises(AttributeError, match="multiple inbound nodes with different input shapes"):
        _ = dense_c.input_shape
    assert dense_c.output_shape == (None, 2)
    inputs = ember.Input((3,))
    assert inputs.node.layer.output is inputs and inputs.node.layer.input is inputs


def test_sequential_symbolic_surface_and_feature_extractor(backend):
    model = ember.Sequential([ember.Input((4,)), layers.Dense(5, activation="relu", name="hidden"),
                              layers.Dense(2, name="out")])
    model.build(seed=0)
    assert len(model.inputs) == 1 and model.inputs[0] is model.input and model.outputs == [model.output]
    assert model.input_shape == (None, 4) and model.output_shape == (None, 2)
    features = ember.Model(inputs=model.input, outputs=model.get_layer("hidden").output)
    x = _data(3, 4)
    np.testing.assert_allclose(_np(features.predict(x, verbose=0)), _np(model.get_layer("hidden")(x)),
                               **FLOAT32_PAIR)
    model.add(layers.Dense(1, name="extra"))
    assert model.output is model.get_layer("extra").output and model.output_shape == (None, 1)
    model.pop()
    assert model.output is model.get_layer("out").output
    unknown = ember.Sequential([layers.Dense(2, name="d")])
    with pytest.raises(AttributeError, match="no defined input"):
        _ = unknown.input
    with pytest.raises(AttributeError, match="never been called"):
        _ = unknown.get_layer("d").output
    unknown.build((None, 6))
    assert unknown.input_shape == (None, 6) and unknown.get_layer("d").output is unknown.output


def test_a_keras_style_subclass_has_no_graph(backend):
    class Net(ember.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(2)

        def call(self, x):
            return self.dense(x)

    with pytest.raises(AttributeError, match="no symbolic inputs"):
        _ = Net().inputs


@pytest.mark.parametrize("lib_name", ["ember", "keras"])
def test_build_on_a_standalone_built_in_layer_creates_its_weights(lib_name, backend):
    """Keras's ``layer.build(input_shape)``: the weights exist afterwards (``weights``, ``get_weights``,
    ``set_weights``), and a model over the layer computes with them."""
    lib = ember if lib_name == "ember" else keras
    if lib is None:
        pytest.skip("keras is not installed")
    dense = lib.layers.Dense(3, name="standalone")
    dense.build((None, 4))
    assert dense.built and [tuple(w.shape) for w in dense.weights] == [(4, 3), (3,)]
    new = [np.arange(12, dtype="float32").reshape(4, 3) / 10, np.ones(3, "float32")]
    dense.set_weights(new)
    _assert_same_weights(dense.get_weights(), new)
    inputs = lib.Input((4,))
    model = lib.Model(inputs, dense(inputs))
    x = _data(2, 4)
    np.testing.assert_allclose(_np(model.predict(x, verbose=0)), x @ new[0] + new[1], **FLOAT32_PAIR)


def test_build_with_a_seed_is_the_pure_core_and_keeps_nothing(backend):
    dense = layers.Dense(3, name="pure")
    state = dense.build((None, 4), seed=0)  # the pure core: a state dict, the layer stays unbuilt
    assert sorted(state["params"]) == ["bias", "kernel"] and not dense.built
    def seeded(layer):
        inputs = ember.Input((4,))
        model = ember.Model(inputs, layer(inputs))
        model.build(seed=0)
        return model

    seeded(dense)  # the model initialises the layer from its seed, as over a layer never built
    _assert_same_weights(dense.get_weights(), seeded(layers.Dense(3, name="pure")).get_weights())
    held = dense.get_weights()
    dense.build((None, 4))  # a layer a model holds keeps the model's weights
    _assert_same_weights(dense.get_weights(), held)


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


# --- a call's fixed training mode: Keras's fine-tuning recipe -------------------------------------
def _fine_tuning(lib):
    """keras.io's transfer-learning guide: a base with BatchNormalization called with training=False."""
    base_in = lib.Input((4,))
    x = lib.layers.Dense(6, name="base_dense")(base_in)
    x = lib.layers.BatchNormalization(name="base_bn")(x)
    base = lib.Model(base_in, lib.layers.Activation("relu", name="base_relu")(x), name="base")
    inputs = lib.Input((4,))
    outputs = lib.layers.Dense(1, name="head")(base(inputs, training=False))
    return lib.Model(inputs, outputs), base


def _keras_inference_steps(model, x, y, learning_rate, batch_size):
    """Keras's custom training loop (torch backend) over ``model(x, training=False)``: what the guide's
    ``base(inputs, training=False)`` means while fitting (Keras 3.15's fit lets the outer call's
    training=True override a node's training=False, a regression fixed upstream in keras-team/keras#23364;
    the head has no training-dependent layer, so the whole model in inference mode is the reference)."""
    import torch

    optimizer = keras.optimizers.SGD(learning_rate)
    for start in range(0, len(x), batch_size):
        xb = keras.ops.convert_to_tensor(x[start:start + batch_size])  # on Keras's device
        yb = keras.ops.convert_to_tensor(y[start:start + batch_size])
        model.zero_grad()
        loss = torch.mean((model(xb, training=False) - yb) ** 2)
        loss.backward()
        variables = model.trainable_weights
        with torch.no_grad():
            optimizer.apply([v.value.grad for v in variables], variables)


@needs("keras")
def test_fine_tuning_with_a_base_called_in_inference_mode_matches_keras(backend):
    model, base = _fine_tuning(ember)
    k_model, k_base = _fine_tuning(keras)
    rng = np.random.default_rng(3)
    initial = [rng.normal(size=w.shape).astype("float32") for w in k_model.get_weights()]
    initial[5] = np.abs(initial[5]) + 0.5  # the BatchNormalization's moving variance
    model.set_weights(initial)
    k_model.set_weights(initial)
    x, y = rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 1)).astype("float32")
    bn = model.get_layer("base").get_layer("base_bn")

    # 1. the base frozen: only the head trains (Keras's fit agrees: a frozen BatchNormalization infers)
    base.trainable = False
    k_base.trainable = False
    model.compile(optimizer=ember.optimizers.SGD(0.1), loss="mse")
    k_model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    model.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
    k_model.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
    _assert_same_weights(base.get_weights(), initial[:6])
    assert _differs(model.get_weights()[6:], initial[6:])
    for ours, theirs in zip(model.get_weights(), k_model.get_weights()):
        np.testing.assert_allclose(ours, theirs, **FLOAT32_PAIR)

    # 2. unfrozen, a low learning rate: the base's kernels move, its moving statistics do not
    base.trainable = True
    k_base.trainable = True
    model.compile(optimizer=ember.optimizers.SGD(0.01), loss="mse")
    model.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
    _keras_inference_steps(k_model, x, y, 0.01, 8)
    _assert_same_weights([_np(w) for w in bn.non_trainable_weights], initial[4:6])
    assert _differs(base.get_weights()[:4], initial[:4])
    for ours, theirs in zip(model.get_weights(), k_model.get_weights()):
        np.testing.assert_allclose(ours, theirs, **FLOAT32_PAIR)
    np.testing.assert_allclose(model.predict(x, verbose=0), k_model.predict(x, verbose=0), **FLOAT32_PAIR)


@pytest.mark.parametrize("path", ["config", "model.h5", "model.keras"])
def test_a_fixed_training_mode_survives_config_and_saving(backend, tmp_path, path):
    model, _ = _fine_tuning(ember)
    model.build(seed=0)
    if path == "config":
        restored = ember.Model.from_config(model.get_config())
    else:
        model.save(tmp_path / path)
        restored = ember.load_model(tmp_path / path)
    node = next(n for n in restored._nodes if n.layer.name == "base")
    assert node.training is False
    restored.set_weights(model.get_weights())
    restored.compile(optimizer=ember.optimizers.SGD(0.01), loss="mse")
    before = [_np(w) for w in restored.get_layer("base").get_layer("base_bn").non_trainable_weights]
    restored.fit(_data(8, 4), _data(8, 1), epochs=1, verbose=0)
    after = [_np(w) for w in restored.get_layer("base").get_layer("base_bn").non_trainable_weights]
    _assert_same_weights(after, before)


def test_a_fixed_training_mode_on_a_node_is_checked(backend):
    inputs = ember.Input((3,))
    with pytest.raises(TypeError, match="training must be True, False or None"):
        layers.Dropout(0.5)(inputs, training="yes")
    dropout = layers.Dropout(0.5, seed=1)
    model = ember.Model(inputs, dropout(inputs, training=True))  # Monte Carlo dropout: on at inference too
    x = np.ones((4, 3), "float32")
    assert _np(model.predict(x, verbose=0)).min() == 0.0
    clone = ember.models.clone_model(model)
    assert next(n for n in clone._nodes if n.layer is not clone.layers[0]).training is True


def test_build_again_after_the_owning_model_is_collected_keeps_the_weights(backend):
    """A model over a layer is garbage: its weights are handed back to the layer, and a later
    ``layer.build(shape)`` keeps them (it re-initialised them, depending on when the model was
    collected); a build for another shape makes new weights of that shape."""
    dense = layers.Dense(3, name="pure")
    inputs = ember.Input((4,))
    ember.Model(inputs, dense(inputs)).build(seed=0)
    gc.collect()
    held = dense.get_weights()
    dense.build((None, 4))
    _assert_same_weights(dense.get_weights(), held)
    dense.build((None, 5))
    assert dense.get_weights()[0].shape == (5, 3)
