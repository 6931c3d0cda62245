"""``Concatenate``: join a list of inputs along one axis."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.merge.base import Merge, distinct_sizes


class Concatenate(Merge):
    """Concatenates a list of inputs along ``axis``.

    Args:
        axis: the axis to join along (negative counts from the end; the batch axis
            is 0). Every input must have the same rank and the same sizes on every
            other axis.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Concatenate()
        >>> layer.compute_output_shape([(None, 2), (None, 3)])
        (None, 5)
        >>> y, _ = layer.apply(layer.build([(None, 2), (None, 3)]), [ops.ones((4, 2)), ops.zeros((4, 3))])
        >>> ops.shape(y)
        (4, 5)
    """

    axis: int = -1

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.axis, bool) or not isinstance(self.axis, int):
            raise TypeError(f"{self.name}: axis must be an int, received {self.axis!r}")

    def _normalized_axis(self, rank: int, shapes: list) -> int:
        if not -rank <= self.axis < rank:
            raise ValueError(
                f"layer {self.name!r} (Concatenate): axis {self.axis} is out of range for inputs of rank "
                f"{rank}; received shapes {shapes}"
            )
        return self.axis % rank

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shapes = self._input_shapes(input_shape)
        rank = len(shapes[0])
        if any(len(s) != rank for s in shapes):
            raise ValueError(
                f"layer {self.name!r} (Concatenate) needs inputs of the same rank, received shapes {shapes}"
            )
        if rank == 0:
            raise ValueError(f"layer {self.name!r} (Concatenate) cannot join scalars, received shapes {shapes}")
        axis = self._normalized_axis(rank, shapes)
        out = []
        for i in range(rank):
            dims = [s[i] for s in shapes]
            if i == axis:
                out.append(None if None in dims else sum(dims))
                continue
            known = distinct_sizes(d for d in dims if d is not None)
            if len(known) > 1:
                raise ValueError(
                    f"layer {self.name!r} (Concatenate) needs inputs with matching shapes except along "
                    f"the concatenation axis {self.axis}; received shapes {shapes}"
                )
            out.append(known[0] if known else None)
        return tuple(out)

    def call(self, params: dict, inputs: Any) -> Any:
        if not isinstance(inputs, (list, tuple)) or ops.is_array(inputs):
            raise ValueError(f"layer {self.name!r} (Concatenate) must be called on a list of inputs, "
                             f"received {type(inputs).__name__}")
        self.compute_output_shape([tuple(ops.shape(x)) for x in inputs])
        return ops.concatenate(list(inputs), axis=self.axis)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """Keras's rule: masks (all-True for inputs without one) joined along ``axis``;
        a mask of lower rank than its input is broadcast over the input's last axis;
        the result is reduced with ``any`` over the last axis."""
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)) or len(mask) != len(inputs):
            raise ValueError(
                f"layer {self.name!r}: mask must be a list with one entry (or None) per input, received {mask!r}"
            )
        if all(m is None for m in mask):
            return None

        masks = []
        for x, m in zip(inputs, mask):
            if m is None:
                masks.append(ops.ones_like(x, dtype="bool"))
            elif ops.ndim(m) < ops.ndim(x):
                masks.append(ops.broadcast_to(ops.expand_dims(m, -1), ops.shape(x)))
            else:
                masks.append(m)
        return ops.any(ops.concatenate(masks, axis=self.axis), axis=-1)

