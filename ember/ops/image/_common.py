"""Argument checks and layout helpers shared by the ``ember.ops.image`` ops.

Every image op takes a single image (rank 3) or a batch (rank 4) in ``"channels_last"``
(``(batch, height, width, channels)``) or ``"channels_first"`` (``(batch, channels, height,
width)``) layout; ``data_format=None`` means ``"channels_last"`` (Keras's default
``image_data_format``). The ops work on a batched channels-last view and restore the
caller's layout at the end.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.ops.image import _common
    >>> with ember.using_backend("numpy"):
    ...     x, restore = _common.to_batched_channels_last("resize", ops.zeros((3, 4, 5)), "channels_first")
    ...     ops.shape(x), ops.shape(restore(x))
    ((1, 4, 5, 3), (3, 4, 5))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import dtypes, ops

DATA_FORMATS = ("channels_last", "channels_first")
FILL_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")
SAMPLING_INTERPOLATIONS = {"nearest": 0, "bilinear": 1}  # affine/perspective/elastic: map_coordinates order


def tensor(x: Any) -> Any:
    """``x`` as a native array of the active backend."""
    return x if ops.is_array(x) else ops.convert_to_tensor(x)


def data_format_of(op: str, data_format: Any) -> str:
    """``"channels_last"``/``"channels_first"``; ``None`` means ``"channels_last"``."""
    if data_format is None:
        return "channels_last"
    fmt = data_format.lower() if isinstance(data_format, str) else data_format
    if fmt not in DATA_FORMATS:
        raise ValueError(f"{op}: data_format must be one of {DATA_FORMATS} or None, received {data_format!r}")
    return fmt


def check_rank(op: str, x: Any, argument: str = "images") -> int:
    """The rank of ``x``, which must be 3 (one image) or 4 (a batch)."""
    shape = ops.shape(x)
    if len(shape) not in (3, 4):
        raise ValueError(f"{op}: expected {argument} of rank 3 (single image) or 4 (batch of images), "
                         f"received shape {tuple(shape)}")
    return len(shape)


def check_choice(op: str, argument: str, value: Any, allowed: Any) -> None:
    """ValueError naming ``argument`` when ``value`` is not one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{op}: {argument} must be one of {tuple(allowed)}, received {value!r}")


def check_float(op: str, x: Any) -> None:
    """ValueError unless ``x`` has a floating dtype."""
    if not dtypes.is_float(ops.dtype(x)):
        raise ValueError(f"{op}: expected images of a float dtype, received dtype {ops.dtype(x)}")


def to_batched_channels_last(op: str, images: Any, data_format: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(x, restore)``: ``images`` as ``(batch, height, width, channels)`` and the inverse layout change."""
    fmt = data_format_of(op, data_format)
    images = tensor(images)
    rank = check_rank(op, images)
    x = images if rank == 4 else ops.expand_dims(images, 0)
    if fmt == "channels_first":
        x = ops.transpose(x, (0, 2, 3, 1))

    def restore(y: Any) -> Any:
        if fmt == "channels_first":
            y = ops.transpose(y, (0, 3, 1, 2))
        return y if rank == 4 else ops.squeeze(y, 0)

    return x, restore


def channel_axis(fmt: str) -> int:
    """The channel axis (negative) of a rank-3 or rank-4 image array in ``fmt``."""
    return -1 if fmt == "channels_last" else -3


def spatial_size(images: Any, fmt: str) -> tuple[int, int]:
    """``(height, width)`` of a rank-3 or rank-4 image array in ``fmt``."""
    shape = ops.shape(images)
    return (shape[-3], shape[-2]) if fmt == "channels_last" else (shape[-2], shape[-1])
