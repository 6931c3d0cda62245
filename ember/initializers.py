"""Weight initializers, identical on every backend for the same seed.

Every initializer draws its numbers from one backend-independent generator (NumPy's
PCG64, in float64) and then converts them to the active backend's default device and
the requested dtype. Where the backend's array lives in host memory (NumPy, torch on the
CPU, MLX), the numbers are drawn chunk by chunk straight into the new array
(``Initializer.sample_into``): building a model holds no second copy of its weights. So a
model built with seed 0 on NumPy has exactly the weights of the model built with seed 0 on
torch or MLX.

Seeds: ``initializer(shape, dtype, seed)``. A seed passed to the call wins (layers
derive one per variable from their build seed with :func:`derive_seed`); otherwise
the initializer's own ``seed``; otherwise a draw from the global stream that
:func:`ember.initializers.set_seed` resets.

Example:
    >>> import ember
    >>> from ember import initializers, ops
    >>> ember.set_backend("numpy")
    >>> w = initializers.get("glorot_uniform")((3, 2), seed=0)
    >>> ops.shape(w), ops.dtype(w)
    ((3, 2), 'float32')
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ember import backends, dtypes, ops
from ember.seeds import derive_seed, is_seed_array, sub_seed  # noqa: F401 (public here too)
from ember.serialization import add_keras_names, register_serializable
from ember.serialization import deserialize as _deserialize
from ember.serialization import serialize as _serialize
from ember.validation import did_you_mean as _did_you_mean

_global = np.random.default_rng()


def set_seed(seed: int | None) -> None:
    """Reset the stream that initializers without any seed draw from."""
    global _global
    _global = np.random.default_rng(seed)


_SHAPES_ONLY = contextvars.ContextVar("ember_initializers_shapes_only", default=False)


@contextlib.contextmanager
def shapes_only() -> Iterator[None]:
    """Inside this block initializers return zeros of the right shape and dtype, drawing no numbers.

    ``ember.load_model`` builds a model this way to learn its variables' shapes before
    filling them from the file (initializing 100M weights costs seconds). The zeros are
    read-only broadcast views (no memory is allocated for them): use them for their shapes
    and dtypes only. Thread- and context-local.

    Example:
        >>> import ember
        >>> from ember import initializers, ops
        >>> ember.set_backend("numpy")
        >>> with initializers.shapes_only():
        ...     w = initializers.get("glorot_uniform")((2, 2), seed=0)
        >>> ops.to_numpy(w).tolist()
        [[0.0, 0.0], [0.0, 0.0]]
    """
    token = _SHAPES_ONLY.set(True)
    try:
        yield
    finally:
        _SHAPES_ONLY.reset(token)


def in_shapes_only() -> bool:
    """Whether a :func:`shapes_only` block is running (a model's ``build`` then makes a template
    state and keeps nothing: its placeholder zeros never become a layer's weights).

    Example:
        >>> with shapes_only():
        ...     in_shapes_only()
        True
    """
    return _SHAPES_ONLY.get()


def _generator(seed: int | None, own_seed: int | None) -> np.random.Generator:
    chosen = seed if seed is not None else own_seed
    if chosen is None:
        return _global
    if not isinstance(chosen, (int, np.integer)) or isinstance(chosen, bool):
        raise TypeError(f"initializer seed must be an int or None, received {chosen!r}")
    return np.random.default_rng(int(chosen))


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    try:
        shape = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError(f"initializer shape must be a tuple of ints, received {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"initializer shape must be non-negative, received {shape}")
    return shape


def _to_backend(values: np.ndarray, dtype: Any) -> Any:
    name = dtypes.standardize_dtype(dtype)
    return ops.convert_to_tensor(values.astype(dtypes.to_numpy_dtype(name)), dtype=name)


# Values drawn per chunk by ``sample_into`` (float64: 2 MiB).
_CHUNK = 1 << 18


def _fill(out: np.ndarray, draw: Any) -> None:
    """``out`` (C-contiguous) filled with ``draw(n)`` chunk by chunk, cast as ``astype`` casts.

    NumPy's ``Generator`` draws each value of ``uniform``/``normal``/``standard_normal`` from the
    stream in order, so consecutive draws of ``n1, n2, ...`` values give the numbers of one draw of
    ``n1 + n2 + ...``.
    """
    flat = out.reshape(-1)
    for start in range(0, flat.size, _CHUNK):
        stop = min(start + _CHUNK, flat.size)
        flat[start:stop] = draw(stop - start)


def _own_sample(initializer: Any, cls: Any) -> bool:
    """Whether ``initializer`` samples with ``cls.sample`` (a subclass overriding ``sample`` does not)."""
    return type(initializer).sample is cls.sample


def compute_fans(shape: tuple[int, ...]) -> tuple[float, float]:
    """``(fan_in, fan_out)`` as Keras computes them (kernel layout ``(*spatial, in, out)``)."""
    if len(shape) == 0:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive = math.prod(shape[:-2])
    return float(shape[-2] * receptive), float(shape[-1] * receptive)


@dataclasses.dataclass(frozen=True)
class Initializer:
    """Base class: ``initializer(shape, dtype=None, seed=None)`` returns a native array.

    Example:
        >>> from ember import initializers, ops
        >>> class Halves(initializers.Initializer):
        ...     def sample(self, shape, seed):
        ...         import numpy as np
        ...         return np.full(shape, 0.5)
        >>> ops.to_numpy(Halves()((2,))).tolist()
        [0.5, 0.5]
    """

    def __call__(self, shape: Any, dtype: Any = None, seed: int | None = None) -> Any:
        shape = _shape(shape)
        name = dtypes.standardize_dtype(dtype) if dtype is not None else dtypes.floatx()
        if _SHAPES_ONLY.get():
            return ops.broadcast_to(ops.zeros((), dtype=name), shape)  # no memory for the values
        target = backends.current().host_writable(shape, name)
        if target is None:  # the array's memory is not host memory: draw, then convert
            return _to_backend(self.sample(shape, seed), name)
        array, view = target
        self.sample_into(view, seed)
        return array

    def sample(self, shape: tuple[int, ...], seed: int | None) -> np.ndarray:
        raise NotImplementedError

    def sample_into(self, out: np.ndarray, seed: int | None) -> None:
        """Write ``sample(out.shape, seed)`` cast to ``out.dtype`` into ``out`` (C-contiguous).

        The built-in random initializers draw chunk by chunk (:func:`_fill`): the same numbers,
        without a float64 array of the whole shape next to the result.
        """
        out[...] = self.sample(out.shape, seed)

    def get_config(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_config(cls, config: dict) -> Initializer:
        return cls(**config)


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class Zeros(Initializer):
    """All zeros.

    Example:
        >>> from ember import initializers, ops
        >>> ops.to_numpy(initializers.Zeros()((2,), dtype="int32")).tolist()
        [0, 0]
    """

    def sample(self, shape: tuple[int, ...], seed: int | None) -> np.ndarray:
        return np.zeros(shape)

    def sample_into(self, out: np.ndarray, seed: int | None) -> None:
        if not _own_sample(self, Zeros):
            return super().sample_into(out, seed)
        out.fill(0)


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class Ones(Initializer):
    """All ones.

    Example:
        >>> from ember import initializers, ops
        >>> ops.to_numpy(initializers.Ones()((2, 2))).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """

    def sample(self, shape: tuple[int, ...], seed: int | None) -> np.ndarray:
        return np.ones(shape)

    def sample_into(self, out: np.ndarray, seed: int | None) -> None:
        if not _own_sample(self, Ones):
            return super().sample_into(out, seed)
        out.fill(1)


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class Constant(Initializer):
    """Every entry ``value``.

    Example:
        >>> from ember import initializers, ops
        >>> ops.to_numpy(initializers.Constant(0.5)((3,))).tolist()
        [0.5, 0.5, 0.5]
    """

    value: float = 0.0

    def sample(self, shape: tuple[int, ...], seed: int | None) -> np.ndarray:
        return np.full(shape, self.value, dtype=np.float64)

    def sample_into(self, out: np.ndarray, seed: int | None) -> None:
        if not _own_sample(self, Constant):
            return super().sample_into(out, seed)
        out[...] = np.float64(self.value)  # one value, cast as the whole array would be


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class RandomNormal(Initializer):
    """Normal with ``mean`` and ``stddev``.

    Example:
        >>> from ember import initializers, ops
        >>> init = initializers.RandomNormal(stddev=1.0, seed=0)
        >>> w = init((1000,))
        >>> ops.shape(w), abs(float(ops.to_numpy(w).std()) - 1.0) < 0.1
        ((1000,), True)
    """

    mean: float = 0.0
    stddev: float = 0.05
    seed: int | None = None

    def sample(self, shape: tuple[int, ...], seed: int | None) -> np.ndarray:
        return _generator(seed, self.seed).normal(self.mean, self.stddev, size=shape)

    def sample_into(self, out: np.ndarray, seed: int | None) -> None:
        if not _own_sample(self, RandomNormal):
            return super().sample_into(out, seed)
        rng = _generator(seed, self.seed)
        _fill(out, lambda n: rng.normal(self.mean, self.stddev, size=n))


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class RandomUniform(Initializer):
    """Uniform in ``[minval, maxval)``.

    Example:
        >>> from ember import initializers, ops
        >>> w = ops.to_numpy(initializers.RandomUniform(-1.0, 1.0, seed=0)((100,)))
        >>> bool((w >= -1.0).all() and (w < 1.0).all())
        True
    """

    minval: float = -0.05
    maxval: float = 0.05
    seed: int | None = None

    def sample(self, shape: tuple[int, ...], seed: int | None) -> np.ndarray:
        return _generator(seed, self.seed).uniform(self.minval, self.maxval, size=shape)

    def sample_into(self, out: np.ndarray, seed: int | None) -> None:
        if not _own_sample(self, RandomUniform):
            return super().sample_into(out, seed)
        rng = _generator(seed, self.seed)
        _fill(out, lambda n: rng.uniform(self.minval, self.maxval, size=n))


def _truncated_normal(rng: np.random.Generator, shape: tuple[int, ...], stddev: float) -> np.ndarray:
    """Standard normal resampled until every entry lies within two standard deviations."""
    values = rng.standard_normal(size=shape)
    bad = np.abs(values) > 2.0
    while bad.any():
        values[bad] = rng.standard_normal(size=int(bad.sum()))
        bad = np.abs(values) > 2.0
    return values * stddev


def _truncated_normal_into(out: np.ndarray, rng: np.random.Generator, stddev: float, mean: float | None) -> None:
    """:func:`_truncated_normal` (plus ``mean``) written into ``out`` (C-contiguous) chunk by chunk: the
    same draws in the same order (all values, then the out-of-range ones redrawn in index order until
    none is left), with a bool mask instead of a float64 copy of the whole shape."""
    flat = out.reshape(-1)
    bad = np.empty(flat.size, dtype=bool)
    for start in range(0, flat.size, _CHUNK):
        stop = min(start + _CHUNK, flat.size)
        values = rng.standard_normal(size=stop - start)
        bad[start:stop] = np.abs(values) > 2.0
        flat[start:stop] = _scaled(values, stddev, mean)
    while bad.any():
        where = np.flatnonzero(bad)
        values = rng.standard_normal(size=where.size)
        flat[where] = _scaled(values, stddev, mean)
        bad[where] = np.abs(values) > 2.0


def _scaled(values: np.ndarray, stddev: float, mean: float | None) -> np.ndarray:
    return values * stddev if mean is None else mean + values * stddev


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class TruncatedNormal(Initializer):
    """Normal with ``mean``/``stddev``, redrawn beyond two standard deviations.

    Example:
        >>> from ember import initializers, ops
        >>> w = ops.to_numpy(initializers.TruncatedNormal(stddev=1.0, seed=0)((1000,)))
        >>> bool((abs(w) <= 2.0).all())
        True
    """

    mean: float = 0.0
    stddev: float = 0.05
    seed: int | None = None

    def sample(self, shape: tuple[int, ...], seed: int | None) -> np.ndarray:
        return self.mean + _truncated_normal(_generator(seed, self.seed), shape, self.stddev)

    def sample_into(self, out: np.ndarray, seed: int | None) -> None:
        if not _own_sample(self, TruncatedNormal):
            return super().sample_into(out, seed)
        _truncated_normal_into(out, _generator(seed, self.seed), self.stddev, self.mean)


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class VarianceScaling(Initializer):
    """Samples scaled by the fan: ``scale / fan`` variance (Keras's VarianceScaling).

    Args:
        scale: positive scaling factor.
        mode: ``"fan_in"``, ``"fan_out"`` or ``"fan_avg"``.
        distribution: ``"truncated_normal"``, ``"untruncated_normal"`` or ``"uniform"``.

    Example:
        >>> from ember import initializers, ops
        >>> init = initializers.VarianceScaling(scale=2.0, mode="fan_in", distribution="uniform", seed=0)
        >>> w = ops.to_numpy(init((8, 4)))
        >>> bool((abs(w) <= (3 * 2.0 / 8) ** 0.5).all())
        True
    """

    scale: float = 1.0
    mode: str = "fan_in"
    distribution: str = "truncated_normal"
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.scale <= 0:
            raise ValueError(f"VarianceScaling: scale must be positive, received {self.scale}")
        if self.mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: mode must be fan_in, fan_out or fan_avg, received {self.mode!r}")
        if self.distribution not in ("truncated_normal", "untruncated_normal", "uniform", "normal"):
            raise ValueError(
                "VarianceScaling: distribution must be truncated_normal, untruncated_normal or uniform, "
                f"received {self.distribution!r}"
            )

    def _variance(self, shape: tuple[int, ...]) -> float:
        fan_in, fan_out = compute_fans(shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        return self.scale / max(1.0, fan)

    def sample(self, shape: tuple[int, ...], seed: int | None) -> np.ndarray:
        variance = self._variance(shape)
        rng = _generator(seed, self.seed)
        if self.distribution in ("truncated_normal", "normal"):
            # 0.8796... is the stddev of a unit normal truncated to [-2, 2].
            return _truncated_normal(rng, shape, math.sqrt(variance) / 0.87962566103423978)
        if self.distribution == "untruncated_normal":
            return rng.normal(0.0, math.sqrt(variance), size=shape)
        limit = math.sqrt(3.0 * variance)
        return rng.uniform(-limit, limit, size=shape)

    def sample_into(self, out: np.ndarray, seed: int | None) -> None:
        if not _own_sample(self, VarianceScaling):
            return super().sample_into(out, seed)
        variance = self._variance(out.shape)
        rng = _generator(seed, self.seed)
        if self.distribution in ("truncated_normal", "normal"):
            _truncated_normal_into(out, rng, math.sqrt(variance) / 0.87962566103423978, None)
        elif self.distribution == "untruncated_normal":
            _fill(out, lambda n: rng.normal(0.0, math.sqrt(variance), size=n))
        else:
            limit = math.sqrt(3.0 * variance)
            _fill(out, lambda n: rng.uniform(-limit, limit, size=n))


class _PresetScaling(VarianceScaling):
    """A :class:`VarianceScaling` with fixed ``scale``, ``mode`` and ``distribution`` (Keras's named
    initializers): constructed, and configured, by ``seed`` alone."""

    preset: tuple[float, str, str] = (1.0, "fan_in", "truncated_normal")  # (scale, mode, distribution)

    def __init__(self, seed: int | None = None) -> None:
        scale, mode, distribution = self.preset
        super().__init__(scale=scale, mode=mode, distribution=distribution, seed=seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


@register_serializable("ember")
class GlorotUniform(_PresetScaling):
    """Uniform with limit ``sqrt(6 / (fan_in + fan_out))``.

    Example:
        >>> from ember import initializers, ops
        >>> w = initializers.GlorotUniform(seed=0)((3, 4))
        >>> ops.shape(w), ops.dtype(w)
        ((3, 4), 'float32')
    """

    preset = (1.0, "fan_avg", "uniform")


@register_serializable("ember")
class GlorotNormal(_PresetScaling):
    """Truncated normal, variance ``2 / (fan_in + fan_out)``.

    Example:
        >>> from ember import initializers, ops
        >>> w = initializers.GlorotNormal(seed=0)((3, 4))
        >>> ops.shape(w), ops.dtype(w)
        ((3, 4), 'float32')
    """

    preset = (1.0, "fan_avg", "truncated_normal")


@register_serializable("ember")
class HeUniform(_PresetScaling):
    """Uniform with limit ``sqrt(6 / fan_in)``.

    Example:
        >>> from ember import initializers, ops
        >>> w = initializers.HeUniform(seed=0)((3, 4))
        >>> ops.shape(w), ops.dtype(w)
        ((3, 4), 'float32')
    """

    preset = (2.0, "fan_in", "uniform")


@register_serializable("ember")
class HeNormal(_PresetScaling):
    """Truncated normal, variance ``2 / fan_in``.

    Example:
        >>> from ember import initializers, ops
        >>> w = initializers.HeNormal(seed=0)((3, 4))
        >>> ops.shape(w), ops.dtype(w)
        ((3, 4), 'float32')
    """

    preset = (2.0, "fan_in", "truncated_normal")


@register_serializable("ember")
class LecunUniform(_PresetScaling):
    """Uniform with limit ``sqrt(3 / fan_in)``.

    Example:
        >>> from ember import initializers, ops
        >>> w = initializers.LecunUniform(seed=0)((3, 4))
        >>> ops.shape(w), ops.dtype(w)
        ((3, 4), 'float32')
    """

    preset = (1.0, "fan_in", "uniform")


@register_serializable("ember")
class LecunNormal(_PresetScaling):
    """Truncated normal, variance ``1 / fan_in``.

    Example:
        >>> from ember import initializers, ops
        >>> w = initializers.LecunNormal(seed=0)((3, 4))
        >>> ops.shape(w), ops.dtype(w)
        ((3, 4), 'float32')
    """

    preset = (1.0, "fan_in", "truncated_normal")


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times ``gain``; any shape with at least 2 dimensions.

    The shape is flattened to ``(prod(shape[:-1]), shape[-1])``; for a non-square
    matrix the rows (or columns, whichever are fewer) are orthonormal.

    Example:
        >>> import numpy as np
        >>> from ember import initializers, ops
        >>> q = ops.to_numpy(initializers.Orthogonal(seed=0)((4, 4))).astype(float)
        >>> bool(np.allclose(q.T @ q, np.eye(4), atol=1e-6))
        True
    """

    gain: float = 1.0
    seed: int | None = None

    def sample(self, shape: tuple[int, ...], seed: int | None) -> np.ndarray:
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: needs a shape with at least 2 dimensions, received {shape}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        if rows == 0 or cols == 0:
            return np.zeros(shape)
        flat = _generator(seed, self.seed).normal(size=(max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(flat)
        q = q * np.sign(np.diag(r))  # make the decomposition unique
        if rows < cols:
            q = q.T
        return self.gain * q.reshape(shape)


# Registered apart from Ember's other initializers: "ember>Identity" is the Identity layer (saved
# models name it so), as the metrics that share a loss's name live under "ember.metrics".
@register_serializable("ember.initializers")
@dataclasses.dataclass(frozen=True)
class Identity(Initializer):
    """``gain`` times the identity (rectangular allowed); 2-D shapes only.

    Example:
        >>> from ember import initializers, ops
        >>> ops.to_numpy(initializers.Identity(gain=2.0)((2, 3))).tolist()
        [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0]]
    """

    gain: float = 1.0

    def sample(self, shape: tuple[int, ...], seed: int | None) -> np.ndarray:
        if len(shape) != 2:
            raise ValueError(f"Identity: needs a 2-D shape, received {shape}")
        return self.gain * np.eye(*shape)


_WINDOWS = {"hann": np.hanning, "hanning": np.hanning, "hamming": np.hamming, "blackman": np.blackman,
            "bartlett": np.bartlett}


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class STFT(Initializer):
    """Kernels of a short-time Fourier transform as a convolution, shape ``(frame_length, 1, fft_length // 2 + 1)``.

    ``side="real"`` gives the cosine (real) part, ``"imag"`` the sine part, each times the
    ``window`` (a name: hann, hamming, blackman, bartlett; a 1-D sequence; or None) divided
    by its ``scaling`` (``"density"``: its L2 norm, ``"spectrum"``: its sum, None: 1).
    ``periodic`` uses the periodic (DFT-even) window instead of the symmetric one.

    Example:
        >>> import ember
        >>> from ember import initializers, ops
        >>> ember.set_backend("numpy")
        >>> ops.shape(initializers.STFT()((8, 1, 5)))
        (8, 1, 5)
    """

    side: str = "real"
    window: Any = "hann"
    scaling: str | None = "density"
    periodic: bool = False

    def __post_init__(self) -> None:
        if self.side not in ("real", "imag"):
            raise ValueError(f"STFT: side must be 'real' or 'imag', received {self.side!r}")
        if isinstance(self.window, str) and self.window not in _WINDOWS:
            raise ValueError(f"STFT: unknown window {self.window!r}; expected one of {sorted(_WINDOWS)}, "
                             "a 1-D sequence of frame_length values, or None")
        if self.scaling not in ("density", "spectrum", None):
            raise ValueError(f"STFT: scaling must be 'density', 'spectrum' or None, received {self.scaling!r}")
        if isinstance(self.window, (list, tuple, np.ndarray)):
            object.__setattr__(self, "window", [float(v) for v in np.asarray(self.window).ravel()])

    def _window(self, length: int) -> np.ndarray | None:
        if self.window is None:
            return None
        if isinstance(self.window, str):
            function = _WINDOWS[self.window]
            return function(length + 1)[:-1] if self.periodic else function(length)
        window = np.asarray(self.window, dtype=np.float64)
        if window.shape != (length,):
            raise ValueError(f"STFT: the window must have frame_length={length} values, received {window.shape[0]}")
        return window

    def sample(self, shape: tuple[int, ...], seed: int | None) -> np.ndarray:
        if len(shape) != 3:
            raise ValueError(f"STFT: needs a shape (frame_length, 1, fft_length // 2 + 1), received {shape}")
        frame_length, _, bins = shape
        frequency = np.arange(bins, dtype=np.float64).reshape(1, 1, bins) / ((bins - 1) * 2)
        time = np.arange(frame_length, dtype=np.float64).reshape(frame_length, 1, 1)
        angle = -2.0 * np.pi * time * frequency
        kernel = np.cos(angle) if self.side == "real" else np.sin(angle)
        window = self._window(frame_length)
        if window is not None:
            scale = {"density": np.sqrt(np.sum(window ** 2)), "spectrum": np.sum(np.abs(window)),
                     None: 1.0}[self.scaling]
            kernel = kernel * window.reshape(frame_length, 1, 1) / scale
        return np.broadcast_to(kernel, shape).copy()


# Keras's other public names for the same classes (``keras.initializers.glorot_uniform`` is the class).
IdentityInitializer = Identity
OrthogonalInitializer = Orthogonal
STFTInitializer = STFT
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
variance_scaling, orthogonal, identity, stft = VarianceScaling, Orthogonal, Identity, STFT
glorot_uniform, glorot_normal, he_uniform, he_normal = GlorotUniform, GlorotNormal, HeUniform, HeNormal
lecun_uniform, lecun_normal = LecunUniform, LecunNormal


_ALIASES = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
    "random_uniform": RandomUniform, "uniform": RandomUniform, "normal": RandomNormal,
    "truncated_normal": TruncatedNormal,
    "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_uniform": HeUniform, "he_normal": HeNormal,
    "lecun_uniform": LecunUniform, "lecun_normal": LecunNormal, "orthogonal": Orthogonal,
    "identity": Identity, "stft": STFT,
}

add_keras_names("keras.initializers", dict.fromkeys(_ALIASES.values()))  # Keras's names of these classes


def get(identifier: Any) -> Initializer:
    """Resolve a name (``"glorot_uniform"``, ``"GlorotUniform"``), an instance or a config dict."""
    if isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()  # Keras's lowercase names are the classes: initializers.he_normal
    if isinstance(identifier, str):
        cls = _ALIASES.get(identifier) or {c.__name__: c for c in _ALIASES.values()}.get(identifier)
        if cls is None:
            known = [*_ALIASES, *(c.__name__ for c in _ALIASES.values())]
            raise ValueError(f"unknown initializer {identifier!r}{_did_you_mean(identifier, known)}; expected one of "
                             f"{sorted(_ALIASES)}")
        return cls()
    if isinstance(identifier, dict):
        return _deserialize(identifier)
    if callable(identifier):
        return identifier
    raise TypeError(f"initializer: expected a name, an Initializer or a config, received {identifier!r}")


def deserialize(config: Any, custom_objects: dict | None = None) -> Initializer:
    """An initializer from its config (``serialize``'s output) or a name; ``custom_objects`` looked up first."""
    if isinstance(config, str) and custom_objects and config in custom_objects:
        return custom_objects[config]()
    return get(config)


def serialize(initializer: Any) -> Any:
    """The config of an initializer (by registered name)."""
    return _serialize(initializer)
