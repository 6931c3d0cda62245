"""``BaseUpSampling``: repeat (nearest) or interpolate (bilinear) along the spatial axes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ember import dtypes, ops
from ember.layers.conv import _args
from ember.layers.layer import DeclarativeLayer

INTERPOLATIONS = ("nearest", "bilinear")


def linear_upsample_axis(x: Any, axis: int, factor: int) -> Any:
    """Linear interpolation by an integer ``factor`` along ``axis``, with half-pixel centres.

    Output cell ``o`` samples the input at ``(o + 0.5) / factor - 0.5``, clamped to the
    first/last cell (TF's ``resize(..., "bilinear", half_pixel_centers=True)``, Keras's
    ``UpSampling2D(interpolation="bilinear")``, torch's ``interpolate(mode="bilinear",
    align_corners=False)``). Two gathers and a blend: no loop over cells.
    """
    if factor == 1:
        return x
    n = ops.shape(x)[axis]
    source = np.maximum((np.arange(n * factor) + 0.5) / factor - 0.5, 0.0)
    low = np.floor(source).astype(np.int32)
    high = np.minimum(low + 1, n - 1).astype(np.int32)
    weight_shape = [1] * ops.ndim(x)
    weight_shape[axis] = n * factor
    weight = (source - low).reshape(weight_shape).astype(dtypes.to_numpy_dtype(ops.dtype(x)))
    below = ops.take(x, ops.convert_to_tensor(low), axis=axis)
    above = ops.take(x, ops.convert_to_tensor(high), axis=axis)
    return ops.add(below, ops.multiply(ops.subtract(above, below), ops.convert_to_tensor(weight)))


class BaseUpSampling(DeclarativeLayer):
    """Upsample the spatial axes by integer factors.

    Subclasses declare the config fields (Keras's): ``size`` (an int, or ``rank``
    ints for 2-d/3-d: the factor per spatial axis), ``data_format`` (2-d/3-d) and
    ``interpolation`` (2-d: ``"nearest"`` or ``"bilinear"``).
    """

    rank: ClassVar[int] = 2

    if TYPE_CHECKING:  # the config field every subclass declares
        @property
        def size(self) -> Any: ...

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rank == 1:  # Keras keeps UpSampling1D's size an int
            self._normalize("size", _args.standardize_tuple(self.name, self.size, 1, "size")[0])
        else:
            self._normalize("size", _args.standardize_tuple(self.name, self.size, self.rank, "size"))
        if hasattr(self, "data_format"):
            self._normalize("data_format", _args.standardize_data_format(self.name, self.data_format))
        interpolation = getattr(self, "interpolation", "nearest")
        if interpolation not in INTERPOLATIONS:
            raise ValueError(f"{self.name}: interpolation must be one of {INTERPOLATIONS}, received {interpolation!r}")

    @property
    def _format(self) -> str:
        return getattr(self, "data_format", "channels_last")

    @property
    def _factors(self) -> tuple:
        return (self.size,) if self.rank == 1 else self.size

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape, spatial, channels = _args.spatial_shape(self, input_shape, self.rank, self._format)
        lengths = [None if n is None else n * s for n, s in zip(spatial, self._factors)]
        return _args.join_shape(shape[0], lengths, channels, self._format)

    def call(self, params: dict, inputs: Any) -> Any:
        _args.spatial_shape(self, tuple(ops.shape(inputs)), self.rank, self._format)
        outputs = inputs
        nearest = getattr(self, "interpolation", "nearest") == "nearest"
        if not nearest and not dtypes.is_float(ops.dtype(outputs)):
            outputs = ops.cast(outputs, dtypes.floatx())
        for axis, factor in zip(_args.spatial_axes(self.rank, self._format), self._factors):
            if nearest:
                outputs = outputs if factor == 1 else ops.repeat(outputs, factor, axis=axis)
            else:
                outputs = linear_upsample_axis(outputs, axis, factor)
        return outputs
