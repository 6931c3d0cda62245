"""``BaseSeparableConv``: depthwise then pointwise convolution (``SeparableConv1D/2D``)."""

from __future__ import annotations

from typing import Any, ClassVar

from ember import activations, initializers, ops
from ember.layers.conv import _args
from ember.layers.conv.base_conv import add_bias, check_input
from ember.layers.conv.base_depthwise_conv import depthwise_conv, validate_depthwise
from ember.layers.layer import DeclarativeLayer
from ember.layers.weights import WeightSpec, resolve_options
from ember.validation import check_positive_int


class BaseSeparableConv(DeclarativeLayer):
    """Depthwise-separable convolution: a depthwise convolution, then a 1x1 convolution.

    Params (Keras's names and layouts): ``depthwise_kernel`` ``(*kernel_size,
    in_channels, depth_multiplier)``, ``pointwise_kernel`` ``(1, ..., 1, in_channels *
    depth_multiplier, filters)`` and ``bias`` ``(filters,)``. ``strides``,
    ``padding`` and ``dilation_rate`` apply to the depthwise step.

    Args:
        filters: number of output channels (positive int).
        kernel_size: int or tuple of ``rank`` ints.
        strides: int or tuple of ``rank`` ints (``> 1`` excludes ``dilation_rate > 1``).
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.
        dilation_rate: int or tuple of ``rank`` ints.
        depth_multiplier: depthwise output channels per input channel.
        activation: activation name or function; None is linear.
        use_bias: add a bias vector.
        depthwise_initializer, pointwise_initializer, bias_initializer: initializers.
        depthwise_regularizer, pointwise_regularizer, bias_regularizer: weight penalties.
        activity_regularizer: penalty on the outputs, passed to ``add_loss``.
        depthwise_constraint, pointwise_constraint, bias_constraint: projections for
            the optimizer applies after each update (see :meth:`constraints`).
    """

    rank: ClassVar[int] = 2

    filters: int
    kernel_size: Any
    strides: Any = 1
    padding: str = "valid"
    data_format: str | None = None
    dilation_rate: Any = 1
    depth_multiplier: int = 1
    activation: Any = None
    use_bias: bool = True
    depthwise_initializer: Any = "glorot_uniform"
    pointwise_initializer: Any = "glorot_uniform"
    bias_initializer: Any = "zeros"
    depthwise_regularizer: Any = None
    pointwise_regularizer: Any = None
    bias_regularizer: Any = None
    activity_regularizer: Any = None
    depthwise_constraint: Any = None
    pointwise_constraint: Any = None
    bias_constraint: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        resolve_options(self, "depthwise_regularizer", "pointwise_regularizer", "bias_regularizer",
                        "activity_regularizer", "depthwise_constraint", "pointwise_constraint", "bias_constraint")
        self._normalize("filters", check_positive_int(self.name, "filters", self.filters))
        validate_depthwise(self)
        for field in ("depthwise_initializer", "pointwise_initializer", "bias_initializer"):
            self._normalize(field, initializers.get(getattr(self, field)))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _args.conv_output_shape(self, input_shape)

    def weight_specs(self, input_shape: Any = None) -> list[WeightSpec]:
        """The depthwise kernel, the ``1x1`` pointwise kernel and the ``(filters,)`` bias."""
        channels = None
        if input_shape is not None:
            channels = _args.known_channels(self, input_shape, self.data_format)
            self.compute_output_shape(input_shape)
        mixed = None if channels is None else channels * self.depth_multiplier
        specs = [
            WeightSpec("depthwise_kernel", self.kernel_size + (channels, self.depth_multiplier),
                       self.depthwise_initializer, self.depthwise_regularizer, self.depthwise_constraint),
            WeightSpec("pointwise_kernel", (1,) * self.rank + (mixed, self.filters), self.pointwise_initializer,
                       self.pointwise_regularizer, self.pointwise_constraint),
        ]
        if self.use_bias:
            specs.append(WeightSpec("bias", (self.filters,), self.bias_initializer, self.bias_regularizer,
                                    self.bias_constraint))
        return specs

    def call(self, params: dict, inputs: Any) -> Any:
        depthwise = params["depthwise_kernel"]
        check_input(self, inputs, ops.shape(depthwise)[-2])
        hidden = depthwise_conv(self, inputs, depthwise)
        pointwise = params["pointwise_kernel"]
        if self.data_format == "channels_last":  # a 1x1 convolution is a matmul over the channels
            outputs = ops.matmul(hidden, ops.reshape(pointwise, tuple(ops.shape(pointwise))[-2:]))
        else:
            outputs = ops.nn.conv(hidden, pointwise, strides=1, padding="valid", data_format=self.data_format)
        if self.use_bias:
            outputs = add_bias(self, outputs, params["bias"])
        return self._activity_loss(activations.get(self.activation)(outputs))
