"""``ConvLSTM1D/2D/3D``: LSTMs whose input and recurrent transforms are convolutions (Shi et al., 2015)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ember import activations, initializers, ops, regularizers
from ember.initializers import derive_seed
from ember.layers.conv import _args
from ember.layers.layer import DeclarativeLayer


def _output_length(length: int | None, kernel: int, stride: int, padding: str, dilation: int) -> int | None:
    if length is None:
        return None
    span = dilation * (kernel - 1) + 1
    return -(-length // stride) if padding == "same" else (length - span) // stride + 1


class BaseConvLSTM(DeclarativeLayer):
    """A convolutional LSTM over ``(batch, time, spatial..., channels)`` sequences (Keras's weights and gates).

    Each step: ``z = conv(x_t, kernel) + bias + conv(h, recurrent_kernel, padding="same")``,
    gates ``i, f, c, o`` in that order, ``c = f * c + i * activation(c~)``,
    ``h = o * activation(c)``; the states start at zero.

    Args:
        filters: output channels.
        kernel_size, strides, padding, data_format, dilation_rate: the input convolution's
            (the recurrent one uses the same kernel size, stride 1 and "same" padding).
        activation, recurrent_activation: the cell and gate activations.
        use_bias: add a bias to the input transform.
        kernel_initializer, recurrent_initializer, bias_initializer: weight initializers.
        unit_forget_bias: start the forget-gate bias at 1.
        kernel_regularizer, recurrent_regularizer, bias_regularizer: weight penalties.
        return_sequences: return every step's ``h`` (else the last).
        return_state: also return the final ``h`` and ``c``.
        go_backwards: read the sequence from the end.
    """

    rank: ClassVar[int] = 2

    filters: int
    kernel_size: Any
    strides: Any = 1
    padding: str = "valid"
    data_format: str | None = None
    dilation_rate: Any = 1
    activation: Any = "tanh"
    recurrent_activation: Any = "sigmoid"
    use_bias: bool = True
    kernel_initializer: Any = "glorot_uniform"
    recurrent_initializer: Any = "orthogonal"
    bias_initializer: Any = "zeros"
    unit_forget_bias: bool = True
    kernel_regularizer: Any = None
    recurrent_regularizer: Any = None
    bias_regularizer: Any = None
    return_sequences: bool = False
    return_state: bool = False
    go_backwards: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.filters, bool) or not isinstance(self.filters, int) or self.filters < 1:
            raise ValueError(f"{self.name}: filters must be a positive int, received {self.filters!r}")
        _args.standardize_window(self)
        for field in ("activation", "recurrent_activation"):
            self._normalize(field, activations.standardize(getattr(self, field), f"{self.name}: {field}"))
        for field in ("kernel_initializer", "recurrent_initializer", "bias_initializer"):
            self._normalize(field, initializers.get(getattr(self, field)))
        for field in ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer"):
            self._normalize(field, regularizers.get(getattr(self, field), f"{self.name}: {field}"))

    def _split(self, input_shape: tuple) -> tuple:
        if len(input_shape) != self.rank + 3:
            raise ValueError(f"layer {self.name!r} expects inputs of rank {self.rank + 3} (batch, time, "
                             f"{self.rank} spatial dims, channels), received shape {input_shape}")
        if self.data_format == "channels_first":
            return input_shape[3:], input_shape[2]
        return input_shape[2:-1], input_shape[-1]

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        _, channels = self._split(tuple(input_shape))
        if channels is None:
            raise ValueError(f"layer {self.name!r} needs a known channel count, received shape {input_shape}")

        def sub(name: str) -> Any:
            return None if seed is None else derive_seed(seed, name)

        params = {
            "kernel": self.kernel_initializer(self.kernel_size + (channels, 4 * self.filters), self.variable_dtype,
                                              sub("kernel")),
            "recurrent_kernel": self.recurrent_initializer(self.kernel_size + (self.filters, 4 * self.filters),
                                                           self.variable_dtype, sub("recurrent_kernel")),
        }
        if self.use_bias:
            bias = self.bias_initializer((4 * self.filters,), self.variable_dtype, sub("bias"))
            if self.unit_forget_bias:
                forget = np.zeros(4 * self.filters, dtype=np.float32)
                forget[self.filters:2 * self.filters] = 1.0
                bias = ops.add(bias, ops.convert_to_tensor(forget, dtype=self.variable_dtype))
            params["bias"] = bias
        return self.make_state(params=params)

    def call(self, params: dict, inputs: Any) -> Any:
        self._split(tuple(ops.shape(inputs)))
        time = ops.shape(inputs)[1]
        steps = [ops.squeeze(s, 1) for s in ops.split(inputs, time, axis=1)] if time > 1 else [ops.squeeze(inputs, 1)]
        if self.go_backwards:
            steps = steps[::-1]
        act, gate = activations.get(self.activation), activations.get(self.recurrent_activation)
        channel_axis = 1 if self.data_format == "channels_first" else -1
        h = c = None
        outputs = []
        for x in steps:
            z = ops.nn.conv(x, params["kernel"], strides=self.strides, padding=self.padding,
                            data_format=self.data_format, dilation_rate=self.dilation_rate)
            if self.use_bias:
                z = ops.add(z, ops.reshape(params["bias"], (-1,) + (1,) * self.rank) if channel_axis == 1
                            else params["bias"])
            if h is None:
                shape = list(ops.shape(z))
                shape[channel_axis] = self.filters
                h = c = ops.zeros(tuple(shape), dtype=ops.dtype(z))
            z = ops.add(z, ops.nn.conv(h, params["recurrent_kernel"], strides=1, padding="same",
                                       data_format=self.data_format))
            i, f, g, o = ops.split(z, 4, axis=channel_axis)
            c = ops.add(ops.multiply(gate(f), c), ops.multiply(gate(i), act(g)))
            h = ops.multiply(gate(o), act(c))
            outputs.append(h)
        output = ops.stack(outputs, axis=1) if self.return_sequences else h
        return [output, h, c] if self.return_state else output

    def regularization_losses(self, params: dict) -> list:
        return regularizers.weight_penalties(self, params, {"kernel": self.kernel_regularizer,
                                                            "recurrent_kernel": self.recurrent_regularizer,
                                                            "bias": self.bias_regularizer})

    def compute_output_shape(self, input_shape: Any) -> Any:
        input_shape = tuple(input_shape)
        spatial, _ = self._split(input_shape)
        out = tuple(_output_length(n, k, s, self.padding, d) for n, k, s, d in
                    zip(spatial, self.kernel_size, self.strides, self.dilation_rate))
        state = (input_shape[0],) + ((self.filters,) + out if self.data_format == "channels_first"
                                     else out + (self.filters,))
        output = (state[0], input_shape[1]) + state[1:] if self.return_sequences else state
        return [output, state, state] if self.return_state else output


class ConvLSTM1D(BaseConvLSTM):
    """Convolutional LSTM over sequences of 1-D inputs ``(batch, time, spatial..., channels)``.

    See :class:`BaseConvLSTM` for the cell and the arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> layers.ConvLSTM1D(4, 3).compute_output_shape((None, 5, 8, 2))
        (None, 6, 4)
    """

    rank = 1


class ConvLSTM2D(BaseConvLSTM):
    """Convolutional LSTM over sequences of 2-D inputs ``(batch, time, spatial..., channels)``.

    See :class:`BaseConvLSTM` for the cell and the arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> layers.ConvLSTM2D(4, 3).compute_output_shape((None, 5, 8, 8, 2))
        (None, 6, 6, 4)
    """

    rank = 2


class ConvLSTM3D(BaseConvLSTM):
    """Convolutional LSTM over sequences of 3-D inputs ``(batch, time, spatial..., channels)``.

    See :class:`BaseConvLSTM` for the cell and the arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> layers.ConvLSTM3D(4, 3).compute_output_shape((None, 5, 8, 8, 8, 2))
        (None, 6, 6, 6, 4)
    """

    rank = 3
