"""``Subtract``: the difference of exactly two inputs."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.merge.base import Merge


class Subtract(Merge):
    """Subtracts its second input from its first: ``inputs[0] - inputs[1]``.

    Takes a list of exactly two inputs whose shapes broadcast (Keras's merge rules).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Subtract()
        >>> a = ops.convert_to_tensor([[5.0, 2.0]])
        >>> b = ops.convert_to_tensor([[3.0, 4.0]])
        >>> y, _ = layer.apply(layer.build([(None, 2), (None, 2)]), [a, b])
        >>> ops.to_numpy(y).tolist()
        [[2.0, -2.0]]
    """

    min_inputs = 2
    max_inputs = 2

    def _merge_function(self, inputs: list) -> Any:
        return ops.subtract(inputs[0], inputs[1])
