"""``Conv2D``: 2-d convolution over images."""

from __future__ import annotations

from ember.layers.conv.base_conv import BaseConv


class Conv2D(BaseConv):
    """2-d convolution (spatial convolution over images); see :class:`BaseConv` for the arguments.

    Inputs ``(batch, height, width, channels)`` (or channels first); kernel
    ``(kh, kw, in_channels // groups, filters)``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> conv = layers.Conv2D(8, 3, strides=2, padding="same", activation="relu")
        >>> conv.compute_output_shape((None, 28, 28, 3))
        (None, 14, 14, 8)
        >>> state = conv.build((None, 28, 28, 3), seed=0)
        >>> ops.shape(state["params"]["kernel"]), ops.shape(state["params"]["bias"])
        ((3, 3, 3, 8), (8,))
    """

    rank = 2
