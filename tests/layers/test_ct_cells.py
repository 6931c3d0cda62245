"""The other continuous-time cells: CTRNN, CTGRU, LTC(solver=...), StrideAwareCfC.

References: the NumPy float64 steps of tests/layers/ct_reference.py, written from the
published equations (the liquid time-constant paper's CT-RNN, CT-GRU and explicit/RK4 LTC
baselines; the stride-aware CfC as the ncps-torch CfC at the scaled elapsed time). ``ncps``
is not installed here, so the CfC part reuses tests/layers/ncp_reference.py.
``run_layer_test`` compares each cell (wired, from given states) and each layer (fully
connected, with per-step timespans) with them on every backend: outputs, finite-difference
gradients, config round trips, identical initial states and outputs across backends.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import optree
import pytest

import ember
from ember import layers, ops, wirings
from tests.layers import ct_reference as ct
from tests.layers import ncp_reference as ref
from tests.layers.layer_test import run_layer_test
from tests.tolerances import FLOAT32, FLOAT32_PAIR

BATCH, TIME, FEATURES = 2, 3, 3


def _ncp_wiring():
    return wirings.NCP(inter_neurons=3, command_neurons=2, motor_neurons=2, sensory_fanout=2, inter_fanout=1,
                       recurrent_command_synapses=2, motor_fanin=2, seed=3)


def _built(wiring, features=FEATURES):
    wiring = wiring.copy()
    wiring.build(features)
    return wiring


def _spans(seed=0, batch=BATCH, time=TIME):
    return np.random.default_rng(seed).uniform(0.2, 2.0, size=(batch, time)).astype(np.float32)


def _with_states(step):
    """A cell reference on ``[x, *states]`` returning ``[output, *new_states]`` (the one-step layer form)."""
    return lambda p, xs: (lambda out: [out[0], *out[1]])(step(p, xs[0], list(xs[1:])))


def _sequence(step, x, units, spans, return_sequences):
    seq, last, _ = ref.run(step, x, [np.zeros((x.shape[0], units))], spans.astype(np.float64))
    return seq if return_sequences else last


# ------------------------------------------------------------------ cells on a wiring, from given states


def test_ctrnn_cell_on_a_wiring():
    built = _built(_ncp_wiring())
    run_layer_test(
        lambda: layers.CTRNNCell(_ncp_wiring(), ode_unfolds=3, name="ctrnn_cell"),
        [(BATCH, FEATURES), (BATCH, 7)],
        reference=_with_states(lambda p, x, s: ct.ctrnn_step(p, x, s, built, ode_unfolds=3)),
        expected_output_shape=[(BATCH, 2), (BATCH, 7)],
        expected_param_shapes={"kernel": (FEATURES, 7), "recurrent_kernel": (7, 7), "bias": (7,), "tau": (7,)},
    )


def test_ctgru_cell_on_a_wiring():
    built = _built(_ncp_wiring())
    run_layer_test(
        lambda: layers.CTGRUCell(_ncp_wiring(), timescales=2, name="ctgru_cell"),
        [(BATCH, FEATURES), (BATCH, 14)],
        reference=_with_states(lambda p, x, s: ct.ctgru_step(p, x, s, built, timescales=2)),
        expected_output_shape=[(BATCH, 2), (BATCH, 14)],
    )


@pytest.mark.parametrize("solver", ["euler", "rk4"])
def test_ltc_cell_explicit_solvers_on_a_wiring(solver):
    built = _built(_ncp_wiring())
    run_layer_test(
        lambda: layers.LTCCell(_ncp_wiring(), ode_unfolds=3, solver=solver, name="ltc_cell"),
        [(BATCH, FEATURES), (BATCH, 7)],
        reference=_with_states(lambda p, x, s: ct.ltc_explicit_step(p, x, s, built, ode_unfolds=3, solver=solver)),
        expected_output_shape=[(BATCH, 2), (BATCH, 7)],
    )


def test_stride_aware_wired_cfc_cell():
    built = _built(_ncp_wiring())
    run_layer_test(
        lambda: layers.StrideAwareWiredCfCCell(_ncp_wiring(), stride_length=2.0, time_scale_factor=0.75,
                                               name="sa_cell"),
        [(BATCH, FEATURES), (BATCH, 7)],
        reference=_with_states(lambda p, x, s: ref.wired_cfc_step(p, x, s, built, t=1.5)),
        expected_output_shape=[(BATCH, 2), (BATCH, 7)],
    )


# ------------------------------------------------------------------ fully connected layers with timespans


def test_ctrnn_layer_fully_connected():
    spans = _spans(1)
    built = _built(wirings.FullyConnected(4))
    run_layer_test(
        lambda: layers.CTRNN(4, ode_unfolds=2, return_sequences=True, name="ctrnn"),
        (BATCH, TIME, FEATURES), call_kwargs={"timespans": spans}, supports_masking=True,
        reference=lambda p, x: _sequence(lambda x_t, s, t: ct.ctrnn_step(p, x_t, s, built, t, ode_unfolds=2),
                                         x, 4, spans, True),
    )


def test_ctgru_layer_fully_connected():
    spans = _spans(2)
    built = _built(wirings.FullyConnected(3))
    run_layer_test(
        lambda: layers.CTGRU(3, timescales=3, name="ctgru"),
        (BATCH, TIME, FEATURES), call_kwargs={"timespans": spans},
        reference=lambda p, x: _sequence(lambda x_t, s, t: ct.ctgru_step(p, x_t, s, built, t, timescales=3),
                                         x, 9, spans, False),
    )


def test_ltc_layer_rk4_fully_connected():
    spans = _spans(3)
    built = _built(wirings.FullyConnected(3), 2)
    run_layer_test(
        lambda: layers.LTC(3, solver="rk4", ode_unfolds=2, return_sequences=True, name="ltc"),
        (BATCH, TIME, 2), call_kwargs={"timespans": spans}, supports_masking=True,
        reference=lambda p, x: _sequence(
            lambda x_t, s, t: ct.ltc_explicit_step(p, x_t, s, built, t, ode_unfolds=2, solver="rk4"), x, 3, spans,
            True),
    )


def test_stride_aware_cfc_layer_dense():
    spans = _spans(4)
    run_layer_test(
        lambda: layers.StrideAwareCfC(3, stride_length=3.0, backbone_units=4, name="sa_cfc"),
        (BATCH, TIME, FEATURES), call_kwargs={"timespans": spans},
        reference=lambda p, x: _sequence(lambda x_t, s, t: ref.cfc_step(p, x_t, s, 3.0 * t), x, 3, spans, False),
    )


# ------------------------------------------------------------------ semantics on every backend


def _params64(state):
    return optree.tree_map(lambda a: np.asarray(ops.to_numpy(a), np.float64), state["params"])


def test_cells_run_inside_rnn_like_their_layers(backend):
    x = ops.convert_to_tensor(np.random.default_rng(5).normal(size=(2, 4, 3)).astype(np.float32))
    pairs = [(layers.CTRNN(5, ode_unfolds=2, return_sequences=True), layers.CTRNNCell(5, ode_unfolds=2)),
             (layers.CTGRU(4, timescales=2, return_sequences=True), layers.CTGRUCell(4, timescales=2)),
             (layers.StrideAwareCfC(wirings.AutoNCP(6, 2, seed=0), stride_length=2, return_sequences=True),
              layers.StrideAwareWiredCfCCell(wirings.AutoNCP(6, 2, seed=0), stride_length=2))]
    for layer, cell in pairs:
        state = layer.build((None, 4, 3), seed=3)
        rnn = layers.RNN(cell, return_sequences=True)
        np.testing.assert_array_equal(ops.to_numpy(rnn.apply(state, x)[0]), ops.to_numpy(layer.apply(state, x)[0]))


def test_stride_length_is_a_scaled_elapsed_time(backend):
    """StrideAwareCfC(stride_length=k) is the CfC with timespans k * stride (same weights)."""
    rng = np.random.default_rng(6)
    x = ops.convert_to_tensor(rng.normal(size=(2, 5, 3)).astype(np.float32))
    strides = rng.uniform(0.5, 2.0, size=(2, 5)).astype(np.float32)
    aware = layers.StrideAwareCfC(4, stride_length=4, time_scale_factor=0.5, backbone_units=6, mode="pure")
    plain = layers.CfC(4, backbone_units=6, mode="pure")
    state = aware.build((None, 5, 3), seed=1)
    got = ops.to_numpy(aware.apply(state, x, timespans=ops.convert_to_tensor(strides))[0])
    want = ops.to_numpy(plain.apply(state, x, timespans=ops.convert_to_tensor(2.0 * strides))[0])
    np.testing.assert_allclose(got, want, **FLOAT32_PAIR)  # 4 * 0.5 * s and 2 * s: one rounding apart
    one = layers.StrideAwareCfC(4, backbone_units=6, mode="pure")  # stride_length = factor = 1: the CfC itself
    np.testing.assert_array_equal(ops.to_numpy(one.apply(state, x)[0]), ops.to_numpy(plain.apply(state, x)[0]))


def test_long_unroll_stays_within_the_derived_float32_bound(backend):
    """RK4 LTC and the CT-GRU over 12 steps against the float64 equations."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 12, 2)).astype(np.float32)
    spans = rng.uniform(0.5, 1.5, size=(2, 12)).astype(np.float32)
    wiring = wirings.AutoNCP(6, 1, seed=2)
    built = _built(wiring, 2)
    cases = [
        (layers.LTC(wiring, solver="rk4", ode_unfolds=4, return_sequences=True),
         lambda p, x_t, s, t: ct.ltc_explicit_step(p, x_t, s, built, t, ode_unfolds=4, solver="rk4"), 6),
        (layers.CTGRU(wiring, timescales=4, return_sequences=True),
         lambda p, x_t, s, t: ct.ctgru_step(p, x_t, s, built, t, timescales=4), 24),
    ]
    for layer, step, units in cases:
        state = layer.build((None, 12, 2), seed=0)
        p = _params64(state)
        want = ref.run(lambda x_t, s, t, p=p, step=step: step(p, x_t, s, t), x.astype(np.float64),
                       [np.zeros((2, units))], spans.astype(np.float64))[0]
        got = ops.to_numpy(layer.apply(state, ops.convert_to_tensor(x), timespans=ops.convert_to_tensor(spans))[0])
        # 12 steps x 4 RK4 stages x 4 unfolds = 192 evaluations of f, each ~30 float32 roundings (sums over
        # <= 8 synapses, sigmoids, one division): ~192 * 30 * u = 3.5e-4 relative if every rounding added up
        # with no damping; the leak damps it (|dv'/dv| < 1 per step), so 5e-5 keeps a 7x margin over
        # the FLOAT32 bound of one step; atol the same for potentials near zero (magnitudes <= 1).
        np.testing.assert_allclose(got, want, rtol=5e-5, atol=5e-5)


