"""Stateful RNNs (``stateful=True``, ``reset_states``) and structured RNNs (Keras-style cells with
nested states and inputs).

References: Keras 3 itself (torch backend) on the same weights (a stateful LSTM fed the series
in chunks, a custom cell with nested states), and NumPy float64 loops written out here (a cell
with nested inputs).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import layers, ops
from tests.helpers import assert_close
from tests.tolerances import FLOAT32_PAIR

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")

BATCH, TIME, FEATURES, UNITS, CHUNK = 2, 12, 3, 4, 4


def _series():
    return np.random.default_rng(0).normal(size=(BATCH, TIME, FEATURES)).astype(np.float32)


def _chunks(x):
    return [x[:, i:i + CHUNK] for i in range(0, TIME, CHUNK)]


@pytest.fixture(scope="module")
def keras_stateful_lstm():
    """Keras's stateful LSTM fed the series chunk by chunk: its weights and outputs."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input(batch_shape=(BATCH, CHUNK, FEATURES)),
                              keras.layers.LSTM(UNITS, return_sequences=True, stateful=True)])
    outputs = [np.asarray(model(chunk).detach().cpu().numpy()) for chunk in _chunks(_series())]
    return [np.asarray(w) for w in model.get_weights()], np.concatenate(outputs, axis=1)


def _stateful_lstm(weights, batch_size=BATCH):
    model = ember.Sequential([ember.Input((CHUNK, FEATURES), batch_size=batch_size),
                              layers.LSTM(UNITS, return_sequences=True, stateful=True, name="lstm")])
    model.build(seed=0)
    model.set_weights(weights)
    return model


def test_stateful_lstm_in_chunks_equals_one_pass_and_keras(backend, keras_stateful_lstm):
    weights, expected = keras_stateful_lstm
    x = _series()
    one_pass = ember.Sequential([ember.Input((TIME, FEATURES)), layers.LSTM(UNITS, return_sequences=True)])
    one_pass.build(seed=0)
    one_pass.set_weights(weights)
    assert_close(one_pass(x), expected)
    model = _stateful_lstm(weights)
    chunked = np.concatenate([ops.to_numpy(model(chunk)) for chunk in _chunks(x)], axis=1)
    assert_close(chunked, expected)
    # The carried states are the last step's h and c; they are buffers, not weights (as in Keras).
    lstm = model.get_layer("lstm")
    assert_close(model.state["buffers"]["lstm"]["rnn_state_0"], expected[:, -1])
    assert len(model.weights) == 3 and len(lstm.get_weights()) == 3


def test_reset_states_restores_the_initial_state(backend, keras_stateful_lstm):
    weights, expected = keras_stateful_lstm
    x = _series()
    model = _stateful_lstm(weights)
    first = ops.to_numpy(model(x[:, :CHUNK]))
    model(x[:, CHUNK:2 * CHUNK])
    lstm = model.get_layer("lstm")
    lstm.reset_states()
    for name in ("rnn_state_0", "rnn_state_1"):
        np.testing.assert_array_equal(ops.to_numpy(model.state["buffers"]["lstm"][name]), np.zeros((BATCH, UNITS)))
    np.testing.assert_array_equal(ops.to_numpy(model(x[:, :CHUNK])), first)
    # reset_states(states) sets given states: continuing from the states after chunk 1 gives chunk 2.
    lstm.reset_states()
    model(x[:, :CHUNK])
    h, c = (ops.to_numpy(model.state["buffers"]["lstm"][n]) for n in ("rnn_state_0", "rnn_state_1"))
    lstm.reset_state()  # Keras 3's name
    lstm.reset_states([h, c])
    assert_close(model(x[:, CHUNK:2 * CHUNK]), expected[:, CHUNK:2 * CHUNK])


