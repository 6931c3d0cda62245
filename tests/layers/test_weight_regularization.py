"""Regularizers and constraints on ``Dense``/``Embedding`` and how models expose them:
``regularization_losses(params)`` (weight penalties, from the params), activity
penalties through ``add_loss``/``collect_losses``, and ``constraints()`` nested like
``state["params"]`` for the optimizer to apply after each step. Values are checked
against NumPy formulas on every backend."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ember
from ember import constraints, layers, ops, regularizers
from ember.autodiff import value_and_grad
from ember.layers.loss_collection import collect_losses
from tests.helpers import assert_close
from tests.layers.layer_test import run_layer_test

RNG = np.random.default_rng(11)


def _f64(array):
    return ops.to_numpy(array).astype(np.float64)


def test_dense_with_regularizers_and_constraints_layer_test():
    run_layer_test(
        lambda: layers.Dense(3, activation="tanh", bias_initializer="random_normal",
                             kernel_regularizer=regularizers.L2(0.1), bias_regularizer="l1",
                             activity_regularizer=regularizers.L1L2(0.01, 0.02),
                             kernel_constraint=constraints.MaxNorm(1.5), bias_constraint="non_neg", name="dense"),
        (2, 4),
        reference=lambda p, x: np.tanh(x @ p["kernel"] + p["bias"]),
        expected_param_shapes={"bias": (3,), "kernel": (4, 3)},
        supports_masking=True,
    )


def test_embedding_with_regularizers_and_constraints_layer_test():
    ids = np.array([[0, 3, 1], [2, 2, 4]], dtype=np.int32)
    run_layer_test(
        lambda: layers.Embedding(5, 2, embeddings_regularizer="l2", embeddings_constraint=constraints.UnitNorm(axis=1),
                                 activity_regularizer=regularizers.L1(0.1), name="emb"),
        ids.shape, input_data=ids, input_dtype="int32",
        reference=lambda p, x: p["embeddings"][x],
        expected_param_shapes={"embeddings": (5, 2)},
    )


def _models():
    """The same two-layer network as Sequential and functional models."""
    def dense_layers():
        return (layers.Dense(4, activation="relu", kernel_regularizer=regularizers.L2(0.1), name="hidden"),
                layers.Dense(2, bias_initializer="random_normal", bias_regularizer=regularizers.L1(0.3),
                             kernel_constraint=constraints.MaxNorm(0.5), name="out"))

    hidden, out = dense_layers()
    sequential = ember.Sequential([ember.Input((3,)), hidden, out], name="seq")
    hidden, out = dense_layers()
    inputs = ember.Input((3,))
    functional = ember.Model(inputs, out(hidden(inputs)), name="func")
    return [sequential, functional]


@pytest.mark.parametrize("index", [0, 1], ids=["sequential", "functional"])
def test_model_regularization_losses(backend, index):
    model = _models()[index]
    state = model.build(seed=0)
    losses = model.regularization_losses(state["params"])
    kernel = _f64(state["params"]["hidden"]["kernel"])
    bias = _f64(state["params"]["out"]["bias"])
    assert len(losses) == 2
    assert_close(losses[0], 0.1 * np.sum(kernel ** 2))
    assert_close(losses[1], 0.3 * np.sum(np.abs(bias)))

    # The penalties are differentiable functions of the params.
    def total(params):
        terms = model.regularization_losses(params)
        return ops.add(terms[0], terms[1])

    _, grads = value_and_grad(total)(state["params"])
    assert_close(grads["hidden"]["kernel"], 0.2 * kernel)
    assert_close(grads["out"]["bias"], 0.3 * np.sign(bias))
    np.testing.assert_array_equal(ops.to_numpy(grads["out"]["kernel"]), 0.0)


def test_model_with_one_l2_kernel(backend):
    model = ember.Sequential([ember.Input((5,)), layers.Dense(3, kernel_regularizer=regularizers.L2(0.1), name="d")])
    state = model.build(seed=1)
    (loss,) = model.regularization_losses(state["params"])
    assert_close(loss, 0.1 * np.sum(_f64(state["params"]["d"]["kernel"]) ** 2))


def test_shared_layer_counts_once(backend):
    shared = layers.Dense(2, kernel_regularizer=regularizers.L1(1.0), name="shared")
    a, b = ember.Input((3,), name="a"), ember.Input((3,), name="b")
    model = ember.Model([a, b], layers.Add(name="sum")([shared(a), shared(b)]))
    state = model.build(seed=0)
    (loss,) = model.regularization_losses(state["params"])
    assert_close(loss, np.abs(_f64(state["params"]["shared"]["kernel"])).sum())


def test_activity_regularizer_on_dense_outputs(backend):
    layer = layers.Dense(3, activation="relu", activity_regularizer=regularizers.L2(0.5), name="d")
    state = layer.build((None, 4), seed=0)
    x = RNG.normal(size=(5, 4)).astype(np.float32)
    with collect_losses() as losses:
        y, _ = layer.apply(state, ops.convert_to_tensor(x))
    h = np.maximum(x.astype(np.float64) @ _f64(state["params"]["kernel"]) + _f64(state["params"]["bias"]), 0.0)
    assert_close(y, h)
    assert len(losses) == 1
    assert_close(losses[0], 0.5 * np.sum(h ** 2))  # on the activated outputs, not divided by the batch size
    assert layer.regularization_losses(state["params"]) == []  # activity penalties are not weight penalties


def test_embedding_penalties_and_constraint(backend):
    layer = layers.Embedding(6, 3, embeddings_initializer="random_normal", embeddings_regularizer=regularizers.L2(0.2),
                             embeddings_constraint=constraints.UnitNorm(axis=1),
                             activity_regularizer=regularizers.L1(0.1), name="emb")
    state = layer.build((None, 2), seed=0)
    table = _f64(state["params"]["embeddings"])
    ids = np.array([[0, 5], [2, 2]], dtype=np.int32)
    with collect_losses() as losses:
        layer.apply(state, ops.convert_to_tensor(ids))
    assert_close(losses[0], 0.1 * np.abs(table[ids]).sum())
    (penalty,) = layer.regularization_losses(state["params"])
    assert_close(penalty, 0.2 * np.sum(table ** 2))
    projected = constraints.apply_constraints(layer.constraints(), state["params"])
    assert_close(projected["embeddings"], table / (1e-7 + np.linalg.norm(table, axis=1, keepdims=True)))


@pytest.mark.parametrize("index", [0, 1], ids=["sequential", "functional"])
def test_model_constraints_mirror_params(backend, index):
    model = _models()[index]
    state = model.build(seed=0)
    spec = model.constraints()
    assert spec == {"out": {"kernel": constraints.MaxNorm(0.5)}}
    assert set(spec) <= set(state["params"]) and set(spec["out"]) <= set(state["params"]["out"])
    new_params = constraints.apply_constraints(spec, state["params"])
    kernel = _f64(state["params"]["out"]["kernel"])
    norms = np.sqrt(np.sum(kernel ** 2, axis=0, keepdims=True))
    assert_close(new_params["out"]["kernel"], kernel * np.clip(norms, 0, 0.5) / (1e-7 + norms))
    assert new_params["hidden"] is state["params"]["hidden"]
    np.testing.assert_array_equal(ops.to_numpy(state["params"]["out"]["kernel"]), kernel.astype(np.float32))


def test_nested_model_constraints_and_penalties(backend):
    inner_in = ember.Input((3,))
    inner = ember.Model(inner_in, layers.Dense(3, kernel_constraint="non_neg", kernel_regularizer="l1",
                                               name="inner_dense")(inner_in), name="block")
    outer = ember.Sequential([ember.Input((3,)), inner, layers.Dense(1, bias_constraint="non_neg", name="head")])
    state = outer.build(seed=0)
    spec = outer.constraints()
    assert spec == {"block": {"inner_dense": {"kernel": constraints.NonNeg()}}, "head": {"bias": constraints.NonNeg()}}
    new_params = constraints.apply_constraints(spec, state["params"])
    kernel = _f64(state["params"]["block"]["inner_dense"]["kernel"])
    assert_close(new_params["block"]["inner_dense"]["kernel"], np.maximum(kernel, 0.0))
    (penalty,) = outer.regularization_losses(state["params"])
    assert_close(penalty, 0.01 * np.abs(kernel).sum())


def test_frozen_layers_report_nothing(backend):
    frozen = layers.Dense(2, kernel_regularizer="l2", kernel_constraint="non_neg", trainable=False, name="frozen")
    state = frozen.build((None, 3), seed=0)
    assert frozen.regularization_losses(state["params"]) == []
    assert frozen.constraints() == {}
    model = ember.Sequential([ember.Input((3,)), layers.Dense(2, kernel_constraint="non_neg", name="d")],
                             trainable=False)
    assert model.constraints() == {}
    assert layers.Dense(2, bias_constraint="non_neg", use_bias=False, name="nb").constraints() == {}
    assert layers.Flatten(name="flat").constraints() == {}


def test_dense_config_round_trips_regularizers(backend):
    layer = layers.Dense(2, kernel_regularizer="l1_l2", activity_regularizer=regularizers.L2(0.3),
                         kernel_constraint=constraints.MinMaxNorm(0.5, 1.0, rate=0.5), name="d")
    config = json.loads(json.dumps(layer.get_config()))
    assert config["kernel_regularizer"] == {"class_name": "ember>L1L2", "config": {"l1": 0.01, "l2": 0.01}}
    rebuilt = layers.Dense.from_config(config)
    assert rebuilt.kernel_regularizer == regularizers.L1L2(0.01, 0.01)
    assert rebuilt.activity_regularizer == regularizers.L2(0.3)
    assert rebuilt.constraints() == {"kernel": constraints.MinMaxNorm(0.5, 1.0, 0.5, 0)}


def test_bad_regularizer_and_constraint_arguments():
    with pytest.raises(ValueError, match=r"dense_bad: kernel_regularizer: unknown regularizer 'l3'"):
        layers.Dense(2, kernel_regularizer="l3", name="dense_bad")
    with pytest.raises(TypeError, match=r"dense_bad: bias_constraint: expected a constraint name.*received 5"):
        layers.Dense(2, bias_constraint=5, name="dense_bad")
    with pytest.raises(ValueError, match=r"emb_bad: embeddings_constraint: unknown constraint 'unit'"):
        layers.Embedding(3, 2, embeddings_constraint="unit", name="emb_bad")
    with pytest.raises(TypeError, match=r"emb_bad: activity_regularizer: expected a regularizer"):
        layers.Embedding(3, 2, activity_regularizer=[0.1], name="emb_bad")
