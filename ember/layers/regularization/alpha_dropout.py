"""``AlphaDropout``: dropout that keeps the self-normalising mean and variance of SELU networks."""

from __future__ import annotations

import numbers
from typing import Any

from ember import ops
from ember.layers.layer import DeclarativeLayer
from ember.seeds import call_seed, check_seed

_ALPHA = 1.6732632423543772848170429916717
_SCALE = 1.0507009873554804934193349852946


class AlphaDropout(DeclarativeLayer):
    """While training, sets inputs to SELU's negative saturation ``-alpha * scale`` with probability
    ``rate``, then applies the affine map ``a x + b`` that restores zero mean and unit variance
    (Klambauer et al., 2017). Outside training it returns its input.

    Args:
        rate: drop probability in ``[0, 1)``.
        noise_shape: shape of the mask, broadcast against the input (``None`` entries: the input's).
        seed: int seed used when ``apply`` receives no ``rng``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.AlphaDropout(0.2, seed=0)
        >>> y, _ = layer.apply(layer.build((None, 3)), ops.ones((2, 3)))
        >>> ops.to_numpy(y).tolist()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """

    rate: float
    noise_shape: Any = None
    seed: int | None = None

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        rate = self.rate
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0.0 <= float(rate) < 1.0:
            raise ValueError(f"{self.name}: rate must be a number in [0, 1), received {rate!r}")
        self._normalize("rate", float(rate))
        if self.noise_shape is not None:
            self._normalize("noise_shape", tuple(self.noise_shape))
        self._normalize("seed", check_seed(self.seed, f"{self.name}: seed"))

    def _mask_shape(self, shape: tuple) -> tuple:
        if self.noise_shape is None:
            return shape
        if len(self.noise_shape) != len(shape):
            raise ValueError(f"layer {self.name!r}: noise_shape {self.noise_shape} must have the rank of the "
                             f"inputs, received shape {shape}")
        return tuple(d if n is None else n for n, d in zip(self.noise_shape, shape))

    def call(self, params: dict, inputs: Any, training: bool = False, rng: Any = None) -> Any:
        if not training or self.rate == 0.0:
            return inputs
        seed = call_seed(self, rng)
        shape = self._mask_shape(tuple(ops.shape(inputs)))
        kept = ops.cast(ops.greater_equal(ops.random.uniform(shape, seed=seed), self.rate), ops.dtype(inputs))
        saturation = -_ALPHA * _SCALE
        a = ((1.0 - self.rate) * (1.0 + self.rate * saturation ** 2)) ** -0.5
        b = -a * saturation * self.rate
        dropped = ops.add(ops.multiply(inputs, kept), ops.multiply(saturation, ops.subtract(1.0, kept)))
        return ops.add(ops.multiply(dropped, a), b)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
