"""``Average``: the element-wise mean of the inputs."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.merge.base import Merge


class Average(Merge):
    """The element-wise average of its inputs.

    Takes a list of inputs whose shapes broadcast by Keras's merge rules (see :class:`Merge`)
    and returns their mean, of the broadcast shape.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Average()
        >>> a = ops.convert_to_tensor([[1.0, 2.0]])
        >>> b = ops.convert_to_tensor([[3.0, 6.0]])
        >>> y, _ = layer.apply(layer.build([(None, 2), (None, 2)]), [a, b])
        >>> ops.to_numpy(y).tolist()
        [[2.0, 4.0]]
    """

    _fold = "add"

    def _merge_function(self, inputs: list) -> Any:
        return ops.divide(super()._merge_function(inputs), float(len(inputs)))
