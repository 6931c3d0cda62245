"""``BaseConv``: the N-d convolution behind ``Conv1D``, ``Conv2D`` and ``Conv3D``."""

from __future__ import annotations

from typing import Any, ClassVar

from ember import activations, initializers, ops
from ember.layers.conv import _args
from ember.layers.layer import DeclarativeLayer
from ember.layers.weights import WeightSpec, resolve_options
from ember.validation import check_positive_int


def add_bias(layer: Any, outputs: Any, bias: Any) -> Any:
    """``outputs + bias`` with the bias on the channel axis of ``layer.data_format``."""
    if layer.data_format == "channels_first":
        bias = ops.reshape(bias, (-1,) + (1,) * (ops.ndim(outputs) - 2))
    return ops.add(outputs, bias)


def check_input(layer: Any, inputs: Any, channels: int) -> None:
    """ValueError naming the layer when ``inputs`` has the wrong rank or channel count."""
    shape = tuple(ops.shape(inputs))
    got = None
    if len(shape) == layer.rank + 2:
        got = shape[1] if layer.data_format == "channels_first" else shape[-1]
    if got != channels:
        where = "axis 1" if layer.data_format == "channels_first" else "the last axis"
        raise ValueError(
            f"layer {layer.name!r} expects inputs of rank {layer.rank + 2} with {channels} channels on {where} "
            f"({layer.data_format}), received shape {shape}"
        )


class BaseConv(DeclarativeLayer):
    """N-d convolution (cross-correlation): ``activation(conv(inputs, kernel) + bias)``.

    The kernel has Keras's layout ``(*kernel_size, in_channels // groups, filters)``.

    Args:
        filters: number of output channels (positive int, divisible by ``groups``).
        kernel_size: int or tuple of ``rank`` ints.
        strides: int or tuple of ``rank`` ints; ``> 1`` cannot be combined with
            ``dilation_rate > 1`` (as in Keras).
        padding: ``"valid"`` or ``"same"`` (TF placement: the odd extra cell goes on
            the right/bottom); ``Conv1D`` also accepts ``"causal"``.
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.
        dilation_rate: int or tuple of ``rank`` ints.
        groups: split the input channels into this many groups, each convolved with
            ``filters // groups`` filters.
        activation: activation name or function; None is linear.
        use_bias: add a bias vector of shape ``(filters,)``.
        kernel_initializer, bias_initializer: initializers of the two params.
        kernel_regularizer, bias_regularizer: weight penalties (see
            :meth:`regularization_losses`).
        activity_regularizer: penalty on the outputs, passed to ``add_loss``.
        kernel_constraint, bias_constraint: projections applied by
            the optimizer after each update (see :meth:`constraints`).
    """

    rank: ClassVar[int] = 2
    # Weights that are N-d convolution kernels in Keras's layout (a backend's fit may keep them in the
    # memory order its convolutions read: ember.training.steps.conv_kernel_mask).
    conv_kernel_weights: ClassVar[tuple[str, ...]] = ("kernel",)

    filters: int
    kernel_size: Any
    strides: Any = 1
    padding: str = "valid"
    data_format: str | None = None
    dilation_rate: Any = 1
    groups: int = 1
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
        for field in ("filters", "groups"):
            self._normalize(field, check_positive_int(name, field, getattr(self, field)))
        if self.filters % self.groups:
            raise ValueError(f"{name}: filters ({self.filters}) must be divisible by groups ({self.groups})")
        _args.standardize_window(self, allow_causal=self.rank == 1)
        _args.standardize_conv_options(self)
        self._normalize("kernel_initializer", initializers.get(self.kernel_initializer))
        self._normalize("bias_initializer", initializers.get(self.bias_initializer))

    # --- shapes -----------------------------------------------------------------------------
    def _input_channels(self, input_shape: Any) -> int:
        channels = _args.known_channels(self, input_shape, self.data_format)
        if channels % self.groups:
            raise ValueError(
                f"layer {self.name!r}: input channels ({channels}) must be divisible by groups ({self.groups}), "
                f"received shape {tuple(input_shape)}"
            )
        return channels

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _args.conv_output_shape(self, input_shape)

    # --- state ----------------------------------------------------------------------------------
    def weight_specs(self, input_shape: Any = None) -> list[WeightSpec]:
        """The ``kernel_size + (in_channels // groups, filters)`` kernel and the ``(filters,)`` bias."""
        channels = None
        if input_shape is not None:
            channels = self._input_channels(input_shape) // self.groups
            self.compute_output_shape(input_shape)
        specs = [WeightSpec("kernel", self.kernel_size + (channels, self.filters), self.kernel_initializer,
                            self.kernel_regularizer, self.kernel_constraint)]
        if self.use_bias:
            specs.append(WeightSpec("bias", (self.filters,), self.bias_initializer, self.bias_regularizer,
                                    self.bias_constraint))
        return specs

    # --- computation ------------------------------------------------------------------------------
    def _convolve(self, inputs: Any, kernel: Any) -> Any:
        padding = self.padding
        if padding == "causal":  # left-pad by the dilated kernel's reach, then a valid convolution
            reach = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            widths = [(0, 0)] * 3
            widths[2 if self.data_format == "channels_first" else 1] = (reach, 0)
            inputs = ops.pad(inputs, widths)
            padding = "valid"
        return ops.nn.conv(inputs, kernel, strides=self.strides, padding=padding, data_format=self.data_format,
                           dilation_rate=self.dilation_rate)

    def call(self, params: dict, inputs: Any) -> Any:
        kernel = params["kernel"]
        check_input(self, inputs, ops.shape(kernel)[-2] * self.groups)
        outputs = self._convolve(inputs, kernel)
        if self.use_bias:
            outputs = add_bias(self, outputs, params["bias"])
        return self._activity_loss(activations.get(self.activation)(outputs))
