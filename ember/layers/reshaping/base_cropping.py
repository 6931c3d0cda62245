"""``BaseCropping``: cells removed from the start/end of each spatial axis."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ember import ops
from ember.layers.conv import _args
from ember.layers.layer import DeclarativeLayer
from ember.layers.reshaping._pairs import normalize_spatial_fields


class BaseCropping(DeclarativeLayer):
    """Crop the spatial axes.

    Subclasses declare the config fields (Keras's): ``cropping`` (the 1-d layer: an int
    or one ``(before, after)`` pair; otherwise an int, ``rank`` ints or ``rank`` pairs)
    and, except in 1-d, ``data_format``.
    """

    rank: ClassVar[int] = 2

    if TYPE_CHECKING:  # the config field every subclass declares
        @property
        def cropping(self) -> Any: ...

    def __post_init__(self) -> None:
        super().__post_init__()
        normalize_spatial_fields(self, "cropping")

    @property
    def _format(self) -> str:
        return getattr(self, "data_format", "channels_last")

    @property
    def _pairs(self) -> tuple:
        return (self.cropping,) if self.rank == 1 else self.cropping

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape, spatial, channels = _args.spatial_shape(self, input_shape, self.rank, self._format)
        lengths = []
        for n, (a, b) in zip(spatial, self._pairs):
            if n is not None and n - a - b < 1:
                raise ValueError(
                    f"layer {self.name!r}: cropping {self.cropping} leaves nothing of input shape {shape}; "
                    "each axis must keep at least one cell"
                )
            lengths.append(None if n is None else n - a - b)
        return _args.join_shape(shape[0], lengths, channels, self._format)

    def call(self, params: dict, inputs: Any) -> Any:
        shape = tuple(ops.shape(inputs))
        self.compute_output_shape(shape)
        _, spatial, _ = _args.spatial_shape(self, shape, self.rank, self._format)
        keep = [slice(a, n - b) for n, (a, b) in zip(spatial, self._pairs)]
        return ops.getitem(inputs, _args.join_shape(slice(None), keep, slice(None), self._format))
