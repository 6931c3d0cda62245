"""Keras 3 interoperability: files written by real Keras load in Ember on every backend and
predict the same, and files Ember writes load in Keras (``keras.saving.load_model`` /
``load_weights``) and predict the same. Keras itself (torch backend) is the reference.

Tolerance: float32 (rtol=atol=1e-5). The backends sum the conv/attention/recurrent reductions in
different orders from Keras's torch kernels, which moves results by a few float32 ulps of
values of order 1 over the ~10-100 terms summed (measured differences are <= 1e-6).
"""

from __future__ import annotations

import json
import warnings
import zipfile

import numpy as np
import optree
import pytest

import ember
from ember import layers, ops
from ember.saving import CheckpointError
from ember.saving.keras_format import KerasFormatError
from tests.saving.keras_models import MODELS, as_list, trained
from tests.tolerances import FLOAT32_PAIR

keras = pytest.importorskip("keras")  # the other side of every test (tests.saving.keras_models sets its backend)

# Keras 3.15 on torch warns about NumPy 2 __array__(copy=...) on every conversion.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# Ember against Keras on the same weights: two float32 implementations (FLOAT32_PAIR), whose absolute part is
# scaled for terms of unit size (activations up to 1 times weights, summed) rather than 0.1: 10x.
TOL = {"rtol": FLOAT32_PAIR["rtol"], "atol": 10 * FLOAT32_PAIR["atol"]}


@pytest.fixture(scope="module")
def keras_files(tmp_path_factory):
    """Every table model fitted in Keras, saved as .keras and .weights.h5, with Keras's predictions."""
    directory = tmp_path_factory.mktemp("keras")
    files = {}
    for name in MODELS:
        model, x = trained(name)
        model.save(directory / f"{name}.keras")
        model.save_weights(directory / f"{name}.weights.h5")
        files[name] = (directory / f"{name}.keras", directory / f"{name}.weights.h5", x,
                       as_list(model.predict(x, verbose=0)))
    return files


def _ember_predictions(model, x):
    return [np.asarray(ops.to_numpy(o)) for o in as_list_native(model.predict(x, verbose=0))]


def as_list_native(outputs):
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def _assert_close(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, **TOL)


