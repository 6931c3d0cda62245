"""``GlobalAveragePooling2D``: Global average pooling over 2-d inputs."""

from __future__ import annotations

from ember.layers.pooling.base_global_pooling import BaseGlobalPooling


class GlobalAveragePooling2D(BaseGlobalPooling):
    """Global average pooling over 2-d inputs: the mean over every position of (batch, height, width, channels) inputs.

    See :class:`BaseGlobalPooling` for the arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.GlobalAveragePooling2D().compute_output_shape((None, 7, 7, 16))
        (None, 16)
        >>> layers.GlobalAveragePooling2D(data_format="channels_first", keepdims=True).compute_output_shape(
        ...     (None, 16, 7, 7))
        (None, 16, 1, 1)
    """

    rank = 2
    pool_mode = "average"