def test_explicit_solvers_converge_to_the_semi_implicit_solution():
    """All three solvers integrate one ODE: with many unfolds they agree, RK4 first (NumPy, float64)."""
    with ember.using_backend("numpy"):
        x = np.random.default_rng(8).normal(size=(2, 1, 2))
        outs = {}
        for solver, unfolds in (("semi_implicit", 4096), ("euler", 4096), ("rk4", 8), ("euler", 8)):
            layer = layers.LTC(4, solver=solver, ode_unfolds=unfolds, dtype="float64")
            state = layer.build((None, 1, 2), seed=0)
            outs[(solver, unfolds)] = ops.to_numpy(layer.apply(state, ops.convert_to_tensor(x))[0])
    exact = outs[("semi_implicit", 4096)]
    # First-order solvers at dt = 1/4096 differ from the exact flow by ~dt * |v''| / 2 ~ 1e-4 (|v''| <~ 1).
    np.testing.assert_allclose(outs[("euler", 4096)], exact, rtol=0, atol=2e-4)
    # RK4 at dt = 1/8: error ~dt^4 |v^(5)| / 120 ~ 2e-6, far below Euler's ~dt/2 = 6e-2 at the same step.
    assert np.abs(outs[("rk4", 8)] - exact).max() < 1e-4 < np.abs(outs[("euler", 8)] - exact).max()


