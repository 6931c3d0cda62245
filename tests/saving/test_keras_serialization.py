"""Keras's serialization helpers at Keras's paths (``ember.saving.register_keras_serializable`` and the
rest), with Keras's semantics, checked against Keras 3 itself (torch backend); and a registered custom
layer through ``.keras`` files: Ember to Ember on every backend, Ember to Keras and Keras to Ember with
the custom class registered in both libraries under one name.

Tolerances: an Ember reload runs the same computation on the same float32 weights, so it predicts
bit-equal values (no tolerance). Ember against Keras compares two float32 implementations of a Dense
of <= 5 inputs: ``FLOAT32_PAIR`` from ``tests/tolerances.py``.
"""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import ember
from ember import layers, ops, serialization
from ember.saving import CheckpointError
from tests.helpers import needs
from tests.saving.keras_models import keras
from tests.tolerances import FLOAT32_PAIR

PACKAGE = "tests_keras_serialization"
KEY = f"{PACKAGE}>ScaledDense"
X = np.random.default_rng(0).normal(size=(6, 5)).astype("float32")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Keras 3.15: NumPy 2 __array__ notices


@ember.saving.register_keras_serializable(package=PACKAGE, name="ScaledDense")
class ScaledDense(layers.Layer):
    """The guide's custom layer: constructor arguments of its own, weights made in ``build``."""

    def __init__(self, units, scale=1.0, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.scale = scale

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="glorot_uniform",
                                      name="kernel")
        self.bias = self.add_weight(shape=(self.units,), initializer="random_normal", name="bias")

    def call(self, inputs):
        return ops.multiply(ops.add(ops.matmul(inputs, self.kernel), self.bias), self.scale)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "scale": self.scale}


def _keras_scaled_dense():
    """The same layer in Keras, registered under the same name (Keras names its weights' group after the
    class: ``scaled_dense``, so the class has Ember's class name)."""

    @keras.saving.register_keras_serializable(package=PACKAGE, name="ScaledDense")
    class ScaledDense(keras.layers.Layer):
        def __init__(self, units, scale=1.0, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.scale = scale

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="glorot_uniform",
                                          name="kernel")
            self.bias = self.add_weight(shape=(self.units,), initializer="random_normal", name="bias")

        def call(self, inputs):
            return (keras.ops.matmul(inputs, self.kernel) + self.bias) * self.scale

        def get_config(self):
            return {**super().get_config(), "units": self.units, "scale": self.scale}

    return ScaledDense


KerasScaledDense = None if keras is None else _keras_scaled_dense()


def _ember_model():
    inputs = ember.Input((5,))
    hidden = ScaledDense(4, scale=0.5, name="scaled")(inputs)
    model = ember.Model(inputs, layers.Dense(2, name="out")(hidden), name="custom")
    model.build(seed=0)
    return model


def _predict(model):
    return np.asarray(ops.to_numpy(model.predict(X, verbose=0)))


# ------------------------------------------------------------------------------ the helpers
def test_the_helpers_are_at_kerass_paths_over_one_registry():
    saving = ember.saving
    for name in ("register_keras_serializable", "get_custom_objects", "serialize_keras_object",
                 "deserialize_keras_object", "custom_object_scope", "CustomObjectScope", "get_registered_name",
                 "get_registered_object"):
        assert getattr(saving, name) is getattr(ember.utils, name), name
        assert name in saving.__all__
    assert saving.custom_object_scope is saving.CustomObjectScope
    assert saving.register_keras_serializable is saving.register_serializable
    assert saving.get_registered_object(KEY) is ScaledDense
    assert serialization.get_registered_class(KEY) is ScaledDense  # the registry the checkpoints use


@needs("keras")
def test_registration_names_and_lookups_match_keras():
    def ember_cube(x):
        return x * x * x

    def keras_cube(x):
        return x * x * x

    for module, cube in ((ember.saving, ember_cube), (keras.saving, keras_cube)):
        assert module.register_keras_serializable(package=PACKAGE, name="cube")(cube) is cube
    pairs = [(ember.saving, ember_cube, ScaledDense, layers.Dense),
             (keras.saving, keras_cube, KerasScaledDense, keras.layers.Dense)]
    seen = []
    for module, cube, custom, dense in pairs:

        class Unregistered(custom):
            pass

        seen.append((module.get_registered_name(cube), module.get_registered_name(custom),
                     module.get_registered_name(Unregistered),  # registration is not inherited
                     module.get_registered_name(dense),  # a built-in: its class name
                     module.get_registered_object(f"{PACKAGE}>cube") is cube,
                     module.get_custom_objects()[f"{PACKAGE}>cube"] is cube,
                     module.get_registered_object("Dense"),  # built-ins are not registered objects
                     module.get_registered_object("ScaledDense"),  # exact names only
                     "Dense" in module.get_custom_objects()))
    assert seen[0] == seen[1] == (f"{PACKAGE}>cube", KEY, "Unregistered", "Dense", True, True, None, None, False)


