"""``SpatialDropout1D/2D/3D``: dropout of whole feature maps (Tompson et al., 2014)."""

from __future__ import annotations

from typing import Any, ClassVar

from ember import global_settings, ops
from ember.distribute import batch_window
from ember.layers.core._checks import input_shape_of
from ember.layers.layer import DeclarativeLayer
from ember.seeds import call_seed, check_seed
from ember.validation import check_rate

_DATA_FORMATS = ("channels_last", "channels_first")


class _SpatialDropout(DeclarativeLayer):
    """Shared implementation: ``Dropout`` with the mask broadcast over the spatial axes."""

    rate: float
    data_format: str | None = None
    seed: int | None = None

    supports_masking = True
    _rank: ClassVar[int] = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("rate", check_rate(self.name, "rate", self.rate))
        data_format = global_settings.image_data_format() if self.data_format is None else self.data_format
        if data_format not in _DATA_FORMATS:
            raise ValueError(f"{self.name}: data_format must be one of {_DATA_FORMATS}, received {self.data_format!r}")
        self._normalize("data_format", data_format)
        self._normalize("seed", check_seed(self.seed, f"{self.name}: seed"))

    def noise_shape(self, input_shape: tuple) -> tuple:
        """The mask's shape: batch and channels kept, every spatial axis 1."""
        ones = (1,) * (len(input_shape) - 2)
        if self.data_format == "channels_first":
            return (input_shape[0], input_shape[1]) + ones
        return (input_shape[0],) + ones + (input_shape[-1],)

    def call(self, params: dict, inputs: Any, training: bool = False, rng: Any = None) -> Any:
        shape = tuple(ops.shape(inputs))
        if len(shape) != self._rank:
            raise ValueError(f"layer {self.name!r} expects inputs of rank {self._rank}, received shape {shape}")
        if not training or self.rate == 0.0:
            return inputs
        seed = call_seed(self, rng)
        return batch_window.apply_rows(  # global-batch masks under ember.distribute
            lambda x: ops.random.dropout(x, self.rate, self.noise_shape(tuple(ops.shape(x))), seed=seed), inputs)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return input_shape_of(self, input_shape, rank=self._rank)


class SpatialDropout1D(_SpatialDropout):
    """Drops whole 1-D feature maps: every time step of a dropped channel is zeroed
    together (the rest scaled by ``1 / (1 - rate)``), only when ``training=True``.

    Inputs: ``(batch, steps, channels)`` (``data_format="channels_last"``, the default)
    or ``(batch, channels, steps)``. The mask has shape ``(batch, 1, channels)``
    (or ``(batch, channels, 1)``). Randomness: the ``rng`` int given to ``apply``,
    else ``seed``, else the backend's global stream.

    Args:
        rate: fraction of the channels to drop, in ``[0, 1)``.
        data_format: ``"channels_last"`` or ``"channels_first"`` (None: channels_last).
            Keras's SpatialDropout1D has no ``data_format`` (always channels-last);
            Ember accepts it for channels-first ``Conv1D`` stacks.
        seed: int seed used when ``apply`` receives no ``rng``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.SpatialDropout1D(0.5, name="sd")
        >>> y, _ = layer.apply(layer.build((None, 3, 4)), ops.ones((2, 3, 4)), training=True, rng=0)
        >>> y = ops.to_numpy(y)
        >>> bool((y == y[:, :1, :]).all())   # each channel is kept or dropped for all steps
        True
    """

    _rank = 3


class SpatialDropout2D(_SpatialDropout):
    """Drops whole 2-D feature maps (see :class:`SpatialDropout1D`).

    Inputs: ``(batch, rows, cols, channels)`` (channels_last, the default) or
    ``(batch, channels, rows, cols)``; the mask is ``(batch, 1, 1, channels)`` or
    ``(batch, channels, 1, 1)``.

    Args:
        rate, data_format, seed: as for :class:`SpatialDropout1D`.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.SpatialDropout2D(0.5, data_format="channels_first", name="sd2")
        >>> y, _ = layer.apply(layer.build((None, 4, 2, 2)), ops.ones((1, 4, 2, 2)), training=True, rng=1)
        >>> y = ops.to_numpy(y)
        >>> bool((y == y[:, :, :1, :1]).all())
        True
    """

    _rank = 4


class SpatialDropout3D(_SpatialDropout):
    """Drops whole 3-D feature maps (see :class:`SpatialDropout1D`).

    Inputs: ``(batch, d1, d2, d3, channels)`` (channels_last, the default) or
    ``(batch, channels, d1, d2, d3)``.

    Args:
        rate, data_format, seed: as for :class:`SpatialDropout1D`.

    Example:
        >>> from ember import layers, ops
        >>> layer = layers.SpatialDropout3D(0.5, name="sd3")  # on any backend
        >>> y, _ = layer.apply(layer.build((None, 2, 2, 2, 3)), ops.ones((1, 2, 2, 2, 3)))
        >>> float(ops.to_numpy(y).min())   # inference: unchanged
        1.0
    """

    _rank = 5
