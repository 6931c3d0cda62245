"""Keras's weight regularizers, activity regularizer and constraints on ``SimpleRNN``,
``LSTM``, ``GRU`` and their cells.

References: the penalties are NumPy float64 formulas written here (``l2 * sum(w ** 2)``,
...) on the built weights; the layer outputs the activity penalty is taken on come from
the float64 step loops of tests/layers/rnn_reference.py; constraints are checked as the
inequalities they promise (``w >= 0``, column norms ``<= max_value``) after ``fit``.
"""

from __future__ import annotations

import json

import numpy as np
import optree
import pytest

import ember
from ember import constraints, layers, ops, regularizers
from ember.autodiff import value_and_grad
from ember.layers.loss_collection import collect_losses
from ember.layers.rnn.gru import GRUCell
from ember.layers.rnn.lstm import LSTMCell
from tests.helpers import assert_close
from tests.layers import rnn_reference as ref
from tests.layers.layer_test import run_layer_test

B, T, F, U = 3, 4, 2, 3
LAYERS = {"simple_rnn": layers.SimpleRNN, "lstm": layers.LSTM, "gru": layers.GRU}
CELLS = {"simple_rnn": layers.SimpleRNNCell, "lstm": layers.LSTMCell, "gru": layers.GRUCell}
STEPS = {"simple_rnn": ref.simple_rnn_step, "lstm": ref.lstm_step, "gru": ref.gru_step}
N_STATES = {"simple_rnn": 1, "lstm": 2, "gru": 1}
KINDS = list(LAYERS)
WEIGHTS = {"kernel": "kernel", "recurrent_kernel": "recurrent", "bias": "bias"}  # param -> field prefix
X = np.random.default_rng(5).normal(size=(B, T, F)).astype(np.float32)


def _f64(array):
    return np.asarray(ops.to_numpy(array), dtype=np.float64)


# NumPy float64 penalties of the regularizers used below, and their gradients.
PENALTIES = {
    "kernel": (regularizers.L2(0.1), lambda w: 0.1 * np.sum(w ** 2), lambda w: 0.2 * w),
    "recurrent_kernel": (regularizers.L1(0.2), lambda w: 0.2 * np.sum(np.abs(w)), lambda w: 0.2 * np.sign(w)),
    "bias": (regularizers.L1L2(0.3, 0.4), lambda w: 0.3 * np.sum(np.abs(w)) + 0.4 * np.sum(w ** 2),
             lambda w: 0.3 * np.sign(w) + 0.8 * w),
}


@pytest.mark.parametrize("weight", list(WEIGHTS))
@pytest.mark.parametrize("kind", KINDS)
def test_weight_penalty_matches_numpy(backend, kind, weight):
    regularizer, penalty, gradient = PENALTIES[weight]
    layer = LAYERS[kind](U, bias_initializer="random_normal", name="rnn",
                         **{f"{WEIGHTS[weight]}_regularizer": regularizer})
    model = ember.Sequential([ember.Input((T, F)), layer, layers.Dense(1, name="head")])
    state = model.build(seed=0)
    params = state["params"]
    w = _f64(params["rnn"][weight])
    (loss,) = model.regularization_losses(params)
    assert_close(loss, penalty(w))
    (direct,) = layer.regularization_losses(params["rnn"])
    assert_close(direct, penalty(w))

    # A differentiable function of the params: only the regularized weight gets a gradient.
    def total(p):
        return model.regularization_losses(p)[0]

    _, grads = value_and_grad(total)(params)
    for name in WEIGHTS:
        expected = gradient(w) if name == weight else np.zeros(ops.shape(params["rnn"][name]))
        assert_close(grads["rnn"][name], expected)
    np.testing.assert_array_equal(_f64(grads["head"]["kernel"]), 0.0)


