"""``Dropout``: randomly zero inputs while training."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.distribute import batch_window
from ember.layers.layer import DeclarativeLayer
from ember.seeds import call_seed, check_seed
from ember.validation import check_rate


class Dropout(DeclarativeLayer):
    """Sets inputs to 0 with probability ``rate`` during training, scaling the rest by
    ``1 / (1 - rate)`` so the expected sum is unchanged. Outside training (the default)
    it returns its input.

    Randomness is explicit: the mask's seed is the ``rng`` int given to ``apply`` (a
    model derives one per layer from its own ``rng``), else the layer's ``seed``, else
    the backend's global stream (``ember.random.set_seed``).

    Args:
        rate: fraction of the inputs to drop, in ``[0, 1)``.
        noise_shape: shape of the binary mask, broadcast against the input; ``None``
            entries take the input's size (``(None, 1, None)`` drops whole time steps).
        seed: int seed used when ``apply`` receives no ``rng``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Dropout(0.5, seed=0)
        >>> state = layer.build((None, 4))
        >>> x = ops.ones((2, 4))
        >>> y, _ = layer.apply(state, x)              # inference: unchanged
        >>> ops.to_numpy(y).tolist() == ops.to_numpy(x).tolist()
        True
        >>> y, _ = layer.apply(state, x, training=True)
        >>> sorted(set(ops.to_numpy(y).ravel().tolist())) in ([0.0, 2.0], [0.0], [2.0])
        True
    """

    rate: float
    noise_shape: Any = None
    seed: int | None = None

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("rate", check_rate(self.name, "rate", self.rate))
        if self.noise_shape is not None:
            try:
                shape = tuple(self.noise_shape)
            except TypeError:
                raise TypeError(f"{self.name}: noise_shape must be a tuple of ints/None, "
                                f"received {self.noise_shape!r}") from None
            for d in shape:
                if d is not None and (isinstance(d, bool) or not isinstance(d, int) or d <= 0):
                    raise ValueError(f"{self.name}: noise_shape entries must be positive ints or None, "
                                     f"received {shape}")
            self._normalize("noise_shape", shape)
        self._normalize("seed", check_seed(self.seed, f"{self.name}: seed"))

    def _check_noise_shape(self, input_shape: tuple) -> None:
        if self.noise_shape is None:
            return
        if len(self.noise_shape) != len(input_shape) or any(
            n is not None and n != 1 and d is not None and n != d for n, d in zip(self.noise_shape, input_shape)
        ):
            raise ValueError(
                f"layer {self.name!r}: noise_shape {self.noise_shape} does not broadcast against "
                f"inputs of shape {input_shape} (same rank; each entry None, 1 or the input's size)"
            )

    def call(self, params: dict, inputs: Any, training: bool = False, rng: Any = None) -> Any:
        if not training or self.rate == 0.0:
            return inputs

        self._check_noise_shape(tuple(ops.shape(inputs)))
        seed = call_seed(self, rng)
        # Under ember.distribute the mask is drawn for the global batch (independent of the world size).
        return batch_window.apply_rows(lambda x: ops.random.dropout(x, self.rate, self.noise_shape, seed=seed), inputs)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        input_shape = tuple(input_shape)
        self._check_noise_shape(input_shape)
        return input_shape
