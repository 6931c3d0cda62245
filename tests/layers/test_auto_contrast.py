"""``AutoContrast`` against Keras 3 (torch backend) and a NumPy float64 reference."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ember import layers, ops
from tests.layers.layer_test import run_layer_test

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")


def _reference(x, value_range):
    """Per image and channel min-max stretch in float64, constant channels unchanged."""
    low, high = sorted(value_range)
    x = np.asarray(x, dtype=np.float64)
    darkest = x.min(axis=(1, 2), keepdims=True)
    width = x.max(axis=(1, 2), keepdims=True) - darkest
    with np.errstate(divide="ignore", invalid="ignore"):
        stretched = np.clip((x - darkest) / width * (high - low) + low, low, high)
    return np.where((width == 0) | np.isnan(stretched), x, stretched)


def _images(seed, shape=(2, 4, 5, 3), low=0.0, high=255.0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(low + 0.2 * (high - low), low + 0.7 * (high - low), size=shape)
    x[-1, :, :, -1] = low + 0.3 * (high - low)  # a constant channel
    return x.astype(np.float32)


@pytest.mark.parametrize("value_range", [(0, 255), (1, 0), (-1.0, 1.0)])
def test_auto_contrast_matches_keras(backend, value_range):
    low, high = sorted(value_range)
    x = _images(0, low=low, high=high)
    expected = keras.ops.convert_to_numpy(keras.layers.AutoContrast(value_range=value_range)(x))
    layer = layers.AutoContrast(value_range=value_range)
    y, _ = layer.apply(layer.build((None, 4, 5, 3)), ops.convert_to_tensor(x))
    assert ops.dtype(y) == "float32"
    # float32 on both sides, different operation order: a few ulps of the range (each side is within
    # 5 u (|y| + range) = 3e-7 (|y| + range) of the exact stretch: subtract, divide, multiply, add; 30x)
    tol = {"rtol": 1e-5, "atol": 1e-5 * (high - low)}
    np.testing.assert_allclose(ops.to_numpy(y), expected, **tol)
    np.testing.assert_allclose(ops.to_numpy(y), _reference(x, value_range), **tol)


def test_auto_contrast_layer_conformance():
    run_layer_test(lambda: layers.AutoContrast(value_range=(0, 1)), (2, 3, 4, 2),
                   input_data=_images(1, shape=(2, 3, 4, 2), high=1.0),
                   reference=lambda params, x: _reference(x, (0, 1)), expected_output_shape=(2, 3, 4, 2),
                   check_gradients=False)


def test_auto_contrast_integer_images_and_nan_channels_match_keras(backend):
    rng = np.random.default_rng(2)
    ints = rng.integers(40, 120, size=(2, 3, 3, 2)).astype(np.int32)
    expected = keras.ops.convert_to_numpy(keras.layers.AutoContrast()(ints))
    layer = layers.AutoContrast()
    y, _ = layer.apply(layer.build((None, 3, 3, 2)), ops.convert_to_tensor(ints))
    assert ops.dtype(y) == "float32"
    # as above: 5 u (|y| + 255) per side, 30x
    np.testing.assert_allclose(ops.to_numpy(y), expected, rtol=1e-5, atol=1e-5 * 255)
    with_nan = _images(3, shape=(1, 3, 3, 2))
    with_nan[0, 1, 1, 0] = np.nan
    y, _ = layer.apply(layer.build((None, 3, 3, 2)), ops.convert_to_tensor(with_nan))
    np.testing.assert_array_equal(ops.to_numpy(y)[..., 0], with_nan[..., 0])  # NaN channel unchanged
    # relative: x - min, / width, * 255 round once each (+ 0 is exact), 3 u = 1.8e-7
    np.testing.assert_allclose(ops.to_numpy(y)[..., 1], _reference(with_nan, (0, 255))[..., 1], rtol=1e-5)


@pytest.mark.parametrize("value_range", [(0,), "0-255", (1, 1), (0, True), None])
def test_auto_contrast_rejects_bad_value_range(value_range):
    with pytest.raises(ValueError, match=r"ac: value_range must be two different numbers \(low, high\)"):
        layers.AutoContrast(value_range=value_range, name="ac")


def test_auto_contrast_rejects_bad_inputs(backend):
    layer = layers.AutoContrast(name="ac")
    state = layer.build((None, 2, 2, 1))
    with pytest.raises(ValueError, match=r"layer 'ac' expects inputs of rank 4, received shape \(2, 2\)"):
        layer.apply(state, ops.ones((2, 2)))
    with pytest.raises(TypeError, match="layer 'ac' expects real numeric images, received dtype bool"):
        layer.apply(state, ops.ones((1, 2, 2, 1), dtype="bool"))
    with pytest.raises(ValueError, match="rank 4"):
        layer.compute_output_shape((None, 2, 2))
