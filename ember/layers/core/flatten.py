"""``Flatten``: collapse every non-batch dimension into one."""

from __future__ import annotations

import math
from typing import Any

from ember import global_settings, ops
from ember.layers.core._checks import input_shape_of, known_size
from ember.layers.layer import DeclarativeLayer


class Flatten(DeclarativeLayer):
    """Flattens each example: ``(batch, d1, d2, ...)`` -> ``(batch, d1 * d2 * ...)``.

    A rank-1 input ``(batch,)`` becomes ``(batch, 1)``.

    Args:
        data_format: ``"channels_last"`` (default) or ``"channels_first"``; with
            ``channels_first`` the channel axis is moved last before flattening, so
            the order of the features matches a channels-last model's.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Flatten()
        >>> layer.compute_output_shape((None, 2, 3))
        (None, 6)
        >>> y, _ = layer.apply(layer.build((None, 2, 3)), ops.ones((4, 2, 3)))
        >>> ops.shape(y)
        (4, 6)
    """

    data_format: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        data_format = global_settings.image_data_format() if self.data_format is None else self.data_format
        if data_format not in ("channels_last", "channels_first"):
            raise ValueError(
                f"{self.name}: data_format must be 'channels_last' or 'channels_first', received {self.data_format!r}"
            )
        self._normalize("data_format", data_format)

    def call(self, params: dict, inputs: Any) -> Any:
        shape = tuple(ops.shape(inputs))
        input_shape_of(self, shape)
        if self.data_format == "channels_first" and len(shape) > 2:
            inputs = ops.transpose(inputs, (0, *range(2, len(shape)), 1))
        return ops.reshape(inputs, (shape[0], math.prod(shape[1:])))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape = input_shape_of(self, input_shape)
        return (shape[0], known_size(shape[1:]))
