"""``GlobalMaxPooling2D``: Global max pooling over 2-d inputs."""

from __future__ import annotations

from ember.layers.pooling.base_global_pooling import BaseGlobalPooling


class GlobalMaxPooling2D(BaseGlobalPooling):
    """Global max pooling over 2-d inputs: the maximum over every position of (batch, height, width, channels) inputs.

    See :class:`BaseGlobalPooling` for the arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.GlobalMaxPooling2D(keepdims=True).compute_output_shape((None, 7, 7, 16))
        (None, 1, 1, 16)
    """

    rank = 2
    pool_mode = "max"
