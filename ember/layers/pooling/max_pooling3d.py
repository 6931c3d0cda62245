"""``MaxPooling3D``: 3-d max pooling."""

from __future__ import annotations

from ember.layers.pooling.base_pooling import BasePooling


class MaxPooling3D(BasePooling):
    """3-d max pooling: the max of each window of (batch, d1, d2, d3, channels) inputs.

    See :class:`BasePooling` for the arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.MaxPooling3D(2).compute_output_shape((None, 4, 6, None, 3))
        (None, 2, 3, None, 3)
    """

    rank = 3
    pool_mode = "max"
