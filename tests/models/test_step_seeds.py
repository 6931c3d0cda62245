"""Per-step child seeds go only to layers whose code can read them (``Layer._uses_rng``).

A model derives ``derive_seed(step_seed, key)`` for a Dropout, a noise layer, a layer whose ``call``
takes ``rng``, an RNN, a wrapper, a nested model or a Keras-style layer, and nothing for a Dense,
Conv, pooling, normalization, activation or reshape (whose code never sees ``rng``). The seeds that
remain are those every layer got before, so masks, training results and resumes are unchanged.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.layers import keras_object
from ember.models import model as model_module
from ember.seeds import derive_seed

RTOL = 1e-5  # float32 forward passes of a few dozen terms, against the same ops run layer by layer
ATOL = 1e-6


def _x():
    return np.random.default_rng(0).normal(size=(8, 6)).astype(np.float32)


def _xy():
    x = np.random.default_rng(1).normal(size=(32, 6)).astype(np.float32)
    return x, x[:, :1] * 2.0 - x[:, 1:2]


def _np(value):
    return np.asarray(ops.to_numpy(value), dtype=np.float64)


def _seed_value(seed):
    return int(seed) if isinstance(seed, int) else int(ops.to_numpy(seed))


def _step_seeds():
    """An int step seed and a 0-d array one (the trainer's, on MLX and under torch.compile)."""
    return [12345, ops.convert_to_tensor(987654, dtype="int64")]


# ------------------------------------------------------------------ which classes receive a seed
class NoisyDense(layers.Dense):
    """A Dense subclass that draws randomness from the step seed: it must keep getting one."""

    def call(self, params, inputs, training=False, rng=None):
        outputs = super().call(params, inputs)
        if not training:
            return outputs
        return ops.add(outputs, ember.random.normal(ops.shape(outputs), stddev=0.5, seed=rng))


class NoisyNorm(layers.BatchNormalization):
    """A BatchNormalization subclass whose own ``apply`` adds noise from ``rng``."""

    def apply(self, state, inputs, *, training=False, rng=None, mask=None):
        outputs, state = super().apply(state, inputs, training=training, rng=rng, mask=mask)
        if training:
            outputs = ops.add(outputs, ember.random.normal(ops.shape(outputs), stddev=0.5, seed=rng))
        return outputs, state


class PlainScale(layers.DeclarativeLayer):
    """A declarative user layer whose ``call`` takes no ``rng``: it cannot read one."""

    factor: float = 2.0

    def call(self, params, inputs):
        return ops.multiply(inputs, self.factor)

    def compute_output_shape(self, input_shape):
        return input_shape


class KerasStyleBlock(layers.Layer):
    """A Keras-style layer: its sub-layers (here a Dropout) may draw, so it keeps its seed."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = layers.Dense(4, name="dense")
        self.drop = layers.Dropout(0.5, name="drop")

    def call(self, inputs, training=None):
        return self.drop(self.dense(inputs), training=training)


@pytest.mark.parametrize("cls", [layers.Dense, layers.Conv2D, layers.MaxPooling2D, layers.LayerNormalization,
                                 layers.BatchNormalization, layers.Activation, layers.ReLU, layers.Flatten,
                                 layers.Reshape, layers.Embedding, layers.Concatenate, PlainScale])
def test_layers_that_cannot_read_rng_get_none(cls):
    assert cls._uses_rng is False


@pytest.mark.parametrize("cls", [layers.Dropout, layers.GaussianNoise, layers.GaussianDropout, layers.AlphaDropout,
                                 layers.SpatialDropout1D, layers.RandomFlip, layers.RandomRotation, layers.LSTM,
                                 layers.GRU, layers.SimpleRNN, layers.TimeDistributed, layers.Bidirectional,
                                 layers.MultiHeadAttention, layers.Attention, ember.Sequential, ember.Model,
                                 NoisyDense, NoisyNorm, KerasStyleBlock])
def test_layers_that_may_draw_keep_their_seed(cls):
    assert cls._uses_rng is True


def test_the_exemption_is_for_the_exact_class():
    class PassThroughNorm(layers.BatchNormalization):  # inherits apply: not itself declared
        pass

    assert layers.BatchNormalization._uses_rng is False
    assert PassThroughNorm._uses_rng is True


# ------------------------------------------------------------------ (a) seeds and results unchanged
def _dropout_sequential():
    model = ember.Sequential([ember.Input((6,)), layers.Dense(16, activation="relu", name="h"),
                              layers.BatchNormalization(name="bn"), layers.Dropout(0.5, name="drop"),
                              layers.Dense(8, activation="tanh", name="h2"), layers.GaussianNoise(0.3, name="noise"),
                              layers.Dense(1, name="out")])
    model.build(seed=0)
    return model


def test_sequential_layers_get_todays_seeds(backend):
    model = _dropout_sequential()
    state, x = model.state, ops.convert_to_tensor(_x())
    for seed in _step_seeds():
        y, _ = model.apply(state, x, training=True, rng=seed)
        # The same stack run layer by layer, each random layer given derive_seed(step seed, key):
        # its seed as computed before this change (the CRC-32 formula is checked below).
        h = x
        for layer in model.layers:
            child = {"params": state["params"].get(layer.name, {}), "buffers": state["buffers"].get(layer.name, {})}
            rng = derive_seed(seed, layer.name) if layer.name in ("drop", "noise") else None
            h, _ = layer.apply(child, h, training=True, rng=rng)
        np.testing.assert_allclose(_np(y), _np(h), rtol=RTOL, atol=ATOL)


def test_child_seed_formula_is_unchanged(backend):
    seed = ops.convert_to_tensor(987654, dtype="int64")
    expected = (987654 * 1000003 + (zlib.crc32(b"drop") & 0x7FFFFFFF)) % 2**31
    assert _seed_value(derive_seed(seed, "drop")) == expected
    assert derive_seed(7, "drop") == zlib.crc32(b"7/drop") & 0x7FFFFFFF


def _functional():
    inputs = ember.Input((6,))
    a = layers.Dropout(0.3, name="d1")(layers.Dense(8, activation="relu", name="a")(inputs))
    b = layers.Dropout(0.5, name="d2")(layers.Dense(4, activation="relu", name="b")(inputs))
    merged = layers.Concatenate(name="cat")([a, b])
    model = ember.Model(inputs, layers.Dense(1, name="out")(merged))
    model.build(seed=0)
    return model


def test_functional_layers_get_todays_seeds(backend):
    model = _functional()
    state, x = model.state, ops.convert_to_tensor(_x())
    by_name = {layer.name: layer for layer in model.layers}
    params = state["params"]

    def run(name, inputs, rng=None):
        child = {"params": params.get(name, {}), "buffers": {}}
        return by_name[name].apply(child, inputs, training=True, rng=rng)[0]

    for seed in _step_seeds():
        y, _ = model.apply(state, x, training=True, rng=seed)
        a = run("d1", run("a", x), derive_seed(seed, "d1"))
        b = run("d2", run("b", x), derive_seed(seed, "d2"))
        expected = run("out", run("cat", [a, b]))
        np.testing.assert_allclose(_np(y), _np(expected), rtol=RTOL, atol=ATOL)


class _Subclassed(ember.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(16, activation="relu", name="hidden")
        self.drop = layers.Dropout(0.5, name="drop")
        self.out = layers.Dense(1, name="out")

    def call(self, inputs, training=None):
        return self.out(self.drop(self.hidden(inputs), training=training))


class _SubclassedNoisy(ember.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(8, activation="relu", name="hidden")
        self.noisy = NoisyDense(1, name="noisy")

    def call(self, inputs, training=None):
        return self.noisy(self.hidden(inputs), training=training)


def _built(make):
    model = make()
    if isinstance(model, ember.Sequential) or not model._keras_style:
        return model
    model.build((None, 6), seed=0)
    return model


def _fit(make, seed=11):
    model = _built(make)
    model.compile(ember.optimizers.SGD(0.05), "mse", seed=seed)
    x, y = _xy()
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0).history["loss"]
    return history, [_np(w) for w in model.get_weights()]


def _every_layer_seeded(monkeypatch):
    """Today's rule before this change: every layer class receives its derived seed."""
    for cls in (layers.Dense, layers.BatchNormalization, layers.Concatenate):
        monkeypatch.setattr(cls, "_uses_rng", True)


@pytest.mark.parametrize("make", [_dropout_sequential, _functional, _Subclassed, _SubclassedNoisy])
def test_training_results_are_unchanged(backend, monkeypatch, make):
    history, weights = _fit(make)
    with monkeypatch.context() as patched:
        _every_layer_seeded(patched)
        assert layers.Dense._uses_rng is True
        reference_history, reference_weights = _fit(make)
    assert history == reference_history  # same masks, same ops: bit-identical
    for weight, reference in zip(weights, reference_weights, strict=True):
        np.testing.assert_array_equal(weight, reference)
    other_history, _ = _fit(make, seed=12)
    assert other_history != history  # the seeds still matter


# ------------------------------------------------------------------ (b) the skip happens
@pytest.fixture
def derive_calls(monkeypatch):
    """Records the names every model-level derive_seed / Keras-style sub_seed is called for."""
    calls = []

    def counting_derive(seed, *names):
        calls.append(names)
        return derive_seed(seed, *names)

    sub_seed = keras_object.sub_seed

    def counting_sub_seed(seed, *names):
        if seed is not None:
            calls.append(names)
        return sub_seed(seed, *names)

    monkeypatch.setattr(model_module, "derive_seed", counting_derive)
    monkeypatch.setattr(keras_object, "sub_seed", counting_sub_seed)
    return calls


@pytest.mark.parametrize("make, expected", [(_dropout_sequential, [("drop",), ("noise",)]),
                                            (_functional, [("d1",), ("d2",)]),
                                            (_Subclassed, [("drop",)]),
                                            (_SubclassedNoisy, [("noisy",)])])
def test_only_random_layers_get_a_seed_per_call(backend, derive_calls, make, expected):
    model = _built(make)
    x = ops.convert_to_tensor(_x())
    for seed in _step_seeds():
        derive_calls.clear()
        model.apply(model.state, x, training=True, rng=seed)
        assert derive_calls == expected


def test_a_dense_only_model_derives_no_seed_per_step(derive_calls):
    # Eager steps (NumPy): each train_step runs the Python forward once, with a new step seed.
    model = ember.Sequential([ember.Input((6,)), layers.Dense(8, activation="relu", name="h"),
                              layers.Dense(1, name="out")])
    model.build(seed=0)
    trainer = ember.Trainer(model, optimizer=ember.optimizers.SGD(0.01), loss="mse")
    state = trainer.init_state(seed=3)
    x, y = _xy()
    for _ in range(3):
        state, _ = trainer.train_step(state, (x, y))
    assert derive_calls == []


def test_a_dropout_model_derives_one_seed_per_step(derive_calls):
    model = _dropout_sequential()
    trainer = ember.Trainer(model, optimizer=ember.optimizers.SGD(0.01), loss="mse")
    state = trainer.init_state(seed=3)
    x, y = _xy()
    for _ in range(3):
        state, _ = trainer.train_step(state, (x, y))
    assert derive_calls == [("drop",), ("noise",)] * 3


# ------------------------------------------------------------------ (c) subclasses that draw
def test_a_dense_subclass_that_draws_gets_its_seed(backend):
    model = ember.Sequential([ember.Input((6,)), layers.Dense(8, name="h"), NoisyDense(3, name="noisy")])
    model.build(seed=0)
    state, x = model.state, ops.convert_to_tensor(_x())
    for seed in _step_seeds():
        y, _ = model.apply(state, x, training=True, rng=seed)
        h, _ = model.layers[0].apply({"params": state["params"]["h"], "buffers": {}}, x)
        kernel, bias = _np(state["params"]["noisy"]["kernel"]), _np(state["params"]["noisy"]["bias"])
        noise = ember.random.normal((8, 3), stddev=0.5, seed=derive_seed(seed, "noisy"))
        expected = _np(h) @ kernel + bias + _np(noise)
        np.testing.assert_allclose(_np(y), expected, rtol=RTOL, atol=ATOL)
        again, _ = model.apply(state, x, training=True, rng=seed)
        np.testing.assert_array_equal(_np(again), _np(y))


def test_a_batch_norm_subclass_that_draws_gets_its_seed(backend):
    inputs = ember.Input((6,))
    model = ember.Model(inputs, NoisyNorm(name="norm")(layers.Dense(4, name="h")(inputs)))
    model.build(seed=0)
    state, x = model.state, ops.convert_to_tensor(_x())
    for seed in _step_seeds():
        y, _ = model.apply(state, x, training=True, rng=seed)
        h = _np(x) @ _np(state["params"]["h"]["kernel"]) + _np(state["params"]["h"]["bias"])
        # BatchNormalization in training, in float64: batch statistics, gamma=1, beta=0, epsilon 1e-3.
        normalized = (h - h.mean(axis=0)) / np.sqrt(h.var(axis=0) + 1e-3)
        noise = ember.random.normal((8, 4), stddev=0.5, seed=derive_seed(seed, "norm"))
        np.testing.assert_allclose(_np(y), normalized + _np(noise), rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("bad", [1.5, "7", True])
def test_a_bad_rng_is_rejected_even_without_random_layers(backend, bad):
    model = ember.Sequential([ember.Input((6,)), layers.Dense(2, name="h")])
    model.build(seed=0)
    before = [_np(w) for w in model.get_weights()]
    with pytest.raises(TypeError, match="rng must be an int seed, a 0-d integer array or None"):
        model.apply(model.state, ops.convert_to_tensor(_x()), training=True, rng=bad)
    for weight, previous in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(_np(weight), previous)
