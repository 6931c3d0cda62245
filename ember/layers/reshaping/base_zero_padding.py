"""``BaseZeroPadding``: zeros added before/after each spatial axis."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ember import ops
from ember.layers.conv import _args
from ember.layers.layer import DeclarativeLayer
from ember.layers.reshaping._pairs import normalize_spatial_fields


class BaseZeroPadding(DeclarativeLayer):
    """Pad the spatial axes with zeros.

    Subclasses declare the config fields (Keras's): ``padding`` (the 1-d layer: an int
    or one ``(before, after)`` pair; otherwise an int, ``rank`` ints or ``rank`` pairs)
    and, except in 1-d, ``data_format``.
    """

    rank: ClassVar[int] = 2

    if TYPE_CHECKING:  # the config field every subclass declares
        @property
        def padding(self) -> Any: ...

    def __post_init__(self) -> None:
        super().__post_init__()
        normalize_spatial_fields(self, "padding")

    @property
    def _format(self) -> str:
        return getattr(self, "data_format", "channels_last")

    @property
    def _pairs(self) -> tuple:
        return (self.padding,) if self.rank == 1 else self.padding

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape, spatial, channels = _args.spatial_shape(self, input_shape, self.rank, self._format)
        lengths = [None if n is None else n + a + b for n, (a, b) in zip(spatial, self._pairs)]
        return _args.join_shape(shape[0], lengths, channels, self._format)

    def call(self, params: dict, inputs: Any) -> Any:
        _args.spatial_shape(self, tuple(ops.shape(inputs)), self.rank, self._format)
        return ops.pad(inputs, _args.join_shape((0, 0), self._pairs, (0, 0), self._format))
