"""``BaseConvTranspose``: the N-d transposed convolution behind ``Conv{1,2,3}DTranspose``."""

from __future__ import annotations

from typing import Any, ClassVar

from ember import activations, initializers, ops
from ember.layers.conv import _args
from ember.layers.conv.base_conv import add_bias, check_input
from ember.layers.layer import DeclarativeLayer
from ember.layers.weights import WeightSpec, resolve_options
from ember.validation import check_positive_int


class BaseConvTranspose(DeclarativeLayer):
    """N-d transposed convolution (the gradient of a convolution w.r.t. its input).

    The kernel has Keras's layout ``(*kernel_size, filters, in_channels)``. Output
    lengths follow Keras/TF: ``"same"`` gives ``length * strides``, ``"valid"`` gives
    ``(length - 1) * strides + kernel_extent`` (plus ``max(stride - kernel_extent, 0)``),
    and ``output_padding`` sets the extra cells explicitly.

    Args:
        filters: number of output channels (positive int).
        kernel_size: int or tuple of ``rank`` ints.
        strides: int or tuple of ``rank`` ints; ``> 1`` cannot be combined with
            ``dilation_rate > 1`` (as in Keras).
        padding: ``"valid"`` or ``"same"``.
        output_padding: None, or an int / ``rank`` ints, each smaller than its stride:
            the cells added at the end of each output axis.
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.
        dilation_rate: int or tuple of ``rank`` ints.
        activation, use_bias, kernel_initializer, bias_initializer: as for :class:`BaseConv`.
        kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint, bias_constraint: as for
            :class:`BaseConv`.
    """

    rank: ClassVar[int] = 2

    filters: int
    kernel_size: Any
    strides: Any = 1
    padding: str = "valid"
    output_padding: Any = None
    data_format: str | None = None
    dilation_rate: Any = 1
    activation: Any = None
    use_bias: bool = True
    kernel_initializer: Any = "glorot_uniform"
    bias_initializer: Any = "zeros"
    kernel_regularizer: Any = None
    bias_regularizer: Any = None
    activity_regularizer: Any = None
    kernel_constraint: Any = None
    bias_constraint: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        resolve_options(self, "kernel_regularizer", "bias_regularizer", "activity_regularizer",
                        "kernel_constraint", "bias_constraint")
        name = self.name
        self._normalize("filters", check_positive_int(name, "filters", self.filters))
        _args.standardize_window(self)
        if self.output_padding is not None:
            extra = _args.standardize_tuple(name, self.output_padding, self.rank, "output_padding", allow_zero=True)
            if any(p >= s for p, s in zip(extra, self.strides)):
                raise ValueError(
                    f"{name}: output_padding must be smaller than strides on every axis, received "
                    f"output_padding={extra} and strides={self.strides}"
                )
            self._normalize("output_padding", extra)
        _args.standardize_conv_options(self)
        self._normalize("kernel_initializer", initializers.get(self.kernel_initializer))
        self._normalize("bias_initializer", initializers.get(self.bias_initializer))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape, spatial, _ = _args.spatial_shape(self, input_shape, self.rank, self.data_format)
        lengths = _args.conv_transpose_output_lengths(spatial, self.kernel_size, self.strides, self.padding,
                                                      self.output_padding, self.dilation_rate)
        return _args.join_shape(shape[0], lengths, self.filters, self.data_format)

    def weight_specs(self, input_shape: Any = None) -> list[WeightSpec]:
        """The ``kernel_size + (filters, in_channels)`` kernel and the ``(filters,)`` bias."""
        channels = None if input_shape is None else _args.known_channels(self, input_shape, self.data_format)
        specs = [WeightSpec("kernel", self.kernel_size + (self.filters, channels), self.kernel_initializer,
                            self.kernel_regularizer, self.kernel_constraint)]
        if self.use_bias:
            specs.append(WeightSpec("bias", (self.filters,), self.bias_initializer, self.bias_regularizer,
                                    self.bias_constraint))
        return specs

    def call(self, params: dict, inputs: Any) -> Any:
        kernel = params["kernel"]
        check_input(self, inputs, ops.shape(kernel)[-1])
        outputs = ops.nn.conv_transpose(
            inputs, kernel, strides=self.strides, padding=self.padding, output_padding=self.output_padding,
            data_format=self.data_format, dilation_rate=self.dilation_rate)
        if self.use_bias:
            outputs = add_bias(self, outputs, params["bias"])
        return self._activity_loss(activations.get(self.activation)(outputs))
