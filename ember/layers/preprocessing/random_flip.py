"""``RandomFlip``: flip each image horizontally and/or vertically with probability 1/2 while training."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.preprocessing import _image, _random

_MODES = ("horizontal", "vertical", "horizontal_and_vertical")


class RandomFlip(DeclarativeLayer):
    """While training, flips each image left-right (``"horizontal"``), up-down (``"vertical"``)
    or each independently (``"horizontal_and_vertical"``), each with probability 1/2.
    Outside training it returns its input.

    Args:
        mode: which flips to draw.
        seed: int seed of the flip draws when ``apply`` receives no ``rng``.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.RandomFlip("horizontal", seed=0)
        >>> y, _ = layer.apply(layer.build((None, 1, 2, 1)), ops.reshape(ops.arange(2.0), (1, 1, 2, 1)))
        >>> ops.to_numpy(y).ravel().tolist()    # inference: unchanged
        [0.0, 1.0]
    """

    mode: str = "horizontal_and_vertical"
    seed: int | None = None
    data_format: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _image.check_choice(self, "mode", self.mode, _MODES)
        _random.check_seed(self)
        self._normalize("data_format", _image.data_format(self))

    def call(self, params: dict, inputs: Any, training: bool = False, rng: Any = None) -> Any:
        if not training:
            return inputs
        images, restore = _image.to_channels_last(self, inputs)
        batch = ops.shape(images)[0]
        draws = ops.random.uniform((batch, 2), seed=_random.seed_for(self, rng))
        for column, axis, active in ((0, 2, "horizontal" in self.mode), (1, 1, "vertical" in self.mode)):
            if active:
                flip = ops.reshape(ops.less(ops.take(draws, ops.convert_to_tensor([column]), axis=1), 0.5),
                                   (batch, 1, 1, 1))
                images = ops.where(flip, ops.flip(images, axis=axis), images)
        return restore(images)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
