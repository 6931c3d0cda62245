"""``PReLU``: leaky ReLU with a learned slope per unit."""

from __future__ import annotations

from typing import Any

from ember import constraints, initializers, ops, regularizers
from ember.initializers import derive_seed
from ember.layers.layer import DeclarativeLayer


class PReLU(DeclarativeLayer):
    """``x`` for ``x >= 0``, ``alpha * x`` otherwise, with ``alpha`` a trainable array.

    ``alpha`` has the input's shape without the batch axis, with size 1 along every axis
    in ``shared_axes`` (``shared_axes=[1, 2]`` on images: one slope per channel).

    Args:
        alpha_initializer: initializer of ``alpha`` (Keras's default: zeros).
        alpha_regularizer: penalty on ``alpha``.
        alpha_constraint: projection of ``alpha`` after each optimizer step.
        shared_axes: axes (1-based, as the input's) along which ``alpha`` is shared.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.PReLU(alpha_initializer=ember.initializers.Constant(0.5))
        >>> y, _ = layer.apply(layer.build((None, 2)), ops.convert_to_tensor([[-2.0, 3.0]]))
        >>> ops.to_numpy(y).tolist()
        [[-1.0, 3.0]]
    """

    alpha_initializer: Any = "zeros"
    alpha_regularizer: Any = None
    alpha_constraint: Any = None
    shared_axes: Any = None

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("alpha_initializer", initializers.get(self.alpha_initializer))
        self._normalize("alpha_regularizer",
                        regularizers.get(self.alpha_regularizer, f"{self.name}: alpha_regularizer"))
        self._normalize("alpha_constraint", constraints.get(self.alpha_constraint, f"{self.name}: alpha_constraint"))
        if self.shared_axes is not None:
            axes = (self.shared_axes,) if isinstance(self.shared_axes, int) else tuple(self.shared_axes)
            if any(isinstance(a, bool) or not isinstance(a, int) or a < 1 for a in axes):
                raise ValueError(f"{self.name}: shared_axes must be ints >= 1 (axes of the input, batch is 0), "
                                 f"received {self.shared_axes!r}")
            self._normalize("shared_axes", axes)

    def _alpha_shape(self, input_shape: tuple) -> tuple:
        if len(input_shape) < 2:
            raise ValueError(f"layer {self.name!r} expects inputs of rank >= 2, received shape {input_shape}")
        shape = list(input_shape[1:])
        for axis in self.shared_axes or ():
            if axis >= len(input_shape):
                raise ValueError(f"layer {self.name!r}: shared axis {axis} is out of range for inputs of shape "
                                 f"{input_shape}")
            shape[axis - 1] = 1
        if any(d is None for d in shape):
            raise ValueError(f"layer {self.name!r} needs known sizes on the axes alpha covers (not shared), "
                             f"received shape {input_shape}")
        return tuple(shape)

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        shape = self._alpha_shape(tuple(input_shape))
        alpha = self.alpha_initializer(shape, self.variable_dtype, None if seed is None else derive_seed(seed, "alpha"))
        return self.make_state(params={"alpha": alpha})

    def call(self, params: dict, inputs: Any) -> Any:
        alpha = params["alpha"]
        return ops.add(ops.nn.relu(inputs), ops.multiply(alpha, ops.minimum(inputs, 0.0)))

    def regularization_losses(self, params: dict) -> list:
        """``[alpha_regularizer(alpha)]`` when set."""
        return regularizers.weight_penalties(self, params, {"alpha": self.alpha_regularizer})

    def constraints(self) -> dict:
        """``{"alpha": alpha_constraint}`` when set."""
        return constraints.weight_constraints(self, {"alpha": self.alpha_constraint})

    def compute_output_shape(self, input_shape: Any) -> tuple:
        self._alpha_shape(tuple(input_shape))
        return tuple(input_shape)
