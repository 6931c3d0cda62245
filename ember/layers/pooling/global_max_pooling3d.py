"""``GlobalMaxPooling3D``: Global max pooling over 3-d inputs."""

from __future__ import annotations

from ember.layers.pooling.base_global_pooling import BaseGlobalPooling


class GlobalMaxPooling3D(BaseGlobalPooling):
    """Global max pooling over 3-d inputs: the maximum over every position of (batch, d1, d2, d3, channels) inputs.

    See :class:`BaseGlobalPooling` for the arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.GlobalMaxPooling3D().compute_output_shape((None, 4, 4, 4, 8))
        (None, 8)
    """

    rank = 3
    pool_mode = "max"
