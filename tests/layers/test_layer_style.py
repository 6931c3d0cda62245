"""A layer class declares its style by its base, never by its method signatures (issue 30).

``ember.layers.Layer`` declares the Keras style (Keras programs subclass ``keras.layers.Layer``),
``ember.layers.DeclarativeLayer`` the declarative one (every built-in layer); a subclass inherits
its base's declaration. A class written in the other style than it declares is refused when it is
defined, with the base to use.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import layers, ops

os.environ.setdefault("KERAS_BACKEND", "torch")  # Keras 3 is the reference where one is used


def test_builtin_layers_are_declarative_and_layer_subclasses_keras_style():
    assert not layers.Dense._keras_style and not layers.LSTM._keras_style and not layers.DeclarativeLayer._keras_style
    assert isinstance(layers.Dense(2), layers.Layer)  # one base for every layer, as in Keras

    class Bare(layers.Layer):  # nothing to read a style from: the base declares it
        pass

    class Wider(layers.Dense):  # a built-in's subclass is declarative
        pass

    assert Bare._keras_style and not Wider._keras_style


def test_a_declarative_call_on_a_keras_style_base_is_refused_with_the_base_to_use():
    # The guess this replaces took a seedless build with call(params, inputs) for the Keras style and
    # failed later with "missing 1 required positional argument: 'inputs'".
    with pytest.raises(TypeError, match=r"class Scale subclasses ember.layers.Layer, the Keras style .* defines "
                                        r"call\(self, params, inputs\) .* subclass ember.layers.DeclarativeLayer"):
        class Scale(layers.Layer):
            def call(self, params, inputs):
                return inputs

    with pytest.raises(TypeError, match=r"defines build\(self, input_shape, seed\)"):
        class Seeded(layers.Layer):
            def build(self, input_shape, seed=None):
                return self.make_state()


def test_a_keras_style_call_on_a_declarative_base_is_refused():
    with pytest.raises(TypeError, match=r"class Halve is a declarative layer .* call takes \(self, params, inputs"
                                        r".*received call\(self, inputs\).*subclass ember.layers.Layer"):
        class Halve(layers.DeclarativeLayer):
            def call(self, inputs):
                return inputs


def test_both_styles_compute_the_same(backend):
    class KerasScale(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, inputs):
            return inputs * self.w * 2.0

    class DeclarativeScale(layers.DeclarativeLayer):
        def weight_specs(self, input_shape=None):
            return [layers.WeightSpec("w", (None if input_shape is None else input_shape[-1],), "ones")]

        def call(self, params, inputs):
            return ops.multiply(ops.multiply(inputs, params["w"]), 2.0)

        def compute_output_shape(self, input_shape):
            return input_shape

    x = np.arange(6, dtype="float32").reshape(2, 3)
    for layer in (KerasScale(), DeclarativeScale()):
        state = layer.build((None, 3), seed=0)
        outputs, _ = layer.apply(state, ops.convert_to_tensor(x))
        np.testing.assert_array_equal(ops.to_numpy(outputs), 2.0 * x)  # exact: products by 1 and 2
        model = ember.Sequential([ember.Input((3,)), layer])
        np.testing.assert_array_equal(model.predict(x, verbose=0), 2.0 * x)


def test_weight_specs_without_a_none_shape_is_named_when_the_options_are_read(backend):
    """``weight_specs`` is also asked with ``input_shape=None`` (the weights' options): a body that cannot
    take None is named with the fix, not a bare ``'NoneType' object is not subscriptable`` from fit."""
    class Natural(layers.DeclarativeLayer):
        def weight_specs(self, input_shape):
            return [layers.WeightSpec("w", (input_shape[-1],), "ones")]

        def call(self, params, inputs):
            return ops.multiply(inputs, params["w"])

        def compute_output_shape(self, input_shape):
            return input_shape

    layer = Natural(name="natural")
    with pytest.raises(TypeError, match=r"layer 'natural': Natural.weight_specs\(input_shape\) is also called with "
                                        r"input_shape=None.*fan_in = None if input_shape is None"):
        layer.regularization_losses(layer.build((None, 3), seed=0)["params"])


def _extended_layer(lib):
    """A Keras-style layer whose subclass extends its parent's ``build`` and ``call`` through super()."""
    class Scaled(lib.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, inputs):
            return inputs * self.w * 3.0

    class Shifted(Scaled):
        def build(self, input_shape):
            super().build(input_shape)
            self.b = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="b")

        def call(self, inputs):
            return super().call(inputs) + self.b

    return Scaled, Shifted


def test_a_keras_style_subclass_extends_its_parents_build_as_in_keras(backend):
    keras = pytest.importorskip("keras")
    Scaled, Shifted = _extended_layer(ember)
    # Nothing is set on the user's classes: their dicts hold what their author wrote.
    own = {name for name in vars(Shifted) if not name.startswith("__")}
    assert {"build", "call"} <= own and not own & {"apply", "weight_specs", "get_config", "compute_output_shape"}
    assert vars(Shifted)["build"].__qualname__.endswith("Shifted.build")
    x = np.arange(6, dtype="float32").reshape(2, 3)
    ours = Shifted()
    got = ops.to_numpy(ours(x))
    theirs = _extended_layer(keras)[1]()
    np.testing.assert_array_equal(got, keras.ops.convert_to_numpy(theirs(x)))  # x * 3 + 1: exact
    assert [w.path.rpartition("/")[2] for w in ours.weights] == ["w", "b"]
    assert ours.build is not Shifted.build  # the object's own wrapper (Keras wraps build per object too)


def test_a_copied_layer_builds_itself(backend):
    """The per-object build wrapper follows copies: copy.copy and copy.deepcopy build the copy."""
    import copy

    _, Shifted = _extended_layer(ember)
    layer = Shifted()
    for duplicate in (copy.copy(layer), copy.deepcopy(layer)):
        assert duplicate.build.__self__ is duplicate
