"""Colour-space conversions of ``keras.ops.image``: grayscale, RGB to HSV and back.

The formulas are Keras's (torchvision's luma weights; dm_pix's HSV planes), written with
``ember.ops`` so they run and differentiate on every backend.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.to_numpy(ops.image.rgb_to_hsv(ops.convert_to_tensor([[[1.0, 0.0, 0.0]]]))).tolist()
    [[[0.0, 1.0, 1.0]]]
"""

from __future__ import annotations

from typing import Any

from ember import dtypes, ops
from ember.ops.image._common import channel_axis, check_float, check_rank, data_format_of, tensor

__all__ = ["rgb_to_grayscale", "rgb_to_hsv", "hsv_to_rgb"]

_LUMA = (0.2989, 0.587, 0.114)  # Keras's (torchvision's) weights of R, G, B


def _planes(op: str, images: Any, data_format: Any) -> tuple[Any, int]:
    images = tensor(images)
    fmt = data_format_of(op, data_format)
    check_rank(op, images)
    axis = channel_axis(fmt)
    if ops.shape(images)[axis] != 3:
        raise ValueError(f"{op}: expected 3 channels on axis {axis}, received shape {tuple(ops.shape(images))}")
    return images, axis


def rgb_to_grayscale(images, data_format=None):
    """Luma of RGB images: ``0.2989 R + 0.587 G + 0.114 B``, one channel, the input's dtype.

    A one-channel input is returned as a copy. Integer images are weighted in floating point
    and cast back (toward zero), as Keras's torch backend does.

    Args:
        images: An image ``(H, W, C)`` or a batch ``(N, H, W, C)`` (channels first: ``(C, H, W)``,
            ``(N, C, H, W)``), with ``C`` 3 or 1.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Returns:
        The grayscale images, with one channel.

    Example:
        >>> from ember import ops
        >>> y = ops.image.rgb_to_grayscale(ops.ones((2, 2, 3)))
        >>> ops.shape(y), round(float(ops.to_numpy(y)[0, 0, 0]), 4)
        ((2, 2, 1), 0.9999)
    """
    images = tensor(images)
    fmt = data_format_of("rgb_to_grayscale", data_format)
    check_rank("rgb_to_grayscale", images)
    axis = channel_axis(fmt)
    channels = ops.shape(images)[axis]
    if channels not in (1, 3):
        raise ValueError(f"rgb_to_grayscale: expected 3 (RGB) or 1 (grayscale) channels on axis {axis}, "
                         f"received shape {tuple(ops.shape(images))}")
    if channels == 1:
        return ops.copy(images)
    dtype = ops.dtype(images)
    x = images if dtypes.is_float(dtype) else ops.cast(images, dtypes.floatx())
    r, g, b = (ops.squeeze(p, axis) for p in ops.split(x, 3, axis=axis))
    gray = ops.add(ops.add(ops.multiply(r, _LUMA[0]), ops.multiply(g, _LUMA[1])), ops.multiply(b, _LUMA[2]))
    gray = ops.expand_dims(gray, axis)
    return gray if ops.dtype(gray) == dtype else ops.cast(ops.trunc(gray), dtype)


def rgb_to_hsv(images, data_format=None):
    """RGB images (values in ``[0, 1]``) to HSV, each plane in ``[0, 1]``.

    Args:
        images: Float images, rank 3 or 4, with 3 channels.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Returns:
        Hue, saturation and value on the channel axis, the input's dtype.

    Example:
        >>> from ember import ops
        >>> hsv = ops.image.rgb_to_hsv(ops.convert_to_tensor([[[0.0, 0.5, 0.0]]]))
        >>> [round(v, 4) for v in ops.to_numpy(hsv)[0, 0].tolist()]
        [0.3333, 1.0, 0.5]
    """
    images, axis = _planes("rgb_to_hsv", images, data_format)
    check_float("rgb_to_hsv", images)
    eps = float(dtypes.finfo(ops.dtype(images)).eps)
    images = ops.where(ops.less(ops.abs(images), eps), ops.zeros_like(images), images)
    r, g, b = (ops.squeeze(p, axis) for p in ops.split(images, 3, axis=axis))
    value = ops.maximum(ops.maximum(r, g), b)
    range_ = ops.subtract(value, ops.minimum(ops.minimum(r, g), b))
    ones, zeros = ops.ones_like(value), ops.zeros_like(value)
    positive_value, positive_range = ops.greater(value, 0.0), ops.greater(range_, 0.0)
    saturation = ops.where(positive_value, ops.divide(range_, ops.where(positive_value, value, ones)), zeros)
    norm = ops.divide(1.0, ops.multiply(6.0, ops.where(positive_range, range_, ones)))
    hue = ops.where(ops.equal(value, g), ops.add(ops.multiply(norm, ops.subtract(b, r)), 2.0 / 6.0),
                    ops.add(ops.multiply(norm, ops.subtract(r, g)), 4.0 / 6.0))
    hue = ops.where(ops.equal(value, r), ops.multiply(norm, ops.subtract(g, b)), hue)
    hue = ops.add(ops.where(positive_range, hue, zeros), ops.cast(ops.less(hue, 0.0), ops.dtype(hue)))
    return ops.stack([hue, saturation, value], axis=axis)


def hsv_to_rgb(images, data_format=None):
    """HSV images (each plane in ``[0, 1]``) to RGB.

    Args:
        images: Float images, rank 3 or 4, with 3 channels (hue, saturation, value).
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Returns:
        The RGB images, the input's dtype.

    Example:
        >>> from ember import ops
        >>> rgb = ops.image.hsv_to_rgb(ops.convert_to_tensor([[[0.0, 1.0, 1.0]]]))
        >>> ops.to_numpy(rgb).tolist()
        [[[1.0, 0.0, 0.0]]]
    """
    images, axis = _planes("hsv_to_rgb", images, data_format)
    check_float("hsv_to_rgb", images)
    hue, saturation, value = (ops.squeeze(p, axis) for p in ops.split(images, 3, axis=axis))
    dh = ops.multiply(ops.mod(hue, 1.0), 6.0)
    dr = ops.clip(ops.subtract(ops.abs(ops.subtract(dh, 3.0)), 1.0), 0.0, 1.0)
    dg = ops.clip(ops.subtract(2.0, ops.abs(ops.subtract(dh, 2.0))), 0.0, 1.0)
    db = ops.clip(ops.subtract(2.0, ops.abs(ops.subtract(dh, 4.0))), 0.0, 1.0)
    one_minus_s = ops.subtract(1.0, saturation)
    planes = [ops.multiply(value, ops.add(one_minus_s, ops.multiply(saturation, d))) for d in (dr, dg, db)]
    return ops.stack(planes, axis=axis)
