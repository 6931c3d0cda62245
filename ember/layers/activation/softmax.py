"""``Softmax``: softmax over one or more axes."""

from __future__ import annotations

from typing import Any

from ember import activations, ops
from ember.layers.layer import DeclarativeLayer


class Softmax(DeclarativeLayer):
    """Softmax along ``axis`` (an int or a tuple of ints: the normalisation runs over all of them).

    Args:
        axis: axis or axes to normalise over.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Softmax()
        >>> y, _ = layer.apply(layer.build((None, 2)), ops.convert_to_tensor([[0.0, 0.0]]))
        >>> ops.to_numpy(y).tolist()
        [[0.5, 0.5]]
    """

    axis: Any = -1

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        axis = self.axis
        axes = (axis,) if isinstance(axis, int) else tuple(axis) if isinstance(axis, (list, tuple)) else None
        if axes is None or not axes or any(isinstance(a, bool) or not isinstance(a, int) for a in axes):
            raise ValueError(f"{self.name}: axis must be an int or a tuple of ints, received {axis!r}")
        self._normalize("axis", axes[0] if isinstance(axis, int) else axes)

    def call(self, params: dict, inputs: Any) -> Any:
        if isinstance(self.axis, int):
            return activations.softmax(inputs, axis=self.axis)  # 16-bit inputs in float32
        # Several axes: exp(x - logsumexp over them), as Keras does.
        return ops.exp(ops.subtract(inputs, ops.logsumexp(inputs, axis=self.axis, keepdims=True)))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        rank = len(tuple(input_shape))
        for a in (self.axis,) if isinstance(self.axis, int) else self.axis:
            if not -rank <= a < rank:
                raise ValueError(f"layer {self.name!r}: axis {a} is out of range for inputs of rank {rank}")
        return tuple(input_shape)
