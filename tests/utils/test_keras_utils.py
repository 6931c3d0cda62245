"""``ember.utils``'s Keras utilities against Keras 3 itself (torch backend) as the reference."""

from __future__ import annotations

import io
import random

import numpy as np
import pytest

import ember
from ember import layers, ops, utils
from tests.helpers import needs
from tests.saving.keras_models import keras
from tests.tolerances import FLOAT32, FLOAT32_PAIR

# Keras 3.15 on torch warns about NumPy 2 __array__(copy=...) on every conversion.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# ------------------------------------------------------------------------------ to_categorical
@needs("keras")
@pytest.mark.parametrize("labels,num_classes", [
    ([0, 2, 1, 2], None), ([[1], [0], [3]], 5), (np.array([[0, 1], [2, 0]]), 3), (np.array([1.0, 0.0]), None)])
def test_to_categorical_matches_keras(labels, num_classes):
    expected = keras.utils.to_categorical(labels, num_classes)
    got = utils.to_categorical(labels, num_classes)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    np.testing.assert_array_equal(got, np.asarray(expected))


def test_to_categorical_keeps_backend_arrays_on_the_backend(backend):
    got = utils.to_categorical(ops.convert_to_tensor(np.array([2, 0], "int32")), 3)
    assert ops.is_array(got) and not isinstance(got, np.ndarray) or backend == "numpy"
    np.testing.assert_array_equal(ops.to_numpy(got), np.eye(3, dtype="float32")[[2, 0]])


@pytest.mark.parametrize("labels,num_classes,message", [
    ([0, 3], 3, r"\[0, 3\)"), ([-1, 0], None, r"class indices"), ([0.5], None, "integer class indices"),
    ([0, 1], 0, "num_classes must be a positive int")])
def test_to_categorical_rejects_bad_labels(labels, num_classes, message):
    with pytest.raises(ValueError, match=message):
        utils.to_categorical(labels, num_classes)


@needs("keras")
def test_normalize_matches_keras():
    x = np.random.default_rng(0).normal(size=(4, 3)).astype("float32")
    np.testing.assert_allclose(utils.normalize(x, -1, 2), np.asarray(keras.utils.normalize(x, -1, 2)), **FLOAT32_PAIR)
    # Keras 3.15 turns axis=0 into -1 (``axis or -1``): the reference for axis=0 is NumPy float64.
    x64 = x.astype("float64")
    np.testing.assert_allclose(utils.normalize(x, 0, 1), x64 / np.abs(x64).sum(axis=0, keepdims=True), **FLOAT32)


# ------------------------------------------------------------------------------- pad_sequences
SEQUENCES = [[1, 2, 3, 4], [5], [], [6, 7]]


@needs("keras")
@pytest.mark.parametrize("kwargs", [
    {}, {"maxlen": 2}, {"maxlen": 3, "padding": "post"}, {"maxlen": 2, "truncating": "post"},
    {"maxlen": 5, "padding": "post", "truncating": "post", "value": -1}, {"dtype": "float32", "value": 0.5}])
def test_pad_sequences_matches_keras(kwargs):
    np.testing.assert_array_equal(utils.pad_sequences(SEQUENCES, **kwargs),
                                  keras.utils.pad_sequences(SEQUENCES, **kwargs))
    assert utils.pad_sequences(SEQUENCES, **kwargs).dtype == keras.utils.pad_sequences(SEQUENCES, **kwargs).dtype


def test_pad_sequences_to_length_zero_is_empty():  # Keras 3.15 fails here (x[i, -4:] of a 0-wide row)
    assert utils.pad_sequences(SEQUENCES, maxlen=0).shape == (4, 0)


@needs("keras")
def test_pad_sequences_of_vectors_and_of_text_match_keras():
    steps = [np.ones((3, 2)), np.full((1, 2), 2.0)]
    np.testing.assert_array_equal(utils.pad_sequences(steps, dtype="float32"),
                                  keras.utils.pad_sequences(steps, dtype="float32"))
    words = [["a", "b"], ["c"]]
    np.testing.assert_array_equal(utils.pad_sequences(words, dtype=object, value="<pad>"),
                                  keras.utils.pad_sequences(words, dtype=object, value="<pad>"))


@pytest.mark.parametrize("kwargs,message", [
    ({"padding": "middle"}, "padding must be 'pre' or 'post'"), ({"truncating": "x"}, "truncating"),
    ({"maxlen": -1}, "maxlen"), ({"value": "pad"}, "cannot hold the padding value")])
def test_pad_sequences_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        utils.pad_sequences(SEQUENCES, **kwargs)
    with pytest.raises(ValueError, match="differ in shape"):
        utils.pad_sequences([np.ones((2, 2)), np.ones((2, 3))])


