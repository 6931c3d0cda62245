"""``Dense``: ``activation(inputs @ kernel + bias)`` over the last axis."""

from __future__ import annotations

from typing import Any

from ember import activations, initializers, ops, quantizers
from ember.layers.core.dense_adaptation import QuantizeLoRAMixin, int8_matmul
from ember.layers.layer import DeclarativeLayer
from ember.layers.loss_collection import add_loss
from ember.layers.weights import WeightSpec, resolve_options
from ember.validation import check_last_dim, check_positive_int


class Dense(QuantizeLoRAMixin, DeclarativeLayer):
    """Fully connected layer.

    Args:
        units: output size (positive int).
        activation: activation name (any ``ops.nn`` activation) or function; None is linear.
        use_bias: add a bias vector.
        kernel_initializer: for the ``(in, units)`` kernel.
        bias_initializer: for the ``(units,)`` bias.
        kernel_regularizer: penalty on the kernel (see :mod:`ember.regularizers`),
            declared with the kernel in :meth:`weight_specs`.
        bias_regularizer: penalty on the bias.
        activity_regularizer: penalty on the output, passed to ``add_loss`` in ``call``.
        kernel_constraint: projection of the kernel after each optimizer step (see
            :mod:`ember.constraints`), declared with the kernel in :meth:`weight_specs`.
        bias_constraint: projection of the bias after each optimizer step.
        lora_rank: enable LoRA with this rank when the layer is built (see :meth:`enable_lora`).
        lora_alpha: the LoRA update is scaled by ``lora_alpha / lora_rank`` (None: ``lora_rank``).
        quantization_config: the :class:`~ember.quantizers.QuantizationConfig` of a quantized layer
            (set by :meth:`quantize`; None: Keras's default, int8 inputs and weights).

    ``quantize("int8")`` and ``enable_lora(rank)`` follow Keras (see
    :mod:`ember.layers.core.dense_adaptation`).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> dense = layers.Dense(3, activation="relu", name="d")
        >>> state = dense.build((None, 4), seed=0)
        >>> sorted(state["params"]), ops.shape(state["params"]["kernel"])
        (['bias', 'kernel'], (4, 3))
    """

    supports_masking = True  # as in Keras: a mask passes through (per-timestep on rank-3 inputs)
    _apply_ignores_rng = True  # QuantizeLoRAMixin.apply passes no rng on

    units: int
    activation: Any = None
    use_bias: bool = True
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

    def __post_init__(self) -> None:
        super().__post_init__()  # QuantizeLoRAMixin's: lora_rank, lora_alpha, quantization_config
        self._normalize("units", check_positive_int(self.name, "units", self.units))
        if not isinstance(self.use_bias, bool):
            raise TypeError(f"{self.name}: use_bias must be True or False, received {self.use_bias!r}")
        self._normalize("activation", activations.standardize(self.activation, f"{self.name}: activation"))
        self._normalize("kernel_initializer", initializers.get(self.kernel_initializer))
        self._normalize("bias_initializer", initializers.get(self.bias_initializer))
        resolve_options(self, "kernel_regularizer", "bias_regularizer", "activity_regularizer",
                        "kernel_constraint", "bias_constraint")

    def weight_specs(self, input_shape: Any = None) -> list[WeightSpec]:
        """The ``(in, units)`` kernel and the ``(units,)`` bias (when ``use_bias``)."""
        fan_in = None if input_shape is None else check_last_dim(self, tuple(input_shape))
        specs = [WeightSpec("kernel", (fan_in, self.units), self.kernel_initializer, self.kernel_regularizer,
                            self.kernel_constraint)]
        if self.use_bias:
            specs.append(WeightSpec("bias", (self.units,), self.bias_initializer, self.bias_regularizer,
                                    self.bias_constraint))
        return self._adapt_specs(specs)

    def call(self, params: dict, inputs: Any) -> Any:
        return self._forward(params, inputs, False)

    def _forward(self, params: dict, inputs: Any, training: bool) -> Any:
        kernel = params["kernel"]
        shape = ops.shape(inputs)
        if shape[-1] != ops.shape(kernel)[0]:
            raise ValueError(
                f"layer {self.name!r} expects a last dimension of {ops.shape(kernel)[0]}, "
                f"received input of shape {shape}"
            )
        if self.quantization_mode == "int8":
            y = self._int8_forward(params, inputs, training)
            if self.use_bias:
                y = ops.add(y, params["bias"])
        else:
            y = ops.nn.dense(inputs, self._float_weight(params), params["bias"] if self.use_bias else None)
        y = activations.get(self.activation)(y)
        if self.activity_regularizer is not None:
            add_loss(self.activity_regularizer(y))
        return y

    def _int8_forward(self, params: dict, inputs: Any, training: bool) -> Any:
        """Keras's int8 call: int8 inputs (per row) times the int8 kernel, de-scaled; weight-only
        without an activation quantizer. In training the gradient reaching the inputs is that of the
        de-quantized kernel (Keras's custom gradient: straight through the input rounding)."""
        kernel, scale = params["kernel"], params["kernel_scale"]
        quantizer = quantizers.QuantizationConfig.activation_quantizer_or_default(
            self.quantization_config, quantizers.AbsMaxQuantizer())
        if quantizer is None:
            y = ops.divide(ops.matmul(inputs, ops.cast(kernel, ops.dtype(inputs))), ops.cast(scale, ops.dtype(inputs)))
        else:
            x = ops.stop_gradient(inputs) if training else inputs
            x_int, x_scale = quantizer(x, axis=-1)
            y = int8_matmul(x_int, kernel, ops.shape(kernel)[0])
            y = ops.cast(ops.divide(y, ops.multiply(x_scale, scale)), ops.dtype(inputs))
            if training:  # gradient straight through: d y / d x = dequantized kernel
                linear = ops.matmul(inputs, ops.cast(self._dequantized(params), ops.dtype(inputs)))
                y = ops.add(y, ops.subtract(linear, ops.stop_gradient(linear)))
        if self.lora_enabled:
            a_name, b_name = self._lora_names()
            lora = ops.matmul(ops.matmul(inputs, params[a_name]), params[b_name])
            y = ops.add(y, ops.cast(ops.multiply(lora, self._lora_factor()), ops.dtype(y)))
        return y

    def compute_output_shape(self, input_shape: Any) -> tuple:
        check_last_dim(self, tuple(input_shape))
        return tuple(input_shape[:-1]) + (self.units,)


Dense._quantizable = Dense
