"""``Resizing``: images to ``height x width`` (bilinear or nearest, optional aspect-preserving crop)."""

from __future__ import annotations

from typing import Any

from ember.layers.layer import DeclarativeLayer
from ember.layers.preprocessing import _image


class Resizing(DeclarativeLayer):
    """Resizes images with half-pixel centres (as PyTorch ``align_corners=False`` and Keras without antialiasing).

    Args:
        height, width: output size.
        interpolation: ``"bilinear"`` or ``"nearest"``.
        crop_to_aspect_ratio: first crop the largest centred window with the target aspect ratio.
        pad_to_aspect_ratio: must be False (padding is not implemented in Ember; use crop_to_aspect_ratio).
        fill_mode, fill_value: Keras's padding options (only meaningful with pad_to_aspect_ratio).
        antialias: must be False (Ember resizes without an antialiasing filter).
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Resizing(1, 2)
        >>> y, _ = layer.apply(layer.build((None, 2, 2, 1)), ops.reshape(ops.arange(4.0), (1, 2, 2, 1)))
        >>> ops.to_numpy(y)[0, :, :, 0].tolist()
        [[1.0, 2.0]]
    """

    height: int
    width: int
    interpolation: str = "bilinear"
    crop_to_aspect_ratio: bool = False
    pad_to_aspect_ratio: bool = False
    fill_mode: str = "constant"
    fill_value: float = 0.0
    antialias: bool = False
    data_format: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _image.check_size(self, self.height, self.width)
        _image.check_choice(self, "interpolation", self.interpolation, _image.INTERPOLATIONS)
        if self.pad_to_aspect_ratio:
            raise ValueError(f"{self.name}: pad_to_aspect_ratio=True is not implemented in Ember; "
                             "use crop_to_aspect_ratio=True or pad the images first")
        if self.antialias:
            raise ValueError(f"{self.name}: antialias=True is not implemented in Ember; use antialias=False")
        self._normalize("data_format", _image.data_format(self))

    def call(self, params: dict, inputs: Any) -> Any:
        images, restore = _image.to_channels_last(self, inputs)
        return restore(_image.resize(images, self.height, self.width, self.interpolation, self.crop_to_aspect_ratio))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return _image.output_shape(self, tuple(input_shape), self.height, self.width)