@pytest.mark.parametrize("name", list(MODELS))
def test_keras_file_loads_in_ember_and_predicts_the_same(backend, keras_files, name):
    path, _, x, expected = keras_files[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the compile config and Adam's state both map
        model = ember.load_model(path)
    assert model.optimizer.name.startswith("adam") and model.optimizer.learning_rate == pytest.approx(0.05)
    assert all(ops.is_array(leaf) for leaf in optree.tree_leaves(model.state))  # on the active backend
    _assert_close(_ember_predictions(model, x), expected)


@pytest.mark.parametrize("name", list(MODELS))
def test_ember_written_keras_file_loads_in_keras(keras_files, tmp_path, name):
    path, _, x, expected = keras_files[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ember.load_model(path)
    model.save(tmp_path / "from_ember.keras")
    restored = keras.saving.load_model(tmp_path / "from_ember.keras")
    _assert_close(as_list(restored.predict(x, verbose=0)), expected)
    assert [layer.name for layer in restored.layers] == [layer.name for layer in keras.saving.load_model(path).layers]


def test_nested_models_dict_io_and_attention_masks_cross_both_ways(backend, tmp_path):
    """A nested Sequential, a nested functional model called twice, dict inputs and outputs, and a
    MultiHeadAttention fed an attention_mask input."""
    rng = np.random.default_rng(2)
    L = keras.layers
    inner = keras.Sequential([keras.Input((4,)), L.Dense(3, activation="relu"), L.Dense(3)], name="inner")
    encoder_in = keras.Input((3,))
    encoder = keras.Model(encoder_in, L.Dense(2)(encoder_in), name="encoder")
    x, seq, mask = keras.Input((4,), name="x"), keras.Input((5, 6), name="seq"), keras.Input((5, 5), name="mask")
    first, second = encoder(inner(x)), encoder(L.Dense(3)(x))
    attended = L.MultiHeadAttention(2, 3)(seq, seq, attention_mask=mask)
    outputs = {"a": L.Dense(1, name="a")(L.Concatenate()([first, second])),
               "b": L.GlobalAveragePooling1D(name="b")(attended)}
    reference = keras.Model({"x": x, "seq": seq, "mask": mask}, outputs)
    inputs = {"x": rng.normal(size=(2, 4)).astype("float32"), "seq": rng.normal(size=(2, 5, 6)).astype("float32"),
              "mask": rng.uniform(size=(2, 5, 5)) > 0.3}
    expected = reference.predict(inputs, verbose=0)
    reference.save(tmp_path / "nested.keras")
    model = ember.load_model(tmp_path / "nested.keras")
    got = model.predict_on_batch(inputs)
    for key in expected:
        np.testing.assert_allclose(ops.to_numpy(got[key]), expected[key], **TOL)
    model.save(tmp_path / "back.keras")
    back = keras.saving.load_model(tmp_path / "back.keras").predict(inputs, verbose=0)
    for key in expected:
        np.testing.assert_allclose(back[key], expected[key], **TOL)
    model.state = None
    model.load_weights(tmp_path / "nested.keras")  # the weights inside a .keras archive
    np.testing.assert_allclose(ops.to_numpy(model.predict_on_batch(inputs)["a"]), expected["a"], **TOL)


def test_keras_weights_file_loads_into_a_model_built_in_ember(backend, keras_files):
    """Keras matches weights by layer class and order, not by name: so does Ember for Keras files."""
    _, weights, x, expected = keras_files["recurrent"]
    inputs = ember.Input((6, 4))
    h = layers.Bidirectional(layers.LSTM(3, return_sequences=True))(inputs)
    h = layers.GRU(3, return_sequences=True)(h)
    h = layers.SimpleRNN(2)(h)
    model = ember.Model(inputs, layers.Dense(1)(h))
    report = model.load_weights(weights)
    assert not report.skipped
    _assert_close(_ember_predictions(model, x), expected)


def test_model_built_and_trained_in_ember_predicts_the_same_in_keras(tmp_path):
    """An Ember-native model (BatchNorm statistics moved by Ember's fit) saved as .keras and as
    Keras weights: Keras rebuilds it and predicts what Ember predicts."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 6, 3)).astype("float32")
    inputs = ember.Input((6, 3))
    h = layers.Conv1D(4, 3, padding="same", activation="relu")(inputs)
    h = layers.BatchNormalization()(h)
    h = layers.LSTM(4)(h)
    model = ember.Model(inputs, layers.Dense(2)(h))
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, rng.normal(size=(16, 2)).astype("float32"), epochs=2, batch_size=8, verbose=0)
    expected = model.predict(x, verbose=0)
    model.save(tmp_path / "ember.keras")
    _assert_close(as_list(keras.saving.load_model(tmp_path / "ember.keras").predict(x, verbose=0)), [expected])
    model.save_weights(tmp_path / "ember.weights.h5", format="keras")
    twin = keras.saving.load_model(tmp_path / "ember.keras")
    twin.load_weights(tmp_path / "ember.weights.h5")
    _assert_close(as_list(twin.predict(x, verbose=0)), [expected])


OPTIMIZERS = {"adam": lambda: keras.optimizers.Adam(0.01), "adamw": lambda: keras.optimizers.AdamW(0.01),
              "sgd_momentum": lambda: keras.optimizers.SGD(0.05, momentum=0.9),
              "rmsprop_centered_momentum": lambda: keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
              "adagrad": lambda: keras.optimizers.Adagrad(0.05), "adamax": lambda: keras.optimizers.Adamax(0.01),
              "lion": lambda: keras.optimizers.Lion(0.001)}


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
def test_training_continues_across_the_two_libraries(backend, tmp_path, optimizer):
    """The optimizer state moves with the file both ways: one more epoch in Ember after loading a
    Keras file gives what one more epoch in Keras gives, and back again."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 5)).astype("float32"), rng.normal(size=(32, 2)).astype("float32")
    make = OPTIMIZERS[optimizer]
    keras.utils.set_random_seed(0)
    reference = keras.Sequential([keras.Input((5,)), keras.layers.Dense(4, activation="relu"),
                                  keras.layers.BatchNormalization(), keras.layers.Dense(2)])
    reference.compile(make(), "mse", metrics=["mae"])
    fit = {"batch_size": 8, "verbose": 0, "shuffle": False}
    reference.fit(x, y, epochs=2, **fit)
    reference.save(tmp_path / "k.keras")
    model = ember.load_model(tmp_path / "k.keras")
    reference.fit(x, y, epochs=1, **fit)
    model.fit(x, y, epochs=1, **fit)
    np.testing.assert_allclose(_ember_predictions(model, x)[0], reference.predict(x, verbose=0), **TOL)
    model.save(tmp_path / "e.keras")
    again = keras.saving.load_model(tmp_path / "e.keras")
    assert int(again.optimizer.iterations) == 12
    model.save(tmp_path / "no_optimizer.keras", include_optimizer=False)
    with pytest.warns(UserWarning, match="the file holds no optimizer variables"):
        assert ember.load_model(tmp_path / "no_optimizer.keras").optimizer is not None
    again.fit(x, y, epochs=1, **fit)
    model.fit(x, y, epochs=1, **fit)
    np.testing.assert_allclose(_ember_predictions(model, x)[0], again.predict(x, verbose=0), **TOL)


def test_unmapped_optimizer_state_is_reported(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Nadam(0.01), "mse")
    model.fit(np.ones((4, 3), "float32"), np.ones((4, 1), "float32"), verbose=0)
    model.save(tmp_path / "nadam.keras")
    with pytest.warns(UserWarning, match=r"fresh optimizer state: the state of optimizer Nadam is not mapped"):
        restored = ember.load_model(tmp_path / "nadam.keras")
    assert type(restored.optimizer).__name__ == "Nadam"
    assert ember.load_model(tmp_path / "nadam.keras", compile=False).optimizer is None


def test_custom_activation_registered_in_both_libraries_crosses(tmp_path):
    @keras.saving.register_keras_serializable(package="interop")
    def cube(x):
        return x * x * x

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation=cube)])
    x = np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3)
    model.save(tmp_path / "cube.keras")
    with pytest.raises(CheckpointError, match=r"interop>cube.*not registered"):
        ember.load_model(tmp_path / "cube.keras")

    def ember_cube(x):
        return ops.multiply(ops.multiply(x, x), x)

    ember.utils.register_keras_serializable(package="interop", name="cube")(ember_cube)
    restored = ember.load_model(tmp_path / "cube.keras")
    np.testing.assert_allclose(restored.predict_on_batch(x), model.predict(x, verbose=0), **TOL)
    restored.save(tmp_path / "back.keras")
    np.testing.assert_allclose(keras.saving.load_model(tmp_path / "back.keras").predict(x, verbose=0),
                               model.predict(x, verbose=0), **TOL)


