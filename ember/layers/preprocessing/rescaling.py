"""``Rescaling``: ``inputs * scale + offset`` (e.g. pixels from [0, 255] to [0, 1])."""

from __future__ import annotations

import numbers
from typing import Any

from ember import ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.preprocessing.normalization import cast_input


class Rescaling(DeclarativeLayer):
    """Multiplies inputs by ``scale`` and adds ``offset``; integer inputs become ``floatx()``.

    Args:
        scale: a number, or a list broadcast against the last axis.
        offset: a number, or a list broadcast against the last axis.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Rescaling(1 / 255)
        >>> y, _ = layer.apply(layer.build((None, 2)), ops.convert_to_tensor([[0, 255]]))
        >>> ops.to_numpy(y).tolist()
        [[0.0, 1.0]]
    """

    scale: Any
    offset: Any = 0.0

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        for field in ("scale", "offset"):
            value = getattr(self, field)
            if isinstance(value, (list, tuple)):
                if not value or any(isinstance(v, bool) or not isinstance(v, numbers.Real) for v in value):
                    raise ValueError(f"{self.name}: {field} must be a number or a list of numbers, received {value!r}")
                self._normalize(field, [float(v) for v in value])
            elif isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ValueError(f"{self.name}: {field} must be a number or a list of numbers, received {value!r}")
            else:
                self._normalize(field, float(value))

    def call(self, params: dict, inputs: Any) -> Any:
        x, dtype = cast_input(self, inputs)
        scale = ops.convert_to_tensor(self.scale, dtype=dtype)
        offset = ops.convert_to_tensor(self.offset, dtype=dtype)
        return ops.add(ops.multiply(x, scale), offset)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