@needs("keras")
def test_scopes_and_lookup_order_match_keras():
    def first(x):
        return x

    def second(x):
        return x

    results = []
    for module in (ember.saving, keras.saving):
        with module.custom_object_scope({"scoped": first}) as scope:
            inside = (module.get_registered_object("scoped") is first,
                      # the scope comes before the caller's dicts, which come before module_objects
                      module.get_registered_object("scoped", custom_objects={"scoped": second}) is first,
                      module.get_registered_object("mine", {"mine": first}, {"mine": second}) is first,
                      module.get_registered_object("theirs", None, {"theirs": second}) is second,
                      "scoped" in module.get_custom_objects())  # a scope is not the global dict
        results.append((type(scope).__name__, scope.custom_objects == {"scoped": first}, inside,
                        module.get_registered_object("scoped")))
    assert results[0] == results[1] == ("CustomObjectScope", True, (True, True, True, True, False), None)


@needs("keras")
def test_a_class_without_get_config_is_refused_as_keras_refuses_it():
    class Plain:
        pass

    for module in (ember.saving, keras.saving):
        with pytest.raises(ValueError, match="get_config"):
            module.register_keras_serializable(package=PACKAGE)(Plain)
    assert ember.saving.get_registered_object(f"{PACKAGE}>Plain") is None  # nothing was registered


def test_custom_objects_is_a_live_view_that_guards_embers_own_names(tmp_path, backend):
    class Offset(layers.Layer):
        def __init__(self, amount=1.0, **kwargs):
            super().__init__(**kwargs)
            self.amount = amount

        def call(self, inputs):
            return ops.add(inputs, self.amount)

        def get_config(self):
            return {**super().get_config(), "amount": self.amount}

    @ember.saving.register_keras_serializable(package=f"{PACKAGE}_other", name="Offset")
    class Other(Offset):  # another package's class of the same name: never taken for the file's Offset
        pass

    model = ember.Sequential([ember.Input((2,)), Offset(2.0, name="offset")])
    model.build(seed=0)
    model.save(tmp_path / "offset.keras")
    with pytest.raises(CheckpointError, match=r"unknown class or function 'Offset': it is not registered"):
        ember.load_model(tmp_path / "offset.keras")
    custom = ember.saving.get_custom_objects()
    custom["Offset"] = Offset  # loadable by name, not registered: its saved name stays its own
    try:
        assert ember.load_model(tmp_path / "offset.keras").layers[0].amount == 2.0
        assert ember.saving.get_registered_name(Offset) == "Offset" and "Offset" in list(custom)
    finally:
        del custom["Offset"]
    assert "Offset" not in custom and ember.saving.get_registered_object("Offset") is None
    before = len(custom)
    with pytest.raises(ValueError, match=r"'ember>Dense' is one of Ember's own names"):
        custom["ember>Dense"] = Offset
    with pytest.raises(KeyError):
        del custom["ember>Dense"]
    assert len(custom) == before and serialization.get_registered_class("ember>Dense") is layers.Dense


def test_custom_object_scope_checks_its_arguments_before_anything_changes():
    def fn(x):
        return x

    with pytest.raises(TypeError, match=r"expected dicts of name -> class or function, received \['fn'\]"):
        ember.saving.custom_object_scope({"fn": fn}, ["fn"])
    assert ember.saving.get_registered_object("fn") is None
    with ember.saving.CustomObjectScope({"fn": fn}), ember.saving.custom_object_scope(custom_objects={"g": fn}):
        assert ember.saving.get_registered_object("fn") is fn  # scopes nest: the outer one stays visible
    assert ember.saving.get_registered_object("fn") is None


def test_serialize_and_deserialize_keras_object_round_trip(backend):
    layer = ScaledDense(3, scale=2.0, name="s")
    data = ember.saving.serialize_keras_object(layer)
    assert data["class_name"] == KEY and json.loads(json.dumps(data)) == data
    again = ember.saving.deserialize_keras_object(data)
    assert type(again) is ScaledDense and (again.units, again.scale, again.name) == (3, 2.0, "s")

    class Unregistered(ScaledDense):
        pass

    data = ember.saving.serialize_keras_object(Unregistered(2, name="u"))
    with pytest.raises(ValueError, match="Unregistered"):
        ember.saving.deserialize_keras_object(data)
    assert type(ember.saving.deserialize_keras_object(data, {"Unregistered": Unregistered})) is Unregistered

    def cube(x):
        return x * x * x

    assert ember.saving.deserialize_keras_object("cube", custom_objects={"cube": cube}) is cube
    assert ember.saving.deserialize_keras_object("cube") == "cube"  # as Keras: an unknown name stays a name


@needs("keras")
def test_deserialize_keras_object_reads_kerass_form_of_a_registered_custom_layer(backend):
    data = keras.saving.serialize_keras_object(KerasScaledDense(3, scale=2.0, name="from_keras"))
    assert data["registered_name"] == KEY and data["module"] != "keras.layers"
    layer = ember.saving.deserialize_keras_object(data)
    assert type(layer) is ScaledDense and (layer.units, layer.scale, layer.name) == (3, 2.0, "from_keras")


