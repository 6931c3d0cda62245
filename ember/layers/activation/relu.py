"""``ReLU``: rectified linear unit with Keras's ceiling, slope and threshold options."""

from __future__ import annotations

from typing import Any

from ember import activations
from ember.layers.activation._checks import real
from ember.layers.layer import DeclarativeLayer


class ReLU(DeclarativeLayer):
    """``max_value`` above it, ``x`` from ``threshold`` up, ``negative_slope * (x - threshold)`` below.

    Args:
        max_value: ceiling of the output (None: no ceiling), >= 0.
        negative_slope: slope below ``threshold``, >= 0.
        threshold: where the unit turns on, >= 0 (as Keras).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.ReLU(max_value=1.0)
        >>> y, _ = layer.apply(layer.build((None, 3)), ops.convert_to_tensor([[-1.0, 0.5, 3.0]]))
        >>> ops.to_numpy(y).tolist()
        [[0.0, 0.5, 1.0]]
    """

    max_value: float | None = None
    negative_slope: float = 0.0
    threshold: float = 0.0

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("max_value", real(self, "max_value", 0.0, allow_none=True))
        self._normalize("negative_slope", real(self, "negative_slope", 0.0))
        self._normalize("threshold", real(self, "threshold", 0.0))

    def call(self, params: dict, inputs: Any) -> Any:
        return activations.relu(inputs, negative_slope=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
