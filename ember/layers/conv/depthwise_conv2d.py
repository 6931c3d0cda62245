"""``DepthwiseConv2D``: per-channel 2-d convolution."""

from __future__ import annotations

from ember.layers.conv.base_depthwise_conv import BaseDepthwiseConv


class DepthwiseConv2D(BaseDepthwiseConv):
    """2-d depthwise convolution; see :class:`BaseDepthwiseConv` for the arguments.

    Kernel ``(kh, kw, in_channels, depth_multiplier)`` (Keras's layout); it runs as one
    grouped convolution with ``groups = in_channels``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.DepthwiseConv2D(3, padding="same", depth_multiplier=2)
        >>> state = layer.build((None, 8, 8, 3), seed=0)
        >>> ops.shape(state["params"]["kernel"]), ops.shape(state["params"]["bias"])
        ((3, 3, 3, 2), (6,))
        >>> y, _ = layer.apply(state, ops.ones((1, 8, 8, 3)))
        >>> ops.shape(y)
        (1, 8, 8, 6)
    """

    rank = 2
