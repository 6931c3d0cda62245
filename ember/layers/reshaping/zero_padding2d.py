"""``ZeroPadding2D``: rows and columns of zeros around images."""

from __future__ import annotations

from typing import Any

from ember.layers.reshaping.base_zero_padding import BaseZeroPadding


class ZeroPadding2D(BaseZeroPadding):
    """Add rows and columns of zeros at the edges of images.

    Args:
        padding: an int (all four sides), ``(rows, cols)`` (symmetric) or
            ``((top, bottom), (left, right))``.
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layer = layers.ZeroPadding2D(((1, 0), (2, 3)))
        >>> layer.padding
        ((1, 0), (2, 3))
        >>> layer.compute_output_shape((None, 4, 4, 3))
        (None, 5, 9, 3)
    """

    rank = 2

    padding: Any = (1, 1)
    data_format: str | None = None
