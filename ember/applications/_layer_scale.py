"""``LayerScale``: ConvNeXt's learnt per-channel scale of a residual branch (Keras's ``convnext.LayerScale``).

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.applications._layer_scale import LayerScale
    >>> ember.set_backend("numpy")
    >>> layer = LayerScale(init_values=0.5, projection_dim=2)
    >>> state = layer.build((None, 2))
    >>> y, _ = layer.apply(state, ops.convert_to_tensor([[2.0, 4.0]]))
    >>> ops.to_numpy(y).tolist()
    [[1.0, 2.0]]
"""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.weights import WeightSpec


class LayerScale(DeclarativeLayer):
    """``x * gamma`` with ``gamma`` of shape ``(projection_dim,)``, initialised to ``init_values``.

    Args:
        init_values: the initial value of every entry of ``gamma``.
        projection_dim: the number of channels (the last axis).
    """

    init_values: float = 1e-6
    projection_dim: int = 1

    def weight_specs(self, input_shape: Any = None) -> list[WeightSpec]:
        initializer = {"class_name": "Constant", "config": {"value": float(self.init_values)}}
        return [WeightSpec("gamma", (self.projection_dim,), initializer)]

    def call(self, params: dict, inputs: Any) -> Any:
        return ops.multiply(inputs, ops.cast(params["gamma"], ops.dtype(inputs)))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
