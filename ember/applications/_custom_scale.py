"""``CustomScaleLayer``: InceptionResNetV2's scaled residual sum ``inputs[0] + inputs[1] * scale``.

Keras's ``inception_resnet_v2.CustomScaleLayer``: one weightless layer, so the graph keeps Keras's
shape (and a Keras weights file its layer order).

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.applications._custom_scale import CustomScaleLayer
    >>> ember.set_backend("numpy")
    >>> layer = CustomScaleLayer(scale=0.5)
    >>> x, up = ops.convert_to_tensor([[1.0, 2.0]]), ops.convert_to_tensor([[4.0, 6.0]])
    >>> y, _ = layer.apply(layer.build([(None, 2), (None, 2)]), [x, up])
    >>> ops.to_numpy(y).tolist()
    [[3.0, 5.0]]
"""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.layer import DeclarativeLayer


class CustomScaleLayer(DeclarativeLayer):
    """``inputs[0] + inputs[1] * scale`` for a pair of same-shaped inputs.

    Args:
        scale: the factor of the second input.
    """

    scale: float = 1.0

    def call(self, params: dict, inputs: Any) -> Any:
        shortcut, residual = inputs
        return ops.add(shortcut, ops.multiply(residual, ops.cast(self.scale, ops.dtype(residual))))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape[0])
