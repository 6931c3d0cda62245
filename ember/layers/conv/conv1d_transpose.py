"""``Conv1DTranspose``: 1-d transposed convolution (a learned upsampling)."""

from __future__ import annotations

from ember.layers.conv.base_conv_transpose import BaseConvTranspose


class Conv1DTranspose(BaseConvTranspose):
    """1-d transposed convolution; see :class:`BaseConvTranspose` for the arguments.

    ``(batch, steps, channels)`` inputs; kernel ``(kernel_size, filters, in_channels)``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> up = layers.Conv1DTranspose(3, 4, strides=2, padding="same")
        >>> state = up.build((None, 5, 2), seed=0)
        >>> ops.shape(state["params"]["kernel"])
        (4, 3, 2)
        >>> y, _ = up.apply(state, ops.ones((1, 5, 2)))
        >>> ops.shape(y)
        (1, 10, 3)
    """

    rank = 1
