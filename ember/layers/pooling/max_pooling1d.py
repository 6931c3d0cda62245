"""``MaxPooling1D``: 1-d max pooling."""

from __future__ import annotations

from ember.layers.pooling.base_pooling import BasePooling


class MaxPooling1D(BasePooling):
    """1-d max pooling: the max of each window of (batch, steps, channels) inputs.

    See :class:`BasePooling` for the arguments.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> x = ops.reshape(ops.arange(6.0), (1, 6, 1))
        >>> y, _ = layers.MaxPooling1D(2).apply({"params": {}, "buffers": {}}, x)
        >>> ops.to_numpy(y)[0, :, 0].tolist()
        [1.0, 3.0, 5.0]
    """

    rank = 1
    pool_mode = "max"
