"""``ember.utils.*_dataset_from_directory`` and ``timeseries_dataset_from_array`` against Keras 3.

Keras's ``index_directory``/``get_training_or_validation_split`` (NumPy, no TensorFlow) are the
oracle for the file order, the labels and the split; Keras's Pillow image loader
(``_load_image_grain``, torch backend: decode, crop/pad, ``ops.image.resize``) for the pixels;
NumPy float64 from the documented semantics for WAV samples and timeseries windows (Keras's
``timeseries_dataset_from_array`` and audio loader need TensorFlow, which is not installed).
The folders are a dozen generated 8x8 files in ``tmp_path``.
"""

from __future__ import annotations

import os
import threading
import wave

import numpy as np
import pytest

import ember
from ember import layers, ops, utils
from tests.helpers import needs, optional_import
from tests.saving.keras_models import keras
from tests.tolerances import FLOAT32, FLOAT64

# Keras's loaders' NumPy and Pillow parts (the torch backend, set by tests.saving.keras_models)
keras_dataset_utils = None if keras is None else optional_import("keras.src.utils.dataset_utils")
keras_image_utils = None if keras is None else optional_import("keras.src.utils.image_dataset_utils")

PIL = pytest.importorskip("PIL.Image")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
CLASSES = ("cats", "dogs")


def _keras_utils():
    return keras_dataset_utils, keras_image_utils


def _write_images(root, sizes=((8, 8),), per_class=6, mode="RGB", classes=CLASSES):
    rng = np.random.default_rng(0)
    for label in classes:
        os.makedirs(root / label, exist_ok=True)
        for i in range(per_class):
            height, width = sizes[i % len(sizes)]
            channels = {"RGB": 3, "RGBA": 4, "L": 1}[mode]
            pixels = rng.integers(0, 256, (height, width, channels), dtype=np.uint8)
            PIL.fromarray(pixels[..., 0] if channels == 1 else pixels, mode).save(root / label / f"img_{i}.png")
    return root


@pytest.fixture
def image_folder(tmp_path):
    return _write_images(tmp_path / "images")


def _all_batches(dataset):
    xs, ys = zip(*[dataset[i] for i in range(len(dataset))])
    return np.concatenate(xs), np.concatenate(ys)


# ------------------------------------------------------------------------------ files, labels, split
@needs("keras")
@pytest.mark.parametrize("shuffle,seed,split,subset", [
    (False, None, None, None), (True, 7, None, None), (True, 7, 0.25, "training"), (True, 7, 0.25, "validation"),
    (False, None, 0.5, "validation")])
def test_files_labels_and_split_match_keras(image_folder, shuffle, seed, split, subset):
    dataset_utils, image_dataset_utils = _keras_utils()
    paths, labels, names = dataset_utils.index_directory(str(image_folder), "inferred",
                                                         image_dataset_utils.ALLOWLIST_FORMATS, shuffle=shuffle,
                                                         seed=seed, verbose=False)
    paths, labels = dataset_utils.get_training_or_validation_split(paths, labels, split, subset)
    ds = utils.image_dataset_from_directory(image_folder, image_size=(8, 8), batch_size=5, shuffle=shuffle,
                                            seed=seed, validation_split=split, subset=subset, verbose=False)
    assert ds.file_paths == list(paths)
    assert ds.class_names == names == list(CLASSES)
    np.testing.assert_array_equal(ds.labels, labels)
    if not shuffle or subset == "validation":  # unshuffled batches: Keras's order, file by file
        np.testing.assert_array_equal(_all_batches(ds)[1], labels)


def test_found_message_and_subset_both(image_folder, capsys):
    train, val = utils.image_dataset_from_directory(image_folder, image_size=8, seed=3, validation_split=0.25,
                                                    subset="both")
    out = capsys.readouterr().out
    assert "Found 12 files belonging to 2 classes." in out and "Using 9 files for training." in out
    assert "Using 3 files for validation." in out
    assert len(train.file_paths) == 9 and len(val.file_paths) == 3
    assert not set(train.file_paths) & set(val.file_paths)
    assert train.class_names == val.class_names == list(CLASSES)


