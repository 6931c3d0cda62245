"""``EinsumDense``: a dense layer whose contraction is any einsum equation ``"input,kernel->output"``."""

from __future__ import annotations

import re
import string
from typing import Any

from ember import activations, constraints, initializers, ops, quantizers, regularizers
from ember.layers.core.dense_adaptation import QuantizeLoRAMixin, exact_in_float32
from ember.layers.core.einsum_dense_quantization import (
    kernel_scale_shape,
    quantization_axes,
    to_kernel_layout,
    to_output_layout,
)
from ember.layers.layer import DeclarativeLayer
from ember.layers.loss_collection import add_loss
from ember.layers.weights import WeightSpec, create_weights

_EQUATION = re.compile(r"^([a-zA-Z.]+),([a-zA-Z]+)->([a-zA-Z.]+)$")


def _resolve(layer: Any, input_shape: tuple) -> tuple[str, tuple, tuple | None, tuple]:
    """``(explicit equation, kernel shape, bias shape or None, output shape)`` for ``input_shape``."""
    match = _EQUATION.match(layer.equation.replace(" ", ""))
    if match is None:
        raise ValueError(f"{layer.name}: equation must look like 'ab,bc->ac' (letters, one optional '...'), "
                         f"received {layer.equation!r}")
    inputs, weights, outputs = match.groups()
    requested = [layer.output_shape] if isinstance(layer.output_shape, int) else list(layer.output_shape)
    if "..." in inputs or "..." in outputs:
        if inputs.count("...") != 1 or outputs.count("...") != 1:
            raise ValueError(f"{layer.name}: '...' must appear once in the input and once in the output of "
                             f"{layer.equation!r}")
        elided = len(input_shape) - (len(inputs) - 3)
        spare = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in layer.equation][:elided]
        letters = "".join(spare)
        left = outputs.startswith("...")
        inputs, outputs = inputs.replace("...", letters), outputs.replace("...", letters)
        # Keras: output_shape names the dims after the batch and not elided.
        full = [input_shape[0]] + ([None] * (elided - 1) + requested if left else requested + [None] * elided)
    else:
        full = [input_shape[0]] + requested
    if len(inputs) != len(input_shape):
        raise ValueError(f"layer {layer.name!r}: equation input {match.group(1)!r} does not fit inputs of shape "
                         f"{input_shape}")
    if len(full) != len(outputs):
        raise ValueError(f"{layer.name}: output_shape {layer.output_shape!r} must give the {len(outputs) - 1} output "
                         f"dims after the batch of {match.group(3)!r}")
    sizes = dict(zip(inputs, input_shape))
    for letter, size in zip(outputs, full):
        if letter in sizes and size is not None and sizes[letter] is not None and size != sizes[letter]:
            raise ValueError(f"{layer.name}: output dim {letter!r} is {size} but the input has {sizes[letter]}")
        sizes.setdefault(letter, size)
    output_shape = tuple(sizes[c] if c in sizes else None for c in outputs)
    kernel = []
    for letter in weights:
        if sizes.get(letter) is None:
            raise ValueError(f"layer {layer.name!r}: kernel dim {letter!r} of {layer.equation!r} has no known size "
                             f"(input shape {input_shape}, output_shape {layer.output_shape!r})")
        kernel.append(sizes[letter])
    bias = None
    if layer.bias_axes:
        if any(c not in outputs for c in layer.bias_axes):
            raise ValueError(f"{layer.name}: bias_axes {layer.bias_axes!r} "
                             f"must be output letters of {layer.equation!r}")
        first = min(outputs.index(c) for c in layer.bias_axes)
        bias = tuple(sizes[c] if c in layer.bias_axes else 1 for c in outputs[first:])
    return f"{inputs},{weights}->{outputs}", tuple(kernel), bias, output_shape


