"""Custom layers, losses and metrics are saved by registered name; unknown names raise an error saying
what to register; loading never unpickles or runs code from the file."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember
from ember import layers, losses, metrics, ops
from ember.saving import CheckpointError, register_serializable
from tests.saving.models import assert_trees_bit_equal, to_numpy_tree


@register_serializable(package="tests")
class ScaledMSE(losses.Loss):
    """Mean squared error times ``factor`` (per sample: mean over the last axis)."""

    def __init__(self, factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, y_true, y_pred):
        return ops.multiply(ops.mean(ops.square(ops.subtract(y_pred, y_true)), axis=-1), self.factor)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


@register_serializable(package="tests")
class MaxPrediction(metrics.Metric):
    """The largest prediction seen."""

    def init_state(self, y_pred_shape=None):
        return {"max": ops.full((), -np.inf, dtype=self.dtype)}

    def update_state(self, state, y_true, y_pred, sample_weight=None):
        return {"max": ops.maximum(state["max"], ops.max(ops.cast(y_pred, self.dtype)))}

    def result(self, state):
        return state["max"]


@register_serializable(package="tests")
def doubled_relu(x):
    return ops.multiply(ops.nn.relu(x), 2.0)


@register_serializable(package="tests")
class Offset(layers.DeclarativeLayer):
    amount: float = 1.0

    def build(self, input_shape, seed=None):
        return self.make_state(params={"bias": ops.full((input_shape[-1],), self.amount, dtype="float32")})

    def call(self, params, inputs):
        return ops.add(inputs, params["bias"])

    def compute_output_shape(self, input_shape):
        return input_shape


class Unregistered(layers.DeclarativeLayer):
    def call(self, params, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape


def _custom_model():
    model = ember.Sequential([ember.Input((3,)), layers.Dense(4, activation=doubled_relu, name="d"),
                              Offset(amount=0.5, name="offset"), layers.Dense(1, name="out")], name="custom")
    model.build(seed=0)
    model.compile(optimizer="sgd", loss=ScaledMSE(factor=2.0), metrics=[MaxPrediction(name="max_pred")])
    return model


def test_custom_layer_loss_metric_and_function_round_trip(tmp_path, backend, monkeypatch):
    model = _custom_model()
    path = tmp_path / "custom.h5"
    model.save(path)

    def forbidden(*args, **kwargs):
        raise AssertionError("pickle used while loading")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, forbidden)
    loaded = ember.load_model(path)
    monkeypatch.undo()

    assert type(loaded.layers[1]) is Offset and loaded.layers[1].amount == 0.5
    assert loaded.layers[0].activation is doubled_relu
    assert isinstance(loaded.loss, ScaledMSE) and loaded.loss.factor == 2.0
    assert loaded.metrics_names == ["loss", "max_pred"]
    assert_trees_bit_equal(to_numpy_tree(loaded.state), to_numpy_tree(model.state))
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    y = np.ones((2, 1), np.float32)
    assert np.array_equal(ops.to_numpy(loaded(x)), ops.to_numpy(model(x)))
    got = loaded.evaluate(x, y, verbose=0, return_dict=True)
    want = model.evaluate(x, y, verbose=0, return_dict=True)
    assert got == want


def test_unknown_class_error_says_what_to_register(tmp_path):
    model = ember.Sequential([ember.Input((3,)), Unregistered(name="mystery"), layers.Dense(1, name="out")])
    model.build(seed=0)
    path = tmp_path / "mystery.h5"
    model.save(path)
    with pytest.raises(CheckpointError) as info:
        ember.load_model(path)
    message = str(info.value)
    assert "mystery.h5" in message and "unknown class or function 'Unregistered'" in message
    assert "@ember.saving.register_keras_serializable()" in message and "custom_objects={'Unregistered'" in message
    # custom_objects resolves it for one call, without registering it globally.
    loaded = ember.load_model(path, custom_objects={"Unregistered": Unregistered})
    assert type(loaded.layers[0]) is Unregistered
    with pytest.raises(CheckpointError, match="register_keras_serializable"):
        ember.load_model(path)


def test_unregistered_function_in_compile_config_warns_and_saves_uncompiled(tmp_path):
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1, name="out")])
    model.build(seed=0)
    model.compile(optimizer="sgd", loss=lambda y_true, y_pred: ops.mean(ops.square(y_pred - y_true)))
    path = tmp_path / "lambda.h5"
    with pytest.warns(UserWarning, match="compile configuration is not saved"):
        model.save(path)
    loaded = ember.load_model(path)
    assert not loaded.compiled
    assert_trees_bit_equal(to_numpy_tree(loaded.state), to_numpy_tree(model.state))


def test_unserializable_architecture_raises_at_save_time(tmp_path):
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1, activation=lambda v: v, name="out")])
    with pytest.raises(TypeError, match="register_serializable"):
        model.save(tmp_path / "bad.h5")
    assert not (tmp_path / "bad.h5").exists()


def test_compile_false_returns_an_uncompiled_model(tmp_path):
    model = _custom_model()
    model.save(tmp_path / "m.h5")
    loaded = ember.load_model(tmp_path / "m.h5", compile=False)
    assert not loaded.compiled