def test_explicit_labels_and_no_labels(image_folder, capsys):
    ds = utils.image_dataset_from_directory(image_folder, labels=list(range(12)), image_size=8, batch_size=4,
                                            shuffle=False)
    assert "Found 12 files belonging to 12 classes." in capsys.readouterr().out
    np.testing.assert_array_equal(_all_batches(ds)[1], np.arange(12))
    as_array = utils.image_dataset_from_directory(image_folder, labels=np.arange(12) % 3, image_size=8, shuffle=False,
                                                  label_mode="categorical", verbose=False)
    assert as_array.class_names == ["0", "1", "2"] and as_array[0][1].shape == (12, 3)
    images_only = utils.image_dataset_from_directory(image_folder, labels=None, image_size=8, batch_size=4,
                                                     shuffle=False)
    assert "Found 12 files." in capsys.readouterr().out
    assert images_only.class_names is None and images_only[0].shape == (4, 8, 8, 3)
    no_mode = utils.image_dataset_from_directory(image_folder, label_mode=None, image_size=8, shuffle=False,
                                                 verbose=False)
    assert isinstance(no_mode[0], np.ndarray)


# ------------------------------------------------------------------------------ pixels
@needs("keras")
@pytest.mark.parametrize("color_mode,image_size,interpolation,crop,pad", [
    ("rgb", (8, 8), "bilinear", False, False), ("rgb", (5, 7), "bilinear", False, False),
    ("rgb", (12, 11), "bilinear", False, False), ("grayscale", (6, 4), "nearest", False, False),
    ("rgba", (12, 10), "nearest", False, False), ("rgb", (4, 4), "bilinear", True, False),
    ("rgb", (4, 4), "bilinear", False, True)])
def test_pixels_match_keras(tmp_path, color_mode, image_size, interpolation, crop, pad):
    _, image_dataset_utils = _keras_utils()
    root = _write_images(tmp_path / "mixed", sizes=((8, 8), (6, 10), (9, 5)), per_class=3,
                         mode="RGBA" if color_mode == "rgba" else "RGB")
    ds = utils.image_dataset_from_directory(root, color_mode=color_mode, image_size=image_size, batch_size=6,
                                            shuffle=False, interpolation=interpolation, crop_to_aspect_ratio=crop,
                                            pad_to_aspect_ratio=pad, verbose=False)
    images, _ = _all_batches(ds)
    channels = {"rgb": 3, "rgba": 4, "grayscale": 1}[color_mode]
    expected = np.stack([np.asarray(image_dataset_utils._load_image_grain(
        path, image_size, channels, interpolation, "channels_last", crop, pad)) for path in ds.file_paths])
    assert images.shape == (6, *image_size, channels) and images.dtype == np.float32
    np.testing.assert_allclose(images, expected, **FLOAT32)


def test_pillow_interpolations_and_channels_first(image_folder):
    last = utils.image_dataset_from_directory(image_folder, image_size=(16, 12), interpolation="bicubic",
                                              shuffle=False, verbose=False)[0][0]
    first = utils.image_dataset_from_directory(image_folder, image_size=(16, 12), interpolation="bicubic",
                                               shuffle=False, data_format="channels_first", verbose=False)[0][0]
    assert first.shape == (12, 3, 16, 12)
    np.testing.assert_array_equal(first, np.transpose(last, (0, 3, 1, 2)))
    for method in ("area", "lanczos3"):
        images = utils.image_dataset_from_directory(image_folder, image_size=(4, 4), interpolation=method,
                                                    shuffle=False, verbose=False)[0][0]
        assert images.shape == (12, 4, 4, 3) and np.isfinite(images).all()
    # area on an exact 2x shrink is the mean of each 2x2 block (Pillow's BOX filter)
    source = np.asarray(PIL.open(os.path.join(image_folder, "cats", "img_0.png")), np.float64)
    blocks = source.reshape(4, 2, 4, 2, 3).mean(axis=(1, 3))
    shrunk = utils.image_dataset_from_directory(image_folder, image_size=(4, 4), interpolation="area",
                                                shuffle=False, verbose=False)[0][0][0]
    np.testing.assert_allclose(shrunk, blocks, **FLOAT32)


# ------------------------------------------------------------------------------ batches and labels
@pytest.mark.parametrize("label_mode,shape,dtype", [
    ("int", (5,), np.int32), ("categorical", (5, 2), np.float32), ("binary", (5, 1), np.float32)])
def test_label_modes_and_batch_shapes(image_folder, label_mode, shape, dtype):
    ds = utils.image_dataset_from_directory(image_folder, label_mode=label_mode, image_size=(8, 8), batch_size=5,
                                            shuffle=False, verbose=False)
    assert len(ds) == 3
    x, y = ds[0]
    assert x.shape == (5, 8, 8, 3) and y.shape == shape and y.dtype == dtype
    assert ds[-1][0].shape == (2, 8, 8, 3)  # the last batch is short
    expected = np.array([0] * 5)
    np.testing.assert_array_equal(y.argmax(-1) if label_mode == "categorical" else y.reshape(5), expected)
    single = utils.image_dataset_from_directory(image_folder, image_size=(8, 8), batch_size=None, shuffle=False,
                                                verbose=False)
    assert len(single) == 12 and single[0][0].shape == (8, 8, 3) and single[11][1] == 1