# ------------------------------------------------------------------ checkpoints across backends


def test_checkpoint_saved_on_numpy_loads_on_every_backend():
    x = np.random.default_rng(9).normal(size=(2, 4, 3)).astype(np.float32)
    with ember.using_backend("numpy"):
        model = ember.Sequential([
            ember.Input((4, 3)),
            layers.CTRNN(wirings.AutoNCP(6, 3, seed=1), ode_unfolds=2, return_sequences=True, name="ctrnn"),
            layers.CTGRU(3, timescales=2, return_sequences=True, name="ctgru"),
            layers.LTC(3, solver="rk4", ode_unfolds=2, return_sequences=True, name="ltc"),
            layers.StrideAwareCfC(wirings.AutoNCP(5, 2, seed=0), stride_length=2.0, name="sa_cfc"),
        ])
        model.build(seed=0)
        expected = ops.to_numpy(model.predict_on_batch(ops.convert_to_tensor(x)))
        path = os.path.join(tempfile.mkdtemp(), "ct.h5")
        model.save(path)
    for name in ember.backends.available():
        with ember.using_backend(name):
            loaded = ember.load_model(path)
            assert [type(layer).__name__ for layer in loaded.layers] == ["CTRNN", "CTGRU", "LTC", "StrideAwareCfC"]
            assert loaded.layers[2].solver == "rk4" and loaded.layers[3].stride_length == 2.0
            np.testing.assert_allclose(ops.to_numpy(loaded.predict_on_batch(ops.convert_to_tensor(x))), expected,
                                       **FLOAT32_PAIR)


