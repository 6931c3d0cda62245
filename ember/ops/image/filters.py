"""Filters of ``keras.ops.image``: ``gaussian_blur``, ``sobel_edges`` and ``ssim``.

Each is a depthwise convolution (``ops.depthwise_conv``) with a kernel computed on the host,
so it runs and differentiates on every backend. ``gaussian_blur`` and ``sobel_edges`` pad
with zeros and keep the image size, as Keras's torch backend does; ``ssim`` is Keras's
backend-independent formula (Gaussian window, valid convolution).

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.shape(ops.image.gaussian_blur(ops.ones((1, 5, 5, 2))))
    (1, 5, 5, 2)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes, ops
from ember.ops.image._common import check_rank, tensor, to_batched_channels_last

__all__ = ["gaussian_blur", "sobel_edges", "ssim"]

_SOBEL_Y = ((-1.0, -2.0, -1.0), (0.0, 0.0, 0.0), (1.0, 2.0, 1.0))
_SOBEL_X = ((-1.0, 0.0, 1.0), (-2.0, 0.0, 2.0), (-1.0, 0.0, 1.0))


def _gaussian_1d(size: int, sigma: float) -> np.ndarray:
    x = np.arange(size, dtype=np.float64) - (size - 1) / 2
    kernel = np.exp(-0.5 * (x / sigma) ** 2)
    return kernel / kernel.sum()


def _pair(op: str, name: str, value: Any, kind: type) -> tuple:
    values = (value, value) if isinstance(value, (int, float)) else tuple(value)
    if len(values) != 2:
        raise ValueError(f"{op}: {name} must be one number or two, received {value!r}")
    return tuple(kind(v) for v in values)


def _depthwise(x: Any, kernel: np.ndarray, pad: tuple) -> Any:
    """Zero-pad ``x`` (NHWC) by ``pad = (rows, cols)`` and correlate every channel with ``kernel`` (kh, kw)."""
    channels = ops.shape(x)[-1]
    if pad != (0, 0):
        x = ops.pad(x, [[0, 0], [pad[0], pad[0]], [pad[1], pad[1]], [0, 0]])
    weights = np.broadcast_to(kernel[:, :, None, None], kernel.shape + (channels, 1))
    return ops.depthwise_conv(x, ops.convert_to_tensor(np.ascontiguousarray(weights), dtype=ops.dtype(x)),
                              padding="valid", data_format="channels_last")


def gaussian_blur(images, kernel_size=(3, 3), sigma=(1.0, 1.0), data_format=None):
    """Blur every channel with a Gaussian kernel, zero padding, same size (odd square kernels).

    The kernel is Keras's: ``outer(g(kernel_size[1], sigma[1]), g(kernel_size[0], sigma[0]))``
    laid out as ``kernel_size``, with ``kernel_size[0] // 2`` zero padding on each side of
    both spatial axes (so ``sigma[1]`` acts along the height and ``sigma[0]`` along the width).

    Args:
        images: Float images, rank 3 or 4.
        kernel_size: ``(k0, k1)`` or one int.
        sigma: ``(s0, s1)`` or one number.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Returns:
        The blurred images.

    Example:
        >>> from ember import ops
        >>> x = ops.ones((3, 3, 1))
        >>> round(float(ops.to_numpy(ops.image.gaussian_blur(x))[1, 1, 0]), 4)
        1.0
    """
    size = _pair("gaussian_blur", "kernel_size", kernel_size, int)
    sigmas = _pair("gaussian_blur", "sigma", sigma, float)
    if min(size) < 1 or min(sigmas) <= 0:
        raise ValueError(f"gaussian_blur: kernel_size and sigma must be positive, received {kernel_size!r} and "
                         f"{sigma!r}")
    x, restore = to_batched_channels_last("gaussian_blur", images, data_format)
    kernel = np.outer(_gaussian_1d(size[1], sigmas[1]), _gaussian_1d(size[0], sigmas[0])).reshape(size)
    return restore(_depthwise(x, kernel, (size[0] // 2, size[0] // 2)))


def sobel_edges(images, data_format=None):
    """Sobel gradients of every channel, ``(..., 2)``: ``[..., 0]`` along the height, ``[..., 1]`` the width.

    Args:
        images: Float images, rank 3 or 4.
        data_format: ``"channels_last"`` (default; output ``(N, H, W, C, 2)``) or
            ``"channels_first"`` (output ``(N, C, H, W, 2)``).

    Returns:
        The two edge maps stacked on a new last axis.

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.tile(ops.arange(3.0), (3,)), (1, 3, 3, 1))
        >>> ops.to_numpy(ops.image.sobel_edges(x))[0, 1, 1, 0].tolist()
        [0.0, 8.0]
    """
    x, restore = to_batched_channels_last("sobel_edges", images, data_format)
    edges_y = restore(_depthwise(x, np.asarray(_SOBEL_Y), (1, 1)))
    edges_x = restore(_depthwise(x, np.asarray(_SOBEL_X), (1, 1)))
    return ops.stack([edges_y, edges_x], axis=-1)


def ssim(image1, image2, max_val=1.0, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03, data_format=None):
    """Structural similarity of two images (or batches), averaged over pixels and channels.

    Args:
        image1: Images, rank 3 or 4.
        image2: Images of the same shape.
        max_val: The dynamic range of the pixel values.
        filter_size: The Gaussian window size.
        filter_sigma: The Gaussian window's standard deviation.
        k1: The luminance constant factor.
        k2: The contrast constant factor.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Returns:
        One value per image (a scalar for unbatched input), in ``image1``'s dtype.

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.arange(48.0) / 48.0, (4, 4, 3))
        >>> round(float(ops.to_numpy(ops.image.ssim(x, x, filter_size=3))), 4)
        1.0
    """
    image1, image2 = tensor(image1), tensor(image2)
    check_rank("ssim", image1, "image1")
    check_rank("ssim", image2, "image2")
    if tuple(ops.shape(image1)) != tuple(ops.shape(image2)):
        raise ValueError(f"ssim: image1 and image2 must have the same shape, received {tuple(ops.shape(image1))} "
                         f"and {tuple(ops.shape(image2))}")
    dtype = ops.dtype(image1)
    compute = dtype if dtypes.is_float(dtype) else dtypes.floatx()
    unbatched = len(ops.shape(image1)) == 3
    a, _ = to_batched_channels_last("ssim", ops.cast(image1, compute), data_format)
    b, _ = to_batched_channels_last("ssim", ops.cast(image2, compute), data_format)
    window = np.outer(_gaussian_1d(filter_size, filter_sigma), _gaussian_1d(filter_size, filter_sigma))
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    mu1, mu2 = _depthwise(a, window, (0, 0)), _depthwise(b, window, (0, 0))
    mu1_sq, mu2_sq, mu1_mu2 = ops.multiply(mu1, mu1), ops.multiply(mu2, mu2), ops.multiply(mu1, mu2)
    sigma1_sq = ops.subtract(_depthwise(ops.multiply(a, a), window, (0, 0)), mu1_sq)
    sigma2_sq = ops.subtract(_depthwise(ops.multiply(b, b), window, (0, 0)), mu2_sq)
    sigma12 = ops.subtract(_depthwise(ops.multiply(a, b), window, (0, 0)), mu1_mu2)
    numerator = ops.multiply(ops.add(ops.multiply(2.0, mu1_mu2), c1), ops.add(ops.multiply(2.0, sigma12), c2))
    denominator = ops.multiply(ops.add(ops.add(mu1_sq, mu2_sq), c1), ops.add(ops.add(sigma1_sq, sigma2_sq), c2))
    value = ops.mean(ops.divide(numerator, denominator), axis=(1, 2, 3))
    if unbatched:
        value = ops.squeeze(value, 0)
    return ops.cast(value, dtype)