def test_seed_determinism_and_epoch_orders(image_folder):
    def make(seed):
        return utils.image_dataset_from_directory(image_folder, image_size=8, batch_size=4, seed=seed,
                                                  verbose=False)

    first, second, other = make(1), make(1), make(2)
    assert first.file_paths == second.file_paths != other.file_paths
    epoch0 = [y.tolist() for _, y in first]
    assert [y.tolist() for _, y in second] == epoch0
    epoch1 = [first[i][1].tolist() for i in range(len(first))]  # a full pass moved ``first`` to epoch 1
    assert first.epoch == 1 and epoch1 != epoch0 and sorted(sum(epoch1, [])) == sorted(sum(epoch0, []))
    assert [second[i][1].tolist() for i in range(len(second))] == epoch1
    third = make(1)
    third.on_epoch_end()  # what fit calls after each epoch
    assert [third[i][1].tolist() for i in range(len(third))] == epoch1
    assert [y.tolist() for _, y in third.take(2)] == epoch1[:2] and len(third.take(-1)) == len(third) == 3
    with pytest.raises(ValueError, match="take: count must be"):
        third.take(-2)


def test_fit_trains_a_cnn_on_every_backend(backend, image_folder):
    ds, val = utils.image_dataset_from_directory(image_folder, image_size=(8, 8), batch_size=4, seed=0,
                                                 validation_split=0.25, subset="both", verbose=False)
    model = ember.Sequential([ember.Input((8, 8, 3)), layers.Rescaling(1 / 255), layers.Conv2D(2, 3),
                              layers.Flatten(), layers.Dense(2)])
    model.build(seed=0)
    before = [ops.to_numpy(w).copy() for w in model.trainable_weights]
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    history = model.fit(ds.prefetch(), validation_data=val, epochs=1, verbose=0)
    assert len(history.history["loss"]) == 1 and np.isfinite(history.history["loss"][0])
    assert np.isfinite(history.history["val_loss"][0]) and model.predict(val, verbose=0).shape == (3, 2)
    after = [ops.to_numpy(w) for w in model.trainable_weights]
    assert any(not np.array_equal(b, a) for b, a in zip(before, after))


# ------------------------------------------------------------------------------ prefetching
def test_prefetch_same_batches_errors_and_shutdown(image_folder):
    plain = utils.image_dataset_from_directory(image_folder, image_size=8, batch_size=5, shuffle=False,
                                               verbose=False)
    fetched = utils.image_dataset_from_directory(image_folder, image_size=8, batch_size=5, shuffle=False,
                                                 verbose=False).prefetch(2)
    for (x0, y0), (x1, y1) in zip(plain, fetched, strict=True):
        np.testing.assert_array_equal(x0, x1)
        np.testing.assert_array_equal(y0, y1)
    iterator = iter(fetched)
    next(iterator)
    iterator.close()  # leaving a loop early stops the producer thread
    assert not [t for t in threading.enumerate() if t.name == "ember-prefetch"]
    (image_folder / "dogs" / "img_5.png").write_bytes(b"not a png")
    with pytest.raises(Exception, match="img_5.png|cannot identify"):
        for _ in fetched:
            pass
    assert not [t for t in threading.enumerate() if t.name == "ember-prefetch"]
    with pytest.raises(ValueError, match="buffer_size"):
        fetched.prefetch(0)


