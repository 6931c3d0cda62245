"""``Dense``: ``activation(inputs @ kernel + bias)`` over the last axis."""

from __future__ import annotations

from typing import Any

from ember.validation import check_last_dim, check_positive_int
from ember import activations, constraints, initializers, regularizers
from ember.seeds import sub_seed
from ember.layers.layer import Layer, add_loss
from ember import ops


class Dense(Layer):
    """Fully connected layer.

    Args:
        units: output size (positive int).
        activation: activation name (any ``ops.nn`` activation) or function; None is linear.
        use_bias: add a bias vector.
        kernel_initializer: for the ``(in, units)`` kernel.
        bias_initializer: for the ``(units,)`` bias.
        kernel_regularizer: penalty on the kernel (see :mod:`ember.regularizers`),
            reported by :meth:`regularization_losses`.
        bias_regularizer: penalty on the bias.
        activity_regularizer: penalty on the output, passed to ``add_loss`` in ``call``.
        kernel_constraint: projection of the kernel after each optimizer step (see
            :mod:`ember.constraints`), reported by :meth:`constraints`.
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
        for field in ("kernel_regularizer", "bias_regularizer", "activity_regularizer"):
            self._normalize(field, regularizers.get(getattr(self, field), f"{self.name}: {field}"))
        for field in ("kernel_constraint", "bias_constraint"):
            self._normalize(field, constraints.get(getattr(self, field), f"{self.name}: {field}"))

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        fan_in = check_last_dim(self, tuple(input_shape))
        params = {"kernel": self.kernel_initializer(
            (fan_in, self.units), self.variable_dtype, sub_seed(seed, "kernel"))}
        if self.use_bias:
            params["bias"] = self.bias_initializer(
                (self.units,), self.variable_dtype, sub_seed(seed, "bias"))
        return self.make_state(params=params)

    def call(self, params: dict, inputs: Any) -> Any:
        kernel = params["kernel"]
        if ops.shape(inputs)[-1] != ops.shape(kernel)[0]:
            raise ValueError(
                f"layer {self.name!r} expects a last dimension of {ops.shape(kernel)[0]}, "
                f"received input of shape {ops.shape(inputs)}"
            )
        y = ops.matmul(inputs, kernel)
        if self.use_bias:
            y = ops.add(y, params["bias"])
        y = activations.get(self.activation)(y)
        if self.activity_regularizer is not None:
            add_loss(self.activity_regularizer(y))
        return y

    def regularization_losses(self, params: dict) -> list:
        """``[kernel_regularizer(kernel), bias_regularizer(bias)]`` for those set (none when frozen)."""
        return regularizers.weight_penalties(
            self, params, {"kernel": self.kernel_regularizer, "bias": self.bias_regularizer})

    def constraints(self) -> dict:
        """``{"kernel": kernel_constraint, "bias": bias_constraint}`` for those set (none when frozen)."""
        return constraints.weight_constraints(
            self, {"kernel": self.kernel_constraint, "bias": self.bias_constraint if self.use_bias else None})

    def compute_output_shape(self, input_shape: Any) -> tuple:
        check_last_dim(self, tuple(input_shape))
        return tuple(input_shape[:-1]) + (self.units,)