# ------------------------------------------------------------------------------ set_random_seed
def test_set_random_seed_makes_every_stream_repeat(backend):
    def draw():
        # Fixed names: Ember derives per-layer seeds from layer names.
        model = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="d"), layers.Dropout(0.5, name="drop")])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(np.ones((8, 3), "float32"), np.ones((8, 2), "float32"), epochs=1, verbose=0)
        return (random.random(), np.random.rand(), ops.to_numpy(ember.random.normal((3,))),
                ops.to_numpy(model.state["params"][model.layers[0].name]["kernel"]))

    utils.set_random_seed(7)
    first = draw()
    utils.set_random_seed(7)
    second = draw()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="non-negative int"):
        utils.set_random_seed(-1)


# ------------------------------------------------------------------------------------- Progbar
def test_progbar_averages_like_keras_except_stateful_metrics():
    out = io.StringIO()
    bar = utils.Progbar(6, verbose=2, stateful_metrics=["lr"], output=out)
    bar.update(2, values=[("loss", 3.0), ("lr", 0.1)])  # covers 2 steps
    bar.add(4, values=[("loss", 0.0), ("lr", 0.05)])  # covers 4 more
    line = out.getvalue()
    assert "loss: 1.0000" in line  # (3*2 + 0*4) / 6, Keras's step-weighted mean
    assert "lr: 0.0500" in line and line.startswith("6/6")
    silent = io.StringIO()
    utils.Progbar(2, verbose=0, output=silent).update(2, [("loss", 1.0)])
    assert silent.getvalue() == ""
    with pytest.raises(ValueError, match="verbose"):
        utils.Progbar(3, verbose=3)


# -------------------------------------------------------------------------------------- images
@needs("keras")
def test_image_helpers_match_keras(tmp_path):
    pixels = np.random.default_rng(0).uniform(-1, 3, size=(6, 5, 3)).astype("float32")
    for data_format, array in (("channels_last", pixels), ("channels_first", pixels.transpose(2, 0, 1))):
        ours = utils.array_to_img(array, data_format=data_format)
        theirs = keras.utils.array_to_img(array, data_format=data_format)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
        np.testing.assert_array_equal(utils.img_to_array(ours, data_format=data_format),
                                      keras.utils.img_to_array(theirs, data_format=data_format))
    utils.save_img(tmp_path / "x.png", pixels)
    for kwargs in ({}, {"color_mode": "grayscale"}, {"target_size": (3, 4), "interpolation": "bilinear"},
                   {"target_size": (2, 2), "keep_aspect_ratio": True}, {"color_mode": "rgba"}):
        np.testing.assert_array_equal(utils.img_to_array(utils.load_img(tmp_path / "x.png", **kwargs)),
                                      keras.utils.img_to_array(keras.utils.load_img(tmp_path / "x.png", **kwargs)))
    with pytest.raises(ValueError, match="1, 3 or 4 channels"):
        utils.array_to_img(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="color_mode"):
        utils.load_img(tmp_path / "x.png", color_mode="cmyk")


# ----------------------------------------------------------------------------- serialization
def test_custom_objects_registration_scopes_and_keras_configs(tmp_path):
    class Shift(layers.DeclarativeLayer):
        amount: float = 1.0

        def call(self, params, inputs):
            return ops.add(inputs, self.amount)

        def compute_output_shape(self, input_shape):
            return input_shape

    model = ember.Sequential([ember.Input((2,)), Shift(amount=2.0, name="shift")])
    model.build(seed=0)
    model.save(tmp_path / "m.h5")
    with pytest.raises(ValueError, match="Shift"):
        ember.load_model(tmp_path / "m.h5")
    with utils.custom_object_scope({"Other": int}, {"Shift": Shift}):
        assert ember.load_model(tmp_path / "m.h5").layers[0].amount == 2.0
    utils.get_custom_objects()["Shift"] = Shift
    try:
        assert ember.load_model(tmp_path / "m.h5").layers[0].amount == 2.0
    finally:
        del utils.get_custom_objects()["Shift"]
    registered = utils.register_keras_serializable(package="utils_test")(Shift)
    assert utils.get_registered_name(registered) == "utils_test>Shift"
    assert utils.get_registered_object("utils_test>Shift") is Shift
    assert utils.register_serializable is ember.saving.register_serializable


@needs("keras")
def test_deserialize_keras_object_reads_keras_serialized_objects():
    initializer = utils.deserialize_keras_object(
        keras.saving.serialize_keras_object(keras.initializers.HeNormal(seed=3)))
    assert type(initializer).__name__ == "HeNormal" and initializer.seed == 3
    layer = utils.deserialize_keras_object(keras.saving.serialize_keras_object(keras.layers.Dense(4, name="k")))
    assert (type(layer).__name__, layer.units, layer.name) == ("Dense", 4, "k")
    assert utils.deserialize_keras_object(utils.serialize_keras_object(layer)).units == 4
    with pytest.raises(TypeError, match="unexpected keyword"):
        utils.deserialize_keras_object({}, module_objects={})


