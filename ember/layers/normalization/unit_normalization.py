"""``UnitNormalization``: rescale each sample to unit L2 norm over some axes."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.normalization import _common


class UnitNormalization(DeclarativeLayer):
    """``y = x / sqrt(max(sum(x**2 over axis), 1e-12))``, as Keras; no variables.

    Args:
        axis: int or list/tuple of ints: the axes whose L2 norm becomes 1 (never the batch axis).

    ``float16``/``bfloat16`` inputs are computed in float32 and cast back.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> unit = layers.UnitNormalization(name="unit")
        >>> y, _ = unit.apply(unit.build((None, 2)), ops.convert_to_tensor([[3.0, 4.0], [0.0, 0.0]]))
        >>> ops.to_numpy(y).astype(float).round(4).tolist()
        [[0.6, 0.8], [0.0, 0.0]]
    """

    axis: Any = -1

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("axis", _common.check_axis(self, self.axis, allow_list=True))

    def call(self, params: dict, inputs: Any) -> Any:
        shape = _common.input_shape(self, inputs)
        axes = _common.resolve_axes(self, self.axis, len(shape), shape)
        x, input_dtype = _common.compute_input(self, inputs)
        square_sum = ops.sum(ops.square(x), axis=axes, keepdims=True)
        outputs = ops.multiply(x, ops.rsqrt(ops.maximum(square_sum, 1e-12)))
        return _common.as_input_dtype(outputs, input_dtype)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _common.axis_output_shape(self, input_shape)
