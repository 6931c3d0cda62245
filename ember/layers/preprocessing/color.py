"""``RandomBrightness`` and ``RandomContrast``: per-image colour jitter while training."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.preprocessing import _random


def _value_range(layer: Any) -> list[float]:
    low, high = (float(v) for v in layer.value_range)
    if not low < high:
        raise ValueError(f"{layer.name}: value_range must be (low, high) with low < high, "
                         f"received {layer.value_range!r}")
    return [low, high]


def _per_image(layer: Any, inputs: Any, low: float, high: float, rng: Any) -> Any:
    """One value per image, ``(batch, 1, ..., 1)``: uniform in ``[low, high]``, ``low`` when they are equal."""
    shape = (ops.shape(inputs)[0],) + (1,) * (ops.ndim(inputs) - 1)
    if low < high:
        return ops.random.uniform(shape, low, high, dtype=ops.dtype(inputs), seed=_random.seed_for(layer, rng))
    return ops.full(shape, low, dtype=ops.dtype(inputs))


class _ColorJitter(DeclarativeLayer):
    """What both colour jitters share: ``factor`` (checked by the subclass's :meth:`_checked_factor`),
    ``value_range`` and ``seed``; while training, the subclass's :meth:`_jitter` clipped to the value
    range; outside training, the input."""

    factor: Any
    value_range: Any = (0, 255)
    seed: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("factor", self._checked_factor())
        self._normalize("value_range", _value_range(self))
        _random.check_seed(self)

    def _checked_factor(self) -> list[float]:
        """``factor`` as ``[low, high]`` after the subclass's own checks (RandomBrightness, RandomContrast)."""
        raise NotImplementedError(f"{type(self).__name__}: a colour jitter defines _checked_factor "
                                  "(see RandomBrightness and RandomContrast)")

    def _jitter(self, inputs: Any, rng: Any, span: float) -> Any:
        """The jittered images (before clipping); ``span`` is ``high - low`` of the value range."""
        raise NotImplementedError(f"{type(self).__name__}: a colour jitter defines _jitter "
                                  "(see RandomBrightness and RandomContrast)")

    def call(self, params: dict, inputs: Any, training: bool = False, rng: Any = None) -> Any:
        if not training:
            return inputs
        low, high = self.value_range
        return ops.clip(self._jitter(inputs, rng, high - low), low, high)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return tuple(input_shape)


class RandomBrightness(_ColorJitter):
    """While training, adds to each image one delta drawn from ``factor * (high - low)`` and clips
    to ``value_range``. Outside training it returns its input.

    Args:
        factor: a number ``f`` in [0, 1] (delta range ``[-f, f]``) or a ``(lower, upper)`` pair in [-1, 1].
        value_range: the ``(low, high)`` range of the pixel values.
        seed: int seed used when ``apply`` receives no ``rng``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.RandomBrightness((0.5, 0.5), value_range=(0, 1))
        >>> y, _ = layer.apply(layer.build((None, 1, 1, 1)), ops.full((1, 1, 1, 1), 0.25), training=True)
        >>> ops.to_numpy(y).ravel().tolist()
        [0.75]
    """

    def _checked_factor(self) -> list[float]:
        return _random.factor_range(self, "factor", self.factor, -1.0, 1.0)

    def _jitter(self, inputs: Any, rng: Any, span: float) -> Any:
        delta = _per_image(self, inputs, self.factor[0], self.factor[1], rng)
        return ops.add(inputs, ops.multiply(delta, span))


class RandomContrast(_ColorJitter):
    """While training, scales each image's deviation from its per-channel mean by a factor drawn
    from ``[1 - lower, 1 + upper]`` and clips to ``value_range``. Outside training it returns its input.

    Args:
        factor: a number ``f`` in [0, 1] (range ``[1 - f, 1 + f]``) or a ``(lower, upper)`` pair.
        value_range, seed: as for :class:`RandomBrightness`.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.RandomContrast((-1.0, 1.0), value_range=(0, 4))   # factor 2 exactly
        >>> x = ops.reshape(ops.convert_to_tensor([1.0, 3.0]), (1, 1, 2, 1))
        >>> y, _ = layer.apply(layer.build((None, 1, 2, 1)), x, training=True)
        >>> ops.to_numpy(y).ravel().tolist()
        [0.0, 4.0]
    """

    def _checked_factor(self) -> list[float]:
        factor = self.factor
        lower, upper = (factor, factor) if not isinstance(factor, (list, tuple)) else factor
        if isinstance(lower, bool) or not isinstance(lower, (int, float)) or isinstance(upper, bool) or \
                not isinstance(upper, (int, float)) or 1.0 - lower > 1.0 + upper or lower > 1.0:
            raise ValueError(f"{self.name}: factor must be f in [0, 1] or (lower, upper) with 1 - lower <= 1 + upper "
                             f"and lower <= 1, received {factor!r}")
        return [float(lower), float(upper)]

    def _jitter(self, inputs: Any, rng: Any, span: float) -> Any:
        scale = _per_image(self, inputs, 1.0 - self.factor[0], 1.0 + self.factor[1], rng)
        spatial_axes = tuple(range(1, ops.ndim(inputs) - 1))
        mean = ops.mean(inputs, axis=spatial_axes, keepdims=True)
        return ops.add(ops.multiply(ops.subtract(inputs, mean), scale), mean)
