"""``MaxPooling2D``: 2-d max pooling."""

from __future__ import annotations

from ember.layers.pooling.base_pooling import BasePooling


class MaxPooling2D(BasePooling):
    """2-d max pooling: the max of each window of (batch, height, width, channels) inputs.

    See :class:`BasePooling` for the arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.MaxPooling2D((2, 2), strides=1, padding="same").compute_output_shape((None, 5, 5, 3))
        (None, 5, 5, 3)
        >>> layers.MaxPooling2D().compute_output_shape((None, 5, 7, 3))
        (None, 2, 3, 3)
    """

    rank = 2
    pool_mode = "max"
