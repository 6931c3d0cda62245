"""Keras's ``Normalization`` as EfficientNet builds it: mean, variance and count as non-trainable weights.

``ember.layers.Normalization`` keeps its statistics in its config (an immutable layer adapted once),
so a Keras weights file, which stores them as the layer's variables (``vars/0`` mean, ``vars/1``
variance, ``vars/2`` count), has nowhere to go. EfficientNet's stem carries such a layer
(ImageNet's statistics in Keras's files); this one holds them in its state, as Keras does. The class
is named ``Normalization`` so the Keras file layout names it as Keras does.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.applications._normalization import Normalization
    >>> ember.set_backend("numpy")
    >>> layer = Normalization()
    >>> state = layer.build((None, 2))
    >>> sorted(state["buffers"])
    ['count', 'mean', 'variance']
    >>> y, _ = layer.apply(state, ops.convert_to_tensor([[1.0, -2.0]]))
    >>> ops.to_numpy(y).tolist()
    [[1.0, -2.0]]
"""

from __future__ import annotations

from typing import Any

from ember import dtypes, global_settings, ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.weights import WeightSpec


class Normalization(DeclarativeLayer):
    """``(x - mean) / max(sqrt(variance), epsilon)`` over the last axis, the statistics in the state's buffers.

    Starts as the identity (mean 0, variance 1, count 0) until weights are loaded.
    """

    def weight_specs(self, input_shape: Any = None) -> list[WeightSpec]:
        channels = None if input_shape is None else input_shape[-1]
        return [WeightSpec("mean", (channels,), "zeros", trainable=False),
                WeightSpec("variance", (channels,), "ones", trainable=False),
                WeightSpec("count", (), "zeros", trainable=False, dtype="int32")]

    def apply(self, state: dict, inputs: Any, *, training: bool = False, rng: Any = None) -> tuple[Any, dict]:
        dtype = ops.dtype(inputs) if dtypes.is_float(ops.dtype(inputs)) else dtypes.floatx()
        x = ops.cast(inputs, dtype)
        mean = ops.cast(state["buffers"]["mean"], dtype)
        std = ops.maximum(ops.sqrt(ops.cast(state["buffers"]["variance"], dtype)), global_settings.epsilon())
        return ops.divide(ops.subtract(x, mean), std), state

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
