"""``Conv2DTranspose``: 2-d transposed convolution (a learned upsampling)."""

from __future__ import annotations

from ember.layers.conv.base_conv_transpose import BaseConvTranspose


class Conv2DTranspose(BaseConvTranspose):
    """2-d transposed convolution; see :class:`BaseConvTranspose` for the arguments.

    ``(batch, height, width, channels)`` inputs (or channels first); kernel
    ``(kh, kw, filters, in_channels)``.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> up = layers.Conv2DTranspose(16, 3, strides=2, padding="valid", output_padding=1)
        >>> up.compute_output_shape((None, 7, 7, 32))
        (None, 16, 16, 16)
        >>> layers.Conv2DTranspose(16, 3, strides=2, padding="same").compute_output_shape((None, 7, None, 32))
        (None, 14, None, 16)
    """

    rank = 2
