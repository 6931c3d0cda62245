"""``UpSampling3D``: repeat the cells of volumes along each spatial axis."""

from __future__ import annotations

from typing import Any

from ember.layers.reshaping.base_up_sampling import BaseUpSampling


class UpSampling3D(BaseUpSampling):
    """Repeat each cell of ``(batch, d1, d2, d3, channels)`` inputs by per-axis factors.

    Args:
        size: int or 3 ints, the factor per spatial axis.
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> layers.UpSampling3D((1, 2, 3)).compute_output_shape((None, 2, 2, 2, 4))
        (None, 2, 4, 6, 4)
    """

    rank = 3

    size: Any = (2, 2, 2)
    data_format: str | None = None
