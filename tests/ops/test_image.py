"""``ember.ops.image`` against Keras 3 (torch backend) on every backend, with gradients.

Each op runs on tiny float32 images (2x5x6x3) and is compared with ``keras.ops.image`` on the
same inputs; gradients are compared with torch autograd through Keras's torch ops in float64.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import ops
from ember.ops.image import sampling
from tests.tolerances import FLOAT32, FLOAT64

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")
torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
IMG = rng.uniform(size=(2, 5, 6, 3)).astype(np.float32)
IMG_CF = np.ascontiguousarray(IMG.transpose(0, 3, 1, 2))
UINT8 = (IMG * 255).astype(np.uint8)


def _keras(name, *args, **kwargs):
    return keras.ops.convert_to_numpy(getattr(keras.ops.image, name)(*args, **kwargs))


def _ours(name, *args, **kwargs):
    return ops.to_numpy(getattr(ops.image, name)(*args, **kwargs))


def _same(name, args, kwargs, bound=FLOAT32, ours_kwargs=None):
    expected = _keras(name, *args, **kwargs)
    got = _ours(name, *args, **(kwargs if ours_kwargs is None else ours_kwargs))
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), **bound)


RESIZE_CASES = [
    ((3, 4), {}), ((8, 9), {}), ((3, 4), {"interpolation": "nearest"}), ((8, 11), {"interpolation": "nearest"}),
    ((3, 4), {"interpolation": "bicubic"}), ((8, 9), {"interpolation": "bicubic"}),
    ((3, 4), {"antialias": True}), ((2, 3), {"interpolation": "bicubic", "antialias": True}),
    ((8, 9), {"antialias": True}), ((4, 4), {"crop_to_aspect_ratio": True}),
    ((4, 4), {"pad_to_aspect_ratio": True, "fill_value": 0.5}), ((6, 3), {"pad_to_aspect_ratio": True}),
    ((3, 4), {"data_format": "channels_first"}),
]


@pytest.mark.parametrize(("size", "kwargs"), RESIZE_CASES, ids=str)
def test_resize_matches_keras(backend, size, kwargs):
    images = IMG_CF if kwargs.get("data_format") == "channels_first" else IMG
    _same("resize", (images, size), kwargs)


def test_resize_single_image_and_integers_match_keras(backend):
    _same("resize", (IMG[0], (3, 4)), {})
    for interpolation in ("bilinear", "bicubic", "nearest"):
        # uint8 images: interpolated in float32 and rounded; a value within rounding of a .5 tie may round either
        # way -> atol 1 (one intensity level)
        _same("resize", (UINT8, (7, 4)), {"interpolation": interpolation}, bound={"rtol": 0, "atol": 1})


@pytest.mark.parametrize("method", ["lanczos3", "lanczos5"])
def test_resize_lanczos_matches_kerass_scale_and_translate(backend, method):
    # Keras's torch backend refuses Lanczos resizing; its NumPy/JAX resize is scale_and_translate with
    # scale out/in and no translation, which Keras's torch backend computes.
    for size in ((3, 4), (8, 9)):
        scale = np.array([size[0] / 5, size[1] / 6], np.float32)
        expected = _keras("scale_and_translate", IMG, (2,) + size + (3,), scale, np.zeros(2, np.float32), (1, 2),
                          method, antialias=True)
        got = _ours("resize", IMG, size, interpolation=method, antialias=True)
        np.testing.assert_allclose(got, expected, **FLOAT32)


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3"])
def test_scale_and_translate_matches_keras(backend, method):
    scale = np.array([1.5, 0.7], np.float32)
    translation = np.array([0.3, -0.4], np.float32)
    for antialias in (True, False):
        _same("scale_and_translate", (IMG, (2, 7, 4, 3), scale, translation, (1, 2), method),
              {"antialias": antialias})


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_colour_conversions_match_keras(backend, data_format):
    images = IMG if data_format == "channels_last" else IMG_CF
    images = images.copy()
    images.reshape(-1)[:6] = [0.0, 1.0, 1.0, 0.5, 0.5, 0.5]  # zero hue/saturation, ties of maxima
    for name in ("rgb_to_grayscale", "rgb_to_hsv", "hsv_to_rgb"):
        _same(name, (images,), {"data_format": data_format})
    _same("rgb_to_grayscale", (images[0],), {"data_format": data_format})
    _same("rgb_to_grayscale", (UINT8,), {})  # integer images: weighted in float, cast back toward zero
    _same("rgb_to_grayscale", (IMG[..., :1],), {})


PATCH_CASES = [
    (2, {}), ((2, 3), {"strides": 1}), ((3, 2), {"strides": (2, 1), "padding": "same"}),
    ((2, 2), {"strides": 1, "dilation_rate": 2}), (2, {"data_format": "channels_first"}),
    ((2, 3), {"strides": 1, "data_format": "channels_first"}),
]


@pytest.mark.parametrize(("size", "kwargs"), PATCH_CASES, ids=str)
def test_extract_patches_matches_keras(backend, size, kwargs):
    images = IMG_CF if kwargs.get("data_format") == "channels_first" else IMG
    _same("extract_patches", (images, size), kwargs)


def test_extract_patches_3d_and_unbatched_match_keras(backend):
    volumes = rng.uniform(size=(1, 4, 5, 4, 2)).astype(np.float32)
    _same("extract_patches_3d", (volumes, 2), {})
    _same("extract_patches_3d", (volumes[0], (2, 3, 2)), {"strides": 1})
    _same("extract_patches", (volumes, (2, 2, 2)), {})
    _same("extract_patches", (IMG[0], 2), {})


def test_crop_and_pad_match_keras(backend):
    _same("crop_images", (IMG,), {"top_cropping": 1, "left_cropping": 2, "target_height": 3, "target_width": 2})
    _same("crop_images", (IMG_CF,), {"bottom_cropping": 1, "right_cropping": 2, "top_cropping": 1,
                                     "left_cropping": 0, "data_format": "channels_first"})
    _same("pad_images", (IMG,), {"top_padding": 1, "left_padding": 2, "target_height": 8, "target_width": 9})
    _same("pad_images", (IMG_CF[0],), {"bottom_padding": 2, "right_padding": 1, "top_padding": 0,
                                       "left_padding": 3, "data_format": "channels_first"})


COORDS = rng.uniform(-1.7, 6.7, size=(2, 4, 7)).astype(np.float32)


@pytest.mark.parametrize("fill_mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates_matches_keras(backend, order, fill_mode):
    inputs = IMG[0, :, :, 0]
    coords = COORDS.copy()
    coords[:, 0, :2] = [2.5, 3.5]  # rounding ties (half to even) for order 0
    _same("map_coordinates", (inputs, coords, order), {"fill_mode": fill_mode, "fill_value": 0.25})
    _same("map_coordinates", (inputs, [coords[0], coords[1]], order), {"fill_mode": fill_mode})


# Source coordinates of these transforms stay >= 0.01 from integers: linear interpolation has a kink at every
# integer, where float32 and float64 coordinates could fall on different sides (gradients then differ by O(1)).
TRANSFORMS = np.array([[0.9, -0.2, 0.83, 0.25, 1.1, -0.61, 0.0, 0.0],
                       [1.0, 0.0, -1.47, 0.0, 1.0, 0.71, 0.0, 0.0]], np.float32)


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
@pytest.mark.parametrize("fill_mode", ["constant", "reflect", "wrap", "nearest", "mirror"])
def test_affine_transform_matches_keras(backend, interpolation, fill_mode):
    kwargs = {"interpolation": interpolation, "fill_mode": fill_mode, "fill_value": 0.5}
    _same("affine_transform", (IMG, TRANSFORMS), kwargs)
    _same("affine_transform", (IMG_CF, TRANSFORMS), dict(kwargs, data_format="channels_first"))
    _same("affine_transform", (IMG[0], TRANSFORMS[0]), kwargs)


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_perspective_transform_matches_keras(backend, interpolation):
    start = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 4.0], [5.0, 4.0]], np.float32)
    end = np.array([[[0.4, 0.2], [4.6, 0.5], [0.1, 3.7], [5.2, 4.1]],
                    [[0.0, 0.0], [5.0, 0.0], [0.0, 4.0], [5.0, 4.0]]], np.float32)
    # The homography is an 8x8 float32 solve (condition ~1e3 for these corners): its coefficients are within
    # 1e3 * 8 * u = 5e-4 relative of each other's, and the sampled pixel values (unit range, unit gradients,
    # coordinates <= 6) within 6 * 5e-4 = 3e-3 -> atol 5e-3. Nearest sampling rounds the coordinates, so it is
    # checked at corners that map to exact integer positions (the second image: identity).
    bound = {"rtol": 0, "atol": 5e-3}
    kwargs = {"interpolation": interpolation, "fill_value": 0.5}
    if interpolation == "nearest":
        _same("perspective_transform", (IMG[1:], start[None], end[1:]), kwargs, bound=bound)
        return
    _same("perspective_transform", (IMG, np.stack([start, start]), end), kwargs, bound=bound)
    _same("perspective_transform", (IMG_CF[:1], start, end[0]), dict(kwargs, data_format="channels_first"),
          bound=bound)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_filters_match_keras(backend, data_format):
    images = IMG if data_format == "channels_last" else IMG_CF
    # Keras's torch backend reads data_format=None as channels_first for gaussian_blur: pass it explicitly.
    _same("gaussian_blur", (images,), {"data_format": data_format})
    _same("gaussian_blur", (images,), {"kernel_size": (5, 5), "sigma": (1.5, 0.8), "data_format": data_format})
    _same("sobel_edges", (images,), {"data_format": data_format})
    other = np.clip(images + rng.normal(scale=0.1, size=images.shape).astype(np.float32), 0, 1)
    _same("ssim", (images, other), {"filter_size": 3, "data_format": data_format})
    _same("ssim", (images[0], other[0]), {"filter_size": 3, "filter_sigma": 0.8, "data_format": data_format})


@pytest.mark.parametrize("fill_mode", ["reflect", "constant"])
def test_elastic_transform_given_its_noise_matches_keras(backend, fill_mode):
    # Keras draws the noise from torch's global generator (its seed is ignored on CPU); given the same noise, the
    # deformation is Keras's: blur (kernel int(6 sigma) | 1) of noise * sigma, then map_coordinates per channel.
    alpha, sigma = 3.0, 0.6
    noise = rng.normal(size=(2, 2, 5, 6)).astype(np.float32)
    size = int(6 * sigma) | 1
    blurred = [_keras("gaussian_blur", (n * sigma)[..., None], kernel_size=(size, size), sigma=(sigma, sigma),
                      data_format="channels_last")[..., 0] for n in noise]
    gy, gx = np.meshgrid(np.arange(5), np.arange(6), indexing="ij")
    expected = np.stack([np.stack([
        _keras("map_coordinates", IMG[b, :, :, c], [gy + alpha * blurred[1][b], gx + alpha * blurred[0][b]], 1,
               fill_mode=fill_mode, fill_value=0.25) for c in range(3)], -1) for b in range(2)])
    got = sampling._elastic_from_noise(ops.convert_to_tensor(IMG), ops.convert_to_tensor(noise[0]),
                                       ops.convert_to_tensor(noise[1]), alpha, sigma, 1, fill_mode, 0.25)
    np.testing.assert_allclose(ops.to_numpy(got), expected, **FLOAT32)


def test_elastic_transform_is_seeded_and_keeps_shape(backend):
    first = _ours("elastic_transform", IMG_CF, alpha=2.0, sigma=1.0, seed=3, data_format="channels_first")
    again = _ours("elastic_transform", IMG_CF, alpha=2.0, sigma=1.0, seed=3, data_format="channels_first")
    assert first.shape == IMG_CF.shape and first.dtype == np.float32
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, IMG_CF)
    still = _ours("elastic_transform", IMG, alpha=0.0, sigma=1.0, seed=3)
    np.testing.assert_allclose(still, IMG, **FLOAT32)  # no displacement: bilinear at the pixel centres


# ------------------------------------------------------------------ gradients
def _grad(fn, *arrays):
    natives = [ops.convert_to_tensor(a) for a in arrays]
    weights = ops.convert_to_tensor(np.random.default_rng(5).normal(size=ops.shape(fn(*natives))))
    with ember.GradientTape() as tape:
        tape.watch(natives)
        loss = ops.sum(ops.multiply(fn(*natives), weights))
    return [ops.to_numpy(g) for g in tape.gradient(loss, natives)], ops.to_numpy(weights)


def _torch_grad(fn, weights, *arrays):
    """torch autograd through Keras's op, on the device Keras puts its tensors on."""
    tensors = [keras.ops.convert_to_tensor(a, dtype="float64").requires_grad_() for a in arrays]
    (fn(*tensors) * keras.ops.convert_to_tensor(weights)).sum().backward()
    return [keras.ops.convert_to_numpy(t.grad) for t in tensors]


