"""One registry for every file format: a saved name resolves through ``ember.serialization.lookup`` whether
it comes from an Ember ``.h5`` checkpoint or a Keras ``.keras`` archive.

Checked: every registered built-in resolves to itself through both formats' references (or the ``.keras``
writer refuses it, naming it); a custom ``@register_keras_serializable`` layer, initializer, activation,
loss and metric, and a ``custom_object_scope`` object, come back as the same classes from both files on
every backend; an unknown name fails with the same words from both; a scope never shadows a built-in
(Keras 3's rule, compared with Keras itself, torch backend). Reloads compare classes and configs, not
numbers, so no tolerance is involved.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import initializers, layers, losses, metrics, ops, serialization
from ember.saving import CheckpointError
from ember.saving.keras_format import layer_config, objects
from tests.helpers import needs
from tests.saving.keras_models import keras

PACKAGE = "tests_one_registry"
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Keras 3.15: NumPy 2 __array__ notices


@ember.saving.register_keras_serializable(package=PACKAGE)
class Scale(layers.Layer):
    """A Keras-style custom layer with a weight."""

    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.gain = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="gain")

    def call(self, inputs):
        return ops.multiply(ops.multiply(inputs, self.gain), self.factor)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


@ember.saving.register_keras_serializable(package=PACKAGE)
class HalfInit(initializers.Constant):
    pass


@ember.saving.register_keras_serializable(package=PACKAGE)
def cube(x):
    return x * x * x


@ember.saving.register_keras_serializable(package=PACKAGE)
class SquaredLoss(losses.Loss):
    def call(self, y_true, y_pred):
        return ops.mean(ops.square(ops.subtract(y_true, y_pred)), axis=-1)


@ember.saving.register_keras_serializable(package=PACKAGE)
class ErrorMetric(metrics.MeanSquaredError):
    pass


class Scoped(Scale):
    """Never registered: loadable through ``custom_object_scope`` / ``custom_objects`` only."""


class ScopedLoss(SquaredLoss):
    """Never registered either (a subclass's registration is its own)."""


def _model(middle):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(4, activation=cube, kernel_initializer=HalfInit(0.5),
                                                              name="dense"), middle, layers.Dense(1, name="out")])
    model.build(seed=0)
    return model


def _reload(model, path, **load):
    model.save(path)
    return ember.load_model(path, **load)


def _kinds(model):
    """What each saved name came back as: the classes and functions of the architecture and compile."""
    dense, middle = model.get_layer("dense"), model.layers[1]
    training = model._training
    compiled = None if training is None or training.trainer is None else (
        type(training.trainer.optimizer), type(training.compile_config["loss"]),
        tuple(type(m) for m in training.compile_config.get("metrics") or ()))
    return type(middle), type(dense.kernel_initializer), dense.activation, compiled


# ------------------------------------------------------------------------------ built-ins
def _builtins():
    return sorted(key for key in serialization._REGISTRY if serialization.is_builtin_key(key))


