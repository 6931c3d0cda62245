"""``CenterCrop``: the central ``height x width`` window of images (resized first when smaller, as Keras)."""

from __future__ import annotations

from typing import Any

from ember.layers.layer import DeclarativeLayer
from ember.layers.preprocessing import _image


class CenterCrop(DeclarativeLayer):
    """Crops the centre ``height x width`` of each image; an image smaller than that is resized
    (bilinear) to the crop's aspect ratio and size first, as Keras does.

    Args:
        height, width: output size.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.CenterCrop(2, 2)
        >>> y, _ = layer.apply(layer.build((None, 4, 4, 1)), ops.reshape(ops.arange(16.0), (1, 4, 4, 1)))
        >>> ops.to_numpy(y)[0, :, :, 0].tolist()
        [[5.0, 6.0], [9.0, 10.0]]
    """

    height: int
    width: int
    data_format: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _image.check_size(self, self.height, self.width)
        self._normalize("data_format", _image.data_format(self))

    def call(self, params: dict, inputs: Any) -> Any:
        images, restore = _image.to_channels_last(self, inputs)
        h, w = _image.spatial(images)
        if h < self.height or w < self.width:
            images = _image.resize(images, self.height, self.width, "bilinear", crop_to_aspect_ratio=True)
        else:
            top, left = (h - self.height) // 2, (w - self.width) // 2
            images = _image.crop(images, top, left, self.height, self.width)
        return restore(images)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _image.output_shape(self, tuple(input_shape), self.height, self.width)
