"""``Permute``: reorder the non-batch dimensions."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.core._checks import input_shape_of
from ember.layers.layer import DeclarativeLayer


class Permute(DeclarativeLayer):
    """Permutes the dimensions of each example (the batch dimension stays first).

    Args:
        dims: a permutation of ``1 .. rank - 1`` (1-based, as in Keras: dimension 0
            is the batch). ``Permute((2, 1))`` swaps the two axes of ``(batch, a, b)``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Permute((2, 1))
        >>> layer.compute_output_shape((None, 3, 5))
        (None, 5, 3)
        >>> y, _ = layer.apply(layer.build((None, 3, 5)), ops.ones((2, 3, 5)))
        >>> ops.shape(y)
        (2, 5, 3)
    """

    dims: tuple

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            dims = tuple(self.dims)
        except TypeError:
            raise TypeError(f"{self.name}: dims must be a tuple of ints, received {self.dims!r}") from None
        if (any(isinstance(d, bool) or not isinstance(d, int) for d in dims)
                or sorted(dims) != list(range(1, len(dims) + 1))):
            raise ValueError(
                f"{self.name}: dims must be a permutation of 1..{len(dims)} (1-based; 0 is the batch axis), "
                f"received {self.dims!r}"
            )
        self._normalize("dims", dims)

    def _check(self, input_shape: Any) -> tuple:
        return input_shape_of(self, input_shape, rank=len(self.dims) + 1)

    def call(self, params: dict, inputs: Any) -> Any:
        self._check(ops.shape(inputs))
        return ops.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape = self._check(input_shape)
        return (shape[0],) + tuple(shape[d] for d in self.dims)
