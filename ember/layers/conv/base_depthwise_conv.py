"""``BaseDepthwiseConv``: the per-channel convolution behind ``DepthwiseConv1D/2D``."""

from __future__ import annotations

from typing import Any, ClassVar

from ember import activations, initializers, ops
from ember.layers.conv import _args
from ember.layers.conv.base_conv import add_bias, check_input
from ember.layers.layer import DeclarativeLayer
from ember.layers.weights import WeightSpec, resolve_options
from ember.validation import check_positive_int


def depthwise_conv(layer: Any, inputs: Any, kernel: Any) -> Any:
    """Convolve each input channel with its own ``depth_multiplier`` filters.

    ``kernel`` is Keras's ``(*kernel_size, in_channels, depth_multiplier)``; output
    channel ``c * depth_multiplier + m`` is input channel ``c`` with filter ``m``. It
    runs as one grouped convolution (``groups = in_channels``) whose kernel
    ``(*kernel_size, 1, in_channels * depth_multiplier)`` is the same array reshaped.
    """
    shape = tuple(ops.shape(kernel))
    grouped = ops.reshape(kernel, shape[:-2] + (1, shape[-2] * shape[-1]))
    return ops.nn.conv(inputs, grouped, strides=layer.strides, padding=layer.padding,
                       data_format=layer.data_format, dilation_rate=layer.dilation_rate)


def validate_depthwise(layer: Any) -> None:
    """Normalize the fields shared by the depthwise and separable convolutions."""
    layer._normalize("depth_multiplier", check_positive_int(layer.name, "depth_multiplier", layer.depth_multiplier))
    _args.standardize_window(layer)
    _args.standardize_conv_options(layer)


class BaseDepthwiseConv(DeclarativeLayer):
    """Depthwise convolution: each input channel convolved with ``depth_multiplier`` filters.

    Params: ``kernel`` ``(*kernel_size, in_channels, depth_multiplier)`` (Keras's
    layout) and ``bias`` ``(in_channels * depth_multiplier,)``.

    Args:
        kernel_size: int or tuple of ``rank`` ints.
        strides: int or tuple of ``rank`` ints (``> 1`` excludes ``dilation_rate > 1``).
        padding: ``"valid"`` or ``"same"``.
        depth_multiplier: output channels per input channel.
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.
        dilation_rate: int or tuple of ``rank`` ints.
        activation: activation name or function; None is linear.
        use_bias: add a bias vector.
        depthwise_initializer, bias_initializer: initializers of the two params.
        depthwise_regularizer, bias_regularizer: weight penalties.
        activity_regularizer: penalty on the outputs, passed to ``add_loss``.
        depthwise_constraint, bias_constraint: projections the optimizer applies
            after each update (see :meth:`constraints`).
    """

    rank: ClassVar[int] = 2

    kernel_size: Any
    strides: Any = 1
    padding: str = "valid"
    depth_multiplier: int = 1
    data_format: str | None = None
    dilation_rate: Any = 1
    activation: Any = None
    use_bias: bool = True
    depthwise_initializer: Any = "glorot_uniform"
    bias_initializer: Any = "zeros"
    depthwise_regularizer: Any = None
    bias_regularizer: Any = None
    activity_regularizer: Any = None
    depthwise_constraint: Any = None
    bias_constraint: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        resolve_options(self, "depthwise_regularizer", "bias_regularizer", "activity_regularizer",
                        "depthwise_constraint", "bias_constraint")
        validate_depthwise(self)
        self._normalize("depthwise_initializer", initializers.get(self.depthwise_initializer))
        self._normalize("bias_initializer", initializers.get(self.bias_initializer))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape, spatial, channels = _args.spatial_shape(self, input_shape, self.rank, self.data_format)
        lengths = _args.conv_output_lengths(self, shape, spatial, self.kernel_size, self.strides, self.padding,
                                            self.dilation_rate)
        out_channels = None if channels is None else channels * self.depth_multiplier
        return _args.join_shape(shape[0], lengths, out_channels, self.data_format)

    def weight_specs(self, input_shape: Any = None) -> list[WeightSpec]:
        """The ``kernel_size + (channels, depth_multiplier)`` kernel and the bias (one per output channel)."""
        channels = None
        if input_shape is not None:
            channels = _args.known_channels(self, input_shape, self.data_format)
            self.compute_output_shape(input_shape)
        out = None if channels is None else channels * self.depth_multiplier
        specs = [WeightSpec("kernel", self.kernel_size + (channels, self.depth_multiplier), self.depthwise_initializer,
                            self.depthwise_regularizer, self.depthwise_constraint)]
        if self.use_bias:
            specs.append(WeightSpec("bias", (out,), self.bias_initializer, self.bias_regularizer, self.bias_constraint))
        return specs

    def call(self, params: dict, inputs: Any) -> Any:
        kernel = params["kernel"]
        check_input(self, inputs, ops.shape(kernel)[-2])
        outputs = depthwise_conv(self, inputs, kernel)
        if self.use_bias:
            outputs = add_bias(self, outputs, params["bias"])
        return self._activity_loss(activations.get(self.activation)(outputs))
