"""``AutoContrast``: stretch each image channel over the whole value range (Keras's layer)."""

from __future__ import annotations

import numbers
from typing import Any

from ember import ops
from ember.layers.core._checks import input_shape_of
from ember.layers.layer import DeclarativeLayer

_IMAGE_AXES = (1, 2)  # (batch, height, width, channels)


class AutoContrast(DeclarativeLayer):
    """Per image and channel, map the darkest pixel to ``low`` and the brightest to ``high``.

    ``y = (x - min) / (max - min) * (high - low) + low`` with ``min``/``max`` over height and
    width, clipped to ``value_range``: Keras 3's ``AutoContrast``. A constant channel, or one
    holding a NaN, is returned unchanged. Active in training and inference; no variables.

    Args:
        value_range: ``(low, high)``, the range the images' values lie in (e.g. ``(0, 1)`` or
            ``(0, 255)``, the default); given in either order.

    Inputs are ``(batch, height, width, channels)`` images. Floating inputs keep their dtype
    (float16/bfloat16 are computed in float32); integer inputs give float32 outputs, as in Keras.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> contrast = layers.AutoContrast(value_range=(0, 1))
        >>> x = ops.convert_to_tensor([[[[0.25], [0.5]], [[0.5], [0.75]]]])
        >>> y, _ = contrast.apply(contrast.build((None, 2, 2, 1)), x)
        >>> ops.to_numpy(y).ravel().tolist()
        [0.0, 0.5, 0.5, 1.0]
    """

    value_range: Any = (0, 255)

    def __post_init__(self) -> None:
        super().__post_init__()
        bounds = self.value_range
        if (not isinstance(bounds, (list, tuple)) or len(bounds) != 2 or any(
                isinstance(v, bool) or not isinstance(v, numbers.Real) for v in bounds)
                or bounds[0] == bounds[1]):
            raise ValueError(f"{self.name}: value_range must be two different numbers (low, high), "
                             f"received {bounds!r}")
        self._normalize("value_range", tuple(float(v) for v in sorted(bounds)))

    def call(self, params: dict, inputs: Any) -> Any:
        if not ops.is_array(inputs):
            raise TypeError(f"layer {self.name!r} expects one array input, received {type(inputs).__name__}")
        input_shape_of(self, tuple(ops.shape(inputs)), rank=4)
        dtype = ops.dtype(inputs)
        if dtype == "bool" or dtype.startswith("complex"):
            raise TypeError(f"layer {self.name!r} expects real numeric images, received dtype {dtype}")
        x = inputs if dtype in ("float32", "float64") else ops.cast(inputs, "float32")
        low, high = self.value_range
        darkest = ops.min(x, axis=_IMAGE_AXES, keepdims=True)
        width = ops.subtract(ops.max(x, axis=_IMAGE_AXES, keepdims=True), darkest)
        flat = ops.equal(width, 0.0)
        scale = ops.divide(high - low, ops.where(flat, ops.ones_like(width), width))
        stretched = ops.clip(ops.add(ops.multiply(ops.subtract(x, darkest), scale), low), low, high)
        outputs = ops.where(ops.logical_or(flat, ops.isnan(stretched)), x, stretched)
        if dtype in ("float16", "bfloat16"):
            return ops.cast(outputs, dtype)
        return outputs

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return input_shape_of(self, input_shape, rank=4)
