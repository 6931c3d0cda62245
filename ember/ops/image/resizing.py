"""Resizing of ``keras.ops.image``: ``resize`` and ``scale_and_translate``.

``resize`` gives the values of Keras's torch backend (``torch.nn.functional.interpolate``,
half-pixel centres): ``"nearest"`` (torch's ``"nearest-exact"``), ``"bilinear"``, ``"bicubic"``
(cubic convolution with ``a = -0.75``, border pixels repeated) and, with ``antialias=True``,
torch's antialiased bilinear/bicubic filters (PIL's, ``a = -0.5``); ``"lanczos3"``/``"lanczos5"``
(which Keras's torch backend refuses) are Keras's NumPy/JAX ones, ``scale_and_translate``'s
kernels. ``scale_and_translate`` is JAX's ``jax.image.scale_and_translate``.

Each output pixel along an axis is a weighted sum of a few input pixels (its *taps*). The
tap table (indices and weights) depends only on the sizes, so it is computed once on the
host in float64; the image side is one gather per axis (``ops.take``) and a weighted sum,
so the result runs and differentiates on every backend through the protocol ops.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     x = ops.reshape(ops.arange(4.0), (1, 2, 2, 1))
    ...     ops.to_numpy(ops.image.resize(x, (1, 1)))[0, :, :, 0].tolist()
    [[1.5]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes, ops
from ember.ops.image._common import check_choice, check_rank, data_format_of, spatial_size, tensor

__all__ = ["resize", "scale_and_translate"]

RESIZE_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "lanczos3", "lanczos5")
SCALE_AND_TRANSLATE_METHODS = ("linear", "bilinear", "trilinear", "triangle", "cubic", "bicubic", "tricubic",
                               "lanczos3", "lanczos5")


# ------------------------------------------------------------------ kernels (float64)
def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    """Cubic convolution kernel with parameter ``a`` (Keys: -0.5; torch's upsampling: -0.75)."""
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.maximum(0.0, 1.0 - np.abs(x))


def _lanczos(radius: float, x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    y = radius * np.sin(np.pi * x) * np.sin(np.pi * x / radius)
    out = np.where(x > 1e-3, y / np.where(x != 0, np.pi ** 2 * x ** 2, 1.0), 1.0)
    return np.where(x > radius, 0.0, out)


_JAX_KERNELS = {
    "linear": _triangle,
    "cubic": lambda x: _cubic(x, -0.5),
    "lanczos3": lambda x: _lanczos(3.0, x),
    "lanczos5": lambda x: _lanczos(5.0, x),
}


# ------------------------------------------------------------------ tap tables: (indices, weights) of shape (out, taps)
def _nearest_taps(size_in: int, size_out: int) -> tuple[np.ndarray, None]:
    # torch's "nearest-exact" in float32: min(floor((i + 0.5) * (in / out)), in - 1)
    scale = np.float32(size_in) / np.float32(size_out)
    source = np.floor((np.arange(size_out, dtype=np.float32) + np.float32(0.5)) * scale).astype(np.int64)
    return np.minimum(source, size_in - 1)[:, None], None


def _linear_taps(size_in: int, size_out: int) -> tuple[np.ndarray, np.ndarray]:
    # torch's bilinear, align_corners=False: source clamped at 0, the upper neighbour clamped at the border
    scale = size_in / size_out
    source = np.maximum((np.arange(size_out) + 0.5) * scale - 0.5, 0.0)
    lower = np.minimum(np.floor(source).astype(np.int64), size_in - 1)
    frac = source - lower
    upper = np.minimum(lower + 1, size_in - 1)
    return np.stack([lower, upper], 1), np.stack([1.0 - frac, frac], 1)


def _cubic_taps(size_in: int, size_out: int) -> tuple[np.ndarray, np.ndarray]:
    # torch's bicubic, align_corners=False: a = -0.75, the four neighbours clamped to the image
    scale = size_in / size_out
    source = (np.arange(size_out) + 0.5) * scale - 0.5
    base = np.floor(source)
    t = source - base
    offsets = np.arange(-1, 3)
    indices = np.clip(base.astype(np.int64)[:, None] + offsets, 0, size_in - 1)
    weights = _cubic(t[:, None] - offsets, -0.75)
    return indices, weights


def _antialiased_taps(size_in: int, size_out: int, interpolation: str) -> tuple[np.ndarray, np.ndarray]:
    # torch's _upsample_{bilinear,bicubic}2d_aa (PIL's filters): a support widened by the scale when shrinking
    scale = size_in / size_out
    width = 2.0 if interpolation == "bilinear" else 4.0
    support = width * 0.5 * scale if scale >= 1.0 else width * 0.5
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    center = scale * (np.arange(size_out) + 0.5)
    start = np.maximum(np.trunc(center - support + 0.5).astype(np.int64), 0)
    stop = np.minimum(np.trunc(center + support + 0.5).astype(np.int64), size_in)
    taps = int(np.max(stop - start))
    j = np.arange(taps)
    indices = start[:, None] + j
    inside = indices < stop[:, None]
    x = (indices - center[:, None] + 0.5) * invscale
    weights = _triangle(x) if interpolation == "bilinear" else _cubic(x, -0.5)
    weights = np.where(inside, weights, 0.0)
    total = weights.sum(axis=1, keepdims=True)
    weights = np.where(total != 0.0, weights / np.where(total != 0.0, total, 1.0), weights)
    return np.minimum(indices, size_in - 1), weights


def _weight_matrix(size_in: int, size_out: int, scale: float, translation: float, kernel: str,
                   antialias: bool) -> np.ndarray:
    """JAX's ``scale_and_translate`` weights, ``(size_in, size_out)``, in float64."""
    inv_scale = 1.0 / scale
    kernel_scale = max(inv_scale, 1.0) if antialias else 1.0
    sample = (np.arange(size_out) + 0.5) * inv_scale - translation * inv_scale - 0.5
    x = np.abs(sample[None, :] - np.arange(size_in)[:, None]) / kernel_scale
    weights = _JAX_KERNELS[kernel](x)
    total = weights.sum(axis=0, keepdims=True)
    weights = np.where(np.abs(total) > 1000.0 * float(np.finfo(np.float32).eps),
                       weights / np.where(total != 0, total, 1.0), 0.0)
    inside = (sample >= -0.5) & (sample <= size_in - 0.5)
    return np.where(inside[None, :], weights, 0.0)


def _taps(size_in: int, size_out: int, interpolation: str, antialias: bool) -> tuple[np.ndarray, Any]:
    if interpolation == "nearest":
        return _nearest_taps(size_in, size_out)
    if antialias:
        return _antialiased_taps(size_in, size_out, interpolation)
    return _linear_taps(size_in, size_out) if interpolation == "bilinear" else _cubic_taps(size_in, size_out)


_SEPARATE_TAPS = 8  # up to this many taps: one gather per tap (faster than one gather and a reduction)


def _apply_taps(x: Any, axis: int, indices: np.ndarray, weights: Any) -> Any:
    """Along ``axis``: ``out[i] = sum_k weights[i, k] * x[indices[i, k]]``, summed in tap order."""
    size_out, taps = indices.shape
    if weights is None:  # one tap of weight 1 (nearest): the gather is the result, any dtype
        return ops.take(x, ops.convert_to_tensor(indices[:, 0].astype(np.int32)), axis=axis)
    trailing = (1,) * (len(ops.shape(x)) - axis - 1)
    if taps <= _SEPARATE_TAPS:
        out = None
        for k in range(taps):
            gathered = ops.take(x, ops.convert_to_tensor(indices[:, k].astype(np.int32)), axis=axis)
            w = ops.convert_to_tensor(weights[:, k].reshape((size_out,) + trailing), dtype=ops.dtype(x))
            term = ops.multiply(gathered, w)
            out = term if out is None else ops.add(out, term)
        return out
    shape = list(ops.shape(x))
    shape[axis:axis + 1] = [size_out, taps]
    gathered = ops.reshape(ops.take(x, ops.convert_to_tensor(indices.reshape(-1).astype(np.int32)), axis=axis), shape)
    w = ops.convert_to_tensor(weights.reshape(weights.shape + trailing), dtype=ops.dtype(x))
    return ops.sum(ops.multiply(gathered, w), axis=axis + 1)


def _apply_matrix(x: Any, axis: int, matrix: np.ndarray) -> Any:
    """Along ``axis``: ``out[j] = sum_i matrix[i, j] * x[i]`` (a dense ``(size_in, size_out)`` weight matrix)."""
    out = ops.tensordot(x, ops.convert_to_tensor(matrix, dtype=ops.dtype(x)), axes=([axis], [0]))
    return ops.moveaxis(out, -1, axis)


# ------------------------------------------------------------------ aspect ratio
def _crop_to_aspect(images: Any, size: tuple, fmt: str) -> Any:
    height, width = spatial_size(images, fmt)
    target_height, target_width = size
    crop_height = max(min(height, int(float(width * target_height) / target_width)), 1)
    crop_width = max(min(width, int(float(height * target_width) / target_height)), 1)
    top, left = int(float(height - crop_height) / 2), int(float(width - crop_width) / 2)
    rows, cols = slice(top, top + crop_height), slice(left, left + crop_width)
    key = (Ellipsis, rows, cols, slice(None)) if fmt == "channels_last" else (Ellipsis, rows, cols)
    return ops.getitem(images, key)


def _pad_to_aspect(images: Any, size: tuple, fmt: str, fill_value: float) -> Any:
    height, width = spatial_size(images, fmt)
    target_height, target_width = size
    pad_height = max(height, int(float(width * target_height) / target_width))
    pad_width = max(width, int(float(height * target_width) / target_height))
    top, left = int(float(pad_height - height) / 2), int(float(pad_width - width) / 2)
    rank = len(ops.shape(images))
    h_axis = rank - 3 if fmt == "channels_last" else rank - 2
    pads = [[0, 0] for _ in range(rank)]
    pads[h_axis], pads[h_axis + 1] = [top, top], [left, left]
    if top == 0 and left == 0:
        return images
    return ops.pad(images, pads, constant_values=fill_value)


# ------------------------------------------------------------------ public ops
def resize(images, size, interpolation="bilinear", antialias=False, crop_to_aspect_ratio=False,
           pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0, data_format=None):
    """Resize images to ``size = (height, width)``.

    Args:
        images: An image (rank 3) or a batch of images (rank 4).
        size: The output ``(height, width)``.
        interpolation: ``"bilinear"`` (default), ``"nearest"``, ``"bicubic"``, ``"lanczos3"`` or
            ``"lanczos5"``.
        antialias: Widen the filter when shrinking (bilinear, bicubic, lanczos); ignored for nearest.
        crop_to_aspect_ratio: Crop the central window of the target aspect ratio first.
        pad_to_aspect_ratio: Pad the short side evenly with ``fill_value`` to the target ratio first.
        fill_mode: Only ``"constant"``.
        fill_value: The padding value of ``pad_to_aspect_ratio``.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Returns:
        The resized images, the input's dtype (integer images are interpolated in floating
        point and rounded, bicubic ``uint8`` clipped to ``[0, 255]``).

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.arange(4.0), (2, 2, 1))
        >>> ops.to_numpy(ops.image.resize(x, (4, 4), interpolation="nearest"))[:, :, 0].tolist()[0]
        [0.0, 0.0, 1.0, 1.0]
    """
    images = tensor(images)
    fmt = data_format_of("resize", data_format)
    check_choice("resize", "interpolation", interpolation, RESIZE_INTERPOLATIONS)
    if fill_mode != "constant":
        raise ValueError(f"resize: fill_mode must be 'constant' (the only mode), received {fill_mode!r}")
    if pad_to_aspect_ratio and crop_to_aspect_ratio:
        raise ValueError("resize: only one of pad_to_aspect_ratio and crop_to_aspect_ratio can be True")
    if len(size) != 2 or any(not isinstance(s, (int, np.integer)) or s <= 0 for s in size):
        raise ValueError(f"resize: size must be (height, width), two positive ints, received {size!r}")
    size = (int(size[0]), int(size[1]))
    rank = check_rank("resize", images)
    if crop_to_aspect_ratio:
        images = _crop_to_aspect(images, size, fmt)
    elif pad_to_aspect_ratio:
        images = _pad_to_aspect(images, size, fmt, fill_value)
    dtype = ops.dtype(images)
    x = images
    if interpolation != "nearest" and not dtypes.is_float(dtype):
        x = ops.cast(x, "float32")
    h_axis = rank - 3 if fmt == "channels_last" else rank - 2
    use_antialias = bool(antialias) and interpolation != "nearest"
    for axis, size_out in ((h_axis, size[0]), (h_axis + 1, size[1])):
        size_in = ops.shape(x)[axis]
        if size_in == size_out:  # every method's taps are then the identity (Keras's JAX path skips the axis)
            continue
        if interpolation in ("lanczos3", "lanczos5"):  # JAX's resize: scale_and_translate with no translation
            x = _apply_matrix(x, axis, _weight_matrix(size_in, size_out, size_out / size_in, 0.0, interpolation,
                                                      use_antialias))
        else:
            x = _apply_taps(x, axis, *_taps(size_in, size_out, interpolation, use_antialias))
    if ops.dtype(x) != dtype:
        x = ops.round(x)
        if interpolation == "bicubic" and dtype == "uint8":
            x = ops.clip(x, 0.0, 255.0)
        x = ops.cast(x, dtype)
    return x


def scale_and_translate(images, output_shape, scale, translation, spatial_dims, method, antialias=True):
    """JAX's ``scale_and_translate``: sample ``images`` at ``(i + 0.5 - translation) / scale - 0.5``.

    Args:
        images: An array of any rank.
        output_shape: The output shape (a sequence of ``ndim(images)`` ints).
        scale: ``K`` scale factors, one per axis of ``spatial_dims``.
        translation: ``K`` translations, one per axis of ``spatial_dims``.
        spatial_dims: The ``K`` axes to scale and translate.
        method: ``"linear"`` (``"bilinear"``, ``"trilinear"``, ``"triangle"``), ``"cubic"``
            (``"bicubic"``, ``"tricubic"``; Keys ``a = -0.5``), ``"lanczos3"`` or ``"lanczos5"``.
        antialias: Widen the kernel by ``1 / scale`` when shrinking (default True).

    Returns:
        The resampled array; integer inputs are rounded and clipped to their range.

    Example:
        >>> from ember import ops
        >>> y = ops.image.scale_and_translate(ops.arange(3.0), (5,), [5 / 3], [0.0], (0,), "linear")
        >>> [round(v, 3) for v in ops.to_numpy(y).tolist()]
        [0.0, 0.4, 1.0, 1.6, 2.0]
    """
    check_choice("scale_and_translate", "method", method, SCALE_AND_TRANSLATE_METHODS)
    kernel = ("linear" if method in ("linear", "bilinear", "trilinear", "triangle")
              else "cubic" if method in ("cubic", "bicubic", "tricubic") else method)
    images = tensor(images)
    shape = ops.shape(images)
    scale = np.asarray(ops.to_numpy(tensor(scale)), np.float64).reshape(-1)
    translation = np.asarray(ops.to_numpy(tensor(translation)), np.float64).reshape(-1)
    spatial_dims = tuple(int(d) for d in spatial_dims)
    if len(output_shape) != len(shape):
        raise ValueError(f"scale_and_translate: output_shape must have {len(shape)} entries (the rank of images), "
                         f"received {tuple(output_shape)}")
    if not len(scale) == len(translation) == len(spatial_dims):
        raise ValueError(f"scale_and_translate: scale, translation and spatial_dims must have one entry per axis, "
                         f"received {len(scale)}, {len(translation)} and {len(spatial_dims)}")
    dtype = ops.dtype(images)
    x = images if dtypes.is_float(dtype) else ops.cast(images, "float32")
    for i, d in enumerate(spatial_dims):
        d = d % len(shape)
        x = _apply_matrix(x, d, _weight_matrix(shape[d], int(output_shape[d]), scale[i], translation[i], kernel,
                                               bool(antialias)))
    if ops.dtype(x) != dtype:
        x = ops.cast(ops.clip(ops.round(x), ops.min(images), ops.max(images)), dtype)
    return x