# ------------------------------------------------------------------------------ bad arguments
@pytest.mark.parametrize("kwargs,match", [
    ({"subset": "training"}, "validation_split and subset"),
    ({"validation_split": 0.2}, "validation_split and subset"),
    ({"validation_split": 0.2, "subset": "training"}, "needs a seed"),
    ({"validation_split": 1.5, "subset": "training", "seed": 1}, "validation_split must be"),
    ({"validation_split": 0.2, "subset": "test", "seed": 1}, "subset must be"),
    ({"labels": [0, 1]}, "labels must have one entry per file: found 12 files.*received 2"),
    ({"labels": "folders"}, "labels must be 'inferred'"),
    ({"labels": None, "class_names": ["cats"]}, "class_names can only be given"),
    ({"class_names": ["cats", "birds"]}, "class_names must name sub-folders"),
    ({"label_mode": "sparse"}, "label_mode must be"),
    ({"color_mode": "cmyk"}, "color_mode must be"),
    ({"image_size": (8,)}, "image_size must be"),
    ({"image_size": (8, 0)}, "image_size must be a positive int"),
    ({"batch_size": 0}, "batch_size must be a positive int"),
    ({"interpolation": "cubic"}, "interpolation must be one of"),
    ({"crop_to_aspect_ratio": True, "pad_to_aspect_ratio": True}, "only one of crop_to_aspect_ratio"),
    ({"data_format": "channels_middle"}, "data_format must be"),
    ({"validation_split": 0.01, "subset": "validation", "seed": 1}, "no validation files found"),
])
def test_bad_arguments_name_the_argument(image_folder, kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        utils.image_dataset_from_directory(image_folder, verbose=False, **kwargs)
    assert str(info.value).startswith("image_dataset_from_directory:")


def test_bad_folders_and_tensorflow_only_options(tmp_path, image_folder):
    (tmp_path / "empty" / "a").mkdir(parents=True)
    with pytest.raises(ValueError, match="no files found in directory"):
        utils.image_dataset_from_directory(tmp_path / "empty", verbose=False)
    with pytest.raises(ValueError, match="directory must be an existing folder"):
        utils.image_dataset_from_directory(tmp_path / "missing", verbose=False)
    _write_images(tmp_path / "three", per_class=1, classes=("a", "b", "c"))
    with pytest.raises(ValueError, match="label_mode='binary' needs exactly 2 classes"):
        utils.image_dataset_from_directory(tmp_path / "three", label_mode="binary", verbose=False)
    with pytest.raises(NotImplementedError, match="lanczos5.*TensorFlow"):
        utils.image_dataset_from_directory(image_folder, interpolation="lanczos5", verbose=False)


# ------------------------------------------------------------------------------ text
@needs("keras")
def test_text_dataset_matches_keras(tmp_path):
    dataset_utils, _ = _keras_utils()
    for label in ("neg", "pos"):
        (tmp_path / label / "sub").mkdir(parents=True)
        for i in range(3):
            (tmp_path / label / f"{i}.txt").write_text(f"{label} review {i} é", encoding="utf-8")
        (tmp_path / label / "sub" / "deep.TXT").write_text(f"{label} deep", encoding="utf-8")
        (tmp_path / label / "skip.md").write_text("not text data")
    paths, labels, _ = dataset_utils.index_directory(str(tmp_path), "inferred", (".txt",), shuffle=True, seed=5,
                                                     verbose=False)
    ds = utils.text_dataset_from_directory(tmp_path, batch_size=3, seed=5, max_length=12, verbose=False)
    assert ds.file_paths == list(paths) and ds.class_names == ["neg", "pos"]
    np.testing.assert_array_equal(ds.labels, labels)
    unshuffled = utils.text_dataset_from_directory(tmp_path, batch_size=3, shuffle=False, max_length=12,
                                                   verbose=False)
    texts, y = unshuffled[0]
    assert texts.dtype == object and texts.tolist() == ["neg review 0", "neg review 1", "neg review 2"]
    assert y.tolist() == [0, 0, 0] and unshuffled[1][0].tolist()[0] == "neg deep"
    full = utils.text_dataset_from_directory(tmp_path, batch_size=None, shuffle=False, verbose=False)
    assert full[0][0] == "neg review 0 é"
    with pytest.raises(ValueError, match="text_dataset_from_directory: max_length must be a positive int"):
        utils.text_dataset_from_directory(tmp_path, max_length=0)


# ------------------------------------------------------------------------------ audio
def _write_wav(path, samples, rate=8000, width=2):
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(samples.shape[1])
        handle.setsampwidth(width)
        handle.setframerate(rate)
        handle.writeframes(samples.astype({1: "u1", 2: "<i2", 4: "<i4"}[width]).tobytes())


def test_audio_dataset_reads_pads_and_checks(tmp_path):
    rng = np.random.default_rng(0)
    clips = {}
    for label, lengths in (("no", (5, 7)), ("yes", (6, 3))):
        (tmp_path / label).mkdir()
        for i, length in enumerate(lengths):
            samples = rng.integers(-32768, 32768, (length, 2))
            _write_wav(tmp_path / label / f"{i}.wav", samples)
            clips[str(tmp_path / label / f"{i}.wav")] = samples.astype(np.float64) / 32768.0
    ds = utils.audio_dataset_from_directory(tmp_path, batch_size=2, shuffle=False, sampling_rate=8000,
                                            verbose=False)
    audio, labels = ds[0]
    assert audio.shape == (2, 7, 2) and audio.dtype == np.float32 and labels.tolist() == [0, 0]
    for row, path in zip(audio, ds.file_paths[:2]):
        expected = np.zeros((7, 2))
        expected[:len(clips[path])] = clips[path]
        np.testing.assert_allclose(row, expected, **FLOAT64)  # k / 32768 is exact in float32
    fixed = utils.audio_dataset_from_directory(tmp_path, batch_size=4, shuffle=False, output_sequence_length=4,
                                               verbose=False)
    np.testing.assert_allclose(fixed[0][0][1], clips[ds.file_paths[1]][:4], **FLOAT64)
    np.testing.assert_allclose(fixed[0][0][3, 3], 0.0, **FLOAT64)
    with pytest.raises(ValueError, match="sampled at 8000 Hz but sampling_rate=16000"):
        utils.audio_dataset_from_directory(tmp_path, sampling_rate=16000, verbose=False)[0]
    with pytest.raises(NotImplementedError, match="ragged=True"):
        utils.audio_dataset_from_directory(tmp_path, ragged=True, verbose=False)
    with pytest.raises(ValueError, match="ragged and output_sequence_length"):
        utils.audio_dataset_from_directory(tmp_path, ragged=True, output_sequence_length=3, verbose=False)
    with pytest.raises(ValueError, match="output_sequence_length must be a positive int"):
        utils.audio_dataset_from_directory(tmp_path, output_sequence_length=-1, verbose=False)


def test_audio_sample_widths(tmp_path):
    (tmp_path / "a").mkdir()
    _write_wav(tmp_path / "a" / "u8.wav", np.array([[0], [128], [255]]), width=1)
    _write_wav(tmp_path / "a" / "w32.wav", np.array([[-2 ** 31], [0], [2 ** 30]]), width=4)
    ds = utils.audio_dataset_from_directory(tmp_path, batch_size=None, shuffle=False, verbose=False)
    np.testing.assert_allclose(ds[0][0][:, 0], [-1.0, 0.0, 127 / 128], **FLOAT64)
    np.testing.assert_allclose(ds[1][0][:, 0], [-1.0, 0.0, 0.5], **FLOAT64)


# ------------------------------------------------------------------------------ timeseries
def _reference_windows(data, targets, length, stride, rate, start, end):
    """Keras's documented semantics in float64: window k starts at start + k * stride (within
    data[start:end]) and holds ``length`` steps every ``rate``; its target is targets[start + k * stride]."""
    start = start or 0
    end = len(data) if end is None else end
    count = end - start - (length - 1) * rate
    if targets is not None:
        count = min(count, len(targets))
    positions = np.arange(0, count, stride)
    window_data = np.asarray(data, np.float64)[start:end]
    windows = np.stack([window_data[p:p + length * rate:rate] for p in positions])
    return windows, None if targets is None else np.asarray(targets, np.float64)[start:][positions]


@pytest.mark.parametrize("length,stride,rate,start,end,batch", [
    (3, 1, 1, None, None, 4), (4, 2, 2, 3, 40, 5), (5, 3, 1, None, 30, None), (2, 1, 3, 1, None, 128)])
def test_timeseries_windows_match_keras_semantics(length, stride, rate, start, end, batch):
    data = np.random.default_rng(0).normal(size=(50, 2))
    targets = np.arange(50, dtype=np.float64) * 10
    expected_x, expected_y = _reference_windows(data, targets, length, stride, rate, start, end)
    ds = utils.timeseries_dataset_from_array(data, targets, length, sequence_stride=stride, sampling_rate=rate,
                                             batch_size=batch, start_index=start, end_index=end)
    items = [ds[i] for i in range(len(ds))]
    got_x = np.stack([x for x, _ in items]) if batch is None else np.concatenate([x for x, _ in items])
    got_y = np.stack([y for _, y in items]) if batch is None else np.concatenate([y for _, y in items])
    np.testing.assert_allclose(got_x, expected_x, **FLOAT64)
    np.testing.assert_allclose(got_y, expected_y, **FLOAT64)
    shuffled = utils.timeseries_dataset_from_array(data, None, length, sequence_stride=stride, sampling_rate=rate,
                                                   batch_size=batch, shuffle=True, seed=3, start_index=start,
                                                   end_index=end)
    windows = [shuffled[i] for i in range(len(shuffled))]
    flat = np.stack(windows) if batch is None else np.concatenate(windows)
    assert sorted(map(tuple, flat.reshape(len(flat), -1))) == sorted(map(tuple, expected_x.reshape(len(flat), -1)))
