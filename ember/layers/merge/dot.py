"""``Dot``: the per-example dot product of two inputs."""

from __future__ import annotations

import math
from typing import Any

from ember import ops
from ember.layers.merge.base import Merge
from ember.validation import check_bool

_EPSILON = 1e-12  # floor of the squared norm when normalizing (as in Keras)


class Dot(Merge):
    """Dot product of two inputs over one axis of each, example by example (``batch_dot``).

    For inputs ``(batch, *a)`` and ``(batch, *b)`` the result has shape
    ``(batch, *a without axes[0], *b without axes[1])``; two rank-2 inputs give
    ``(batch, 1)``.

    Args:
        axes: the axis (an int, used for both inputs) or a pair of axes
            ``(axis_of_first, axis_of_second)``; axis 0 is the batch axis and cannot
            be contracted; negative axes count from the end.
        normalize: L2-normalize both inputs along ``axes`` first, so the result of
            two vectors is their cosine similarity.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Dot(axes=1)
        >>> a = ops.convert_to_tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> b = ops.convert_to_tensor([[1.0, 1.0], [0.0, 1.0]])
        >>> y, _ = layer.apply(layer.build([(None, 2), (None, 2)]), [a, b])
        >>> ops.to_numpy(y).tolist()
        [[3.0], [4.0]]
    """

    axes: Any
    normalize: bool = False

    min_inputs = 2
    max_inputs = 2
    supports_masking = False

    def __post_init__(self) -> None:
        super().__post_init__()
        axes = self.axes
        if isinstance(axes, (list, tuple)):
            axes = tuple(axes)
            if len(axes) != 2:
                raise ValueError(f"{self.name}: axes must be an int or a pair of ints, received {self.axes!r}")
        values = axes if isinstance(axes, tuple) else (axes,)
        if any(isinstance(a, bool) or not isinstance(a, int) for a in values):
            raise TypeError(f"{self.name}: axes must be an int or a pair of ints, received {self.axes!r}")
        if 0 in values:
            raise ValueError(f"{self.name}: axes cannot include 0, the batch axis; received {self.axes!r}")
        check_bool(self.name, "normalize", self.normalize)
        self._normalize("axes", axes)

    def _axes_for(self, shapes: list[tuple]) -> tuple[int, int]:
        pair = self.axes if isinstance(self.axes, tuple) else (self.axes, self.axes)
        axes = []
        for axis, shape in zip(pair, shapes):
            rank = len(shape)
            if not -rank < axis < rank or axis % rank == 0:
                raise ValueError(
                    f"layer {self.name!r} (Dot): axes {self.axes!r} are out of range (or name the batch "
                    f"axis) for inputs of shapes {shapes}"
                )
            axes.append(axis % rank)
        return axes[0], axes[1]

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shapes = self._input_shapes(input_shape)
        if any(len(s) < 2 for s in shapes):
            raise ValueError(f"layer {self.name!r} (Dot) needs inputs of rank >= 2, received shapes {shapes}")
        batch = self._batch_size(shapes)
        a1, a2 = self._axes_for(shapes)
        d1, d2 = shapes[0][a1], shapes[1][a2]
        if d1 is not None and d2 is not None and d1 != d2:
            raise ValueError(
                f"layer {self.name!r} (Dot): incompatible input shapes: size {d1} at axis {a1} of the first "
                f"input != size {d2} at axis {a2} of the second; received shapes {shapes}"
            )
        rest1 = [d for i, d in enumerate(shapes[0]) if i not in (0, a1)]
        rest2 = [d for i, d in enumerate(shapes[1]) if i not in (0, a2)]
        out = rest1 + rest2
        return (batch, *(out or [1]))

    def _merge_function(self, inputs: list) -> Any:
        raise NotImplementedError  # call() is overridden: Dot does not broadcast

    def call(self, params: dict, inputs: Any) -> Any:
        if not isinstance(inputs, (list, tuple)) or ops.is_array(inputs):
            raise ValueError(f"layer {self.name!r} (Dot) must be called on a list of 2 inputs, "
                             f"received {type(inputs).__name__}")
        shapes = [tuple(ops.shape(x)) for x in inputs]
        out_shape = self.compute_output_shape(shapes)
        x1, x2 = inputs
        a1, a2 = self._axes_for(shapes)
        if self.normalize:
            x1, x2 = _l2_normalize(x1, a1), _l2_normalize(x2, a2)
        batch = shapes[0][0]
        rest1 = [d for i, d in enumerate(shapes[0]) if i not in (0, a1)]
        rest2 = [d for i, d in enumerate(shapes[1]) if i not in (0, a2)]
        # (batch, M, K) @ (batch, K, N) with the contracted axes moved next to each other.
        left = ops.reshape(ops.moveaxis(x1, a1, -1), (batch, math.prod(rest1), shapes[0][a1]))
        right = ops.reshape(ops.moveaxis(x2, a2, 1), (batch, shapes[1][a2], math.prod(rest2)))
        return ops.reshape(ops.matmul(left, right), out_shape)


def _l2_normalize(x: Any, axis: int) -> Any:
    squared = ops.sum(ops.square(x), axis=axis, keepdims=True)
    return ops.multiply(x, ops.rsqrt(ops.maximum(squared, _EPSILON)))
