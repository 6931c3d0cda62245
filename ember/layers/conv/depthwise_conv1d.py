"""``DepthwiseConv1D``: per-channel 1-d convolution."""

from __future__ import annotations

from ember.layers.conv.base_depthwise_conv import BaseDepthwiseConv


class DepthwiseConv1D(BaseDepthwiseConv):
    """1-d depthwise convolution; see :class:`BaseDepthwiseConv` for the arguments.

    Kernel ``(kernel_size, in_channels, depth_multiplier)``.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.DepthwiseConv1D(3, depth_multiplier=2).compute_output_shape((None, 10, 4))
        (None, 8, 8)
    """

    rank = 1
