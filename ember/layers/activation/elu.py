"""``ELU``: exponential linear unit."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.activation._checks import real
from ember.layers.layer import DeclarativeLayer


class ELU(DeclarativeLayer):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    Args:
        alpha: scale of the negative part.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.ELU(alpha=2.0)
        >>> y, _ = layer.apply(layer.build((None, 2)), ops.convert_to_tensor([[0.0, 3.0]]))
        >>> ops.to_numpy(y).tolist()
        [[0.0, 3.0]]
    """

    alpha: float = 1.0

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("alpha", real(self, "alpha"))

    def call(self, params: dict, inputs: Any) -> Any:
        return ops.nn.elu(inputs, alpha=self.alpha)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
