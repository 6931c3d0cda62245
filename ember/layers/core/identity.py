"""``Identity``: returns its input unchanged."""

from __future__ import annotations

from typing import Any

from ember.layers.layer import DeclarativeLayer


class Identity(DeclarativeLayer):
    """A placeholder layer that returns its input (any structure) unchanged.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Identity()
        >>> y, _ = layer.apply(layer.build((None, 2)), ops.ones((1, 2)))
        >>> ops.to_numpy(y).tolist()
        [[1.0, 1.0]]
    """

    supports_masking = True

    def call(self, params: dict, inputs: Any) -> Any:
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape
