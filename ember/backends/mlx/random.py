"""Seeded random numbers on the MLX backend (counter-free PRNG keys).

An int ``seed`` becomes ``mx.random.key(seed)``: the same numbers on every call and
every run. ``seed=None`` draws a fresh key from a module-level generator: a Python
``random.Random`` hands out 64-bit key seeds, so the keys are plain constants (no
ever-growing lazy chain of ``mx.random.split`` calls) and :func:`set_seed` makes the
whole sequence reproducible. A native MLX key array (``uint32`` of shape ``(2,)``) is
also accepted as ``seed`` (useful inside ``mx.compile``), and so is a 0-d integer array,
which gives the key of the same int without reading it on the host.

MLX's ``uniform`` has no float64 kernel: float64 uniforms are built from two integer
draws (53 random bits), and float64 truncated normals by inverting the normal CDF.
"""

from __future__ import annotations

import math
import os
import random as _pyrandom

import mlx.core as mx
import numpy as np

from ember.backends.mlx import _f64
from ember.backends.mlx._base import (
    FLOATS,
    INTEGERS,
    A,
    convert,
    floatx,
    mx_dtype,
    normalize_axis,
    to_mx,
)

_GLOBAL = _pyrandom.Random(int.from_bytes(os.urandom(8), "little"))
_MASK64 = (1 << 64) - 1


def set_seed(seed):
    global _GLOBAL
    if seed is not None and not isinstance(seed, (int, np.integer)):
        raise TypeError(f"set_seed: seed must be an int or None, received {seed!r}")
    _GLOBAL = _pyrandom.Random(int.from_bytes(os.urandom(8), "little") if seed is None else int(seed))


def _key(seed, op):
    if seed is None:
        return mx.random.key(_GLOBAL.getrandbits(64))
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return mx.random.key(int(seed) & _MASK64)
    if not isinstance(seed, (A, bool)) and hasattr(seed, "__index__"):  # ember.random.SeedGenerator
        return mx.random.key(seed.__index__() & _MASK64)
    if isinstance(seed, A) and seed.dtype == mx.uint32 and tuple(seed.shape) == (2,):
        return seed
    if isinstance(seed, A) and seed.ndim == 0 and seed.dtype in INTEGERS:
        # An integer seed array (a trainer's step seed under mx.compile): the key
        # mx.random.key(int(seed)) would give, built on the device without a host sync.
        wide = seed.astype(mx.uint64)
        return mx.stack([mx.right_shift(wide, 32), mx.bitwise_and(wide, 0xFFFFFFFF)]).astype(mx.uint32)
    raise TypeError(f"{op}: seed must be an int, None or an MLX PRNG key, received {seed!r}")


def _shape(shape, op):
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        return tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{op}: shape must be an int or a sequence of ints, received {shape!r}") from None


def _float_dtype(dtype, op):
    native = mx_dtype(dtype, op)
    if native not in FLOATS:
        raise TypeError(f"{op}: dtype must be a floating dtype, received {dtype!r}")
    return native


def _uniform64(shape, key):
    """float64 uniforms in [0, 1) from 26 + 27 random bits (MLX's uniform lacks float64)."""
    k1, k2 = mx.random.split(key)
    high = mx.random.randint(0, 1 << 26, shape, dtype=mx.int32, key=k1).astype(mx.float64)
    low = mx.random.randint(0, 1 << 27, shape, dtype=mx.int32, key=k2).astype(mx.float64)
    return (high * float(1 << 27) + low) * (1.0 / float(1 << 53))


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    shape = _shape(shape, "uniform")
    target = _float_dtype(dtype, "uniform")
    key = _key(seed, "uniform")
    low = convert(minval, "minval", target)
    high = convert(maxval, "maxval", target)
    if target == mx.float64:
        return low + _uniform64(shape, key) * (high - low)
    return mx.random.uniform(low, high, shape, dtype=target, key=key)


