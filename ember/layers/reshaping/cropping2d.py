"""``Cropping2D``: drop rows and columns at the edges of images."""

from __future__ import annotations

from typing import Any

from ember.layers.reshaping.base_cropping import BaseCropping


class Cropping2D(BaseCropping):
    """Drop rows and columns at the edges of images.

    Args:
        cropping: an int (all four sides), ``(rows, cols)`` (symmetric) or
            ``((top, bottom), (left, right))``.
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.Cropping2D(((2, 2), (4, 4))).compute_output_shape((None, 28, 28, 3))
        (None, 24, 20, 3)
    """

    rank = 2

    cropping: Any = ((0, 0), (0, 0))
    data_format: str | None = None
