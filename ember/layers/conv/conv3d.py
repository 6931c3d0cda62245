"""``Conv3D``: 3-d convolution over volumes."""

from __future__ import annotations

from ember.layers.conv.base_conv import BaseConv


class Conv3D(BaseConv):
    """3-d convolution (over volumes or video); see :class:`BaseConv` for the arguments.

    Inputs ``(batch, d1, d2, d3, channels)`` (or channels first); kernel
    ``(k1, k2, k3, in_channels // groups, filters)``.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> conv = layers.Conv3D(2, (3, 3, 1))
        >>> conv.compute_output_shape((None, 8, None, 4, 3))
        (None, 6, None, 4, 2)
    """

    rank = 3