def test_every_builtin_resolves_to_itself_through_both_formats():
    """An ``.h5`` file names a built-in by its key, a ``.keras`` file by Keras's reference (what the writer
    emits for it): both resolve to the one object, even with a scope holding the same bare names."""
    without_keras_name = []
    shadows = {key.partition(">")[2]: object() for key in _builtins()}
    for scope in ({}, shadows):
        with ember.saving.custom_object_scope(scope):
            for key in _builtins():
                obj = serialization._REGISTRY[key]
                assert serialization.get_registered_class(key) is obj, key  # the .h5 reference
                names = serialization.keras_name(key)
                if names is None:
                    without_keras_name.append(key)
                    continue
                namespace, class_name = names
                reference = {"module": namespace, "class_name": class_name, "registered_name": None}
                if key == "ember>Lambda":  # its function would be bytecode: both directions refuse it, naming it
                    with pytest.raises(objects.KerasFormatError, match="Lambda layers cannot be written"):
                        layer_config.keras_layer_entry({"class_name": key, "config": {"name": "x"}})
                    with pytest.raises(objects.KerasFormatError, match="the file holds a Lambda layer"):
                        layer_config.check_supported([reference])
                elif namespace == "keras.layers":
                    written = layer_config.keras_layer_entry({"class_name": key, "config": {"name": "x"}})
                    assert (written["module"], written["class_name"], written["registered_name"]) == \
                        (namespace, class_name, None)
                    assert layer_config.ember_layer_class(reference) is obj, key
                else:
                    assert objects.resolve_key(reference, "test") == (key, obj), key
                    if isinstance(obj, type):
                        written = objects.to_keras({"class_name": key, "config": {}}, "test")
                        assert (written["module"], written["class_name"]) == names, key
    # Ember-only objects (wirings, feature transformers, ...) have no Keras name: the .keras writer says so.
    assert "ember>FullyConnected" in without_keras_name and "ember>Dense" not in without_keras_name
    with pytest.raises(objects.KerasFormatError, match="Ember's FullyConnected has no Keras counterpart"):
        objects.to_keras({"class_name": "ember>FullyConnected", "config": {}}, "layer 'ncp'.wiring")


def test_names_keras_shares_between_namespaces_resolve_by_namespace():
    """``Identity`` is a layer and an initializer, ``MeanSquaredError`` a loss and a metric: each Keras
    namespace finds its own, as each ``.h5`` key does."""
    pairs = [("keras.layers", "Identity", layers.Identity), ("keras.initializers", "Identity", initializers.Identity),
             ("keras.losses", "MeanSquaredError", losses.MeanSquaredError),
             ("keras.metrics", "MeanSquaredError", metrics.MeanSquaredError),
             ("keras.metrics", "AUC", metrics.AUC)]
    for namespace, name, cls in pairs:
        key = serialization.keras_key(namespace, name)
        assert serialization.get_registered_class(key) is cls
        assert serialization.get_registered_class(serialization.registered_name(cls)) is cls
        assert serialization.lookup(name, namespace=namespace) is cls
    with pytest.raises(ValueError, match=r"the bare name 'Identity' is ambiguous: Ember has "
                                         r"\['ember.initializers>Identity', 'ember>Identity'\]"):
        serialization.get_registered_class("Identity")


def test_the_identity_initializer_round_trips_through_both_formats(tmp_path, backend):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(3, kernel_initializer=initializers.Identity(2.0),
                                                              name="dense")])
    model.build(seed=0)
    for suffix in ("h5", "keras"):
        initializer = _reload(model, tmp_path / f"identity.{suffix}").get_layer("dense").kernel_initializer
        assert type(initializer) is initializers.Identity and initializer.gain == 2.0, suffix


# ------------------------------------------------------------------------------ custom objects
def test_registered_custom_objects_come_back_the_same_from_both_formats(tmp_path, backend):
    model = _model(Scale(3.0, name="scale"))
    model.compile(optimizer="adam", loss=SquaredLoss(), metrics=[ErrorMetric(name="error"), metrics.MeanSquaredError(),
                                                                 metrics.AUC()])
    kinds = [_kinds(_reload(model, tmp_path / f"custom.{suffix}")) for suffix in ("h5", "keras")]
    expected = (Scale, HalfInit, cube, (ember.optimizers.Adam, SquaredLoss,
                                        (ErrorMetric, metrics.MeanSquaredError, metrics.AUC)))
    assert kinds[0] == kinds[1] == expected


@ember.saving.register_keras_serializable(package=PACKAGE)
def absolute_error(y_true, y_pred):
    return ops.mean(ops.abs(ops.subtract(y_true, y_pred)), axis=-1)


def test_registered_functions_in_compile_come_back_the_same_from_both_formats(tmp_path, backend):
    model = _model(Scale(name="scale"))
    model.compile(optimizer="sgd", loss=absolute_error, metrics=[absolute_error, "mae"])
    for suffix in ("h5", "keras"):
        arguments = _reload(model, tmp_path / f"functions.{suffix}")._training.compile_config
        assert arguments["loss"] is absolute_error, suffix
        assert arguments["metrics"][0] is absolute_error and arguments["metrics"][1] == "mae", suffix


