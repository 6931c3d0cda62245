"""``AveragePooling1D``: 1-d average pooling."""

from __future__ import annotations

from ember.layers.pooling.base_pooling import BasePooling


class AveragePooling1D(BasePooling):
    """1-d average pooling: the average of each window of (batch, steps, channels) inputs.

    See :class:`BasePooling` for the arguments.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> x = ops.reshape(ops.arange(5.0), (1, 5, 1))
        >>> y, _ = layers.AveragePooling1D(2, padding="same").apply({"params": {}, "buffers": {}}, x)
        >>> ops.to_numpy(y)[0, :, 0].tolist()  # the last window holds one real cell
        [0.5, 2.5, 4.0]
    """

    rank = 1
    pool_mode = "average"
