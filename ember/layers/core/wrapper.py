"""``Wrapper``: the base of layers that wrap one other layer (Keras's ``layers.Wrapper``)."""

from __future__ import annotations

from typing import Any

from ember.layers.layer import DeclarativeLayer, Layer


class Wrapper(DeclarativeLayer):
    """Wraps ``layer``: by default it builds, runs and shapes exactly as the wrapped layer, so a
    subclass overrides only what it changes (``call`` around ``self.layer.apply``, say).

    State: the wrapped layer's state itself.

    Args:
        layer: the wrapped layer.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> class Doubled(layers.Wrapper):
        ...     def apply(self, state, inputs, *, training=False, rng=None):
        ...         y, state = self.layer.apply(state, inputs, training=training, rng=rng)
        ...         return ops.multiply(y, 2.0), state
        >>> wrapped = Doubled(layers.Dense(1, kernel_initializer="ones", use_bias=False))
        >>> y, _ = wrapped.apply(wrapped.build((None, 2)), ops.ones((1, 2)))
        >>> ops.to_numpy(y).tolist()
        [[4.0]]
    """

    layer: Any

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.layer, Layer):
            raise ValueError(f"{self.name}: layer must be an ember Layer, received {type(self.layer).__name__}")

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        return self.layer.build(input_shape, seed)

    def apply(self, state: dict, inputs: Any, *, training: bool = False, rng: Any = None) -> tuple[Any, dict]:
        return self.layer.apply(state, inputs, training=training, rng=rng)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return self.layer.compute_output_shape(input_shape)

    def regularization_losses(self, params: dict) -> list:
        return self.layer.regularization_losses(params)

    def constraints(self) -> dict:
        return self.layer.constraints()
