"""``AveragePooling3D``: 3-d average pooling."""

from __future__ import annotations

from ember.layers.pooling.base_pooling import BasePooling


class AveragePooling3D(BasePooling):
    """3-d average pooling: the average of each window of (batch, d1, d2, d3, channels) inputs.

    See :class:`BasePooling` for the arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.AveragePooling3D(2, data_format="channels_first").compute_output_shape((None, 3, 4, 4, 4))
        (None, 3, 2, 2, 2)
    """

    rank = 3
    pool_mode = "average"