def test_keras_layer_ember_lacks_is_named(tmp_path):
    @keras.saving.register_keras_serializable(package="interop_test")
    class Doubler(keras.layers.Layer):
        def call(self, inputs):
            return inputs * 2

    model = keras.Sequential([keras.Input((3,)), Doubler(), keras.layers.Dense(1)])
    model.save(tmp_path / "custom.keras")
    with pytest.raises(CheckpointError, match=r"Doubler"):
        ember.load_model(tmp_path / "custom.keras")


def test_lambda_layers_are_refused_whatever_safe_mode_says(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Lambda(lambda t: t + 1.0)])
    model.save(tmp_path / "lambda.keras")
    for safe_mode in (True, False):
        with pytest.raises(CheckpointError, match=r"Lambda.*never executes code"):
            ember.load_model(tmp_path / "lambda.keras", safe_mode=safe_mode)


def test_bad_files_give_clear_errors(tmp_path, keras_files):
    text = tmp_path / "not_zip.keras"
    text.write_text("hello")
    with pytest.raises(CheckpointError, match="not a .keras file"):
        ember.load_model(text)
    with pytest.raises(FileNotFoundError):
        ember.load_model(tmp_path / "missing.keras")
    empty = tmp_path / "empty.keras"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("metadata.json", json.dumps({}))
    with pytest.raises(CheckpointError, match="no config.json"):
        ember.load_model(empty)


def test_mismatched_keras_weights_change_nothing(keras_files):
    _, weights, _, _ = keras_files["mlp"]
    model = ember.Sequential([ember.Input((5,)), layers.Dense(8), layers.Dense(4)])
    model.build(seed=0)
    before = {k: np.array(v["kernel"]) for k, v in model.state["params"].items()}
    with pytest.raises(CheckpointError, match=r"do not match"):
        model.load_weights(weights)
    assert all(np.array_equal(model.state["params"][k]["kernel"], v) for k, v in before.items())


def test_what_keras_cannot_express_is_refused_on_save(tmp_path):
    model = ember.Sequential([ember.Input((4, 3)), layers.LSTM(2, time_major=True)])
    model.build(seed=0)
    with pytest.raises(KerasFormatError, match=r"time_major"):
        model.save(tmp_path / "m.keras")
    bf16 = ember.Sequential([ember.Input((3,)), layers.Dense(2, dtype="bfloat16")])
    bf16.build(seed=0)
    with pytest.raises(KerasFormatError, match=r"bfloat16"):
        bf16.save(tmp_path / "b.keras")
    assert not (tmp_path / "m.keras").exists() and not (tmp_path / "b.keras").exists()
    with pytest.raises(ValueError, match=r"format must be 'ember' or 'keras'"):
        bf16.save_weights(tmp_path / "w.h5", format="tf")


def test_metadata_names_embers_version_and_the_keras_format_it_follows(tmp_path, capsys):
    """``ember_version`` comes from ``ember/_version.py``; ``keras_version`` and ``date_saved`` are the
    fields Keras writes (its ``KerasFileEditor`` reads both)."""
    model = ember.Sequential([ember.Input((3,)), layers.Dense(2)])
    model.build(seed=0)
    path = tmp_path / "m.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        metadata = json.loads(archive.read("metadata.json"))
    assert metadata["ember_version"] == ember.__version__
    assert metadata["keras_version"].count(".") == 2 and "date_saved" in metadata
    keras.saving.KerasFileEditor(str(path)).summary()
    assert f"Saved with Keras {metadata['keras_version']}" in capsys.readouterr().out
