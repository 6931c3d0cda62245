"""``RepeatVector``: repeat a vector ``n`` times along a new axis."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.core._checks import input_shape_of
from ember.layers.layer import DeclarativeLayer
from ember.validation import check_positive_int


class RepeatVector(DeclarativeLayer):
    """Repeats each example ``n`` times: ``(batch, features)`` -> ``(batch, n, features)``.

    Args:
        n: number of repetitions (positive int).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.RepeatVector(3)
        >>> y, _ = layer.apply(layer.build((None, 2)), ops.convert_to_tensor([[1.0, 2.0]]))
        >>> ops.to_numpy(y).tolist()
        [[[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]]
    """

    n: int

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("n", check_positive_int(self.name, "n", self.n))

    def call(self, params: dict, inputs: Any) -> Any:
        input_shape_of(self, ops.shape(inputs), rank=2)
        return ops.repeat(ops.expand_dims(inputs, 1), self.n, axis=1)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape = input_shape_of(self, input_shape, rank=2)
        return (shape[0], self.n, shape[1])
