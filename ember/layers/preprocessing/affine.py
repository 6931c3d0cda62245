"""Random affine image augmentation: ``RandomRotation``, ``RandomZoom``, ``RandomTranslation`` (Keras's transforms)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ember import ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.preprocessing import _image, _random


class _RandomAffine(DeclarativeLayer):
    """Shared machinery: draw per-image parameters, build Keras's 8-parameter transforms, warp.

    Subclasses declare their factors and implement ``_transforms(images, draws)``.
    Outside training the input is returned unchanged.
    """

    if TYPE_CHECKING:  # config fields every subclass declares (after its factors, in Keras's order)
        @property
        def fill_mode(self) -> str: ...
        @property
        def interpolation(self) -> str: ...
        @property
        def fill_value(self) -> float: ...

    def _ranges(self) -> list:
        """The ``(low, high)`` range of each drawn parameter (one column of draws each)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _ranges")

    def _transforms(self, draws: list, h: int, w: int) -> Any:
        """Keras's 8-parameter transforms ``(batch, 8)`` for the drawn parameters of ``h x w`` images."""
        raise NotImplementedError(f"{type(self).__name__} must implement _transforms")

    def _check_common(self) -> None:
        _image.check_choice(self, "fill_mode", self.fill_mode, _image.FILL_MODES)
        _image.check_choice(self, "interpolation", self.interpolation, _image.INTERPOLATIONS)
        _random.check_seed(self)
        self._normalize("data_format", _image.data_format(self))

    def _draw(self, batch: int, ranges: list, seed: Any, dtype: str) -> list:
        draws = ops.random.uniform((batch, len(ranges)), dtype=dtype, seed=seed)
        out = []
        for i, (low, high) in enumerate(ranges):
            column = ops.reshape(ops.take(draws, ops.convert_to_tensor([i]), axis=1), (batch,))
            out.append(ops.add(low, ops.multiply(column, high - low)))
        return out

    def call(self, params: dict, inputs: Any, training: bool = False, rng: Any = None) -> Any:
        if not training:
            return inputs
        images, restore = _image.to_channels_last(self, inputs)
        batch, h, w, _ = ops.shape(images)
        draws = self._draw(batch, self._ranges(), _random.seed_for(self, rng), ops.dtype(images))
        transforms = self._transforms(draws, h, w)
        return restore(_image.affine_transform(images, transforms, self.interpolation, self.fill_mode,
                                               self.fill_value))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)


def _stack(columns: list) -> Any:
    return ops.stack(columns, axis=1)


class RandomRotation(_RandomAffine):
    """While training, rotates each image by ``2 pi * f`` with ``f`` drawn from ``factor``.

    Args:
        factor: a number ``f`` (range ``[-f, f]``) or a ``(lower, upper)`` pair, in fractions of a turn.
        fill_mode: ``"reflect"``, ``"wrap"``, ``"constant"`` or ``"nearest"`` for points outside.
        interpolation: ``"bilinear"`` or ``"nearest"``.
        seed: int seed used when ``apply`` receives no ``rng``.
        fill_value: the value outside for ``fill_mode="constant"``.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.RandomRotation((0.5, 0.5))      # exactly half a turn
        >>> x = ops.reshape(ops.arange(4.0), (1, 2, 2, 1))
        >>> y, _ = layer.apply(layer.build((None, 2, 2, 1)), x, training=True)
        >>> [round(v, 4) for v in ops.to_numpy(y).ravel().tolist()]
        [3.0, 2.0, 1.0, 0.0]
    """

    factor: Any
    fill_mode: str = "reflect"
    interpolation: str = "bilinear"
    seed: int | None = None
    fill_value: float = 0.0
    data_format: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("factor", _random.factor_range(self, "factor", self.factor))
        self._check_common()

    def _ranges(self) -> list:
        return [self.factor]

    def _transforms(self, draws: list, h: int, w: int) -> Any:
        angle = ops.multiply(draws[0], 2.0 * math.pi)
        cos, sin = ops.cos(angle), ops.sin(angle)
        rotated_x = ops.subtract(ops.multiply(cos, w - 1), ops.multiply(sin, h - 1))
        rotated_y = ops.add(ops.multiply(sin, w - 1), ops.multiply(cos, h - 1))
        x_offset = ops.divide(ops.subtract(w - 1, rotated_x), 2.0)
        y_offset = ops.divide(ops.subtract(h - 1, rotated_y), 2.0)
        zero = ops.zeros_like(cos)
        return _stack([cos, ops.negative(sin), x_offset, sin, cos, y_offset, zero, zero])