@pytest.mark.parametrize("kind", KINDS)
def test_cell_reports_the_three_penalties_in_order(backend, kind):
    cell = CELLS[kind](U, bias_initializer="random_normal", name="cell",
                       **{f"{WEIGHTS[w]}_regularizer": PENALTIES[w][0] for w in WEIGHTS})
    state = cell.build((None, F), seed=1)
    losses = cell.regularization_losses(state["params"])
    assert len(losses) == 3
    for loss, weight in zip(losses, WEIGHTS):
        assert_close(loss, PENALTIES[weight][1](_f64(state["params"][weight])))
    # RNN(cell) forwards its cell's penalties; the RNN's params are the cell's.
    rnn = layers.RNN(cell, name="wrapped")
    assert len(rnn.regularization_losses(rnn.build((None, T, F), seed=1)["params"])) == 3
    # No bias, no bias penalty.
    no_bias = CELLS[kind](U, use_bias=False, bias_regularizer="l2", kernel_regularizer="l2", name="nb")
    assert len(no_bias.regularization_losses(no_bias.build((None, F), seed=0)["params"])) == 1


@pytest.mark.parametrize("return_state", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_activity_regularizer_on_the_outputs(backend, kind, return_state):
    layer = LAYERS[kind](U, return_sequences=True, return_state=return_state, bias_initializer="random_normal",
                         activity_regularizer=regularizers.L2(0.5), name="rnn")
    state = layer.build((None, T, F), seed=0)
    with collect_losses() as losses:
        out, _ = layer.apply(state, ops.convert_to_tensor(X))
    p = {k: _f64(v) for k, v in state["params"].items()}
    sequence, _, states = ref.run(STEPS[kind], p, X.astype(np.float64), [np.zeros((B, U))] * N_STATES[kind])
    # As in Keras, the penalty applies to every output: the sequence, and the states with return_state.
    expected = [sequence, *states] if return_state else [sequence]
    assert_close(out[0] if return_state else out, sequence)
    assert len(losses) == len(expected)
    for loss, value in zip(losses, expected):
        assert_close(loss, 0.5 * np.sum(value ** 2))  # not divided by the batch size (ember's convention)
    assert layer.regularization_losses(state["params"]) == []  # activity penalties are not weight penalties
    with collect_losses() as none:
        layers.LSTM(U, name="plain").apply(layers.LSTM(U, name="plain").build((None, T, F), seed=0),
                                           ops.convert_to_tensor(X))
    assert none == []


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_the_fused_path_still_runs(backend, monkeypatch, kind):
    """Regularizers and constraints leave the forward pass alone: the fused op still runs."""
    cell_class = LSTMCell if kind == "lstm" else GRUCell
    taken = []
    original = cell_class.fused_sequence

    def spy(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(cell_class, "fused_sequence", spy)
    options = dict(kernel_regularizer="l2", recurrent_regularizer="l1", bias_regularizer="l1_l2",
                   activity_regularizer="l2", kernel_constraint="non_neg", recurrent_constraint="max_norm",
                   bias_constraint="unit_norm")
    regularized = LAYERS[kind](U, name="rnn", **options)
    plain = LAYERS[kind](U, name="rnn")
    state = plain.build((None, T, F), seed=0)
    with collect_losses() as losses:
        got, _ = regularized.apply(state, ops.convert_to_tensor(X))
    want, _ = plain.apply(state, ops.convert_to_tensor(X))
    assert taken == [True, True]
    assert len(losses) == 1
    np.testing.assert_array_equal(ops.to_numpy(got), ops.to_numpy(want))


@pytest.mark.parametrize("kind", KINDS)
def test_fit_keeps_the_weights_within_their_constraints(backend, kind):
    ember.clear_session()
    layer = LAYERS[kind](U, bias_initializer="random_normal", kernel_constraint="non_neg",
                         recurrent_constraint=constraints.MaxNorm(0.3), bias_constraint="non_neg",
                         kernel_regularizer=regularizers.L2(0.01), name="rnn")
    model = ember.Sequential([ember.Input((T, F)), layer, layers.Dense(1, name="head")])
    model.build(seed=0)
    initial = {k: _f64(v) for k, v in model.state["params"]["rnn"].items()}
    assert initial["kernel"].min() < 0 and initial["bias"].min() < 0  # the constraints have work to do
    model.compile(optimizer=ember.optimizers.SGD(0.5), loss="mse", seed=0)
    x = np.random.default_rng(1).normal(size=(16, T, F)).astype(np.float32)
    model.fit(x, -np.ones((16, 1), np.float32), batch_size=8, epochs=2, verbose=0)
    p = {k: _f64(v) for k, v in model.state["params"]["rnn"].items()}
    assert p["kernel"].min() >= 0.0 and p["bias"].min() >= 0.0
    assert p["kernel"].max() > 0.0
    norms = np.sqrt(np.sum(p["recurrent_kernel"] ** 2, axis=0))
    assert norms.max() <= 0.3 * (1 + 1e-5)
    assert not np.allclose(p["recurrent_kernel"], initial["recurrent_kernel"])


@pytest.mark.parametrize("kind", KINDS)
def test_config_round_trip(kind):
    options = dict(kernel_regularizer="l1_l2", recurrent_regularizer=regularizers.L2(0.3),
                   activity_regularizer=regularizers.L1(0.2),
                   kernel_constraint=constraints.MinMaxNorm(0.5, 1.0, rate=0.5), recurrent_constraint="unit_norm",
                   bias_constraint="non_neg")
    layer = LAYERS[kind](U, name="rnn", **options)
    config = json.loads(json.dumps(layer.get_config()))
    # Serialized as Dense serializes them.
    assert config["kernel_regularizer"] == {"class_name": "ember>L1L2", "config": {"l1": 0.01, "l2": 0.01}}
    assert config["recurrent_regularizer"] == {"class_name": "ember>L2", "config": {"l2": 0.3}}
    assert config["bias_regularizer"] is None
    assert config["activity_regularizer"] == {"class_name": "ember>L1", "config": {"l1": 0.2}}
    assert config["bias_constraint"] == {"class_name": "ember>NonNeg", "config": {}}
    dense = layers.Dense(1, kernel_constraint=constraints.MinMaxNorm(0.5, 1.0, rate=0.5))
    assert config["kernel_constraint"] == json.loads(json.dumps(dense.get_config()["kernel_constraint"]))
    rebuilt = LAYERS[kind].from_config(config)
    assert rebuilt.get_config() == layer.get_config()
    assert rebuilt.kernel_regularizer == regularizers.L1L2(0.01, 0.01)
    assert rebuilt.activity_regularizer == regularizers.L1(0.2)
    assert rebuilt.cell.recurrent_regularizer == regularizers.L2(0.3)
    assert rebuilt.constraints() == {"kernel": constraints.MinMaxNorm(0.5, 1.0, 0.5, 0),
                                     "recurrent_kernel": constraints.UnitNorm(), "bias": constraints.NonNeg()}
    # The cells round-trip too (no activity_regularizer: in Keras that is the layer's).
    cell = CELLS[kind](U, name="cell", **{k: v for k, v in options.items() if k != "activity_regularizer"})
    cell_config = json.loads(json.dumps(cell.get_config()))
    assert "activity_regularizer" not in cell_config
    assert CELLS[kind].from_config(cell_config).constraints() == rebuilt.constraints()
    # And inside a model.
    model = ember.Sequential([ember.Input((T, F)), layer, layers.Dense(1, name="head")], name="m")
    clone = ember.Sequential.from_config(json.loads(json.dumps(model.get_config())))
    assert clone.constraints() == model.constraints()
    state = model.build(seed=0)
    assert len(clone.regularization_losses(state["params"])) == 2


def _paths(tree):
    return sorted(".".join(map(str, path)) for path in optree.tree_paths(tree, none_is_leaf=True))


def test_model_constraints_mirror_the_params(backend):
    ember.clear_session()
    inputs = ember.Input((T, F))
    x = layers.LSTM(U, return_sequences=True, kernel_constraint="non_neg", name="lstm")(inputs)
    x = layers.Bidirectional(layers.GRU(2, return_sequences=True, recurrent_constraint=constraints.MaxNorm(0.5),
                                        bias_constraint="non_neg", name="gru"), name="bi")(x)
    x = layers.SimpleRNN(2, use_bias=False, bias_constraint="non_neg", recurrent_constraint="unit_norm",
                         name="simple")(x)
    x = layers.GRU(2, kernel_constraint="non_neg", trainable=False, name="frozen")(layers.RepeatVector(2)(x))
    model = ember.Model(inputs, x)
    state = model.build(seed=0)
    spec = model.constraints()
    assert spec == {
        "lstm": {"kernel": constraints.NonNeg()},
        "bi": {side: {"recurrent_kernel": constraints.MaxNorm(0.5), "bias": constraints.NonNeg()}
               for side in ("forward_gru", "backward_gru")},
        "simple": {"recurrent_kernel": constraints.UnitNorm()},  # no bias, no bias constraint; frozen: none
    }
    assert set(_paths(spec)) <= set(_paths(state["params"]))
    projected = constraints.apply_constraints(spec, state["params"])
    assert _paths(projected) == _paths(state["params"])
    assert_close(projected["lstm"]["kernel"], np.maximum(_f64(state["params"]["lstm"]["kernel"]), 0.0))
    assert projected["frozen"] is state["params"]["frozen"]


@pytest.mark.parametrize("kind", KINDS)
def test_bad_values_name_the_layer_and_the_valid_names(kind):
    cls, cell_cls = LAYERS[kind], CELLS[kind]
    with pytest.raises(ValueError, match=r"rnn_bad: kernel_regularizer: unknown regularizer 'nope'; "
                                         r"expected one of \[.*'l1'.*'l2'.*\]"):
        cls(2, kernel_regularizer="nope", name="rnn_bad")
    with pytest.raises(ValueError, match=r"rnn_bad: activity_regularizer: unknown regularizer 'nope'"):
        cls(2, activity_regularizer="nope", name="rnn_bad")
    with pytest.raises(ValueError, match=r"rnn_bad: recurrent_constraint: unknown constraint 'nope'.*; "
                                         r"expected one of \[.*'max_norm'.*'non_neg'.*\]"):
        cls(2, recurrent_constraint="nope", name="rnn_bad")
    with pytest.raises(TypeError, match=r"rnn_bad: bias_constraint: expected a constraint name.*received 5"):
        cls(2, bias_constraint=5, name="rnn_bad")
    with pytest.raises(ValueError, match=r"cell_bad: recurrent_regularizer: unknown regularizer 'nope'"):
        cell_cls(2, recurrent_regularizer="nope", name="cell_bad")
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'activity_regularizer'"):
        cell_cls(2, activity_regularizer="l2")  # the layer's argument in Keras, not the cell's


def test_lstm_with_regularizers_and_constraints_layer_test():
    def reference(p, x):
        return ref.run(ref.lstm_step, p, x, [np.zeros((x.shape[0], 2))] * 2)[1]

    run_layer_test(
        lambda: layers.LSTM(2, bias_initializer="random_normal", kernel_regularizer=regularizers.L2(0.1),
                            recurrent_regularizer="l1", bias_regularizer="l1_l2",
                            activity_regularizer=regularizers.L1L2(0.01, 0.02), kernel_constraint="non_neg",
                            recurrent_constraint=constraints.MaxNorm(1.5), bias_constraint="non_neg", name="lstm"),
        (2, 3, 2), reference=reference,
        expected_param_shapes={"kernel": (2, 8), "recurrent_kernel": (2, 8), "bias": (8,)},
    )