class EinsumDense(QuantizeLoRAMixin, DeclarativeLayer):
    """``activation(einsum(equation, inputs, kernel) + bias)`` with the kernel's shape read from the equation.

    Args:
        equation: ``"input,kernel->output"`` letters, e.g. ``"abc,cd->abd"``; ``"..."`` once on the
            input and output stands for the dims it does not name.
        output_shape: the output dims after the batch (ints; None takes the input's size).
        activation: activation name or function.
        bias_axes: output letters that get a bias (None: no bias).
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
        kernel_constraint, bias_constraint: as :class:`Dense`.
        lora_rank, lora_alpha, quantization_config: as :class:`Dense` (``quantize("int8")``: the
            int8 kernel with Keras's ``kernel_scale`` layout, see
            :mod:`ember.layers.core.einsum_dense_quantization`; ``enable_lora(rank)``:
            ``lora_kernel_a`` ``kernel.shape[:-1] + (rank,)`` and ``lora_kernel_b`` ``(rank, kernel.shape[-1])``).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.EinsumDense("abc,cd->abd", output_shape=(None, 5), bias_axes="d")
        >>> state = layer.build((None, 3, 4), seed=0)
        >>> ops.shape(state["params"]["kernel"]), ops.shape(state["params"]["bias"])
        ((4, 5), (5,))
    """

    equation: str
    output_shape: Any
    activation: Any = None
    bias_axes: str | None = None
    kernel_initializer: Any = "glorot_uniform"
    bias_initializer: Any = "zeros"
    kernel_regularizer: Any = None
    bias_regularizer: Any = None
    activity_regularizer: Any = None
    kernel_constraint: Any = None
    bias_constraint: Any = None
    lora_rank: int | None = None
    lora_alpha: Any = None
    quantization_config: Any = None

    _apply_ignores_rng = True  # QuantizeLoRAMixin.apply passes no rng on

    def __post_init__(self) -> None:
        super().__post_init__()  # QuantizeLoRAMixin's: lora_rank, lora_alpha, quantization_config
        if not isinstance(self.equation, str) or _EQUATION.match(self.equation.replace(" ", "")) is None:
            raise ValueError(f"{self.name}: equation must look like 'ab,bc->ac', received {self.equation!r}")
        shape = self.output_shape
        dims = [shape] if isinstance(shape, int) else list(shape) if isinstance(shape, (list, tuple)) else None
        if dims is None or any(d is not None and (isinstance(d, bool) or not isinstance(d, int) or d < 1)
                               for d in dims):
            raise ValueError(f"{self.name}: output_shape must be an int or a list of positive ints/None, "
                             f"received {shape!r}")
        self._normalize("output_shape", shape if isinstance(shape, int) else list(dims))
        self._normalize("activation", activations.standardize(self.activation, f"{self.name}: activation"))
        self._normalize("kernel_initializer", initializers.get(self.kernel_initializer))
        self._normalize("bias_initializer", initializers.get(self.bias_initializer))
        for field in ("kernel_regularizer", "bias_regularizer", "activity_regularizer"):
            self._normalize(field, regularizers.get(getattr(self, field), f"{self.name}: {field}"))
        for field in ("kernel_constraint", "bias_constraint"):
            self._normalize(field, constraints.get(getattr(self, field), f"{self.name}: {field}"))

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        _, kernel_shape, bias_shape, _ = _resolve(self, tuple(input_shape))
        object.__setattr__(self, "_input_rank", len(tuple(input_shape)))  # the int8 scales' layout needs it
        specs = [WeightSpec("kernel", kernel_shape, self.kernel_initializer, self.kernel_regularizer)]
        if bias_shape is not None:
            specs.append(WeightSpec("bias", bias_shape, self.bias_initializer))
        return create_weights(self._adapt_specs(specs), seed, self.variable_dtype)

    def _axes(self) -> Any:
        rank = self.__dict__.get("_input_rank")
        if rank is None:
            raise ValueError(f"layer {self.name!r} (EinsumDense): its input rank is unknown until it is built")
        return quantization_axes(self.equation, rank)

    def _scale_shape(self, weight_shape: tuple) -> tuple:
        return tuple(kernel_scale_shape(weight_shape, self._axes()))

    def _quantize_weight(self, weight: Any, config: Any = None) -> tuple[Any, Any]:
        axes = self._axes()
        quantizer = quantizers.QuantizationConfig.weight_quantizer_or_default(
            config, quantizers.AbsMaxQuantizer(axis=tuple(axes.kernel_reduced)))
        values, scale = quantizer(weight, to_numpy=True)
        return values, to_output_layout(scale, axes, "kernel")

    def _dequantized(self, params: dict) -> Any:
        scale = to_kernel_layout(params["kernel_scale"], self._axes())
        return ops.divide(ops.cast(params["kernel"], ops.dtype(scale)), scale)

    def call(self, params: dict, inputs: Any) -> Any:
        return self._forward(params, inputs, False)

    def _forward(self, params: dict, inputs: Any, training: bool) -> Any:
        equation, _, _, _ = _resolve(self, tuple(ops.shape(inputs)))
        if self.quantization_mode == "int8":
            y = self._int8_forward(params, inputs, equation, training)
        else:
            y = ops.einsum(equation, inputs, self._float_weight(params))
        if "bias" in params:
            y = ops.add(y, params["bias"])
        y = activations.get(self.activation)(y)
        if self.activity_regularizer is not None:
            add_loss(self.activity_regularizer(y))
        return y

    def _int8_forward(self, params: dict, inputs: Any, equation: str, training: bool) -> Any:
        """Keras's int8 einsum: int8 inputs (scaled over their contracted axes) with the int8 kernel,
        de-scaled by both scales in the output's layout; weight-only with the de-quantized kernel."""
        kernel, scale = params["kernel"], params["kernel_scale"]
        quantizer = quantizers.QuantizationConfig.activation_quantizer_or_default(
            self.quantization_config, quantizers.AbsMaxQuantizer())
        if quantizer is None:
            y = ops.einsum(equation, inputs, ops.cast(self._dequantized(params), ops.dtype(inputs)))
        else:
            axes = self._axes()
            x = ops.stop_gradient(inputs) if training else inputs
            x_int, x_scale = quantizer(x, axis=tuple(axes.input_reduced))
            contracted = 1
            for axis in axes.kernel_reduced:
                contracted *= ops.shape(kernel)[axis]
            cast = "float32" if exact_in_float32(contracted) else "int32"
            y = ops.cast(ops.einsum(equation, ops.cast(x_int, cast), ops.cast(kernel, cast)), "float32")
            y = ops.divide(y, ops.multiply(to_output_layout(x_scale, axes, "input"), scale))
            y = ops.cast(y, ops.dtype(inputs))
            if training:  # gradient straight through the input rounding (Keras's custom gradient)
                linear = ops.einsum(equation, inputs, ops.cast(self._dequantized(params), ops.dtype(inputs)))
                y = ops.add(y, ops.subtract(linear, ops.stop_gradient(linear)))
        if self.lora_enabled:
            a_name, b_name = self._lora_names()
            lora = ops.matmul(ops.einsum(equation, inputs, params[a_name]), params[b_name])
            y = ops.add(y, ops.cast(ops.multiply(lora, self._lora_factor()), ops.dtype(y)))
        return y

    def regularization_losses(self, params: dict) -> list:
        return regularizers.weight_penalties(self, params, {"kernel": self.kernel_regularizer,
                                                            "bias": self.bias_regularizer})

    def constraints(self) -> dict:
        frozen = self.quantization_mode is not None or self.lora_enabled  # the kernel is not a param then
        return constraints.weight_constraints(self, {"kernel": None if frozen else self.kernel_constraint,
                                                     "bias": self.bias_constraint if self.bias_axes else None})

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _resolve(self, tuple(input_shape))[3]


EinsumDense._quantizable = EinsumDense
