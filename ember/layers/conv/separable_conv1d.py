"""``SeparableConv1D``: depthwise-separable 1-d convolution."""

from __future__ import annotations

from ember.layers.conv.base_separable_conv import BaseSeparableConv


class SeparableConv1D(BaseSeparableConv):
    """1-d depthwise-separable convolution; see :class:`BaseSeparableConv` for the arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.SeparableConv1D(6, 3, padding="same").compute_output_shape((None, 10, 4))
        (None, 10, 6)
    """

    rank = 1
