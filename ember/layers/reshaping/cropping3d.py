"""``Cropping3D``: drop cells at the edges of volumes."""

from __future__ import annotations

from typing import Any

from ember.layers.reshaping.base_cropping import BaseCropping


class Cropping3D(BaseCropping):
    """Drop cells at the edges of each spatial axis of volumes.

    Args:
        cropping: an int (every side), 3 ints (symmetric per axis) or 3 ``(before,
            after)`` pairs.
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.Cropping3D(1).compute_output_shape((None, 4, 5, 6, 2))
        (None, 2, 3, 4, 2)
    """

    rank = 3

    cropping: Any = ((1, 1), (1, 1), (1, 1))
    data_format: str | None = None