def test_predict_evaluate_and_fit_carry_the_states(backend, keras_stateful_lstm):
    weights, expected = keras_stateful_lstm
    x = _series()
    batches = np.concatenate(_chunks(x), axis=0)  # batch k holds chunk k of every series
    model = _stateful_lstm(weights)
    predicted = model.predict(batches, batch_size=BATCH, verbose=0)
    assert_close(np.concatenate(np.split(predicted, TIME // CHUNK), axis=1), expected)
    assert_close(model.state["buffers"]["lstm"]["rnn_state_0"], expected[:, -1])
    model.get_layer("lstm").reset_states()
    model.compile(optimizer=ember.optimizers.SGD(0.0), loss="mse")
    targets = np.zeros_like(predicted)
    loss = model.evaluate(batches, targets, batch_size=BATCH, verbose=0)
    # the loss squares outputs that each lie within FLOAT32_PAIR of Keras's: twice its relative bound
    np.testing.assert_allclose(loss, np.mean(expected.astype(np.float64) ** 2), rtol=2 * FLOAT32_PAIR["rtol"])
    assert_close(model.state["buffers"]["lstm"]["rnn_state_0"], expected[:, -1])
    # fit (learning rate 0: the weights stay) carries the states from batch to batch too.
    model.get_layer("lstm").reset_states()
    model.fit(batches, targets, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    assert_close(model.state["buffers"]["lstm"]["rnn_state_0"], expected[:, -1])


def test_stateful_model_files(backend, keras_stateful_lstm, tmp_path):
    """Ember's .h5 keeps the carried states; a .keras file has none (as Keras's), and both
    libraries open it stateful, starting from zero states."""
    weights, expected = keras_stateful_lstm
    x = _series()
    model = _stateful_lstm(weights)
    model(x[:, :CHUNK])
    model.save(tmp_path / "m.h5")
    reloaded = ember.load_model(tmp_path / "m.h5")
    assert_close(reloaded(x[:, CHUNK:2 * CHUNK]), expected[:, CHUNK:2 * CHUNK])
    model.save(tmp_path / "m.keras")
    from_keras_file = ember.load_model(tmp_path / "m.keras")
    assert_close(from_keras_file(x[:, :CHUNK]), expected[:, :CHUNK])
    in_keras = keras.saving.load_model(tmp_path / "m.keras")
    assert in_keras.layers[0].stateful and len(in_keras.weights) == 3
    # exact: Keras runs its own kernels on the same bits (Ember's file keeps the float32 weights Keras gave it)
    np.testing.assert_array_equal(in_keras(x[:, :CHUNK]).detach().cpu().numpy(), expected[:, :CHUNK])


def test_stateful_training_runs_and_learns(backend):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(8, 5, 2)).astype(np.float32)
    y = np.cumsum(x[..., :1], axis=1).astype(np.float32)
    model = ember.Sequential([ember.Input((5, 2), batch_size=4),
                              layers.SimpleRNN(6, return_sequences=True, stateful=True, name="rnn"),
                              layers.Dense(1)])
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(0.02), loss="mse", seed=0)
    history = model.fit(x, y, batch_size=4, epochs=15, shuffle=False, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert ops.shape(model.state["buffers"]["rnn"]["rnn_state_0"]) == (4, 6)


def test_unknown_batch_size_is_fixed_by_the_first_call(backend):
    layer = layers.GRU(3, stateful=True, name="gru_s")
    x = np.ones((2, 4, 1), np.float32)
    layer(x)
    assert ops.shape(layer._read_state()["buffers"]["rnn_state_0"]) == (2, 3)
    before = ops.to_numpy(layer._read_state()["buffers"]["rnn_state_0"])
    with pytest.raises(ValueError, match=r"'gru_s' is stateful with batch size 2 .*batch size 3"):
        layer(np.ones((3, 4, 1), np.float32))
    np.testing.assert_array_equal(ops.to_numpy(layer._read_state()["buffers"]["rnn_state_0"]), before)
    # Given states fix the batch size of a layer that has none yet.
    unbound = layers.SimpleRNN(2, stateful=True, name="unbound")
    unbound(np.ones((2, 4, 1), np.float32))
    unbound.reset_states([np.full((2, 2), 0.5, np.float32)])
    assert_close(unbound._read_state()["buffers"]["rnn_state_0"], np.full((2, 2), 0.5))
    fresh = layers.SimpleRNN(2, stateful=True, name="fresh")
    fresh._write_state(fresh.build((None, 4, 1), seed=0))
    fresh.reset_states([np.full((5, 2), 0.5, np.float32)])
    assert ops.shape(fresh._read_state()["buffers"]["rnn_state_0"]) == (5, 2)
    with pytest.raises(ValueError, match=r"'fresh' is stateful with batch size 5 .*batch size 2"):
        fresh(x)


# ---------------------------------------------------------------- Keras-style cells, nested states


def _nested_cell_class(base, o):
    class NestedCell(base.layers.Layer):
        """``h' = tanh(x K1 + h R1)``, ``a' = a + x K2``, ``b' = b / 2 + a'``; output ``h' + sum(b')``."""

        def __init__(self, units, inner, **kwargs):
            super().__init__(**kwargs)
            self.units, self.inner = units, inner
            self.state_size = [units, [inner, inner]]
            self.output_size = units

        def build(self, input_shape):
            self.k1 = self.add_weight(shape=(input_shape[-1], self.units), name="k1")
            self.r1 = self.add_weight(shape=(self.units, self.units), name="r1")
            self.k2 = self.add_weight(shape=(input_shape[-1], self.inner), name="k2")

        def call(self, inputs, states, training=None):
            h, (a, b) = states
            h = o.tanh(o.matmul(inputs, self.k1) + o.matmul(h, self.r1))
            a = a + o.matmul(inputs, self.k2)
            b = b * 0.5 + a
            return h + o.sum(b, axis=-1, keepdims=True), [h, [a, b]]

    return NestedCell


@pytest.fixture(scope="module")
def keras_nested():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(BATCH, 5, FEATURES)).astype(np.float32)
    initial = [rng.normal(size=(BATCH, 3)).astype(np.float32),
               [rng.normal(size=(BATCH, 2)).astype(np.float32), rng.normal(size=(BATCH, 2)).astype(np.float32)]]
    keras.utils.set_random_seed(0)
    layer = keras.layers.RNN(_nested_cell_class(keras, keras.ops)(3, 2), return_sequences=True, return_state=True)
    out = layer(x, initial_state=initial)
    numpy = [np.asarray(out[0].detach().cpu().numpy()), np.asarray(out[1].detach().cpu().numpy()),
             [np.asarray(t.detach().cpu().numpy()) for t in out[2]]]
    return x, initial, [np.asarray(w) for w in layer.get_weights()], numpy


def test_keras_style_nested_state_cell_matches_keras(backend, keras_nested):
    x, initial, weights, (sequence, h, (a, b)) = keras_nested
    layer = layers.RNN(_nested_cell_class(ember, ops)(3, 2), return_sequences=True, return_state=True)
    layer(x, initial_state=initial)  # builds the layer's own weights
    layer.set_weights(weights)
    assert [w.path for w in layer.weights] == ["k1", "r1", "k2"]
    got = layer(x, initial_state=initial)
    assert isinstance(got, list) and len(got) == 3 and isinstance(got[2], list) and len(got[2]) == 2
    # Rounding: sums of float32 products over few terms, compared with torch's float32.
    assert_close(got[0], sequence, rtol=1e-5, atol=1e-5)
    assert_close(got[1], h, rtol=1e-5, atol=1e-5)
    assert_close(got[2][0], a, rtol=1e-5, atol=1e-5)
    assert_close(got[2][1], b, rtol=1e-5, atol=1e-5)
    assert layer.compute_output_shape((None, 5, FEATURES)) == [(None, 5, 3), (None, 3), [(None, 2), (None, 2)]]
    # Stateful with the nested cell: chunks continue each other.
    stateful = layers.RNN(_nested_cell_class(ember, ops)(3, 2), return_sequences=True, stateful=True)
    stateful(x)
    stateful.set_weights(weights)
    stateful.reset_states(initial)
    chunked = np.concatenate([ops.to_numpy(stateful(x[:, :2])), ops.to_numpy(stateful(x[:, 2:]))], axis=1)
    assert_close(chunked, sequence, rtol=1e-5, atol=1e-5)


def test_keras_style_cell_trains_in_a_model(backend):
    cell = _nested_cell_class(ember, ops)(3, 2)
    model = ember.Sequential([ember.Input((5, FEATURES)), layers.RNN(cell), layers.Dense(1)])
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(0.01), loss="mse", seed=0)
    x = np.random.default_rng(2).normal(size=(16, 5, FEATURES)).astype(np.float32)
    y = x[:, -1, :1]
    history = model.fit(x, y, batch_size=8, epochs=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


class _PairCell(ember.layers.Layer):
    """Nested inputs and a dict state: ``s' = tanh(x1 W1 + x2 W2 + s U)``, ``n' = n + 1``."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = [{"s": units, "n": 1}]
        self.output_size = units

    def build(self, input_shape):
        first, second = input_shape["first"], input_shape["second"]
        self.w1 = self.add_weight(shape=(first[-1], self.units), initializer="glorot_uniform", name="w1")
        self.w2 = self.add_weight(shape=(second[-1], self.units), initializer="glorot_uniform", name="w2")
        self.u = self.add_weight(shape=(self.units, self.units), initializer="orthogonal", name="u")

    def call(self, inputs, states):
        state = states[0]
        s = ops.tanh(ops.matmul(inputs["first"], self.w1) + ops.matmul(inputs["second"], self.w2)
                     + ops.matmul(state["s"], self.u))
        return s, [{"s": s, "n": state["n"] + 1.0}]


def test_nested_inputs_and_dict_states_against_numpy(backend):
    rng = np.random.default_rng(4)
    first = rng.normal(size=(BATCH, 6, 3)).astype(np.float32)
    second = rng.normal(size=(BATCH, 6, 2)).astype(np.float32)
    layer = layers.RNN(_PairCell(4), return_sequences=True, return_state=True, go_backwards=True)
    out, state = layer({"first": first, "second": second})
    w1, w2, u = (np.asarray(w, np.float64) for w in layer.get_weights())
    s = np.zeros((BATCH, 4))
    expected = []
    for t in reversed(range(6)):
        s = np.tanh(first[:, t] @ w1 + second[:, t] @ w2 + s @ u)
        expected.append(s)
    assert_close(out, np.stack(expected, axis=1))
    assert sorted(state) == ["n", "s"]
    assert_close(state["s"], s)
    assert_close(state["n"], np.full((BATCH, 1), 6.0))
    assert layer.compute_output_shape({"first": (None, 6, 3), "second": (None, 6, 2)}) == [
        (None, 6, 4), {"n": (None, 1), "s": (None, 4)}]


# ---------------------------------------------------------------- bad input


def test_bad_input(backend):
    model = _stateful_lstm([np.zeros((FEATURES, 4 * UNITS)), np.zeros((UNITS, 4 * UNITS)), np.zeros(4 * UNITS)])
    lstm = model.get_layer("lstm")
    before = ops.to_numpy(model.state["buffers"]["lstm"]["rnn_state_0"])
    with pytest.raises(ValueError, match=r"'lstm' is stateful with batch size 2 .*received inputs with batch size 3"):
        lstm.apply(lstm._read_state(), np.ones((3, CHUNK, FEATURES), np.float32))
    np.testing.assert_array_equal(ops.to_numpy(model.state["buffers"]["lstm"]["rnn_state_0"]), before)
    with pytest.raises(ValueError, match=r"initial_state must be 2 array\(s\) of shapes \[\(2, 4\), \(2, 4\)\]"):
        lstm.reset_states([np.zeros((3, UNITS))] * 2)
    with pytest.raises(ValueError, match="reset_states\\(\\) needs stateful=True"):
        layers.LSTM(2, name="plain").reset_states()
    with pytest.raises(NotImplementedError, match="Bidirectional of a stateful=True layer"):
        layers.Bidirectional(layers.LSTM(2, stateful=True))
    with pytest.raises(ValueError, match="nested inputs need a Keras-style cell"):
        layers.LSTM(2, name="l2").apply(layers.LSTM(2).build((None, 3, 1)), (np.ones((1, 3, 1)),) * 2)
    cell = _nested_cell_class(ember, ops)(3, 2)
    rnn = layers.RNN(cell, name="nested")
    state = rnn.build((None, 5, FEATURES))
    with pytest.raises(ValueError, match=r"'nested': initial_state must have the structure of the cell's "
                                         r"state_size \[3, \[2, 2\]\]"):
        rnn.apply(state, np.ones((BATCH, 5, FEATURES), np.float32), initial_state=[np.zeros((BATCH, 3))])


def test_bad_state_size():
    class NoSize(ember.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.state_size = [2, "x"]

        def call(self, inputs, states):
            return inputs, states

    with pytest.raises(TypeError, match=r"'bad_size': every size in the cell's state_size must be a positive int"):
        layers.RNN(NoSize(), name="bad_size")