def _is_number(value):
    return isinstance(value, (int, float, np.number))


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    shape = _shape(shape, "normal")
    target = _float_dtype(dtype, "normal")
    key = _key(seed, "normal")
    z = mx.random.normal(shape, dtype=target, key=key)
    return _scale(z, mean, stddev, target)


def _scale(z, mean, stddev, target):
    if _is_number(mean) and _is_number(stddev):
        if mean == 0 and stddev == 1:
            return z
        return z * float(stddev) + float(mean)
    return z * convert(stddev, "stddev", target) + convert(mean, "mean", target)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    shape = _shape(shape, "truncated_normal")
    target = _float_dtype(dtype, "truncated_normal")
    key = _key(seed, "truncated_normal")
    if target == mx.float64:
        # Inverse CDF: u uniform on (Phi(-2), Phi(2)) -> sqrt(2) * erfinv(2u - 1).
        lower, upper = math.erf(-2.0 / math.sqrt(2.0)), math.erf(2.0 / math.sqrt(2.0))
        unit = _uniform64(shape, key)
        z = math.sqrt(2.0) * _f64.erfinv(lower + unit * (upper - lower))
        z = mx.clip(z, -2.0, 2.0)
    else:
        z = mx.random.truncated_normal(-2.0, 2.0, shape, dtype=target, key=key)
    return _scale(z, mean, stddev, target)


def bernoulli(shape, p=0.5, seed=None):
    shape = _shape(shape, "bernoulli")
    key = _key(seed, "bernoulli")
    probability = p if _is_number(p) else to_mx(p, "p").astype(mx.float32)
    return mx.random.bernoulli(probability, shape, key=key)


def randint(shape, minval, maxval, dtype="int32", seed=None):
    shape = _shape(shape, "randint")
    target = mx_dtype(dtype, "randint")
    if target not in INTEGERS:
        raise TypeError(f"randint: dtype must be an integer dtype, received {dtype!r}")
    key = _key(seed, "randint")
    return mx.random.randint(minval, maxval, shape, dtype=target, key=key)


def categorical(logits, num_samples, dtype="int32", seed=None):
    logits = to_mx(logits, "logits")
    if logits.dtype not in FLOATS:
        logits = logits.astype(floatx())
    target = mx_dtype(dtype, "categorical")
    if target not in INTEGERS:
        raise TypeError(f"categorical: dtype must be an integer dtype, received {dtype!r}")
    key = _key(seed, "categorical")
    samples = mx.random.categorical(logits, axis=-1, num_samples=int(num_samples), key=key)
    return samples.astype(target)


def permutation(x, seed=None):
    key = _key(seed, "permutation")
    if isinstance(x, (int, np.integer)):
        return mx.random.permutation(int(x), key=key).astype(mx.int32)
    x = to_mx(x)
    if x.ndim == 0:
        raise ValueError("permutation: x must be an int or an array with at least one axis")
    order = mx.argsort(mx.random.uniform(shape=(x.shape[0],), key=key))
    return mx.take(x, order, axis=0)


def shuffle(x, axis=0, seed=None):
    x = to_mx(x)
    if x.ndim == 0:
        raise ValueError("shuffle: x must have at least one axis")
    axis = normalize_axis(axis, x.ndim)
    key = _key(seed, "shuffle")
    order = mx.argsort(mx.random.uniform(shape=(x.shape[axis],), key=key))
    return mx.take(x, order, axis=axis)


def dropout(x, rate, noise_shape=None, seed=None):
    x = to_mx(x)
    if x.dtype not in FLOATS:
        x = x.astype(floatx())
    rate = float(rate)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"dropout: rate must lie in [0, 1], received {rate}")
    if rate == 0.0:
        return x
    if rate == 1.0:
        return mx.zeros_like(x)
    shape = tuple(x.shape) if noise_shape is None else tuple(
        x.shape[i] if d is None else int(d) for i, d in enumerate(noise_shape))
    keep = mx.random.bernoulli(1.0 - rate, shape, key=_key(seed, "dropout"))
    return mx.where(keep, x * (1.0 / (1.0 - rate)), mx.zeros((), dtype=x.dtype))