def _float64_on(backend_name):
    return backend_name != "mlx"  # MLX has no float64 on its default device: float32 there


@pytest.mark.parametrize(("kwargs"), [{}, {"interpolation": "bicubic"}, {"antialias": True}], ids=str)
def test_resize_gradient_matches_torch_autograd(backend, kwargs):
    dtype = np.float64 if _float64_on(backend) else np.float32
    x = IMG.astype(dtype)
    (got,), weights = _grad(lambda a: ops.image.resize(a, (3, 8), **kwargs), x)
    (expected,) = _torch_grad(lambda a: keras.ops.image.resize(a, (3, 8), **kwargs), weights, x)
    np.testing.assert_allclose(got, expected, **(FLOAT64 if dtype == np.float64 else FLOAT32))


def test_affine_transform_gradient_matches_torch_autograd(backend):
    dtype = np.float64 if _float64_on(backend) else np.float32
    x, t = IMG.astype(dtype), TRANSFORMS.astype(dtype)
    got, weights = _grad(lambda a, b: ops.image.affine_transform(a, b, fill_mode="reflect"), x, t)
    # (Keras writes into the transform in place: a leaf that requires grad goes in as a clone)
    expected = _torch_grad(lambda a, b: keras.ops.image.affine_transform(a, b.clone(), fill_mode="reflect"), weights,
                           x, t)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, **(FLOAT64 if dtype == np.float64 else FLOAT32))


