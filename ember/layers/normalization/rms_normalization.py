"""``RMSNormalization``: scale each sample by the inverse root mean square (Zhang & Sennrich, 2019)."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.core._checks import input_shape_of
from ember.layers.layer import DeclarativeLayer
from ember.layers.normalization import _common


class RMSNormalization(DeclarativeLayer):
    """Root-mean-square normalization, Keras 3.9+ semantics.

    ``y = x * rsqrt(mean(x**2 over axis) + epsilon) * scale``, with a learned ``scale``
    (initialized to ones) of the shape of the normalized axes. No mean is subtracted.

    Args:
        axis: int or list/tuple of ints: the axes to normalize over (never the batch axis).
        epsilon: added to the mean square (``> 0``).

    ``float16``/``bfloat16`` inputs are computed in float32 and cast back.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> rms = layers.RMSNormalization(epsilon=0.0, name="rms")
        >>> state = rms.build((None, 2))
        >>> y, _ = rms.apply(state, ops.convert_to_tensor([[3.0, 4.0]]))
        >>> ops.to_numpy(y).astype(float).round(4).tolist()   # rms = sqrt((9 + 16) / 2)
        [[0.8485, 1.1314]]
    """
    float32_compute = True  # statistics in float32 under a mixed policy (ember.layers.autocast), as Keras

    axis: Any = -1
    epsilon: float = 1e-6

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("axis", _common.check_axis(self, self.axis, allow_list=True))
        _common.check_real(self, "epsilon", 0.0)

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        shape = input_shape_of(self, input_shape, min_rank=2)
        axes = _common.resolve_axes(self, self.axis, len(shape), shape)
        dims = _common.known_dims(self, shape, axes)
        return self.make_state(params={"scale": ops.ones(dims, dtype=self.variable_dtype)})

    def call(self, params: dict, inputs: Any) -> Any:
        shape = _common.input_shape(self, inputs)
        axes = _common.resolve_axes(self, self.axis, len(shape), shape)
        scale = _common.checked_param(self, params, "scale", shape, axes)
        x, input_dtype = _common.compute_input(self, inputs)
        mean_square = ops.mean(ops.square(x), axis=axes, keepdims=True)
        scale = ops.cast(_common.broadcast_param(scale, axes, shape), ops.dtype(x))
        outputs = ops.multiply(ops.multiply(x, ops.rsqrt(ops.add(mean_square, self.epsilon))), scale)
        return _common.as_input_dtype(outputs, input_dtype)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _common.axis_output_shape(self, input_shape)
