"""``LeakyReLU``: ``x`` for ``x >= 0``, ``negative_slope * x`` below."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.activation._checks import real
from ember.layers.layer import DeclarativeLayer


class LeakyReLU(DeclarativeLayer):
    """Leaky rectified linear unit.

    Args:
        negative_slope: slope for negative inputs, >= 0 (Keras's default 0.3).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.LeakyReLU(negative_slope=0.5)
        >>> y, _ = layer.apply(layer.build((None, 2)), ops.convert_to_tensor([[-2.0, 3.0]]))
        >>> ops.to_numpy(y).tolist()
        [[-1.0, 3.0]]
    """

    negative_slope: float = 0.3

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("negative_slope", real(self, "negative_slope", 0.0))

    def call(self, params: dict, inputs: Any) -> Any:
        return ops.nn.leaky_relu(inputs, negative_slope=self.negative_slope)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
