"""``LayerNormalization``: normalize each sample over its feature axes (Ba et al., 2016)."""

from __future__ import annotations

from typing import Any

from ember import initializers, ops
from ember.layers.core._checks import input_shape_of
from ember.layers.layer import DeclarativeLayer
from ember.layers.normalization import _common
from ember.layers.weights import WeightSpec, resolve_options


class LayerNormalization(DeclarativeLayer):
    """Layer normalization, Keras semantics.

    For each sample, over the axes ``axis``:
    ``y = (x - mean) / sqrt(variance + epsilon) * gamma + beta`` (biased variance).
    ``gamma``/``beta`` have the shape of the normalized axes (sorted in input order).

    With ``rms_scaling=True``, ``center`` and ``scale`` are ignored and the output is
    ``x * rsqrt(variance + epsilon) * gamma``: Keras's definition, which divides by
    the standard deviation but does not subtract the mean (it is *not*
    :class:`RMSNormalization`, which uses ``mean(x**2)``).

    Args:
        axis: int or list/tuple of ints: the axes to normalize over (never the batch axis).
        epsilon: added to the variance (``> 0``).
        center: learn the offset ``beta``.
        scale: learn the scale ``gamma``.
        rms_scaling: see above.
        beta_initializer, gamma_initializer: initializers of the params.
        beta_regularizer, gamma_regularizer: weight penalties (:mod:`ember.regularizers`).
        beta_constraint, gamma_constraint: projections applied after optimizer steps.

    ``float16``/``bfloat16`` inputs are computed in float32 and cast back. The normalization is
    ``ops.nn.layer_norm``: one fused kernel on torch (``F.layer_norm``) and MLX
    (``mx.fast.layer_norm``), the composite on NumPy; ``rms_scaling`` is always the composite.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> ln = layers.LayerNormalization(epsilon=0.0001, name="ln")
        >>> state = ln.build((None, 2))
        >>> y, _ = ln.apply(state, ops.convert_to_tensor([[1.0, 3.0], [0.0, -4.0]]))
        >>> ops.to_numpy(y).astype(float).round(3).tolist()
        [[-1.0, 1.0], [1.0, -1.0]]
    """

    axis: Any = -1
    epsilon: float = 1e-3
    center: bool = True
    scale: bool = True
    rms_scaling: bool = False
    beta_initializer: Any = "zeros"
    gamma_initializer: Any = "ones"
    beta_regularizer: Any = None
    gamma_regularizer: Any = None
    beta_constraint: Any = None
    gamma_constraint: Any = None

    supports_masking = True
    float32_compute = True  # statistics in float32 under a mixed policy (ember.layers.autocast), as Keras

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("axis", _common.check_axis(self, self.axis, allow_list=True))
        _common.check_real(self, "epsilon", 0.0, low_open=True)
        _common.check_bools(self, "center", "scale", "rms_scaling")
        for field in ("beta_initializer", "gamma_initializer"):
            self._normalize(field, initializers.get(getattr(self, field)))
        resolve_options(self, "beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint")

    def _uses(self) -> tuple[bool, bool]:
        """``(has gamma, has beta)``."""
        return self.scale or self.rms_scaling, self.center and not self.rms_scaling

    def weight_specs(self, input_shape: Any = None) -> list[WeightSpec]:
        """``gamma``/``beta`` (when used) over the normalized axes."""
        dims: tuple = (None,) * (len(self.axis) if isinstance(self.axis, tuple) else 1)
        if input_shape is not None:
            shape = input_shape_of(self, input_shape, min_rank=2)
            dims = _common.known_dims(self, shape, _common.resolve_axes(self, self.axis, len(shape), shape))
        has_gamma, has_beta = self._uses()
        specs = []
        if has_gamma:
            specs.append(WeightSpec("gamma", dims, self.gamma_initializer, self.gamma_regularizer,
                                    self.gamma_constraint))
        if has_beta:
            specs.append(WeightSpec("beta", dims, self.beta_initializer, self.beta_regularizer, self.beta_constraint))
        return specs

    def call(self, params: dict, inputs: Any) -> Any:
        shape = _common.input_shape(self, inputs)
        axes = _common.resolve_axes(self, self.axis, len(shape), shape)
        x, input_dtype = _common.compute_input(self, inputs)
        has_gamma, has_beta = self._uses()
        gamma = _common.checked_param(self, params, "gamma", shape, axes) if has_gamma else None
        beta = _common.checked_param(self, params, "beta", shape, axes) if has_beta else None
        if self.rms_scaling:  # Keras's rms_scaling (no mean subtracted): no fused kernel computes it
            variance = ops.var(x, axis=axes, keepdims=True)
            outputs = ops.multiply(ops.multiply(x, ops.rsqrt(ops.add(variance, self.epsilon))),
                                   ops.cast(_common.broadcast_param(gamma, axes, shape), ops.dtype(x)))
        else:  # the backend's fused kernel where it has one (torch, MLX), else the composite
            outputs = ops.nn.layer_norm(x, gamma, beta, axis=axes, epsilon=self.epsilon)
        return _common.as_input_dtype(outputs, input_dtype)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _common.axis_output_shape(self, input_shape)
