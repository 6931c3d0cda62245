"""Preprocessing layers: against Keras 3 (torch backend) on the same images, NumPy references,
inside models on every backend, and saved with them."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.layers.preprocessing.color import _ColorJitter
from tests.layers.layer_test import run_layer_test
from tests.tolerances import FLOAT32, FLOAT32_PAIR

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")

IMAGES = np.random.default_rng(0).uniform(0, 255, size=(2, 7, 9, 3)).astype(np.float32)


def _apply(layer, x, training=False):
    y, _ = layer.apply(layer.build(x.shape), ops.convert_to_tensor(x), training=training)
    return np.asarray(ops.to_numpy(y))


# Deterministic configurations (a random layer with a one-point factor range is a fixed transform).
IMAGE_CASES = [
    ("Resizing", {"height": 4, "width": 5}, False),
    ("Resizing", {"height": 12, "width": 14}, False),
    ("Resizing", {"height": 4, "width": 5, "interpolation": "nearest"}, False),
    ("Resizing", {"height": 5, "width": 5, "crop_to_aspect_ratio": True}, False),
    ("CenterCrop", {"height": 4, "width": 5}, False),
    ("CenterCrop", {"height": 9, "width": 12}, False),
    ("RandomRotation", {"factor": (0.1, 0.1)}, True),
    ("RandomRotation", {"factor": (-0.3, -0.3), "fill_mode": "wrap", "interpolation": "nearest"}, True),
    ("RandomRotation", {"factor": (0.2, 0.2), "fill_mode": "constant", "fill_value": 3.0}, True),
    ("RandomRotation", {"factor": (0.15, 0.15), "fill_mode": "nearest"}, True),
    ("RandomZoom", {"height_factor": (0.3, 0.3), "width_factor": (-0.2, -0.2)}, True),
    ("RandomTranslation", {"height_factor": (0.2, 0.2), "width_factor": (-0.3, -0.3), "fill_mode": "constant"}, True),
    ("Rescaling", {"scale": 1 / 127.5, "offset": -1.0}, False),
]


@pytest.mark.parametrize("name, kwargs, training", IMAGE_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(IMAGE_CASES)])
def test_image_layers_match_keras(backend, name, kwargs, training):
    expected = keras.ops.convert_to_numpy(getattr(keras.layers, name)(**kwargs)(IMAGES, training=training))
    # float32 interpolation of values up to 255 in two implementations: ~1e-4 absolute.
    np.testing.assert_allclose(_apply(getattr(layers, name)(**kwargs), IMAGES, training), expected,
                               rtol=1e-5, atol=2e-4)


def test_channels_first_and_unbatched_images(backend):
    layer = layers.Resizing(4, 5, data_format="channels_first")
    out = _apply(layer, np.transpose(IMAGES, (0, 3, 1, 2)))
    # exact: channels-first transposes to the same element-wise interpolation; a crop is a copy
    np.testing.assert_array_equal(np.transpose(out, (0, 2, 3, 1)), _apply(layers.Resizing(4, 5), IMAGES))
    np.testing.assert_array_equal(_apply(layers.CenterCrop(3, 3), IMAGES[0]), IMAGES[0, 2:5, 3:6])


def test_random_layers_are_identity_outside_training_and_reproducible(backend):
    for layer in [layers.RandomFlip(seed=1), layers.RandomRotation(0.2, seed=1), layers.RandomZoom(0.3, seed=1),
                  layers.RandomTranslation(0.2, 0.2, seed=1), layers.RandomBrightness(0.2, seed=1),
                  layers.RandomContrast(0.3, seed=1)]:
        np.testing.assert_array_equal(_apply(layer, IMAGES), IMAGES)
        first, second = _apply(layer, IMAGES, True), _apply(layer, IMAGES, True)
        np.testing.assert_array_equal(first, second)
        assert first.shape == IMAGES.shape and not np.array_equal(first, IMAGES), type(layer).__name__


def test_random_flip_flips_whole_images(backend):
    out = _apply(layers.RandomFlip("horizontal", seed=3), np.repeat(IMAGES, 8, axis=0), True)
    flipped = [np.array_equal(o, IMAGES[i // 8][:, ::-1]) for i, o in enumerate(out)]
    kept = [np.array_equal(o, IMAGES[i // 8]) for i, o in enumerate(out)]
    assert all(f or k for f, k in zip(flipped, kept)) and any(flipped) and any(kept)


def test_random_crop_takes_a_window(backend):
    # Outside training the central window (Keras 3.15 returns the uncropped input there, so the
    # output shape would change between training and inference).
    np.testing.assert_array_equal(_apply(layers.RandomCrop(5, 6), IMAGES), IMAGES[:, 1:6, 1:7])
    out = _apply(layers.RandomCrop(5, 6, seed=4), IMAGES, True)
    windows = [IMAGES[:, t:t + 5, s:s + 6] for t in range(3) for s in range(4)]
    assert any(np.array_equal(out, w) for w in windows)


def test_brightness_and_contrast_formulas(backend):
    x = IMAGES / 255.0
    out = _apply(layers.RandomBrightness((0.25, 0.25), value_range=(0, 1)), x, True)
    np.testing.assert_array_equal(out, np.clip(x + 0.25, 0, 1))  # exact: one float32 addition on both sides
    out = _apply(layers.RandomContrast((-0.5, 0.5), value_range=(0, 1)), x, True)  # factor 1.5
    mean = x.mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(out, np.clip((x - mean) * 1.5 + mean, 0, 1), **FLOAT32_PAIR)  # NumPy float32


def test_normalization_adapt_matches_keras(backend):
    data = np.random.default_rng(1).normal(loc=3.0, scale=2.0, size=(50, 4, 3)).astype(np.float32)
    for axis in (-1, (1, 2), None):
        theirs = keras.layers.Normalization(axis=axis)
        theirs.adapt(data)
        ours = layers.Normalization(axis=axis).adapt(data)
        # Statistics of <= 600 float32 values (|x| <= 10, mean |x| ~ 3.4), pairwise-summed on each side: a
        # mean within (log2(600) + 8) u * 3.4 = 3.5e-6, 1.7e-6 after dividing by sd 2; two sides: 3.5e-6.
        np.testing.assert_allclose(_apply(ours, data[:5]), keras.ops.convert_to_numpy(theirs(data[:5])),
                                   rtol=1e-5, atol=1e-5)
    inverse = layers.Normalization(mean=[1.0, 2.0, 3.0], variance=[4.0, 1.0, 0.25], invert=True)
    np.testing.assert_allclose(_apply(inverse, data[:2]), data[:2] * np.array([2.0, 1.0, 0.5]) + [1.0, 2.0, 3.0],
                               **FLOAT32)


def test_discretization_and_category_encoding(backend):
    x = np.array([[-1.5, 0.0, 0.2], [1.0, 3.0, 0.7]], np.float32)
    for mode in ("int", "one_hot", "multi_hot", "count"):
        kwargs = {"bin_boundaries": [0.0, 0.5, 2.0], "output_mode": mode}
        expected = keras.ops.convert_to_numpy(keras.layers.Discretization(**kwargs)(x))
        np.testing.assert_array_equal(_apply(layers.Discretization(**kwargs), x), expected)
    adapted = layers.Discretization(num_bins=4).adapt(np.arange(100.0))
    np.testing.assert_allclose(adapted.bin_boundaries, np.quantile(np.arange(100.0), [0.25, 0.5, 0.75]))
    ids = np.array([[0, 3, 3], [1, 2, 0]], np.int32)
    for mode in ("multi_hot", "count"):
        expected = keras.ops.convert_to_numpy(keras.layers.CategoryEncoding(num_tokens=5, output_mode=mode)(ids))
        np.testing.assert_array_equal(_apply(layers.CategoryEncoding(num_tokens=5, output_mode=mode), ids), expected)
    expected = keras.ops.convert_to_numpy(
        keras.layers.CategoryEncoding(num_tokens=5, output_mode="one_hot")(ids[:, :1]))
    np.testing.assert_array_equal(_apply(layers.CategoryEncoding(num_tokens=5, output_mode="one_hot"), ids[:, :1]),
                                  expected)


def test_deterministic_layers_pass_the_layer_harness():
    run_layer_test(lambda: layers.Rescaling(0.5, offset=1.0), (2, 3), reference=lambda p, x: x * 0.5 + 1.0,
                   supports_masking=True)
    run_layer_test(lambda: layers.Normalization(mean=[1.0, 2.0, 3.0], variance=[1.0, 4.0, 9.0]), (2, 3),
                   reference=lambda p, x: (x - [1.0, 2.0, 3.0]) / np.array([1.0, 2.0, 3.0]))
    run_layer_test(lambda: layers.Resizing(3, 2), (2, 4, 4, 1), check_gradients=True,
                   reference=lambda p, x: _bilinear_reference(x, 3, 2))


def _bilinear_reference(x, height, width):
    """Half-pixel bilinear resize written out in float64."""
    def axis_weights(length, size):
        matrix = np.zeros((size, length))
        for i in range(size):
            s = max((i + 0.5) * length / size - 0.5, 0.0)
            lo = min(int(np.floor(s)), length - 1)
            hi = min(lo + 1, length - 1)
            matrix[i, lo] += 1 - (s - lo)
            matrix[i, hi] += s - lo
        return matrix
    rows, cols = axis_weights(x.shape[1], height), axis_weights(x.shape[2], width)
    return np.einsum("ih,bhwc,jw->bijc", rows, x, cols)


def test_preprocessing_inside_a_model_trains_and_saves(backend, tmp_path):
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 255, size=(32, 6, 6, 1)).astype(np.float32)
    y = (x.mean(axis=(1, 2, 3)) > 127).astype(np.float32)[:, None]
    norm = layers.Normalization(axis=None).adapt(x / 255.0)
    model = ember.Sequential([
        ember.Input((6, 6, 1)), layers.Rescaling(1 / 255.0), norm, layers.RandomFlip(seed=0),
        layers.RandomRotation(0.05, seed=0), layers.Resizing(4, 4), layers.Flatten(),
        layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer="adam", loss="binary_crossentropy")
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    path = str(tmp_path / "pre.h5")
    model.save(path)
    loaded = ember.load_model(path)
    # exact: the same weights through the same kernels (tests/saving checks bit-equal predictions too)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert loaded.layers[1].mean == norm.mean


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="adapt"):
        layers.Normalization().build((None, 3))
    with pytest.raises(ValueError, match="both mean and variance"):
        layers.Normalization(mean=[1.0])
    with pytest.raises(ValueError, match="strictly increasing"):
        layers.Discretization(bin_boundaries=[1.0, 0.0])
    with pytest.raises(ValueError, match="pad_to_aspect_ratio"):
        layers.Resizing(2, 2, pad_to_aspect_ratio=True)
    with pytest.raises(ValueError, match="fill_mode"):
        layers.RandomRotation(0.1, fill_mode="mirror")
    with pytest.raises(ValueError, match="height"):
        layers.CenterCrop(0, 2)
    with pytest.raises(ValueError, match="num_tokens"):
        layers.CategoryEncoding()
    with pytest.raises(ValueError, match="rank 3 or 4"):
        _apply(layers.Resizing(2, 2), np.ones((2, 3), np.float32))


def test_a_colour_jitter_without_its_hooks_says_which_to_define():
    """The shared base of RandomBrightness and RandomContrast names the hook a new jitter must define."""
    with pytest.raises(NotImplementedError, match="_ColorJitter: a colour jitter defines _checked_factor"):
        _ColorJitter(factor=0.2)

    class HalfDone(_ColorJitter):
        def _checked_factor(self):
            return [-0.1, 0.1]

    with pytest.raises(NotImplementedError, match="HalfDone: a colour jitter defines _jitter"):
        HalfDone(factor=0.1)._jitter(None, None, 1.0)
