"""Recurrent cells and layers: SimpleRNN, LSTM, GRU, RNN(cell), the cell protocol.

References (see tests/layers/rnn_reference.py for the layout conversions):

* NumPy float64 steps and Keras's masked loop written out in the test helpers
  (``run_layer_test`` compares outputs and finite-difference gradients with them);
* ``torch.nn.RNN/LSTM/GRU`` in float64 with the weights copied from Keras's layout:
  outputs, final states, go_backwards, initial states, right-padded masks (packed
  sequences) and the gradients of every weight (torch autograd).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.autodiff import value_and_grad
from ember.layers.rnn.cell import RNNCell
from ember.saving import register_serializable
from tests.helpers import assert_close_recurrent, float64_device
from tests.layers import rnn_reference as ref
from tests.layers.layer_test import GRAD_ATOL, GRAD_RTOL, run_layer_test

torch = pytest.importorskip("torch")  # the reference implementation, not the code under test

STEPS = {"simple_rnn": ref.simple_rnn_step, "lstm": ref.lstm_step, "gru": ref.gru_step}
LAYERS = {"simple_rnn": layers.SimpleRNN, "lstm": layers.LSTM, "gru": layers.GRU}
N_STATES = {"simple_rnn": 1, "lstm": 2, "gru": 1}


def _zeros(batch, units, kind):
    return [np.zeros((batch, units))] * N_STATES[kind]


def _numpy(tree):
    return {k: np.asarray(ops.to_numpy(v), dtype=np.float64) for k, v in tree.items()}


# ------------------------------------------------------------------ run_layer_test


@pytest.mark.parametrize("kind", ["simple_rnn", "lstm", "gru"])
@pytest.mark.parametrize("return_sequences", [False, True])
def test_layer_conformance(kind, return_sequences):
    step = STEPS[kind]

    def reference(p, x):
        seq, last, _ = ref.run(step, p, x, _zeros(x.shape[0], 2, kind))
        return seq if return_sequences else last

    run_layer_test(
        lambda: LAYERS[kind](2, bias_initializer="random_normal", return_sequences=return_sequences, name="rnn"),
        (2, 3, 3), reference=reference, supports_masking=return_sequences,
        expected_output_shape=(2, 3, 2) if return_sequences else (2, 2),
    )


def test_gru_reset_before_and_no_bias_conformance():
    run_layer_test(
        lambda: layers.GRU(2, reset_after=False, bias_initializer="random_normal", name="gru"), (2, 3, 3),
        reference=lambda p, x: ref.run(lambda p_, x_, s: ref.gru_step(p_, x_, s, reset_after=False), p, x,
                                       [np.zeros((2, 2))])[1],
        expected_param_shapes={"kernel": (3, 6), "recurrent_kernel": (2, 6), "bias": (6,)},
    )
    run_layer_test(
        lambda: layers.LSTM(2, use_bias=False, return_state=True, name="lstm"), (2, 3, 3),
        reference=lambda p, x: [ref.run(ref.lstm_step, p, x, _zeros(2, 2, "lstm"))[1],
                                *ref.run(ref.lstm_step, p, x, _zeros(2, 2, "lstm"))[2]],
        expected_output_shape=[(2, 2), (2, 2), (2, 2)],
        expected_param_shapes={"kernel": (3, 8), "recurrent_kernel": (2, 8)},
    )


@pytest.mark.parametrize("cell_cls, kind", [(layers.SimpleRNNCell, "simple_rnn"), (layers.LSTMCell, "lstm"),
                                            (layers.GRUCell, "gru")])
def test_cell_one_step_layer(cell_cls, kind):
    """A cell applied to ``[x, *states]`` is one step from the given states."""
    n = N_STATES[kind]
    step = STEPS[kind]
    run_layer_test(
        lambda: cell_cls(2, bias_initializer="random_normal", name="cell"), [(2, 3)] + [(2, 2)] * n,
        reference=lambda p, xs: (lambda out: [out[0], *out[1]])(step(p, xs[0], list(xs[1:]))),
        expected_output_shape=[(2, 2)] * (n + 1),
    )


def test_keras_initialization():
    lstm = layers.LSTM(3, name="lstm")
    state = lstm.build((None, 4, 2), seed=0)
    bias = ops.to_numpy(state["params"]["bias"])
    np.testing.assert_array_equal(bias, np.r_[np.zeros(3), np.ones(3), np.zeros(6)])  # unit_forget_bias
    recurrent = ops.to_numpy(state["params"]["recurrent_kernel"]).astype(np.float64)
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(3), atol=1e-6)  # orthogonal rows
    no_forget = layers.LSTM(3, unit_forget_bias=False).build((None, 4, 2), seed=0)
    np.testing.assert_array_equal(ops.to_numpy(no_forget["params"]["bias"]), np.zeros(12))
    assert ops.shape(layers.GRU(3).build((None, 4, 2))["params"]["bias"]) == (2, 9)


# ------------------------------------------------------------------------ vs torch


def _build(kind, backend_seed=0, units=5, features=4, **kwargs):
    layer = LAYERS[kind](units, bias_initializer="random_normal", **kwargs)
    state = layer.build((None, 6, features), seed=backend_seed)
    return layer, state


@pytest.mark.parametrize("kind", ["simple_rnn", "lstm", "gru"])
def test_matches_torch_sequences_and_states(backend, kind):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 6, 4)).astype(np.float32)
    layer, state = _build(kind, return_sequences=True, return_state=True)
    seq, *states = layer.apply(state, ops.convert_to_tensor(x))[0]
    module = ref.torch_module(kind, _numpy(state["params"]), 4, 5)
    t_seq, t_states = module(torch.from_numpy(x.astype(np.float64)))
    t_states = list(t_states) if kind == "lstm" else [t_states]
    assert_close_recurrent(seq, t_seq.detach().cpu().numpy())
    assert len(states) == N_STATES[kind]
    for got, expected in zip(states, t_states):
        assert_close_recurrent(got, expected.detach().cpu().numpy()[0])


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_matches_torch_go_backwards_and_initial_state(backend, kind):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 6, 4)).astype(np.float32)
    initial = [rng.normal(size=(3, 5)).astype(np.float32) for _ in range(N_STATES[kind])]
    layer, state = _build(kind, return_sequences=True, return_state=True, go_backwards=True)
    seq, *states = layer.apply(state, ops.convert_to_tensor(x),
                               initial_state=[ops.convert_to_tensor(s) for s in initial])[0]
    module = ref.torch_module(kind, _numpy(state["params"]), 4, 5)
    h0 = [torch.from_numpy(s.astype(np.float64))[None] for s in initial]
    # go_backwards = torch on the time-reversed input; outputs stay in processing order.
    t_seq, t_states = module(torch.from_numpy(x[:, ::-1].astype(np.float64).copy()),
                             tuple(h0) if kind == "lstm" else h0[0])
    t_states = list(t_states) if kind == "lstm" else [t_states]
    assert_close_recurrent(seq, t_seq.detach().cpu().numpy())
    for got, expected in zip(states, t_states):
        assert_close_recurrent(got, expected.detach().cpu().numpy()[0])


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_right_padded_mask_matches_torch_packed_sequences(backend, kind):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 6, 4)).astype(np.float32)
    lengths = [6, 2, 4]
    mask = np.arange(6)[None, :] < np.array(lengths)[:, None]
    layer, state = _build(kind, return_state=True)
    last, *states = layer.apply(state, ops.convert_to_tensor(x), mask=ops.convert_to_tensor(mask))[0]
    module = ref.torch_module(kind, _numpy(state["params"]), 4, 5)
    packed = torch.nn.utils.rnn.pack_padded_sequence(torch.from_numpy(x.astype(np.float64)), lengths,
                                                     batch_first=True, enforce_sorted=False)
    _, t_states = module(packed)
    t_states = list(t_states) if kind == "lstm" else [t_states]
    # The output at a masked step repeats the last real output = the final h.
    assert_close_recurrent(last, t_states[0].detach().cpu().numpy()[0])
    for got, expected in zip(states, t_states):
        assert_close_recurrent(got, expected.detach().cpu().numpy()[0])


@pytest.mark.parametrize("kind", ["simple_rnn", "lstm", "gru"])
def test_gradients_match_torch_autograd(backend, kind):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 6, 4)).astype(np.float32)
    layer, state = _build(kind, return_sequences=True)

    def loss(params, inputs):
        return ops.sum(ops.square(layer.apply({"params": params, "buffers": {}}, inputs)[0]))

    _, (grads, grad_x) = value_and_grad(loss, argnums=(0, 1))(state["params"], ops.convert_to_tensor(x))
    module = ref.torch_module(kind, _numpy(state["params"]), 4, 5)
    tx = torch.from_numpy(x.astype(np.float64)).requires_grad_(True)
    (module(tx)[0] ** 2).sum().backward()
    expected = ref.torch_grads_in_keras_layout(kind, module, 5)
    for name, value in expected.items():
        assert_close_recurrent(grads[name], value, rtol=GRAD_RTOL, atol=GRAD_ATOL, err_msg=name)
    assert_close_recurrent(grad_x, tx.grad.numpy(), rtol=GRAD_RTOL, atol=GRAD_ATOL)


@pytest.mark.parametrize("kind", ["simple_rnn", "lstm", "gru"])
def test_float64(backend, kind):
    x = np.random.default_rng(8).normal(size=(2, 4, 3))
    with float64_device(backend):
        layer = LAYERS[kind](3, bias_initializer="random_normal", return_sequences=True, dtype="float64")
        state = layer.build((None, 4, 3), seed=0)
        got = layer.apply(state, ops.convert_to_tensor(x))[0]
        expected = ref.run(STEPS[kind], _numpy(state["params"]), x, _zeros(2, 3, kind))[0]
        assert_close_recurrent(got, expected, rtol=1e-10, atol=1e-12, dtype="float64")


# --------------------------------------------------------------------------- masking


@pytest.mark.parametrize("kind", ["simple_rnn", "lstm", "gru"])
def test_arbitrary_mask_keeps_state_and_output(backend, kind):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 5, 4)).astype(np.float32)
    mask = np.array([[0, 1, 1, 0, 1], [1, 0, 0, 1, 1], [1, 1, 1, 1, 0]], dtype=bool)
    for go_backwards in (False, True):
        for zero_output in (False, True):
            layer = LAYERS[kind](3, bias_initializer="random_normal", return_sequences=True, return_state=True,
                                 go_backwards=go_backwards, zero_output_for_mask=zero_output)
            state = layer.build((None, 5, 4), seed=1)
            seq, *states = layer.apply(state, ops.convert_to_tensor(x), mask=ops.convert_to_tensor(mask))[0]
            e_seq, _, e_states = ref.run(STEPS[kind], _numpy(state["params"]), x.astype(np.float64),
                                         _zeros(3, 3, kind), mask=mask, go_backwards=go_backwards,
                                         zero_output=zero_output)
            assert_close_recurrent(seq, e_seq)
            for got, expected in zip(states, e_states):
                assert_close_recurrent(got, expected)
    # A numeric mask means "nonzero"; the last output repeats the last real step's.
    layer = LAYERS[kind](3)
    state = layer.build((None, 5, 4), seed=1)
    a = layer.apply(state, ops.convert_to_tensor(x), mask=ops.convert_to_tensor(mask.astype(np.float32)))[0]
    b = layer.apply(state, ops.convert_to_tensor(x[:, :4]), mask=ops.convert_to_tensor(mask[:, :4]))[0]
    assert_close_recurrent(ops.getitem(a, 2), ops.to_numpy(b)[2])


def test_masking_lstm_across_backends():
    run_layer_test(
        lambda: layers.LSTM(2, return_sequences=True, name="lstm"), (2, 3, 3), supports_masking=True,
        reference=lambda p, x: ref.run(ref.lstm_step, p, x, _zeros(2, 2, "lstm"))[0],
    )


def test_mask_gradients_match_finite_differences(backend):
    mask = np.array([[1, 1, 0], [1, 0, 1]], dtype=bool)
    layer = layers.LSTM(2, name="lstm")
    state = layer.build((None, 3, 3), seed=0)
    x = np.random.default_rng(0).normal(size=(2, 3, 3))
    value, grads = value_and_grad(lambda p: ops.sum(ops.square(layer.apply(
        {"params": p, "buffers": {}}, ops.convert_to_tensor(x.astype(np.float32)),
        mask=ops.convert_to_tensor(mask))[0])))(state["params"])
    p64 = _numpy(state["params"])

    def f(params):
        return np.sum(ref.run(ref.lstm_step, params, x, _zeros(2, 2, "lstm"), mask=mask)[1] ** 2)

    eps = 1e-6
    for key in ("kernel", "bias"):
        numeric = np.zeros_like(p64[key])
        for index in np.ndindex(p64[key].shape):
            plus = {k: v.copy() for k, v in p64.items()}
            minus = {k: v.copy() for k, v in p64.items()}
            plus[key][index] += eps
            minus[key][index] -= eps
            numeric[index] = (f(plus) - f(minus)) / (2 * eps)
        assert_close_recurrent(grads[key], numeric, rtol=GRAD_RTOL, atol=GRAD_ATOL, err_msg=f"{backend} {key}")


# --------------------------------------------------------------------------- dropout


def test_dropout_masks_are_shared_across_time(backend):
    rate = 0.5
    units = features = 8
    identity = ember.initializers.Identity()
    layer = layers.SimpleRNN(units, activation=None, use_bias=False, kernel_initializer=identity,
                             recurrent_initializer="zeros", dropout=rate, return_sequences=True)
    state = layer.build((None, 5, features))
    x = np.random.default_rng(0).uniform(1.0, 2.0, size=(4, 5, features)).astype(np.float32)
    y = ops.to_numpy(layer.apply(state, ops.convert_to_tensor(x), training=True, rng=3)[0])
    ratio = y / x
    np.testing.assert_allclose(ratio, np.broadcast_to(ratio[:, :1], ratio.shape), rtol=1e-6)  # same mask each step
    assert set(np.round(np.unique(ratio), 5)) <= {0.0, 2.0} and 0 < (ratio == 0).mean() < 1
    again = ops.to_numpy(layer.apply(state, ops.convert_to_tensor(x), training=True, rng=3)[0])
    np.testing.assert_array_equal(y, again)
    other = ops.to_numpy(layer.apply(state, ops.convert_to_tensor(x), training=True, rng=4)[0])
    assert not np.array_equal(y, other)
    assert_close_recurrent(layer.apply(state, ops.convert_to_tensor(x))[0], x)  # inference: no dropout
    seeded = layer.replace(seed=9)
    a = ops.to_numpy(seeded.apply(state, ops.convert_to_tensor(x), training=True)[0])
    np.testing.assert_array_equal(a, ops.to_numpy(seeded.apply(state, ops.convert_to_tensor(x), training=True)[0]))


def test_recurrent_dropout_mask_is_shared_across_time(backend):
    units = 6
    identity = ember.initializers.Identity()
    layer = layers.SimpleRNN(units, activation=None, use_bias=False, kernel_initializer=identity,
                             recurrent_initializer=identity, recurrent_dropout=0.5, return_sequences=True)
    state = layer.build((None, 4, units))
    x = np.zeros((3, 4, units), np.float32)
    x[:, 0] = np.random.default_rng(1).uniform(1.0, 2.0, size=(3, units))
    y = ops.to_numpy(layer.apply(state, ops.convert_to_tensor(x), training=True, rng=5)[0])
    # h1 = x0, h2 = (h1 * m) @ I, h3 = (h2 * m): the same mask m at every step. Exact: m is 0 or 2 and
    # the identity matmul adds zeros to one product by 1.
    mask = y[:, 1] / y[:, 0]
    np.testing.assert_array_equal(y[:, 2], y[:, 1] * mask)
    np.testing.assert_array_equal(y[:, 3], y[:, 2] * mask)
    assert set(np.round(np.unique(mask), 5)) <= {0.0, 2.0}


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_dropout_runs_on_every_backend_under_a_tape(kind):
    run_layer_test(lambda: LAYERS[kind](2, dropout=0.4, recurrent_dropout=0.4, name="rnn"), (3, 4, 3),
                   training_changes_output=True, check_gradients=True)


# ---------------------------------------------------------------- RNN(cell), timespans


@register_serializable(package="tests")
class _TimeCell(RNNCell):
    """Test cell: ``h += timespan * x`` (records the elapsed time it is given)."""

    units: int = 2
    accepts_timespan = True

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def step(self, params, inputs, states, *, training=False, rng=None, timespan=None):
        h = ops.add(states[0], ops.multiply(timespan, inputs))
        return h, [h]


def test_rnn_passes_timespans(backend):
    x = np.ones((2, 3, 2), np.float32)
    rnn = layers.RNN(_TimeCell(), return_sequences=True)
    state = rnn.build((None, 3, 2))
    assert_close_recurrent(rnn.apply(state, ops.convert_to_tensor(x))[0], np.cumsum(x, axis=1))  # default 1.0
    spans = np.array([[0.5, 1.0, 2.0], [1.0, 3.0, 0.25]], np.float32)
    expected = np.cumsum(x * spans[..., None], axis=1)
    for timespans in (spans, spans[..., None]):
        got = rnn.apply(state, ops.convert_to_tensor(x), timespans=ops.convert_to_tensor(timespans))[0]
        assert_close_recurrent(got, expected)
    backwards = layers.RNN(_TimeCell(), go_backwards=True)
    assert_close_recurrent(backwards.apply(state, ops.convert_to_tensor(x), timespans=ops.convert_to_tensor(spans))[0],
                 expected[:, -1])
    with pytest.raises(ValueError, match="timespans must have shape"):
        rnn.apply(state, ops.convert_to_tensor(x), timespans=ops.ones((2, 4)))
    lstm = layers.LSTM(2, name="lstm_no_time")
    with pytest.raises(ValueError, match="lstm_no_time.*does not accept a timespan"):
        lstm.apply(lstm.build((None, 3, 2)), ops.convert_to_tensor(x), timespans=ops.convert_to_tensor(spans))


class _DuckCell(ember.layers.DeclarativeLayer):
    """Implements the protocol without subclassing RNNCell: ``h = h + x`` (no timespan)."""

    @property
    def state_size(self):
        return 2

    @property
    def output_size(self):
        return 2

    def build(self, input_shape, seed=None):
        return self.make_state()

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 2)

    def get_initial_state(self, batch_size, dtype=None):
        return [ops.zeros((batch_size, 2), dtype=dtype)]

    def step(self, params, inputs, states, *, training=False, rng=None):
        h = ops.add(states[0], inputs)
        return h, [h]


def test_rnn_runs_protocol_cells_without_the_base_class(backend):
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    rnn = layers.RNN(_DuckCell(), return_sequences=True)
    assert_close_recurrent(rnn.apply(rnn.build((None, 3, 2)), ops.convert_to_tensor(x))[0], np.cumsum(x, axis=1))


def test_functional_timespans_and_mask_inputs(backend):
    x_in, t_in = ember.Input((3, 2), name="x"), ember.Input((3,), name="t")
    m_in = ember.Input((3,), dtype="bool", name="m")
    out = layers.RNN(_TimeCell(), return_sequences=True, name="timed")(x_in, timespans=t_in, mask=m_in)
    model = ember.Model([x_in, t_in, m_in], out)
    state = model.build()
    x = np.ones((2, 3, 2), np.float32)
    spans = np.array([[0.5, 1.0, 2.0], [1.0, 3.0, 0.25]], np.float32)
    mask = np.array([[True, False, True], [True, True, True]])
    expected = np.cumsum(x * (spans * mask)[..., None], axis=1)
    assert_close_recurrent(model.apply(state, [x, spans, mask])[0], expected)
    rebuilt = ember.Model.from_config(model.get_config())
    assert_close_recurrent(rebuilt.apply(state, [x, spans, mask])[0], expected)


def test_rnn_generic_cell_and_time_major(backend):
    cell = layers.GRUCell(3, bias_initializer="random_normal")
    x = np.random.default_rng(5).normal(size=(2, 4, 3)).astype(np.float32)
    batch_major = layers.RNN(cell, return_sequences=True)
    state = batch_major.build((None, 4, 3), seed=0)
    expected = ref.run(ref.gru_step, _numpy(state["params"]), x.astype(np.float64), [np.zeros((2, 3))])[0]
    assert_close_recurrent(batch_major.apply(state, ops.convert_to_tensor(x))[0], expected)
    time_major = layers.RNN(cell, return_sequences=True, time_major=True)
    assert time_major.compute_output_shape((4, None, 3)) == (4, None, 3)
    got = time_major.apply(time_major.build((4, None, 3), seed=0), ops.convert_to_tensor(np.swapaxes(x, 0, 1)))[0]
    assert_close_recurrent(got, np.swapaxes(expected, 0, 1))
    # The cell's step protocol on its own.
    h, states = cell.step(state["params"], ops.convert_to_tensor(x[:, 0]), cell.get_initial_state(2))
    assert_close_recurrent(h, expected[:, 0])
    assert cell.state_size == 3 and cell.output_size == 3 and len(states) == 1


def test_functional_initial_state_and_config_round_trip(backend):
    x_in = ember.Input((5, 4), name="x")
    h_in, c_in = ember.Input((3,), name="h"), ember.Input((3,), name="c")
    lstm = layers.LSTM(3, return_state=True, name="lstm")
    out, h, c = lstm(x_in, initial_state=[h_in, c_in])
    model = ember.Model([x_in, h_in, c_in], [out, h, c])
    state = model.build(seed=0)
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 5, 4)).astype(np.float32)
    h0, c0 = (rng.normal(size=(2, 3)).astype(np.float32) for _ in range(2))
    got = model.apply(state, [x, h0, c0])[0]
    expected = ref.run(ref.lstm_step, _numpy(state["params"]["lstm"]), x.astype(np.float64), [h0, c0])
    assert_close_recurrent(got[0], expected[1])
    assert_close_recurrent(got[2], expected[2][1])
    rebuilt = ember.Model.from_config(model.get_config())
    assert_close_recurrent(rebuilt.apply(state, [x, h0, c0])[0][1], ops.to_numpy(got[1]))


def test_sequential_stack(backend):
    model = ember.Sequential([ember.Input((6, 3)), layers.LSTM(4, return_sequences=True), layers.GRU(2)])
    model.build(seed=0)
    assert ops.shape(model(np.ones((2, 6, 3), np.float32))) == (2, 2)
    assert model.count_params() == (3 * 16 + 4 * 16 + 16) + (4 * 6 + 2 * 6 + 12)


# ---------------------------------------------------------------------- bad input


def test_bad_input(backend):
    with pytest.raises(TypeError, match="rnn_bad: stateful must be a bool"):
        layers.LSTM(4, stateful=1, name="rnn_bad")
    with pytest.raises(ValueError, match="rnn_bad: units must be a positive int"):
        layers.LSTM(0, name="rnn_bad")
    with pytest.raises(ValueError, match=r"rnn_bad: dropout must be a number in \[0, 1\)"):
        layers.GRU(2, dropout=1.0, name="rnn_bad")
    with pytest.raises(TypeError, match="rnn_bad: cell must be an RNNCell"):
        layers.RNN(layers.Dense(2), name="rnn_bad")
    with pytest.raises(TypeError, match="rnn_bad: return_sequences must be a bool"):
        layers.SimpleRNN(2, return_sequences=1, name="rnn_bad")
    with pytest.raises(TypeError):
        layers.LSTM(2, cell=layers.LSTMCell(2))  # LSTM builds its own cell
    lstm = layers.LSTM(3, name="lstm_bad")
    with pytest.raises(ValueError, match=r"lstm_bad.*\(batch, time, features\).*\(None, 4\)"):
        lstm(ember.Input((4,)))
    state = lstm.build((None, 5, 4), seed=0)
    x = ops.ones((2, 5, 4))
    with pytest.raises(ValueError, match=r"lstm_bad.*expects 4 input features.*received 3"):
        lstm.apply(state, ops.ones((2, 5, 3)))
    with pytest.raises(ValueError,
                       match=r"lstm_bad.*initial_state must be 2 array\(s\) of shapes \[\(2, 3\), \(2, 3\)\]"):
        lstm.apply(state, x, initial_state=[ops.zeros((2, 3))])
    with pytest.raises(ValueError, match=r"lstm_bad.*initial_state.*\(2, 4\)"):
        lstm.apply(state, x, initial_state=[ops.zeros((2, 3)), ops.zeros((2, 4))])
    with pytest.raises(ValueError, match=r"lstm_bad.*mask must have shape \(2, 5\).*\(2, 4\)"):
        lstm.apply(state, x, mask=ops.ones((2, 4), dtype="bool"))
    with pytest.raises(ValueError, match="lstm_bad.*at least one time step"):
        lstm.apply(state, ops.ones((2, 0, 4)))
    with pytest.raises(TypeError, match="lstm_bad.*rng must be an int seed"):
        layers.LSTM(3, dropout=0.5, name="lstm_bad").apply(state, x, training=True, rng="seed")
