"""Adaptive pooling layers: average or max pooling to a fixed output size (1-D, 2-D, 3-D)."""

from __future__ import annotations

from typing import Any, ClassVar

from ember import ops
from ember.layers.conv import _args
from ember.layers.layer import Layer


class BaseAdaptivePooling(Layer):
    """Pools each spatial axis into ``output_size`` bins, as PyTorch's adaptive pooling (and Keras's).

    Bin ``i`` of an axis of length ``L`` covers ``[floor(i L / n), ceil((i + 1) L / n))``, so
    the bins tile the axis whatever its length.

    Args:
        output_size: an int (every spatial axis) or one int per spatial axis.
        data_format: ``"channels_last"`` (default, ``None``) or ``"channels_first"``.
    """

    rank: ClassVar[int] = 2
    pool_mode: ClassVar[str] = "average"

    output_size: Any
    data_format: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("output_size", _args.standardize_tuple(self.name, self.output_size, self.rank, "output_size"))
        self._normalize("data_format", _args.standardize_data_format(self.name, self.data_format))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape, _, channels = _args.spatial_shape(self, input_shape, self.rank, self.data_format)
        return _args.join_shape(shape[0], self.output_size, channels, self.data_format)

    def call(self, params: dict, inputs: Any) -> Any:
        _args.spatial_shape(self, tuple(ops.shape(inputs)), self.rank, self.data_format)
        pool = ops.adaptive_average_pool if self.pool_mode == "average" else ops.adaptive_max_pool
        return pool(inputs, self.output_size, data_format=self.data_format)


def _layer(name: str, rank: int, mode: str) -> type:
    doc = (f"{'Average' if mode == 'average' else 'Max'} pooling of {rank}-D inputs to a fixed ``output_size``.\n\n"
           "    See :class:`BaseAdaptivePooling` for the bins and arguments.\n\n"
           "    Example:\n"
           "        >>> import ember\n"
           "        >>> from ember import layers, ops\n"
           "        >>> ember.set_backend(\"numpy\")\n"
           f"        >>> layer = layers.{name}(2)\n"
           f"        >>> layer.compute_output_shape((None,{' 5,' * rank} 3))\n"
           f"        (None,{' 2,' * rank} 3)\n")
    return type(name, (BaseAdaptivePooling,), {"__doc__": doc, "__module__": __name__, "rank": rank,
                                               "pool_mode": mode, "__annotations__": {}})


AdaptiveAveragePooling1D = _layer("AdaptiveAveragePooling1D", 1, "average")
AdaptiveAveragePooling2D = _layer("AdaptiveAveragePooling2D", 2, "average")
AdaptiveAveragePooling3D = _layer("AdaptiveAveragePooling3D", 3, "average")
AdaptiveMaxPooling1D = _layer("AdaptiveMaxPooling1D", 1, "max")
AdaptiveMaxPooling2D = _layer("AdaptiveMaxPooling2D", 2, "max")
AdaptiveMaxPooling3D = _layer("AdaptiveMaxPooling3D", 3, "max")
