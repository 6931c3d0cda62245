"""``AveragePooling2D``: 2-d average pooling."""

from __future__ import annotations

from ember.layers.pooling.base_pooling import BasePooling


class AveragePooling2D(BasePooling):
    """2-d average pooling: the average of each window of (batch, height, width, channels) inputs.

    See :class:`BasePooling` for the arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.AveragePooling2D(3, strides=2).compute_output_shape((None, 9, 9, 4))
        (None, 4, 4, 4)
    """

    rank = 2
    pool_mode = "average"
