"""``EinsumDense``: a dense layer whose contraction is any einsum equation ``"input,kernel->output"``."""

from __future__ import annotations

import re
import string
from typing import Any

from ember import activations, constraints, initializers, ops, regularizers
from ember.initializers import derive_seed
from ember.layers.layer import Layer, add_loss

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


class EinsumDense(Layer):
    """``activation(einsum(equation, inputs, kernel) + bias)`` with the kernel's shape read from the equation.

    Args:
        equation: ``"input,kernel->output"`` letters, e.g. ``"abc,cd->abd"``; ``"..."`` once on the
            input and output stands for the dims it does not name.
        output_shape: the output dims after the batch (ints; None takes the input's size).
        activation: activation name or function.
        bias_axes: output letters that get a bias (None: no bias).
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
        kernel_constraint, bias_constraint: as :class:`Dense`.

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

    def __post_init__(self) -> None:
        super().__post_init__()
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
        params = {"kernel": self.kernel_initializer(kernel_shape, self.variable_dtype,
                                                    None if seed is None else derive_seed(seed, "kernel"))}
        if bias_shape is not None:
            params["bias"] = self.bias_initializer(bias_shape, self.variable_dtype,
                                                   None if seed is None else derive_seed(seed, "bias"))
        return self.make_state(params=params)

    def call(self, params: dict, inputs: Any) -> Any:
        equation, _, _, _ = _resolve(self, tuple(ops.shape(inputs)))
        y = ops.einsum(equation, inputs, params["kernel"])
        if "bias" in params:
            y = ops.add(y, params["bias"])
        y = activations.get(self.activation)(y)
        if self.activity_regularizer is not None:
            add_loss(self.activity_regularizer(y))
        return y

    def regularization_losses(self, params: dict) -> list:
        return regularizers.weight_penalties(self, params, {"kernel": self.kernel_regularizer,
                                                            "bias": self.bias_regularizer})

    def constraints(self) -> dict:
        return constraints.weight_constraints(self, {"kernel": self.kernel_constraint,
                                                     "bias": self.bias_constraint if self.bias_axes else None})

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _resolve(self, tuple(input_shape))[3]
