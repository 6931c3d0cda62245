"""``RandomCrop``: a random ``height x width`` window while training, the central one otherwise."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.preprocessing import _image, _random


class RandomCrop(DeclarativeLayer):
    """While training, crops one random ``height x width`` window (the same offset for the whole
    batch); outside training, the central window. Images smaller than the crop are resized
    (bilinear, aspect ratio kept by cropping) to it, as Keras does.

    Args:
        height, width: output size.
        seed: int seed of the crop offsets when ``apply`` receives no ``rng``.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.RandomCrop(2, 2, seed=1)
        >>> y, _ = layer.apply(layer.build((None, 4, 4, 1)), ops.ones((1, 4, 4, 1)), training=True)
        >>> ops.shape(y)
        (1, 2, 2, 1)
    """

    height: int
    width: int
    seed: int | None = None
    data_format: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _image.check_size(self, self.height, self.width)
        _random.check_seed(self)
        self._normalize("data_format", _image.data_format(self))

    def call(self, params: dict, inputs: Any, training: bool = False, rng: Any = None) -> Any:
        images, restore = _image.to_channels_last(self, inputs)
        h, w = _image.spatial(images)
        if h < self.height or w < self.width:
            return restore(_image.resize(images, self.height, self.width, "bilinear", crop_to_aspect_ratio=True))
        if training:
            offsets = ops.to_numpy(ops.random.randint((2,), 0, 2**30, seed=_random.seed_for(self, rng)))
            top, left = int(offsets[0]) % (h - self.height + 1), int(offsets[1]) % (w - self.width + 1)
        else:
            top, left = (h - self.height) // 2, (w - self.width) // 2
        return restore(_image.crop(images, top, left, self.height, self.width))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _image.output_shape(self, tuple(input_shape), self.height, self.width)
