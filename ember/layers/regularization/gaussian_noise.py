"""``GaussianNoise``: additive zero-centred Gaussian noise while training."""

from __future__ import annotations

import numbers
from typing import Any

from ember import ops
from ember.distribute import batch_window
from ember.layers.layer import DeclarativeLayer
from ember.seeds import call_seed, check_seed


class GaussianNoise(DeclarativeLayer):
    """Adds ``N(0, stddev**2)`` noise to the inputs when ``training=True``; identity otherwise.

    Randomness: the ``rng`` int given to ``apply``, else ``seed``, else the backend's
    global stream. The same seed gives the same noise on every run of a backend.

    Args:
        stddev: standard deviation of the noise (``>= 0``).
        seed: int seed used when ``apply`` receives no ``rng``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.GaussianNoise(0.1, seed=0, name="noise")
        >>> x = ops.ones((2, 3))
        >>> y, _ = layer.apply(layer.build((None, 3)), x)
        >>> bool((ops.to_numpy(y) == 1.0).all())   # inference: unchanged
        True
        >>> y, _ = layer.apply(layer.build((None, 3)), x, training=True)
        >>> bool((ops.to_numpy(y) != 1.0).all())
        True
    """

    stddev: float
    seed: int | None = None

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        stddev = self.stddev
        if isinstance(stddev, bool) or not isinstance(stddev, numbers.Real) or not 0.0 <= float(stddev) < float("inf"):
            raise ValueError(f"{self.name}: stddev must be a finite number >= 0, received {stddev!r}")
        self._normalize("stddev", float(stddev))
        self._normalize("seed", check_seed(self.seed, f"{self.name}: seed"))

    def call(self, params: dict, inputs: Any, training: bool = False, rng: Any = None) -> Any:
        if not training or self.stddev == 0.0:
            return inputs

        dtype = ops.dtype(inputs)
        if not dtype.startswith(("float", "bfloat")):
            raise TypeError(f"layer {self.name!r} adds Gaussian noise to floating-point inputs, received dtype {dtype}")
        seed = call_seed(self, rng)
        noise = batch_window.draw_rows(  # drawn for the global batch under ember.distribute
            lambda shape: ops.random.normal(shape, mean=0.0, stddev=self.stddev, dtype=dtype, seed=seed),
            tuple(ops.shape(inputs)))
        return ops.add(inputs, noise)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)
