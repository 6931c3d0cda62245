"""Image helpers shared by the image preprocessing layers: layout, cropping, resizing and affine warps.

Images are ``(batch, height, width, channels)`` inside these helpers (a single
``(height, width, channels)`` image is given a batch axis and loses it again).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ember import dtypes, ops
from ember.layers.conv import _args

FILL_MODES = ("reflect", "wrap", "constant", "nearest")
INTERPOLATIONS = ("bilinear", "nearest")


def data_format(layer: Any) -> str:
    return _args.standardize_data_format(layer.name, layer.data_format)


def check_size(layer: Any, height: Any, width: Any) -> None:
    for argument, value in (("height", height), ("width", width)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{layer.name}: {argument} must be a positive int, received {value!r}")


def check_choice(layer: Any, argument: str, value: Any, choices: tuple) -> None:
    if value not in choices:
        raise ValueError(f"{layer.name}: {argument} must be one of {choices}, received {value!r}")


def to_channels_last(layer: Any, inputs: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(images as (batch, h, w, c) floats, restore)``; ``restore`` undoes the layout changes."""
    rank = ops.ndim(inputs)
    if rank not in (3, 4):
        raise ValueError(f"layer {layer.name!r} expects images of rank 3 or 4, received shape {ops.shape(inputs)}")
    images = inputs if dtypes.is_float(ops.dtype(inputs)) else ops.cast(inputs, dtypes.floatx())
    first = layer.data_format == "channels_first"
    if rank == 3:
        images = ops.expand_dims(images, 0)
    if first:
        images = ops.transpose(images, (0, 2, 3, 1))

    def restore(out: Any) -> Any:
        if first:
            out = ops.transpose(out, (0, 3, 1, 2))
        return ops.squeeze(out, 0) if rank == 3 else out

    return images, restore


def spatial(images: Any) -> tuple[int, int]:
    return ops.shape(images)[1], ops.shape(images)[2]


def output_shape(layer: Any, input_shape: tuple, height: int, width: int) -> tuple:
    if len(input_shape) not in (3, 4):
        raise ValueError(f"layer {layer.name!r} expects images of rank 3 or 4, received shape {input_shape}")
    shape = list(input_shape)
    h_axis = len(shape) - (2 if layer.data_format == "channels_first" else 3)
    shape[h_axis], shape[h_axis + 1] = height, width
    return tuple(shape)


def crop(images: Any, top: int, left: int, height: int, width: int) -> Any:
    return ops.getitem(images, (slice(None), slice(top, top + height), slice(left, left + width)))


def _interpolate_axis(images: Any, axis: int, size: int, interpolation: str) -> Any:
    """Resize one spatial axis with half-pixel centres (PyTorch ``align_corners=False``, no antialiasing)."""
    length = ops.shape(images)[axis]
    if length == size:
        return images
    scale = length / size
    if interpolation == "nearest":
        index = [min(int(math.floor((i + 0.5) * scale)), length - 1) for i in range(size)]  # "nearest-exact"
        return ops.take(images, ops.convert_to_tensor(index, dtype="int32"), axis=axis)
    source = [max((i + 0.5) * scale - 0.5, 0.0) for i in range(size)]
    low = [min(int(math.floor(s)), length - 1) for s in source]
    high = [min(lo + 1, length - 1) for lo in low]
    weight = ops.convert_to_tensor([s - lo for s, lo in zip(source, low)], dtype=ops.dtype(images))
    shape = [1] * ops.ndim(images)
    shape[axis] = size
    weight = ops.reshape(weight, tuple(shape))
    below = ops.take(images, ops.convert_to_tensor(low, dtype="int32"), axis=axis)
    above = ops.take(images, ops.convert_to_tensor(high, dtype="int32"), axis=axis)
    return ops.add(below, ops.multiply(ops.subtract(above, below), weight))


