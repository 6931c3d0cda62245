"""``BaseGlobalPooling``: max/average over every spatial position."""

from __future__ import annotations

from typing import Any, ClassVar

from ember import ops
from ember.layers.conv import _args
from ember.layers.layer import DeclarativeLayer
from ember.validation import check_bool


class BaseGlobalPooling(DeclarativeLayer):
    """Reduce every spatial axis with a max or a mean.

    Args:
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.
        keepdims: keep the spatial axes with length 1 (``(batch, 1, ..., 1, channels)``)
            instead of returning ``(batch, channels)``.
    """

    rank: ClassVar[int] = 2
    pool_mode: ClassVar[str] = "max"

    data_format: str | None = None
    keepdims: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("data_format", _args.standardize_data_format(self.name, self.data_format))
        check_bool(self.name, "keepdims", self.keepdims)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape, spatial, channels = _args.spatial_shape(self, input_shape, self.rank, self.data_format)
        if not self.keepdims:
            return (shape[0], channels)
        return _args.join_shape(shape[0], (1,) * self.rank, channels, self.data_format)

    def call(self, params: dict, inputs: Any) -> Any:
        _args.spatial_shape(self, tuple(ops.shape(inputs)), self.rank, self.data_format)
        axes = _args.spatial_axes(self.rank, self.data_format)
        reduce = ops.max if self.pool_mode == "max" else ops.mean
        return reduce(inputs, axis=axes, keepdims=self.keepdims)
