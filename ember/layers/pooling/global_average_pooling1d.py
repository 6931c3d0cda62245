"""``GlobalAveragePooling1D``: Global average pooling over 1-d inputs."""

from __future__ import annotations

from ember.layers.pooling.base_global_pooling import BaseGlobalPooling


class GlobalAveragePooling1D(BaseGlobalPooling):
    """Global average pooling over 1-d inputs: the mean over every position of (batch, steps, channels) inputs.

    See :class:`BaseGlobalPooling` for the arguments.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> x = ops.reshape(ops.arange(6.0), (1, 3, 2))
        >>> y, _ = layers.GlobalAveragePooling1D().apply({"params": {}, "buffers": {}}, x)
        >>> ops.to_numpy(y).tolist()
        [[2.0, 3.0]]
    """

    rank = 1
    pool_mode = "average"
