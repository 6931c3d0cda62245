"""``ZeroPadding3D``: zeros around volumes."""

from __future__ import annotations

from typing import Any

from ember.layers.reshaping.base_zero_padding import BaseZeroPadding


class ZeroPadding3D(BaseZeroPadding):
    """Add zeros at the edges of each spatial axis of volumes.

    Args:
        padding: an int (every side), 3 ints (symmetric per axis) or 3 ``(before,
            after)`` pairs.
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.ZeroPadding3D((1, 0, 2)).compute_output_shape((None, 2, 2, None, 1))
        (None, 4, 2, None, 1)
    """

    rank = 3

    padding: Any = ((1, 1), (1, 1), (1, 1))
    data_format: str | None = None
