"""``GroupNormalization``: normalize groups of channels per sample (Wu & He, 2018)."""

from __future__ import annotations

import numbers
from typing import Any

from ember import initializers, ops
from ember.layers.core._checks import input_shape_of
from ember.layers.layer import DeclarativeLayer
from ember.layers.normalization import _common
from ember.layers.weights import WeightSpec, resolve_options


class GroupNormalization(DeclarativeLayer):
    """Group normalization, Keras semantics.

    The ``C`` channels on ``axis`` are split into ``groups`` consecutive groups of
    ``C // groups``; each sample's group is normalized over its channels and every
    other non-batch axis: ``(x - mean) / sqrt(variance + epsilon)`` (biased variance),
    then scaled by ``gamma`` and shifted by ``beta`` per channel (shape ``(C,)``).
    ``groups=-1`` means one group per channel (instance normalization); ``groups=1``
    normalizes all channels together.

    PyTorch's ``group_norm`` is the same computation on channels-first inputs
    (``(N, C, *spatial)``): move the channel axis to position 1 to compare.

    Args:
        groups: number of groups; must divide the channel count (``-1``: one per channel).
        axis: the channel axis (an int; ``-1`` for channels-last).
        epsilon: added to the variance (``> 0``).
        center: learn the offset ``beta``.
        scale: learn the scale ``gamma``.
        beta_initializer, gamma_initializer: initializers of the params.
        beta_regularizer, gamma_regularizer: weight penalties (:mod:`ember.regularizers`).
        beta_constraint, gamma_constraint: projections applied after optimizer steps.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> gn = layers.GroupNormalization(groups=2, epsilon=1e-5, name="gn")
        >>> state = gn.build((None, 4))
        >>> y, _ = gn.apply(state, ops.convert_to_tensor([[1.0, 3.0, 10.0, 20.0]]))
        >>> ops.to_numpy(y).astype(float).round(3).tolist()
        [[-1.0, 1.0, -1.0, 1.0]]
    """

    groups: int = 32
    axis: int = -1
    epsilon: float = 1e-3
    center: bool = True
    scale: bool = True
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
        groups = self.groups
        if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or not (groups == -1 or groups > 0):
            raise ValueError(f"{self.name}: groups must be a positive int or -1, received {groups!r}")
        self._normalize("groups", int(groups))
        self._normalize("axis", _common.check_axis(self, self.axis, allow_list=False))
        _common.check_real(self, "epsilon", 0.0, low_open=True)
        _common.check_bools(self, "center", "scale")
        for field in ("beta_initializer", "gamma_initializer"):
            self._normalize(field, initializers.get(getattr(self, field)))
        resolve_options(self, "beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint")

    def _layout(self, shape: tuple) -> tuple[int, int, int]:
        """``(channel axis, channels, groups)`` for inputs of ``shape``; ValueError naming the layer."""
        (axis,) = _common.resolve_axes(self, self.axis, len(shape), shape)
        (channels,) = _common.known_dims(self, shape, (axis,))
        groups = channels if self.groups == -1 else self.groups
        if groups > channels or channels % groups:
            raise ValueError(f"layer {self.name!r}: groups={self.groups} must divide the {channels} channels on "
                             f"axis {self.axis} (inputs of shape {shape})")
        return axis, channels, groups

    def weight_specs(self, input_shape: Any = None) -> list[WeightSpec]:
        """``gamma``/``beta`` (when ``scale``/``center``), one value per channel."""
        channels = None
        if input_shape is not None:
            _, channels, _ = self._layout(input_shape_of(self, input_shape, min_rank=2))
        specs = []
        if self.scale:
            specs.append(WeightSpec("gamma", (channels,), self.gamma_initializer, self.gamma_regularizer,
                                    self.gamma_constraint))
        if self.center:
            specs.append(WeightSpec("beta", (channels,), self.beta_initializer, self.beta_regularizer,
                                    self.beta_constraint))
        return specs

    def call(self, params: dict, inputs: Any) -> Any:
        shape = _common.input_shape(self, inputs)
        if len(shape) < 2:
            raise ValueError(f"layer {self.name!r} expects inputs of rank >= 2, received shape {shape}")
        axis, channels, groups = self._layout(shape)
        for name in ("gamma", "beta"):
            if name in params and tuple(ops.shape(params[name])) != (channels,):
                raise ValueError(f"layer {self.name!r} was built for {tuple(ops.shape(params[name]))[0]} channels, "
                                 f"received inputs of shape {shape}")
        x, input_dtype = _common.compute_input(self, inputs)
        # (..., C, ...) -> (..., groups, C // groups, ...); statistics over all but batch and group.
        grouped_shape = shape[:axis] + (groups, channels // groups) + shape[axis + 1:]
        grouped = ops.reshape(x, grouped_shape)
        reduction = tuple(a for a in range(1, len(grouped_shape)) if a != axis)
        mean, variance = ops.nn.moments(grouped, axes=reduction, keepdims=True)
        inv = ops.rsqrt(ops.add(variance, self.epsilon))
        param_shape = [1] * len(grouped_shape)
        param_shape[axis], param_shape[axis + 1] = groups, channels // groups
        if self.scale:
            inv = ops.multiply(inv, ops.reshape(ops.cast(params["gamma"], ops.dtype(x)), tuple(param_shape)))
        offset = ops.negative(ops.multiply(mean, inv))
        if self.center:
            offset = ops.add(offset, ops.reshape(ops.cast(params["beta"], ops.dtype(x)), tuple(param_shape)))
        outputs = ops.reshape(ops.add(ops.multiply(grouped, inv), offset), shape)
        return _common.as_input_dtype(outputs, input_dtype)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape = input_shape_of(self, input_shape, min_rank=2)
        self._layout(shape)
        return shape