@pytest.mark.parametrize("how", ["custom_object_scope", "custom_objects"])
def test_scoped_objects_come_back_the_same_from_both_formats(tmp_path, backend, how):
    model = _model(Scoped(name="scoped"))
    model.compile(optimizer="sgd", loss=ScopedLoss())
    names = {"Scoped": Scoped, "ScopedLoss": ScopedLoss}
    kinds = []
    for suffix in ("h5", "keras"):
        path = tmp_path / f"scoped.{suffix}"
        model.save(path)
        if how == "custom_objects":
            kinds.append(_kinds(ember.load_model(path, custom_objects=names)))
        else:
            with ember.saving.custom_object_scope(names):
                kinds.append(_kinds(ember.load_model(path)))
    assert kinds[0] == kinds[1] == (Scoped, HalfInit, cube, (ember.optimizers.SGD, ScopedLoss, ()))


def test_an_unknown_custom_name_fails_with_the_same_words_from_both_formats(tmp_path, backend):
    model = _model(Scoped(name="scoped"))
    sentence = str(serialization.unknown_name_error("Custom>Scoped"))
    assert sentence.startswith("unknown class or function 'Scoped': it is not registered")
    assert "@ember.saving.register_keras_serializable()" in sentence and "custom_objects={'Scoped': Scoped}" in sentence
    for suffix in ("h5", "keras"):
        path = tmp_path / f"unknown.{suffix}"
        model.save(path)
        with pytest.raises(CheckpointError) as info:
            ember.load_model(path)
        assert sentence in str(info.value) and path.name in str(info.value), suffix


def test_a_name_no_longer_registered_fails_with_the_same_words_from_both_formats(tmp_path, backend):
    @ember.saving.register_keras_serializable(package=f"{PACKAGE}_gone")
    class Gone(Scale):
        pass

    model = _model(Gone(name="gone"))
    for suffix in ("h5", "keras"):
        model.save(tmp_path / f"gone.{suffix}")
    key = f"{PACKAGE}_gone>Gone"
    del ember.saving.get_custom_objects()[key]  # as in a process that never registered it
    sentence = str(serialization.unknown_name_error(key))
    assert f"register_keras_serializable(package='{PACKAGE}_gone', name='Gone')" in sentence
    for suffix in ("h5", "keras"):
        with pytest.raises(CheckpointError) as info:
            ember.load_model(tmp_path / f"gone.{suffix}")
        assert sentence in str(info.value), suffix
    for suffix in ("h5", "keras"):  # the same key, given for one call
        assert type(ember.load_model(tmp_path / f"gone.{suffix}", custom_objects={key: Gone}).layers[1]) is Gone


def test_an_unregistered_function_is_refused_by_both_writers(tmp_path, backend):
    def unregistered(y_true, y_pred):
        return ops.mean(ops.square(ops.subtract(y_true, y_pred)), axis=-1)

    model = _model(Scale(name="scale"))
    model.compile(optimizer="sgd", loss=unregistered)
    for suffix in ("h5", "keras"):
        with pytest.warns(UserWarning, match="compile configuration is not"):
            restored = _reload(model, tmp_path / f"function.{suffix}")
        assert _kinds(restored)[3] is None, suffix  # loaded uncompiled, the same from both files


@needs("keras")
def test_a_scope_never_shadows_a_builtin_as_in_keras(tmp_path, backend):
    class Other(layers.Dense):
        pass

    class KerasOther(keras.layers.Dense):
        pass

    keras_config = keras.saving.serialize_keras_object(keras.layers.Dense(2))
    in_keras = keras.saving.deserialize_keras_object(keras_config, custom_objects={"Dense": KerasOther})
    assert type(in_keras) is keras.layers.Dense
    model = _model(Scale(name="scale"))
    for suffix in ("h5", "keras"):
        restored = _reload(model, tmp_path / f"builtin.{suffix}", custom_objects={"Dense": Other})
        assert type(restored.get_layer("out")) is layers.Dense, suffix
    assert type(ember.saving.deserialize_keras_object(keras_config, custom_objects={"Dense": Other})) is layers.Dense