class RandomZoom(_RandomAffine):
    """While training, zooms each image by ``1 + f`` per axis (``f < 0`` zooms in), ``f`` drawn from the factors.

    Args:
        height_factor: a number ``f`` (range ``[-f, f]``) or a ``(lower, upper)`` pair, each > -1.
        width_factor: the same for the width; None: the height's draw is used for both axes.
        fill_mode, interpolation, seed, fill_value, data_format: as :class:`RandomRotation`.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.RandomZoom((0.0, 0.0))          # no zoom
        >>> x = ops.reshape(ops.arange(4.0), (1, 2, 2, 1))
        >>> y, _ = layer.apply(layer.build((None, 2, 2, 1)), x, training=True)
        >>> ops.to_numpy(y).ravel().tolist()
        [0.0, 1.0, 2.0, 3.0]
    """

    height_factor: Any
    width_factor: Any = None
    fill_mode: str = "reflect"
    interpolation: str = "bilinear"
    seed: int | None = None
    fill_value: float = 0.0
    data_format: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("height_factor", _random.factor_range(self, "height_factor", self.height_factor, -1.0))
        if self.width_factor is not None:
            self._normalize("width_factor", _random.factor_range(self, "width_factor", self.width_factor, -1.0))
        self._check_common()

    def _ranges(self) -> list:
        return [self.height_factor, self.width_factor or self.height_factor]

    def _transforms(self, draws: list, h: int, w: int) -> Any:
        zoom_h = ops.add(1.0, draws[0])
        zoom_w = ops.add(1.0, draws[1] if self.width_factor is not None else draws[0])
        x_offset = ops.multiply((w - 1.0) / 2.0, ops.subtract(1.0, zoom_w))
        y_offset = ops.multiply((h - 1.0) / 2.0, ops.subtract(1.0, zoom_h))
        zero = ops.zeros_like(zoom_h)
        return _stack([zoom_w, zero, x_offset, zero, zoom_h, y_offset, zero, zero])


class RandomTranslation(_RandomAffine):
    """While training, shifts each image by fractions of its height and width drawn from the factors.

    Args:
        height_factor: a number ``f`` (range ``[-f, f]``) or a ``(lower, upper)`` pair, fractions of the height.
        width_factor: the same for the width.
        fill_mode, interpolation, seed, fill_value, data_format: as :class:`RandomRotation`.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.RandomTranslation(0.0, (0.5, 0.5), fill_mode="constant")
        >>> x = ops.reshape(ops.arange(1.0, 3.0), (1, 1, 2, 1))
        >>> y, _ = layer.apply(layer.build((None, 1, 2, 1)), x, training=True)
        >>> ops.to_numpy(y).ravel().tolist()
        [0.0, 1.0]
    """

    height_factor: Any
    width_factor: Any
    fill_mode: str = "reflect"
    interpolation: str = "bilinear"
    seed: int | None = None
    fill_value: float = 0.0
    data_format: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("height_factor", _random.factor_range(self, "height_factor", self.height_factor, -1.0, 1.0))
        self._normalize("width_factor", _random.factor_range(self, "width_factor", self.width_factor, -1.0, 1.0))
        self._check_common()

    def _ranges(self) -> list:
        return [self.height_factor, self.width_factor]

    def _transforms(self, draws: list, h: int, w: int) -> Any:
        dy, dx = ops.multiply(draws[0], float(h)), ops.multiply(draws[1], float(w))
        one, zero = ops.ones_like(dx), ops.zeros_like(dx)
        return _stack([one, zero, ops.negative(dx), zero, one, ops.negative(dy), zero, zero])
