"""``Multiply``: Multiplies its inputs element-wise."""

from __future__ import annotations

from ember.layers.merge.base import Merge


class Multiply(Merge):
    """Multiplies its inputs element-wise.

    Takes a list of inputs whose shapes broadcast by Keras's merge rules (see :class:`Merge`)
    and returns their product, of the broadcast shape.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Multiply()
        >>> a = ops.convert_to_tensor([[1.0, 2.0]])
        >>> b = ops.convert_to_tensor([[3.0, 4.0]])
        >>> y, _ = layer.apply(layer.build([(None, 2), (None, 2)]), [a, b])
        >>> ops.to_numpy(y).tolist()
        [[3.0, 8.0]]
    """

    _fold = "multiply"