# ------------------------------------------------------------------------------ .keras files
def test_registered_custom_layer_round_trips_through_a_keras_file(tmp_path, backend):
    model = _ember_model()
    model.save(tmp_path / "custom.keras")
    with zipfile.ZipFile(tmp_path / "custom.keras") as archive:
        entry = json.loads(archive.read("config.json"))["config"]["layers"][1]
    assert (entry["class_name"], entry["registered_name"]) == ("ScaledDense", KEY)
    restored = ember.load_model(tmp_path / "custom.keras")
    layer = restored.get_layer("scaled")
    assert type(layer) is ScaledDense and (layer.units, layer.scale) == (4, 0.5)
    np.testing.assert_array_equal(_predict(restored), _predict(model))
    # The .h5 path, which always worked, gives the same model.
    model.save(tmp_path / "custom.h5")
    np.testing.assert_array_equal(_predict(ember.load_model(tmp_path / "custom.h5")), _predict(model))


def test_an_unregistered_custom_layer_is_named_by_its_registered_name(tmp_path):
    model = _ember_model()
    model.save(tmp_path / "custom.keras")
    with zipfile.ZipFile(tmp_path / "custom.keras") as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(files["config.json"])
    config["config"]["layers"][1]["registered_name"] = "elsewhere>ScaledDense"
    files["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(tmp_path / "renamed.keras", "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    with pytest.raises(CheckpointError, match=r"unknown class or function 'elsewhere>ScaledDense': it is not "
                                              r"registered"):
        ember.load_model(tmp_path / "renamed.keras")
    restored = ember.load_model(tmp_path / "renamed.keras", custom_objects={"elsewhere>ScaledDense": ScaledDense})
    np.testing.assert_array_equal(_predict(restored), _predict(model))


@needs("keras")
def test_ember_written_custom_layer_loads_in_keras(tmp_path, backend):
    model = _ember_model()
    model.save(tmp_path / "custom.keras")
    restored = keras.saving.load_model(tmp_path / "custom.keras")
    assert type(restored.get_layer("scaled")) is KerasScaledDense
    assert restored.get_layer("scaled").get_config()["scale"] == 0.5
    np.testing.assert_allclose(np.asarray(restored.predict(X, verbose=0)), _predict(model), **FLOAT32_PAIR)


@pytest.fixture(scope="module")
def keras_custom_file(tmp_path_factory):
    """A Keras model holding the registered custom layer, fitted briefly, saved, with its predictions."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((5,)), KerasScaledDense(3, scale=1.5, name="scaled"),
                              keras.layers.Dense(1, name="out")])
    model.compile(optimizer="adam", loss="mse")
    model.fit(X, np.ones((6, 1), "float32"), epochs=2, verbose=0)
    path = tmp_path_factory.mktemp("keras_custom") / "custom.keras"
    model.save(path)
    return path, np.asarray(model.predict(X, verbose=0))


@needs("keras")
def test_keras_written_custom_layer_loads_in_ember(keras_custom_file, backend):
    path, expected = keras_custom_file
    restored = ember.load_model(path)
    layer = restored.get_layer("scaled")
    assert type(layer) is ScaledDense and (layer.units, layer.scale) == (3, 1.5)
    np.testing.assert_allclose(_predict(restored), expected, **FLOAT32_PAIR)


@needs("keras")
def test_unregistered_custom_layers_cross_through_custom_objects(tmp_path, backend):
    """Keras writes an unregistered class's ``registered_name`` as its class name; so does Ember, and each
    library loads the other's file given ``custom_objects={"Name": class}``."""

    class Shifted(ScaledDense):  # an unregistered subclass: saved under its own class name
        pass

    class KerasShifted(KerasScaledDense):
        pass

    KerasShifted.__name__ = "Shifted"  # Keras names the weights' group after the class (shifted)
    inputs = ember.Input((5,))
    model = ember.Model(inputs, Shifted(2, scale=3.0, name="shifted")(inputs))
    model.build(seed=1)
    model.save(tmp_path / "ember.keras")
    keras_model = keras.Sequential([keras.Input((5,)), KerasShifted(2, scale=3.0, name="shifted")])
    keras_model.save(tmp_path / "keras.keras")
    entries = []
    for path in (tmp_path / "ember.keras", tmp_path / "keras.keras"):
        with zipfile.ZipFile(path) as archive:
            layer = json.loads(archive.read("config.json"))["config"]["layers"][1]
        entries.append((layer["class_name"], layer["registered_name"]))
    assert entries[0] == entries[1] == ("Shifted", "Shifted")
    in_keras = keras.saving.load_model(tmp_path / "ember.keras", custom_objects={"Shifted": KerasShifted})
    np.testing.assert_allclose(np.asarray(in_keras.predict(X, verbose=0)), _predict(model), **FLOAT32_PAIR)
    with pytest.raises(CheckpointError, match=r"unknown class or function 'Shifted': it is not registered"):
        ember.load_model(tmp_path / "keras.keras")
    in_ember = ember.load_model(tmp_path / "keras.keras", custom_objects={"Shifted": Shifted})
    np.testing.assert_allclose(_predict(in_ember), np.asarray(keras_model.predict(X, verbose=0)), **FLOAT32_PAIR)