def test_config_round_trip_through_layers_deserialize():
    for layer in (layers.CTRNN(wirings.AutoNCP(6, 2, seed=0), activation="relu", name="a"),
                  layers.CTGRU(3, timescales=5, name="b"), layers.LTC(4, solver="euler", name="c"),
                  layers.StrideAwareCfC(4, stride_length=3, time_scale_factor=0.1, mixed_memory=True, name="d"),
                  layers.CTRNNCell(3, name="e"), layers.CTGRUCell(2, name="f"),
                  layers.StrideAwareCfCCell(2, stride_length=5, name="g")):
        config = layers.serialize(layer)
        assert config["class_name"] == f"ember>{type(layer).__name__}"
        again = layers.deserialize(config)
        assert type(again) is type(layer) and again.get_config() == layer.get_config()


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("make, error, match", [
    (lambda: layers.LTC(4, solver="midpoint", name="l"), ValueError,
     r"l: solver must be one of \('semi_implicit', 'euler', 'rk4'\), received 'midpoint'"),
    (lambda: layers.CTRNN(4, ode_unfolds=0, name="c"), ValueError, "c: ode_unfolds must be a positive int"),
    (lambda: layers.CTRNN("four", name="c"), TypeError, "c: wiring must be a positive int"),
    (lambda: layers.CTGRU(4, timescales=0, name="g"), ValueError, "g: timescales must be a positive int"),
    (lambda: layers.CTGRUCell(0, name="g"), ValueError, "g: wiring must be a positive number of units"),
    (lambda: layers.StrideAwareCfC(4, stride_length=0, name="s"), ValueError,
     "s: stride_length must be a positive number, received 0"),
    (lambda: layers.StrideAwareCfCCell(4, time_scale_factor="fast", name="s"), ValueError,
     "s: time_scale_factor must be a positive number"),
    (lambda: layers.StrideAwareCfC(wirings.AutoNCP(6, 2), backbone_units=4, name="s"), ValueError,
     "s: backbone_units cannot be used with a wiring"),
])
def test_invalid_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_wrong_input_features_and_timespans(backend):
    for layer in (layers.CTRNN(3, name="ctrnn"), layers.CTGRU(3, timescales=2, name="ctgru"),
                  layers.LTC(3, solver="rk4", name="ltc")):
        state = layer.build((None, 4, 2), seed=0)
        before = _params64(state)
        with pytest.raises(ValueError, match=f"layer '{layer.name}' expects 2 input features .*received 5"):
            layer.apply(state, ops.ones((2, 4, 5)))
        with pytest.raises(ValueError, match=rf"layer '{layer.name}': timespans must have shape \(2, 4\)"):
            layer.apply(state, ops.ones((2, 4, 2)), timespans=ops.ones((2, 3)))
        for old, new in zip(optree.tree_leaves(before), optree.tree_leaves(_params64(state))):
            np.testing.assert_array_equal(new, old)  # a rejected call changes no weight


def test_ctgru_decays_with_the_elapsed_time(backend):
    """Without input drive the traces decay as exp(-t / tau_i): a long gap forgets the fast scales first."""
    cell = layers.CTGRUCell(2, timescales=3, kernel_initializer="zeros", bias_initializer="zeros")
    state = cell.build((None, 1), seed=0)
    hh = np.ones((1, 6), np.float32)
    t = np.full((1, 1), 2.0, np.float32)
    _, (new,) = cell.step(state["params"], ops.zeros((1, 1)), [ops.convert_to_tensor(hh)],
                          timespan=ops.convert_to_tensor(t))
    # zero weights: the storage logits are 0, so s_i = softmax_i(-(ln tau_i)^2), and q = tanh(0) = 0:
    # hh' = (1 - s_i) hh exp(-t / tau_i)
    log_tau = np.arange(3) * 0.5 * np.log(10.0)
    s = np.exp(-log_tau ** 2) / np.exp(-log_tau ** 2).sum()
    want = np.tile((1.0 - s) * np.exp(-2.0 / np.exp(log_tau)), 2)[None]
    np.testing.assert_allclose(ops.to_numpy(new), want, **FLOAT32)
