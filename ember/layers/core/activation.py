"""``Activation``: apply an activation function element-wise."""

from __future__ import annotations

from typing import Any

from ember import activations
from ember.layers.layer import DeclarativeLayer


class Activation(DeclarativeLayer):
    """Applies an activation function to its input.

    Args:
        activation: an activation name (``"relu"``, ``"tanh"``, ... any name in
            :data:`ember.activations.NAMES`) or a function of one array. A function
            must be registered with ``@ember.saving.register_serializable()`` for
            the layer's config to be saved.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Activation("relu")
        >>> y, _ = layer.apply(layer.build((None, 3)), ops.convert_to_tensor([[-1.0, 0.0, 2.0]]))
        >>> ops.to_numpy(y).tolist()
        [[0.0, 0.0, 2.0]]
    """

    activation: Any

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("activation", activations.standardize(self.activation, f"{self.name}: activation"))

    def call(self, params: dict, inputs: Any) -> Any:
        return activations.get(self.activation)(inputs)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
