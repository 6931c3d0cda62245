"""``ZeroPadding1D``: zeros before/after the steps of a sequence."""

from __future__ import annotations

from typing import Any

from ember.layers.reshaping.base_zero_padding import BaseZeroPadding


class ZeroPadding1D(BaseZeroPadding):
    """Add zero steps at the start and end of ``(batch, steps, features)`` inputs.

    Args:
        padding: an int (both ends) or a ``(start, end)`` pair.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> x = ops.ones((1, 2, 1))
        >>> y, _ = layers.ZeroPadding1D((1, 2)).apply({"params": {}, "buffers": {}}, x)
        >>> ops.to_numpy(y)[0, :, 0].tolist()
        [0.0, 1.0, 1.0, 0.0, 0.0]
    """

    rank = 1

    padding: Any = 1