def test_map_coordinates_gradient_matches_torch_autograd(backend):
    dtype = np.float64 if _float64_on(backend) else np.float32
    inputs, coords = IMG[0, :, :, 0].astype(dtype), COORDS.astype(dtype)
    got, weights = _grad(lambda a, c: ops.image.map_coordinates(a, c, 1, fill_mode="constant"), inputs, coords)
    expected = _torch_grad(lambda a, c: keras.ops.image.map_coordinates(a, c, 1, fill_mode="constant"), weights,
                           inputs, coords)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, **(FLOAT64 if dtype == np.float64 else FLOAT32))


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: ops.image.resize(np.ones((5, 6), np.float32), (2, 2)), ValueError, r"resize: expected images of rank 3"),
    (lambda: ops.image.resize(IMG, (2, 2), interpolation="cubic"), ValueError, r"resize: interpolation.*'cubic'"),
    (lambda: ops.image.resize(IMG, (2, 2), data_format="NHWC"), ValueError, r"resize: data_format.*'NHWC'"),
    (lambda: ops.image.resize(IMG, (2, 0)), ValueError, r"resize: size.*\(2, 0\)"),
    (lambda: ops.image.resize(IMG, (2, 2), crop_to_aspect_ratio=True, pad_to_aspect_ratio=True), ValueError,
     "only one of"),
    (lambda: ops.image.resize(IMG, (2, 2), fill_mode="reflect"), ValueError, r"fill_mode.*'reflect'"),
    (lambda: ops.image.affine_transform(IMG, TRANSFORMS, interpolation="bicubic"), ValueError,
     r"affine_transform: interpolation.*'bicubic'"),
    (lambda: ops.image.affine_transform(IMG, TRANSFORMS[:, :6]), ValueError, r"transform of shape \(8,\)"),
    (lambda: ops.image.affine_transform(IMG, TRANSFORMS, fill_mode="edge"), ValueError, r"fill_mode.*'edge'"),
    (lambda: ops.image.map_coordinates(IMG[0, :, :, 0], COORDS[:1], 1), ValueError, r"one coordinate array per axis"),
    (lambda: ops.image.map_coordinates(IMG[0, :, :, 0], COORDS, 3), NotImplementedError, "order must be 0 or 1"),
    (lambda: ops.image.rgb_to_hsv(UINT8), ValueError, r"rgb_to_hsv: expected images of a float dtype"),
    (lambda: ops.image.rgb_to_grayscale(IMG[..., :2]), ValueError, r"3 \(RGB\) or 1"),
    (lambda: ops.image.crop_images(IMG, 1, 1), ValueError, r"crop_images: give exactly two"),
    (lambda: ops.image.crop_images(IMG, 1, 1, target_height=9, target_width=2), ValueError, r"exceeds the image"),
    (lambda: ops.image.pad_images(IMG, 1, 1, target_height=2, target_width=9), ValueError,
     r"bottom_padding must be >= 0"),
    (lambda: ops.image.extract_patches(IMG, (2, 2, 2, 2)), ValueError, r"size must have 2 or 3 entries"),
    (lambda: ops.image.extract_patches(IMG, 2, padding="full"), ValueError, r"padding.*'full'"),
    (lambda: ops.image.gaussian_blur(IMG, sigma=(0.0, 1.0)), ValueError, r"must be positive"),
    (lambda: ops.image.perspective_transform(IMG, np.ones((3, 2)), np.ones((3, 2))), ValueError,
     r"start_points of shape \(4, 2\)"),
    (lambda: ops.image.scale_and_translate(IMG, (2, 3, 3, 3), [1.0], [0.0], (1, 2), "linear"), ValueError,
     "one entry per axis"),
    (lambda: ops.image.scale_and_translate(IMG, (2, 3, 3, 3), [1.0], [0.0], (1,), "area"), ValueError,
     r"method.*'area'"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_bad_inputs_raise_clear_errors(backend, call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_one_hot_of_float_class_ids_casts_as_keras(backend):
    ids = np.array([0.0, 2.0, 1.7, -1.0, 2.9, -0.5], np.float32)  # (Keras raises for ids >= num_classes)
    expected = keras.ops.convert_to_numpy(keras.ops.one_hot(ids, 3))
    np.testing.assert_array_equal(ops.to_numpy(ops.one_hot(ids, 3)), expected)
