"""Patches, crops and pads of ``keras.ops.image``.

``extract_patches`` (2-D) and ``extract_patches_3d`` are Keras's: a convolution with an
identity kernel, so the features of a patch are ordered ``(row, column, channel)`` (3-D:
``(depth, row, column, channel)``). Non-overlapping valid patches (``strides == size``, no
dilation) take an exact reshape path instead, with the same layout.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.shape(ops.image.extract_patches(ops.ones((1, 4, 6, 3)), 2))
    (1, 2, 3, 12)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops
from ember.ops.image._common import check_rank, data_format_of, spatial_size, tensor

__all__ = ["extract_patches", "extract_patches_3d", "crop_images", "pad_images"]


def _ints(op: str, name: str, value: Any, n: int) -> tuple:
    values = (value,) * n if isinstance(value, (int, np.integer)) else tuple(value)
    if len(values) != n or any(not isinstance(v, (int, np.integer)) or v < 1 for v in values):
        raise ValueError(f"{op}: {name} must be a positive int or {n} positive ints, received {value!r}")
    return tuple(int(v) for v in values)


def _patches(op: str, images: Any, size: tuple, strides: Any, dilation_rate: Any, padding: str, data_format: Any,
             spatial: int) -> Any:
    images = tensor(images)
    fmt = data_format_of(op, data_format)
    rank = len(ops.shape(images))
    if rank not in (spatial + 1, spatial + 2):
        raise ValueError(f"{op}: expected rank {spatial + 1} (one input) or {spatial + 2} (a batch), received shape "
                         f"{tuple(ops.shape(images))}")
    mode = padding.lower() if isinstance(padding, str) else padding
    if mode not in ("valid", "same"):
        raise ValueError(f"{op}: padding must be 'valid' or 'same', received {padding!r}")
    strides = size if not strides else _ints(op, "strides", strides, spatial)
    dilation = _ints(op, "dilation_rate", dilation_rate, spatial)
    x = images if rank == spatial + 2 else ops.expand_dims(images, 0)
    channels = ops.shape(x)[-1] if fmt == "channels_last" else ops.shape(x)[1]
    if strides == size and dilation == (1,) * spatial and mode == "valid":
        out = _tiled(x, size, fmt)
    else:
        out_dim = int(np.prod(size)) * channels
        kernel = np.eye(out_dim).reshape(size + (channels, out_dim))
        kernel = ops.convert_to_tensor(kernel, dtype=ops.dtype(x))
        out = ops.conv(x, kernel, strides=strides, padding=mode, data_format=fmt, dilation_rate=dilation)
    return out if rank == spatial + 2 else ops.squeeze(out, 0)


def _tiled(x: Any, size: tuple, fmt: str) -> Any:
    """Non-overlapping valid patches by reshapes: ``(N, *blocks, prod(size) * C)`` (channels last)."""
    spatial = len(size)
    if fmt == "channels_first":
        x = ops.moveaxis(x, 1, -1)
    shape = tuple(ops.shape(x))
    blocks = [s // p for s, p in zip(shape[1:-1], size)]
    x = ops.getitem(x, (slice(None),) + tuple(slice(0, b * p) for b, p in zip(blocks, size)) + (slice(None),))
    split = [shape[0]]
    for b, p in zip(blocks, size):
        split += [b, p]
    x = ops.reshape(x, split + [shape[-1]])
    order = [0] + [1 + 2 * i for i in range(spatial)] + [2 + 2 * i for i in range(spatial)] + [1 + 2 * spatial]
    x = ops.reshape(ops.transpose(x, order), [shape[0]] + blocks + [-1])
    return ops.moveaxis(x, -1, 1) if fmt == "channels_first" else x


def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    """Patches of images as features: ``(N, rows, cols, size_h * size_w * C)`` (channels last).

    A ``size`` of three ints extracts 3-D patches of volumes (:func:`extract_patches_3d`).

    Args:
        images: An image (rank 3) or a batch (rank 4).
        size: The patch size: an int or ``(height, width)``.
        strides: The step between patches (default: ``size``, non-overlapping).
        dilation_rate: The dilation inside a patch.
        padding: ``"valid"`` (default) or ``"same"``.
        data_format: ``"channels_last"`` (default) or ``"channels_first"`` (features on axis 1).

    Returns:
        The patches, each flattened as ``(row, column, channel)``.

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.arange(16.0), (4, 4, 1))
        >>> ops.to_numpy(ops.image.extract_patches(x, 2))[0, 0].tolist()
        [0.0, 1.0, 4.0, 5.0]
    """
    if not isinstance(size, (int, np.integer)):
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"extract_patches: size must be an int or a tuple, received {size!r}")
        if len(size) not in (2, 3):
            raise ValueError(f"extract_patches: size must have 2 or 3 entries, received {size!r}")
        if len(size) == 3:
            return extract_patches_3d(images, size, strides, dilation_rate, padding, data_format)
    return _patches("extract_patches", images, _ints("extract_patches", "size", size, 2), strides, dilation_rate,
                    padding, data_format, 2)


def extract_patches_3d(volumes, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    """3-D patches of volumes as features: ``(N, d, h, w, size_d * size_h * size_w * C)`` (channels last).

    Args:
        volumes: A volume (rank 4) or a batch (rank 5).
        size: The patch size: an int or ``(depth, height, width)``.
        strides: The step between patches (default: ``size``).
        dilation_rate: The dilation inside a patch.
        padding: ``"valid"`` (default) or ``"same"``.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Returns:
        The patches, each flattened as ``(depth, row, column, channel)``.

    Example:
        >>> from ember import ops
        >>> ops.shape(ops.image.extract_patches_3d(ops.ones((4, 4, 4, 2)), 2))
        (2, 2, 2, 16)
    """
    return _patches("extract_patches_3d", volumes, _ints("extract_patches_3d", "size", size, 3), strides,
                    dilation_rate, padding, data_format, 3)


def _three(op: str, names: tuple, values: tuple) -> None:
    if list(values).count(None) != 1:
        raise ValueError(f"{op}: give exactly two of {', '.join(names)}, received "
                         + ", ".join(f"{n}={v!r}" for n, v in zip(names, values)))
    for name, value in zip(names, values):
        if value is not None and value < 0:
            raise ValueError(f"{op}: {name} must be >= 0, received {name}={value}")


def _spatial_axes(images: Any, fmt: str) -> tuple[int, int]:
    rank = len(ops.shape(images))
    return (rank - 3, rank - 2) if fmt == "channels_last" else (rank - 2, rank - 1)


def pad_images(images, top_padding=None, left_padding=None, bottom_padding=None, right_padding=None,
               target_height=None, target_width=None, data_format=None):
    """Zero-pad images; give two of top/bottom/target height and two of left/right/target width.

    Args:
        images: An image (rank 3) or a batch (rank 4).
        top_padding: Rows added on top.
        left_padding: Columns added on the left.
        bottom_padding: Rows added at the bottom.
        right_padding: Columns added on the right.
        target_height: The output height.
        target_width: The output width.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Returns:
        The padded images.

    Example:
        >>> from ember import ops
        >>> ops.shape(ops.image.pad_images(ops.ones((2, 2, 1)), 1, 1, target_height=4, target_width=5))
        (4, 5, 1)
    """
    images = tensor(images)
    fmt = data_format_of("pad_images", data_format)
    check_rank("pad_images", images)
    _three("pad_images", ("top_padding", "bottom_padding", "target_height"),
           (top_padding, bottom_padding, target_height))
    _three("pad_images", ("left_padding", "right_padding", "target_width"), (left_padding, right_padding, target_width))
    height, width = spatial_size(images, fmt)
    if top_padding is None:
        top_padding = target_height - bottom_padding - height
    if bottom_padding is None:
        bottom_padding = target_height - top_padding - height
    if left_padding is None:
        left_padding = target_width - right_padding - width
    if right_padding is None:
        right_padding = target_width - left_padding - width
    for name, value in (("top_padding", top_padding), ("bottom_padding", bottom_padding),
                        ("left_padding", left_padding), ("right_padding", right_padding)):
        if value < 0:
            raise ValueError(f"pad_images: {name} must be >= 0 (the target is smaller than the image), received "
                             f"{name}={value}")
    pads = [[0, 0] for _ in ops.shape(images)]
    h_axis, w_axis = _spatial_axes(images, fmt)
    pads[h_axis], pads[w_axis] = [top_padding, bottom_padding], [left_padding, right_padding]
    return ops.pad(images, pads)


def crop_images(images, top_cropping=None, left_cropping=None, bottom_cropping=None, right_cropping=None,
                target_height=None, target_width=None, data_format=None):
    """Crop images; give two of top/bottom/target height and two of left/right/target width.

    Args:
        images: An image (rank 3) or a batch (rank 4).
        top_cropping: Rows removed from the top.
        left_cropping: Columns removed from the left.
        bottom_cropping: Rows removed from the bottom.
        right_cropping: Columns removed from the right.
        target_height: The output height.
        target_width: The output width.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Returns:
        The cropped images.

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.arange(9.0), (3, 3, 1))
        >>> ops.to_numpy(ops.image.crop_images(x, 1, 1, target_height=2, target_width=2))[:, :, 0].tolist()
        [[4.0, 5.0], [7.0, 8.0]]
    """
    images = tensor(images)
    fmt = data_format_of("crop_images", data_format)
    check_rank("crop_images", images)
    _three("crop_images", ("top_cropping", "bottom_cropping", "target_height"),
           (top_cropping, bottom_cropping, target_height))
    _three("crop_images", ("left_cropping", "right_cropping", "target_width"),
           (left_cropping, right_cropping, target_width))
    height, width = spatial_size(images, fmt)
    if top_cropping is None:
        top_cropping = height - target_height - bottom_cropping
    if target_height is None:
        target_height = height - bottom_cropping - top_cropping
    if left_cropping is None:
        left_cropping = width - target_width - right_cropping
    if target_width is None:
        target_width = width - right_cropping - left_cropping
    for name, value in (("top_cropping", top_cropping), ("target_height", target_height),
                        ("left_cropping", left_cropping), ("target_width", target_width)):
        if value < 0:
            raise ValueError(f"crop_images: {name} must be >= 0 (the crop is larger than the image), received "
                             f"{name}={value}")
    if top_cropping + target_height > height or left_cropping + target_width > width:
        raise ValueError(f"crop_images: the crop ({top_cropping}+{target_height} rows, {left_cropping}+{target_width}"
                         f" columns) exceeds the image ({height}x{width})")
    key: list = [slice(None)] * len(ops.shape(images))
    h_axis, w_axis = _spatial_axes(images, fmt)
    key[h_axis] = slice(top_cropping, top_cropping + target_height)
    key[w_axis] = slice(left_cropping, left_cropping + target_width)
    return ops.getitem(images, tuple(key))
