"""``Reshape``: give each example a new shape."""

from __future__ import annotations

import math
from typing import Any

from ember import ops
from ember.layers.core._checks import input_shape_of, known_size
from ember.layers.layer import DeclarativeLayer


class Reshape(DeclarativeLayer):
    """Reshapes each example to ``target_shape`` (the batch dimension is kept).

    Args:
        target_shape: the new shape of one example, a tuple of positive ints; one
            entry may be ``-1``, inferred from the number of elements.

    Raises:
        ValueError: a bad ``target_shape``, or inputs whose number of elements per
            example does not fit it (checked whenever the input's sizes are known).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Reshape((3, -1))
        >>> layer.compute_output_shape((None, 6))
        (None, 3, 2)
        >>> y, _ = layer.apply(layer.build((None, 6)), ops.ones((2, 6)))
        >>> ops.shape(y)
        (2, 3, 2)
    """

    target_shape: tuple

    def __post_init__(self) -> None:
        super().__post_init__()
        target = self.target_shape
        if isinstance(target, int) and not isinstance(target, bool):
            target = (target,)
        try:
            target = tuple(target)
        except TypeError:
            raise TypeError(f"{self.name}: target_shape must be a tuple of ints, "
                            f"received {self.target_shape!r}") from None
        for d in target:
            if isinstance(d, bool) or not isinstance(d, int) or (d <= 0 and d != -1):
                raise ValueError(
                    f"{self.name}: target_shape entries must be positive ints or a single -1, received {target}"
                )
        if target.count(-1) > 1:
            raise ValueError(f"{self.name}: target_shape may contain at most one -1, received {target}")
        self._normalize("target_shape", target)

    def _resolve(self, dims: tuple) -> tuple:
        """``target_shape`` for an example of shape ``dims`` (the -1 filled in when known)."""
        total = known_size(dims)
        fixed = math.prod([d for d in self.target_shape if d != -1])  # a list: torch.compile traces no generator here
        if total is None:
            return tuple(None if d == -1 else d for d in self.target_shape)
        if -1 in self.target_shape:
            if total % fixed:  # fixed >= 1: every other entry is positive
                self._mismatch(dims)
            return tuple(total // fixed if d == -1 else d for d in self.target_shape)
        if fixed != total:
            self._mismatch(dims)
        return self.target_shape

    def _mismatch(self, dims: tuple) -> None:
        raise ValueError(
            f"layer {self.name!r} cannot reshape examples of shape {dims} ({known_size(dims)} elements) "
            f"to target_shape {self.target_shape}: the number of elements must stay the same"
        )

    def call(self, params: dict, inputs: Any) -> Any:
        shape = tuple(ops.shape(inputs))
        input_shape_of(self, shape)
        return ops.reshape(inputs, (shape[0],) + self._resolve(shape[1:]))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape = input_shape_of(self, input_shape)
        return (shape[0],) + self._resolve(shape[1:])
