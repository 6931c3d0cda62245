"""``UpSampling2D``: enlarge images by integer factors (nearest or bilinear)."""

from __future__ import annotations

from typing import Any

from ember.layers.reshaping.base_up_sampling import BaseUpSampling


class UpSampling2D(BaseUpSampling):
    """Upsample the rows and columns of images by integer factors.

    Args:
        size: int or ``(rows, cols)`` factors.
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.
        interpolation: ``"nearest"`` (each pixel repeated) or ``"bilinear"``
            (half-pixel centres, edges clamped: Keras/TF's ``resize`` and torch's
            ``interpolate(..., align_corners=False)``).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> x = ops.reshape(ops.convert_to_tensor([0.0, 4.0]), (1, 1, 2, 1))
        >>> layer = layers.UpSampling2D((1, 2), interpolation="bilinear")
        >>> y, _ = layer.apply({"params": {}, "buffers": {}}, x)
        >>> ops.to_numpy(y)[0, 0, :, 0].tolist()
        [0.0, 1.0, 3.0, 4.0]
    """

    rank = 2

    size: Any = (2, 2)
    data_format: str | None = None
    interpolation: str = "nearest"
