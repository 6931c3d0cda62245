"""``Dense``: ``activation(inputs @ kernel + bias)`` over the last axis."""

from __future__ import annotations

from typing import Any

from ember import activations, initializers, ops
from ember.layers.layer import Layer, add_loss
from ember.layers.weights import WeightSpec, resolve_options
from ember.validation import check_last_dim, check_positive_int


class Dense(Layer):
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

    def __post_init__(self) -> None:
        super().__post_init__()
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
        return specs

    def call(self, params: dict, inputs: Any) -> Any:
        kernel = params["kernel"]
        shape = ops.shape(inputs)
        if shape[-1] != ops.shape(kernel)[0]:
            raise ValueError(
                f"layer {self.name!r} expects a last dimension of {ops.shape(kernel)[0]}, "
                f"received input of shape {shape}"
            )
        y = ops.nn.dense(inputs, kernel, params["bias"] if self.use_bias else None)
        y = activations.get(self.activation)(y)
        if self.activity_regularizer is not None:
            add_loss(self.activity_regularizer(y))
        return y

    def compute_output_shape(self, input_shape: Any) -> tuple:
        check_last_dim(self, tuple(input_shape))
        return tuple(input_shape[:-1]) + (self.units,)