def resize(images: Any, height: int, width: int, interpolation: str, crop_to_aspect_ratio: bool = False) -> Any:
    """Resize ``(batch, h, w, c)`` images (after a centred crop to the target aspect ratio when asked)."""
    if crop_to_aspect_ratio:
        h, w = spatial(images)
        crop_h = min(h, int(w * height / width))  # truncated, as Keras's smart_resize
        crop_w = min(w, int(h * width / height))
        images = crop(images, (h - crop_h) // 2, (w - crop_w) // 2, crop_h, crop_w)
    images = _interpolate_axis(images, 1, height, interpolation)
    return _interpolate_axis(images, 2, width, interpolation)


# ------------------------------------------------------------------------------ affine warps
def _fix_index(index: Any, size: int, fill_mode: str) -> tuple[Any, Any]:
    """``(index inside [0, size), validity mask or None)`` for integer ``index`` under ``fill_mode``."""
    if fill_mode == "nearest":
        return ops.clip(index, 0, size - 1), None
    if fill_mode == "wrap":
        return ops.mod(index, size), None
    if fill_mode == "reflect":  # (d c b a | a b c d | d c b a)
        folded = ops.mod(index, 2 * size)
        return ops.where(ops.greater_equal(folded, size), ops.subtract(2 * size - 1, folded), folded), None
    valid = ops.logical_and(ops.greater_equal(index, 0), ops.less(index, size))
    return ops.clip(index, 0, size - 1), valid


def _gather(images: Any, rows: Any, cols: Any) -> Any:
    """``images[b, rows[b, i, j], cols[b, i, j], :]`` for every batch entry ``b``."""
    batch, h, w, c = ops.shape(images)
    flat = ops.reshape(images, (batch, h * w, c))
    index = ops.reshape(ops.add(ops.multiply(rows, w), cols), (batch, -1, 1))
    picked = ops.take_along_axis(flat, ops.broadcast_to(index, (batch, ops.shape(index)[1], c)), axis=1)
    return ops.reshape(picked, (batch,) + tuple(ops.shape(rows)[1:]) + (c,))


def affine_transform(images: Any, transforms: Any, interpolation: str, fill_mode: str, fill_value: float) -> Any:
    """Warp ``(batch, h, w, c)`` images by Keras's 8-parameter projective transforms ``(batch, 8)``.

    Output pixel ``(x, y)`` samples the input at ``((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k)``
    with ``k = c0 x + c1 y + 1``; points outside follow ``fill_mode``.
    """
    batch, h, w, _ = ops.shape(images)
    dtype = ops.dtype(images)
    ys = ops.reshape(ops.cast(ops.arange(h), dtype), (1, h, 1))
    xs = ops.reshape(ops.cast(ops.arange(w), dtype), (1, 1, w))
    t = [ops.reshape(ops.take(transforms, ops.convert_to_tensor([i], dtype="int32"), axis=1), (batch, 1, 1))
         for i in range(8)]
    k = ops.add(ops.add(ops.multiply(t[6], xs), ops.multiply(t[7], ys)), 1.0)
    x_in = ops.divide(ops.add(ops.add(ops.multiply(t[0], xs), ops.multiply(t[1], ys)), t[2]), k)
    y_in = ops.divide(ops.add(ops.add(ops.multiply(t[3], xs), ops.multiply(t[4], ys)), t[5]), k)
    if interpolation == "nearest":
        corners = [(ops.floor(ops.add(y_in, 0.5)), ops.floor(ops.add(x_in, 0.5)), None)]
    else:
        y0, x0 = ops.floor(y_in), ops.floor(x_in)
        dy, dx = ops.subtract(y_in, y0), ops.subtract(x_in, x0)
        corners = [(y0, x0, ops.multiply(ops.subtract(1.0, dy), ops.subtract(1.0, dx))),
                   (y0, ops.add(x0, 1.0), ops.multiply(ops.subtract(1.0, dy), dx)),
                   (ops.add(y0, 1.0), x0, ops.multiply(dy, ops.subtract(1.0, dx))),
                   (ops.add(y0, 1.0), ops.add(x0, 1.0), ops.multiply(dy, dx))]
    out = None
    for row, col, weight in corners:
        rows, row_ok = _fix_index(ops.cast(row, "int32"), h, fill_mode)
        cols, col_ok = _fix_index(ops.cast(col, "int32"), w, fill_mode)
        value = _gather(images, ops.broadcast_to(rows, (batch, h, w)), ops.broadcast_to(cols, (batch, h, w)))
        if row_ok is not None:
            valid = ops.expand_dims(ops.broadcast_to(ops.logical_and(row_ok, col_ok), (batch, h, w)), -1)
            value = ops.where(valid, value, ops.full_like(value, fill_value))
        term = value if weight is None else ops.multiply(value, ops.expand_dims(weight, -1))
        out = term if out is None else ops.add(out, term)
    return out
