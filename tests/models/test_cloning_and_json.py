"""``clone_model``, ``Model.to_json``/``model_from_json`` (Ember's and Keras's JSON), ``from_config``
with ``custom_objects`` and ``ember.models.load_model``."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.models import clone_model, model_from_json
from tests.helpers import needs
from tests.saving.keras_models import trained
from tests.tolerances import FLOAT32_PAIR

# Keras 3.15 on torch warns about NumPy 2 __array__(copy=...) on every conversion.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _functional():
    a, b = ember.Input((4,), name="a"), ember.Input((3,), name="b")
    shared = layers.Dense(4, activation="tanh", name="shared")
    h = layers.Concatenate(name="cat")([shared(a), layers.Dense(4, name="proj")(b)])
    return ember.Model([a, b], [layers.Dense(1, name="y")(h), shared(layers.Dense(4, name="back")(h))], name="f")


X = [np.linspace(-1, 1, 8, dtype="float32").reshape(2, 4), np.linspace(0, 1, 6, dtype="float32").reshape(2, 3)]


def test_clone_has_new_layers_the_same_graph_and_the_same_seeded_weights(backend):
    model = _functional()
    model.build(seed=4)
    twin = clone_model(model)
    assert twin.state is None and all(t is not o for t, o in zip(twin.layers, model.layers))
    assert [layer.name for layer in twin.layers] == [layer.name for layer in model.layers]
    assert twin.get_config() == model.get_config()
    twin.build(seed=4)  # the same structure and seed give the same weights
    for got, expected in zip(twin.predict(X, verbose=0), model.predict(X, verbose=0)):
        np.testing.assert_array_equal(ops.to_numpy(got), ops.to_numpy(expected))


def test_clone_function_input_tensors_and_recursive():
    model = _functional()
    widened = clone_model(model, clone_function=lambda layer: layer.replace(units=8) if layer.name == "proj" else
                          type(layer).from_config(layer.get_config()))
    assert widened.get_layer("proj").units == 8 and widened.get_layer("cat").compute_output_shape(
        [(None, 4), (None, 8)]) == (None, 12)
    new_a, new_b = ember.Input((4,), name="a2"), ember.Input((3,), name="b2")
    rebased = clone_model(model, input_tensors=[new_a, new_b])
    assert [t.name for t in rebased._input_list] == ["a2", "b2"]
    outer_in = ember.Input((4,), name="o")
    outer = ember.Model(outer_in, ember.Sequential([layers.Dense(2, name="s")], name="seq")(outer_in))
    calls = []
    deep = clone_model(
        outer, clone_function=lambda layer: calls.append(layer.name) or type(layer).from_config(layer.get_config()),
        recursive=True)
    assert "s" in calls and "seq" not in calls and deep.layers[1].layers[0] is not outer.layers[1].layers[0]
    with pytest.raises(ValueError, match="input_tensors"):
        clone_model(model, input_tensors=[new_a])
    with pytest.raises(TypeError, match="must return a Layer"):
        clone_model(model, clone_function=lambda layer: None)


def test_sequential_clone_and_json_round_trip():
    model = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="d"), layers.Dropout(0.2, name="drop")],
                             name="s")
    twin = clone_model(model)
    assert twin.get_config() == model.get_config() and twin.layers[0] is not model.layers[0]
    rebuilt = model_from_json(model.to_json(indent=1))
    assert rebuilt.get_config() == model.get_config()
    functional = _functional()
    assert model_from_json(functional.to_json()).get_config() == functional.get_config()
    with pytest.raises(ValueError, match="invalid JSON"):
        model_from_json("{nope")
    with pytest.raises(ValueError, match="not a model config"):
        model_from_json("[1, 2]")


@needs("keras")
def test_model_from_keras_json_with_keras_weights_predicts_like_keras(tmp_path):
    keras_model, x = trained("multi_output")
    keras_model.save_weights(tmp_path / "k.weights.h5")
    model = model_from_json(keras_model.to_json())
    model.load_weights(tmp_path / "k.weights.h5")
    for got, expected in zip(model.predict(x, verbose=0), keras_model.predict(x, verbose=0)):
        np.testing.assert_allclose(got, expected, **FLOAT32_PAIR)  # Keras's float32 predictions


def test_from_config_resolves_custom_objects():
    class Twice(layers.DeclarativeLayer):
        def call(self, params, inputs):
            return ops.multiply(inputs, 2.0)

        def compute_output_shape(self, input_shape):
            return input_shape

    x = ember.Input((2,), name="x")
    model = ember.Model(x, Twice(name="twice")(x))
    config = model.get_config()
    with pytest.raises(ValueError, match="Twice"):
        ember.Model.from_config(config)
    rebuilt = ember.Model.from_config(config, custom_objects={"Twice": Twice})
    np.testing.assert_array_equal(rebuilt.predict(np.ones((1, 2), "float32"), verbose=0), [[2.0, 2.0]])
    seq = ember.Sequential([ember.Input((2,)), Twice(name="t2")])
    assert isinstance(ember.Sequential.from_config(seq.get_config(), custom_objects={"Twice": Twice}).layers[0],
                      Twice)


def test_models_namespace_has_keras_saving_functions():
    assert ember.models.load_model is ember.load_model
    assert ember.models.save_model is ember.saving.save_model