def test_pydataset_and_sequence_are_the_dataset_protocol():
    class Batches(utils.PyDataset):
        def __len__(self):
            return 2

        def __getitem__(self, index):
            return np.full((4, 1), index, "float32"), np.full((4, 1), 2.0 * index, "float32")

    assert utils.Sequence is utils.PyDataset is ember.data.Dataset
    model = ember.Sequential([ember.Input((1,)), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    assert len(model.fit(Batches(), epochs=2, verbose=0).history["loss"]) == 2


# ------------------------------------------------------------------------------ small helpers
@needs("keras")
@pytest.mark.parametrize("args", [((1,),), ((1,), (2,)), ((1,), (2,), (3,)), ([1, 2],), (np.ones(2),)])
def test_pack_and_unpack_match_keras(args):
    packed = utils.pack_x_y_sample_weight(*args)
    expected = keras.utils.pack_x_y_sample_weight(*args)
    assert type(packed) is type(expected)
    if isinstance(expected, tuple):
        assert len(packed) == len(expected) and all(p is e for p, e in zip(packed, expected))
    else:
        assert packed is expected
    assert [id(v) for v in utils.unpack_x_y_sample_weight(packed)] == \
        [id(v) for v in keras.utils.unpack_x_y_sample_weight(expected)]
    with pytest.raises(ValueError, match="more than|elements"):
        utils.unpack_x_y_sample_weight((1, 2, 3, 4))


def test_graph_helpers_and_aliases():
    a, b = ember.Input((2,), name="a"), ember.Input((2,), name="b")
    out = layers.Add()([layers.Dense(2)(b), a])
    assert [t.name for t in utils.get_source_inputs(out)] == ["b", "a"]
    assert utils.is_keras_tensor(out) and not utils.is_keras_tensor(np.ones(2))
    with pytest.raises(TypeError, match="symbolic tensor"):
        utils.get_source_inputs(np.ones(2))
    assert utils.CustomObjectScope is utils.custom_object_scope
    assert utils.clear_session is ember.clear_session and utils.standardize_dtype("float") == "float32"


# --------------------------------------------------------------------- timeseries windows
def _reference_windows(data, targets, length, stride, rate, start, end):
    """Keras's documented semantics written out: window k starts at start + k * stride."""
    windows, labels = [], []
    first = start
    while first + (length - 1) * rate < end and (targets is None or first < len(targets)):
        windows.append(data[first:first + length * rate:rate])
        if targets is not None:
            labels.append(targets[first])
        first += stride
    return np.array(windows), np.array(labels)


@pytest.mark.parametrize("length,stride,rate,start,end,batch", [
    (3, 1, 1, None, None, 4), (4, 2, 2, 1, 18, 3), (2, 3, 1, 5, None, None)])
def test_timeseries_windows_follow_keras_semantics(length, stride, rate, start, end, batch):
    data = np.arange(40, dtype="float32").reshape(20, 2)
    targets = np.arange(20) * 10
    dataset = utils.timeseries_dataset_from_array(data, targets, length, stride, rate, batch_size=batch,
                                                  start_index=start, end_index=end)
    items = list(dataset)  # Python iteration batch by batch
    if batch is None:
        windows, labels = np.stack([w for w, _ in items]), np.array([t for _, t in items])
    else:
        windows, labels = np.concatenate([w for w, _ in items]), np.concatenate([t for _, t in items])
    expected_windows, expected_labels = _reference_windows(data, targets, length, stride, rate, start or 0,
                                                           end or 20)
    np.testing.assert_array_equal(windows, expected_windows)
    np.testing.assert_array_equal(labels, expected_labels)


def test_timeseries_dataset_shuffles_trains_and_checks_arguments():
    data = np.sin(np.linspace(0, 6, 50)).astype("float32")[:, None]
    dataset = utils.timeseries_dataset_from_array(data[:-3], data[3:], 3, batch_size=8, shuffle=True, seed=1)
    first = np.concatenate([x for x, _ in dataset])
    assert sorted(map(tuple, first.reshape(len(first), -1))) == sorted(
        map(tuple, np.concatenate([x for x, _ in utils.timeseries_dataset_from_array(
            data[:-3], data[3:], 3, batch_size=8)]).reshape(len(first), -1)))
    only_inputs = utils.timeseries_dataset_from_array(data, None, 5, batch_size=10)
    assert only_inputs[0].shape == (10, 5, 1)
    model = ember.Sequential([ember.Input((3, 1)), layers.Flatten(), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    assert len(model.fit(dataset, epochs=1, verbose=0).history["loss"]) == 1
    with pytest.raises(ValueError, match="sequence_length"):
        utils.timeseries_dataset_from_array(data, None, 0)
    with pytest.raises(ValueError, match="no complete window"):
        utils.timeseries_dataset_from_array(data[:2], None, 3)
    with pytest.raises(IndexError):
        only_inputs[len(only_inputs)]
