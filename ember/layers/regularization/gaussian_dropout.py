"""``GaussianDropout``: multiplicative one-centred Gaussian noise while training."""

from __future__ import annotations

import math
from typing import Any

from ember import ops
from ember.distribute import batch_window
from ember.layers.layer import DeclarativeLayer
from ember.seeds import call_seed, check_seed
from ember.validation import check_rate


class GaussianDropout(DeclarativeLayer):
    """Multiplies the inputs by ``N(1, rate / (1 - rate))`` noise when ``training=True``
    (standard deviation ``sqrt(rate / (1 - rate))``, the variance of ``Dropout(rate)``'s
    rescaled mask); identity otherwise.

    Randomness: the ``rng`` int given to ``apply``, else ``seed``, else the backend's
    global stream.

    Args:
        rate: drop probability of the equivalent ``Dropout``, in ``[0, 1)`` (Keras also
            accepts 1, which makes the noise infinite).
        seed: int seed used when ``apply`` receives no ``rng``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.GaussianDropout(0.2, seed=0, name="gdrop")
        >>> x = ops.zeros((2, 3))
        >>> y, _ = layer.apply(layer.build((None, 3)), x, training=True)
        >>> bool((ops.to_numpy(y) == 0.0).all())   # multiplicative: zeros stay zeros
        True
    """

    rate: float
    seed: int | None = None

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("rate", check_rate(self.name, "rate", self.rate))
        self._normalize("seed", check_seed(self.seed, f"{self.name}: seed"))

    def call(self, params: dict, inputs: Any, training: bool = False, rng: Any = None) -> Any:
        if not training or self.rate == 0.0:
            return inputs

        dtype = ops.dtype(inputs)
        if not dtype.startswith(("float", "bfloat")):
            raise TypeError(f"layer {self.name!r} adds Gaussian noise to floating-point inputs, received dtype {dtype}")
        seed = call_seed(self, rng)
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        noise = batch_window.draw_rows(  # drawn for the global batch under ember.distribute
            lambda shape: ops.random.normal(shape, mean=1.0, stddev=stddev, dtype=dtype, seed=seed),
            tuple(ops.shape(inputs)))
        return ops.multiply(inputs, noise)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
