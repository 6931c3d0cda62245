"""``SeparableConv2D``: depthwise-separable 2-d convolution."""

from __future__ import annotations

from ember.layers.conv.base_separable_conv import BaseSeparableConv


class SeparableConv2D(BaseSeparableConv):
    """2-d depthwise-separable convolution; see :class:`BaseSeparableConv` for the arguments.

    A depthwise convolution (``depthwise_kernel`` ``(kh, kw, in, depth_multiplier)``)
    followed by a 1x1 convolution (``pointwise_kernel`` ``(1, 1, in * depth_multiplier,
    filters)``): far fewer params than a ``Conv2D`` of the same size.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.SeparableConv2D(8, 3, depth_multiplier=2)
        >>> state = layer.build((None, 10, 10, 4), seed=0)
        >>> {k: ops.shape(v) for k, v in sorted(state["params"].items())}
        {'bias': (8,), 'depthwise_kernel': (3, 3, 4, 2), 'pointwise_kernel': (1, 1, 8, 8)}
    """

    rank = 2
