"""``UpSampling1D``: repeat each step ``size`` times."""

from __future__ import annotations

from ember.layers.reshaping.base_up_sampling import BaseUpSampling


class UpSampling1D(BaseUpSampling):
    """Repeat each step of ``(batch, steps, features)`` inputs ``size`` times along the steps.

    Args:
        size: the upsampling factor (positive int).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> x = ops.reshape(ops.arange(3.0), (1, 3, 1))
        >>> y, _ = layers.UpSampling1D(2).apply({"params": {}, "buffers": {}}, x)
        >>> ops.to_numpy(y)[0, :, 0].tolist()
        [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
    """

    rank = 1

    size: int = 2
