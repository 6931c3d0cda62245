"""``Cropping1D``: drop steps at the start/end of a sequence."""

from __future__ import annotations

from typing import Any

from ember.layers.reshaping.base_cropping import BaseCropping


class Cropping1D(BaseCropping):
    """Drop steps at the start and end of ``(batch, steps, features)`` inputs.

    Args:
        cropping: an int (both ends) or a ``(start, end)`` pair.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> x = ops.reshape(ops.arange(5.0), (1, 5, 1))
        >>> y, _ = layers.Cropping1D((1, 2)).apply({"params": {}, "buffers": {}}, x)
        >>> ops.to_numpy(y)[0, :, 0].tolist()
        [1.0, 2.0]
    """

    rank = 1

    cropping: Any = (1, 1)
