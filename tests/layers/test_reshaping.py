"""Spatial reshaping layers: UpSampling1D/2D/3D, ZeroPadding1D/2D/3D, Cropping1D/2D/3D.

Each layer goes through :func:`run_layer_test` against a NumPy float64 reference
written here; bilinear upsampling is also checked against TF's resize formula and
torch's ``F.interpolate(mode="bilinear", align_corners=False)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import layers, ops
from tests.helpers import assert_close
from tests.layers.layer_test import run_layer_test

# ------------------------------------------------------------------------ references


def tf_bilinear_axis(x, axis, factor):
    """TF's ``resize_bilinear`` with ``half_pixel_centers`` along one axis (its kernel's formula).

    For output cell ``o``: ``in = (o + 0.5) * (n_in / n_out) - 0.5``, ``lower = max(floor(in), 0)``,
    ``upper = min(ceil(in), n_in - 1)``, ``lerp = in - floor(in)``.
    """
    x = np.moveaxis(x, axis, 0)
    n = x.shape[0]
    out = np.empty((n * factor,) + x.shape[1:])
    for o in range(n * factor):
        position = (o + 0.5) * (n / (n * factor)) - 0.5
        lower, upper = max(math.floor(position), 0), min(math.ceil(position), n - 1)
        lerp = position - math.floor(position)
        out[o] = x[lower] + (x[upper] - x[lower]) * lerp
    return np.moveaxis(out, 0, axis)


def nearest(x, axes, factors):
    for axis, factor in zip(axes, factors):
        x = np.repeat(x, factor, axis=axis)
    return x


# ------------------------------------------------------------------------ UpSampling


def test_up_sampling1d():
    run_layer_test(lambda: layers.UpSampling1D(3, name="up"), (2, 4, 3),
                   reference=lambda p, x: nearest(x, (1,), (3,)), expected_output_shape=(2, 12, 3))


@pytest.mark.parametrize("kwargs, shape, axes", [
    (dict(size=(2, 3)), (2, 3, 2, 2), (1, 2)),
    (dict(size=2, data_format="channels_first"), (2, 3, 2, 3), (2, 3)),
])
def test_up_sampling2d_nearest(kwargs, shape, axes):
    factors = np.broadcast_to(kwargs["size"], (2,))
    run_layer_test(lambda: layers.UpSampling2D(**kwargs, name="up"), shape,
                   reference=lambda p, x: nearest(x, axes, factors))


@pytest.mark.parametrize("kwargs, shape, axes", [
    (dict(size=2), (2, 3, 4, 2), (1, 2)),
    (dict(size=(3, 2)), (1, 2, 3, 3), (1, 2)),
    (dict(size=(1, 4), data_format="channels_first"), (2, 2, 3, 3), (2, 3)),
])
def test_up_sampling2d_bilinear(kwargs, shape, axes):
    factors = np.broadcast_to(kwargs["size"], (2,))

    def reference(p, x):
        for axis, factor in zip(axes, factors):
            x = tf_bilinear_axis(x, axis, int(factor))
        return x

    run_layer_test(lambda: layers.UpSampling2D(**kwargs, interpolation="bilinear", name="up"), shape,
                   reference=reference)


def test_up_sampling2d_bilinear_matches_torch_interpolate(backend):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).normal(size=(2, 5, 4, 3))
    layer = layers.UpSampling2D((3, 2), interpolation="bilinear")
    y, _ = layer.apply(layer.build((None, 5, 4, 3)), ops.convert_to_tensor(x.astype(np.float32)))
    expected = torch.nn.functional.interpolate(torch.from_numpy(np.moveaxis(x, -1, 1).copy()), size=(15, 8),
                                               mode="bilinear", align_corners=False)
    assert_close(y, np.moveaxis(expected.numpy(), 1, -1), rtol=1e-5, atol=1e-6)


def test_up_sampling2d_bilinear_integer_input_gives_floats(backend):
    layer = layers.UpSampling2D(2, interpolation="bilinear")
    x = np.arange(4, dtype=np.int32).reshape(1, 2, 2, 1)
    y, _ = layer.apply(layer.build((None, 2, 2, 1)), ops.convert_to_tensor(x))
    assert ops.dtype(y) == ember.dtypes.floatx()
    expected = tf_bilinear_axis(tf_bilinear_axis(x.astype(np.float64), 1, 2), 2, 2)
    assert_close(y, expected)


def test_up_sampling3d():
    run_layer_test(lambda: layers.UpSampling3D((1, 2, 3), name="up"), (1, 2, 2, 2, 2),
                   reference=lambda p, x: nearest(x, (1, 2, 3), (1, 2, 3)), expected_output_shape=(1, 2, 4, 6, 2))
    run_layer_test(lambda: layers.UpSampling3D(2, data_format="channels_first", name="up"), (1, 2, 1, 2, 2),
                   reference=lambda p, x: nearest(x, (2, 3, 4), (2, 2, 2)))


# ------------------------------------------------------------------- ZeroPadding


@pytest.mark.parametrize("make, shape, widths", [
    (lambda: layers.ZeroPadding1D(name="pad"), (2, 3, 2), [(0, 0), (1, 1), (0, 0)]),
    (lambda: layers.ZeroPadding1D((0, 2), name="pad"), (2, 3, 2), [(0, 0), (0, 2), (0, 0)]),
    (lambda: layers.ZeroPadding2D(name="pad"), (2, 2, 3, 2), [(0, 0), (1, 1), (1, 1), (0, 0)]),
    (lambda: layers.ZeroPadding2D(((1, 0), (0, 2)), name="pad"), (2, 2, 3, 2), [(0, 0), (1, 0), (0, 2), (0, 0)]),
    (lambda: layers.ZeroPadding2D((2, 1), data_format="channels_first", name="pad"), (2, 2, 3, 2),
     [(0, 0), (0, 0), (2, 2), (1, 1)]),
    (lambda: layers.ZeroPadding3D((1, 0, (0, 2)), name="pad"), (1, 2, 2, 2, 2),
     [(0, 0), (1, 1), (0, 0), (0, 2), (0, 0)]),
])
def test_zero_padding(make, shape, widths):
    run_layer_test(make, shape, reference=lambda p, x: np.pad(x, widths))


# ------------------------------------------------------------------------- Cropping


@pytest.mark.parametrize("make, shape, keep", [
    (lambda: layers.Cropping1D(name="crop"), (2, 5, 2), (slice(None), slice(1, 4))),
    (lambda: layers.Cropping1D((0, 2), name="crop"), (2, 5, 2), (slice(None), slice(0, 3))),
    (lambda: layers.Cropping2D(((1, 0), (2, 1)), name="crop"), (2, 4, 5, 2),
     (slice(None), slice(1, 4), slice(2, 4))),
    (lambda: layers.Cropping2D(1, data_format="channels_first", name="crop"), (2, 2, 4, 5),
     (slice(None), slice(None), slice(1, 3), slice(1, 4))),
    (lambda: layers.Cropping3D(((0, 1), 1, (2, 0)), name="crop"), (1, 3, 4, 4, 2),
     (slice(None), slice(0, 2), slice(1, 3), slice(2, 4))),
])
def test_cropping(make, shape, keep):
    run_layer_test(make, shape, reference=lambda p, x: x[keep])


# ------------------------------------------------------------------- shapes and config


@pytest.mark.parametrize("layer, input_shape, expected", [
    (layers.UpSampling1D(4), (None, None, 3), (None, None, 3)),
    (layers.UpSampling1D(4), (None, 5, 3), (None, 20, 3)),
    (layers.UpSampling2D((2, 3), data_format="channels_first"), (None, 3, 4, None), (None, 3, 8, None)),
    (layers.UpSampling3D(2), (None, 1, 2, 3, 4), (None, 2, 4, 6, 4)),
    (layers.ZeroPadding1D(3), (None, 5, 2), (None, 11, 2)),
    (layers.ZeroPadding2D((1, 2)), (None, None, 4, 3), (None, None, 8, 3)),
    (layers.ZeroPadding3D(1, data_format="channels_first"), (None, 2, 3, 3, 3), (None, 2, 5, 5, 5)),
    (layers.Cropping1D((2, 3)), (None, 10, 2), (None, 5, 2)),
    (layers.Cropping2D(((1, 2), (3, 4))), (None, 10, None, 2), (None, 7, None, 2)),
    (layers.Cropping3D(1, data_format="channels_first"), (None, 2, 3, 4, 5), (None, 2, 1, 2, 3)),
])
def test_compute_output_shape(layer, input_shape, expected):
    assert layer.compute_output_shape(input_shape) == expected
    assert layer(ember.Input(input_shape[1:])).shape == expected


def test_config_is_normalized():
    assert layers.ZeroPadding2D(2).padding == ((2, 2), (2, 2))
    assert layers.ZeroPadding2D((1, 3)).padding == ((1, 1), (3, 3))
    assert layers.ZeroPadding1D(2).padding == (2, 2)
    assert layers.Cropping3D(((1, 0), 2, 0)).cropping == ((1, 0), (2, 2), (0, 0))
    assert layers.UpSampling2D(3).size == (3, 3) and layers.UpSampling1D(3).size == 3
    assert layers.UpSampling1D((3,)).size == 3
    assert "data_format" not in layers.UpSampling1D().get_config()
    assert "interpolation" not in layers.UpSampling3D().get_config()
    assert layers.UpSampling2D().get_config()["interpolation"] == "nearest"


@pytest.mark.parametrize("make, error, match", [
    (lambda: layers.UpSampling1D(0), ValueError, "size"),
    (lambda: layers.UpSampling2D((2, 2, 2)), ValueError, "size must be an int or a tuple of 2 ints"),
    (lambda: layers.UpSampling2D(interpolation="bicubic"), ValueError, "interpolation must be one of"),
    (lambda: layers.ZeroPadding2D(-1), ValueError, "padding must be"),
    (lambda: layers.ZeroPadding2D((1, 2, 3)), ValueError, "padding must be"),
    (lambda: layers.ZeroPadding1D((1, 2, 3)), ValueError, "padding must be"),
    (lambda: layers.ZeroPadding2D("1"), ValueError, "padding must be"),
    (lambda: layers.Cropping2D(((1, 2), (3,))), ValueError, "cropping must be"),
    (lambda: layers.Cropping1D(1.5), TypeError, "cropping must be"),
    (lambda: layers.Cropping3D(data_format="x"), ValueError, "data_format"),
])
def test_bad_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_bad_input_shapes(backend):
    crop = layers.Cropping2D(((2, 2), (0, 0)), name="c")
    with pytest.raises(ValueError, match=r"'c'.*leaves nothing"):
        crop.compute_output_shape((None, 4, 4, 1))
    with pytest.raises(ValueError, match=r"'c'.*leaves nothing"):
        crop.apply(crop.build((None, None, 4, 1)), ops.ones((1, 3, 4, 1)))
    with pytest.raises(ValueError, match=r"'u'.*rank 4"):
        layers.UpSampling2D(name="u").apply({"params": {}, "buffers": {}}, ops.ones((1, 3, 4)))
    with pytest.raises(ValueError, match=r"'z'.*rank 3"):
        layers.ZeroPadding1D(name="z").compute_output_shape((None, 3, 4, 1))
