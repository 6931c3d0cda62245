"""``Conv3DTranspose``: 3-d transposed convolution (a learned upsampling)."""

from __future__ import annotations

from ember.layers.conv.base_conv_transpose import BaseConvTranspose


class Conv3DTranspose(BaseConvTranspose):
    """3-d transposed convolution; see :class:`BaseConvTranspose` for the arguments.

    ``(batch, d1, d2, d3, channels)`` inputs (or channels first); kernel
    ``(k1, k2, k3, filters, in_channels)``.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.Conv3DTranspose(4, 2, strides=2).compute_output_shape((None, 3, 4, 5, 8))
        (None, 6, 8, 10, 4)
    """

    rank = 3
