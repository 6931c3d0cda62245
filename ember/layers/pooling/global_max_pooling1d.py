"""``GlobalMaxPooling1D``: Global max pooling over 1-d inputs."""

from __future__ import annotations

from ember.layers.pooling.base_global_pooling import BaseGlobalPooling


class GlobalMaxPooling1D(BaseGlobalPooling):
    """Global max pooling over 1-d inputs: the maximum over every position of (batch, steps, channels) inputs.

    See :class:`BaseGlobalPooling` for the arguments.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> x = ops.convert_to_tensor([[[1.0, 5.0], [3.0, 2.0]]])   # each channel's own maximum
        >>> y, _ = layers.GlobalMaxPooling1D().apply({"params": {}, "buffers": {}}, x)
        >>> ops.to_numpy(y).tolist()
        [[3.0, 5.0]]
    """

    rank = 1
    pool_mode = "max"
