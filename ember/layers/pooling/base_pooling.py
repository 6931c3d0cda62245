"""``BasePooling``: windowed max/average pooling behind ``MaxPooling*`` and ``AveragePooling*``."""

from __future__ import annotations

from typing import Any, ClassVar

from ember import ops
from ember.layers.conv import _args
from ember.layers.layer import DeclarativeLayer


class BasePooling(DeclarativeLayer):
    """N-d pooling over windows of ``pool_size`` moved by ``strides``.

    Args:
        pool_size: int or tuple of ``rank`` ints.
        strides: int or tuple of ``rank`` ints; None means ``pool_size``.
        padding: ``"valid"`` or ``"same"`` (TF placement; in ``"same"`` average
            pooling the padded cells are left out of the mean, as in Keras).
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.
    """

    rank: ClassVar[int] = 2
    pool_mode: ClassVar[str] = "max"

    pool_size: Any = 2
    strides: Any = None
    padding: str = "valid"
    data_format: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        name, rank = self.name, self.rank
        self._normalize("pool_size", _args.standardize_tuple(name, self.pool_size, rank, "pool_size"))
        strides = self.pool_size if self.strides is None else self.strides
        self._normalize("strides", _args.standardize_tuple(name, strides, rank, "strides"))
        self._normalize("padding", _args.standardize_padding(name, self.padding))
        self._normalize("data_format", _args.standardize_data_format(name, self.data_format))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape, spatial, channels = _args.spatial_shape(self, input_shape, self.rank, self.data_format)
        lengths = _args.pool_output_lengths(self, shape, spatial, self.pool_size, self.strides, self.padding)
        return _args.join_shape(shape[0], lengths, channels, self.data_format)

    def call(self, params: dict, inputs: Any) -> Any:
        self.compute_output_shape(tuple(ops.shape(inputs)))  # errors that name this layer
        pool = ops.nn.max_pool if self.pool_mode == "max" else ops.nn.avg_pool
        return pool(inputs, self.pool_size, strides=self.strides, padding=self.padding,
                    data_format=self.data_format)
