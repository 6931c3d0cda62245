"""Adaptive pooling layers: average or max pooling to a fixed output size (1-D, 2-D, 3-D)."""

from __future__ import annotations

from typing import Any, ClassVar

from ember import ops
from ember.layers.conv import _args
from ember.layers.layer import DeclarativeLayer


class BaseAdaptivePooling(DeclarativeLayer):
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


class AdaptiveAveragePooling1D(BaseAdaptivePooling):
    """Average pooling of 1-D inputs to a fixed ``output_size``.

    See :class:`BaseAdaptivePooling` for the bins and arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> layer = layers.AdaptiveAveragePooling1D(2)
        >>> layer.compute_output_shape((None, 5, 3))
        (None, 2, 3)
    """

    rank = 1
    pool_mode = "average"


class AdaptiveAveragePooling2D(BaseAdaptivePooling):
    """Average pooling of 2-D inputs to a fixed ``output_size``.

    See :class:`BaseAdaptivePooling` for the bins and arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> layer = layers.AdaptiveAveragePooling2D(2)
        >>> layer.compute_output_shape((None, 5, 5, 3))
        (None, 2, 2, 3)
    """

    rank = 2
    pool_mode = "average"


class AdaptiveAveragePooling3D(BaseAdaptivePooling):
    """Average pooling of 3-D inputs to a fixed ``output_size``.

    See :class:`BaseAdaptivePooling` for the bins and arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> layer = layers.AdaptiveAveragePooling3D(2)
        >>> layer.compute_output_shape((None, 5, 5, 5, 3))
        (None, 2, 2, 2, 3)
    """

    rank = 3
    pool_mode = "average"


class AdaptiveMaxPooling1D(BaseAdaptivePooling):
    """Max pooling of 1-D inputs to a fixed ``output_size``.

    See :class:`BaseAdaptivePooling` for the bins and arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> layer = layers.AdaptiveMaxPooling1D(2)
        >>> layer.compute_output_shape((None, 5, 3))
        (None, 2, 3)
    """

    rank = 1
    pool_mode = "max"


class AdaptiveMaxPooling2D(BaseAdaptivePooling):
    """Max pooling of 2-D inputs to a fixed ``output_size``.

    See :class:`BaseAdaptivePooling` for the bins and arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> layer = layers.AdaptiveMaxPooling2D(2)
        >>> layer.compute_output_shape((None, 5, 5, 3))
        (None, 2, 2, 3)
    """

    rank = 2
    pool_mode = "max"


class AdaptiveMaxPooling3D(BaseAdaptivePooling):
    """Max pooling of 3-D inputs to a fixed ``output_size``.

    See :class:`BaseAdaptivePooling` for the bins and arguments.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> layer = layers.AdaptiveMaxPooling3D(2)
        >>> layer.compute_output_shape((None, 5, 5, 5, 3))
        (None, 2, 2, 2, 3)
    """

    rank = 3
    pool_mode = "max"