@needs("keras")
def test_keras_metric_and_loss_names_resolve_to_the_same_kinds_as_in_keras():
    for module in ("keras.losses", "keras.metrics"):
        for name in ("MeanSquaredError", "AUC") if module == "keras.metrics" else ("MeanSquaredError",):
            data = {"module": module, "class_name": name, "config": {}, "registered_name": None}
            theirs = keras.saving.deserialize_keras_object(data)
            ours = ember.saving.deserialize_keras_object(data)
            assert type(ours).__name__ == type(theirs).__name__
            assert type(ours).__module__.split(".")[2] == type(theirs).__module__.split(".")[2]  # losses/metrics


@pytest.fixture(scope="module")
def keras_custom_loss():
    """The custom loss registered in Keras under the name Ember registers ``SquaredLoss`` under."""

    @keras.saving.register_keras_serializable(package=PACKAGE, name="SquaredLoss")
    class KerasSquaredLoss(keras.losses.Loss):
        def call(self, y_true, y_pred):
            return keras.ops.mean(keras.ops.square(y_true - y_pred), axis=-1)

    return KerasSquaredLoss


@needs("keras")
def test_a_custom_compile_loss_crosses_between_ember_and_keras(tmp_path, backend, keras_custom_loss):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(1, name="out")])
    model.build(seed=0)
    model.compile(optimizer="adam", loss=SquaredLoss())
    model.save(tmp_path / "ember.keras")
    assert type(keras.saving.load_model(tmp_path / "ember.keras").loss) is keras_custom_loss
    keras_model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="out")])
    keras_model.compile(optimizer="adam", loss=keras_custom_loss())
    keras_model.fit(np.ones((4, 3), "float32"), np.ones((4, 1), "float32"), epochs=1, verbose=0)
    keras_model.save(tmp_path / "keras.keras")
    restored = ember.load_model(tmp_path / "keras.keras")
    assert type(restored._training.compile_config["loss"]) is SquaredLoss


# ------------------------------------------------------------------------------ the registry itself
def test_a_taken_name_is_refused_unless_the_same_definition_registers_again():
    @serialization.register_serializable(package=f"{PACKAGE}_taken", name="Thing")
    class First:
        def get_config(self):
            return {}

    class Second(First):
        pass

    with pytest.raises(ValueError, match=rf"'{PACKAGE}_taken>Thing' is already registered to .*First"):
        serialization.register_serializable(package=f"{PACKAGE}_taken", name="Thing")(Second)
    assert serialization.get_registered_class(f"{PACKAGE}_taken>Thing") is First


def test_keras_names_are_declared_for_registered_builtins_only():
    with pytest.raises(ValueError, match="namespace must be a Keras module name"):
        serialization.add_keras_names("layers", [layers.Dense])
    with pytest.raises(ValueError, match="is not registered under one of Ember's own names"):
        serialization.add_keras_names("keras.layers", [Scale])
    with pytest.raises(ValueError, match=r"Keras's keras.layers.NoSuchLayer has no Ember equivalent"):
        serialization.keras_key("keras.layers", "NoSuchLayer")
    assert serialization.keras_namespace("keras.src.backend.torch.optimizers.torch_adam") == "keras.optimizers"
    assert serialization.keras_key("keras.src.backend.torch.optimizers.torch_adam", "Adam", "Adam") == "ember>Adam"


def test_saving_exports_its_names_by_plain_imports():
    """``ember.saving`` binds every exported name at import (no lazy lookup of modules by name)."""
    assert "__getattr__" not in vars(ember.saving)
    for name in ember.saving.__all__:
        assert name in vars(ember.saving), name
    assert ember.saving.load_model is ember.load_model is ember.models.load_model
