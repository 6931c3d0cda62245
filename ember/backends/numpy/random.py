"""NumPy backend, ``ember.ops.random``: seeded random numbers from NumPy's PCG64.

An int ``seed`` builds a fresh ``Generator(PCG64(seed))`` for the call, so the same
seed gives the same numbers on every call and every run. ``seed=None`` draws from
one module-level generator, which :func:`set_seed` replaces.

Floating samples are drawn in float64 (float32 for float32 and lower targets,
where NumPy offers it) and rounded once to the requested dtype; ``uniform`` then
moves any value that rounded up onto ``maxval`` to the largest value below it.
"""

from __future__ import annotations

import operator

import numpy as np

from ember.backends.numpy._base import (
    BF16,
    F16,
    F32,
    F64,
    I32,
    ND,
    axis_arg,
    dtype_arg,
    floatx,
    shape_arg,
    to_native,
)

_FLOATS = (F16, BF16, F32, F64)
_global = np.random.Generator(np.random.PCG64())


def _seed_value(seed):
    if seed is None:
        return None
    if isinstance(seed, bool):
        raise TypeError(f"seed: expected an int or None, received {seed!r}")
    if isinstance(seed, ND) or getattr(type(seed), "__ember_tensor__", False):
        array = to_native(seed, "seed")
        if array.ndim != 0 or array.dtype.kind not in "iu":
            raise TypeError(f"seed: expected an int or None, received an array of shape {array.shape}")
        seed = array.item()
    try:
        value = operator.index(seed)
    except TypeError:
        raise TypeError(f"seed: expected an int or None, received {seed!r}") from None
    return value % (2**64)  # PCG64 takes non-negative seeds; negative ints map one-to-one


def _generator(seed):
    if seed is None:
        return _global
    return np.random.Generator(np.random.PCG64(_seed_value(seed)))


def set_seed(seed):
    global _global
    _global = np.random.Generator(np.random.PCG64(_seed_value(seed)))


def _float_dtype(dtype, op):
    target = floatx() if dtype is None else dtype_arg(dtype)
    if target not in _FLOATS:
        raise TypeError(f"random.{op}: dtype must be a floating dtype, received {target.name!r}")
    return target


def _param(value, name, dt):
    """A distribution parameter: Python numbers stay scalars, arrays are cast to ``dt``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return to_native(value, name).astype(dt)


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    shape = shape_arg(shape)
    target = _float_dtype(dtype, "uniform")
    low, high = _param(minval, "minval", F64), _param(maxval, "maxval", F64)
    u = _generator(seed).random(shape)
    r = np.asarray(low + (high - low) * u).astype(target)
    high_t, low_t = np.asarray(high, target), np.asarray(low, target)
    over = r >= high_t
    if over.any():
        r = np.where(over, np.nextafter(high_t, low_t), r).astype(target, copy=False)
    return r


def _standard_normal(rng, shape, target):
    return rng.standard_normal(shape, dtype=F64 if target == F64 else F32)


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    shape = shape_arg(shape)
    target = _float_dtype(dtype, "normal")
    z = _standard_normal(_generator(seed), shape, target)
    r = _param(mean, "mean", z.dtype) + _param(stddev, "stddev", z.dtype) * z
    return np.asarray(r).astype(target, copy=False)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    shape = shape_arg(shape)
    target = _float_dtype(dtype, "truncated_normal")
    rng = _generator(seed)
    z = _standard_normal(rng, shape, target)
    # Redraw the samples beyond two standard deviations (a loop over rounds, each vectorised;
    # ~4.6% of the samples are redrawn per round).
    outside = np.abs(z) > 2.0
    while outside.any():
        z[outside] = _standard_normal(rng, (int(outside.sum()),), target)
        outside = np.abs(z) > 2.0
    r = _param(mean, "mean", z.dtype) + _param(stddev, "stddev", z.dtype) * z
    return np.asarray(r).astype(target, copy=False)


def bernoulli(shape, p=0.5, seed=None):
    shape = shape_arg(shape)
    return np.asarray(_generator(seed).random(shape) < _param(p, "p", F64))


def randint(shape, minval, maxval, dtype="int32", seed=None):
    shape = shape_arg(shape)
    target = dtype_arg(dtype)
    if target.kind not in "iu":
        raise TypeError(f"random.randint: dtype must be an integer dtype, received {target.name!r}")
    low = minval if isinstance(minval, int) else to_native(minval, "minval")
    high = maxval if isinstance(maxval, int) else to_native(maxval, "maxval")
    return np.asarray(_generator(seed).integers(low, high, size=shape, dtype=target))


def categorical(logits, num_samples, dtype="int32", seed=None):
    logits = to_native(logits, "logits")
    target = dtype_arg(dtype)
    if target.kind not in "iu":
        raise TypeError(f"random.categorical: dtype must be an integer dtype, received {target.name!r}")
    if logits.ndim != 2:
        raise ValueError(f"random.categorical: logits must be (batch, classes), received shape {logits.shape}")
    batch, classes = logits.shape
    num_samples = int(num_samples)
    if classes == 0:
        raise ValueError("random.categorical: logits has no classes")
    # Inverse-CDF sampling, all rows at once: row i's CDF is shifted by i so a single
    # searchsorted over the flattened CDFs finds every sample.
    wide = logits.astype(F64)
    shift = np.max(wide, axis=1, keepdims=True)
    probs = np.exp(wide - np.where(np.isfinite(shift), shift, 0.0))
    cdf = np.cumsum(probs, axis=1)
    cdf /= cdf[:, -1:]
    cdf[:, -1] = 1.0
    rows = np.arange(batch, dtype=F64)[:, None]
    u = _generator(seed).random((batch, num_samples))
    flat = np.searchsorted((cdf + rows).ravel(), (u + rows).ravel(), side="right")
    samples = flat.reshape(batch, num_samples) - np.arange(batch)[:, None] * classes
    # Guard against rounding at a row's end: never return a zero-probability last class.
    last_valid = classes - 1 - np.argmax(probs[:, ::-1] > 0, axis=1)
    samples = np.clip(samples, 0, last_valid[:, None])
    return samples.astype(target)


def permutation(x, seed=None):
    rng = _generator(seed)
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return rng.permutation(int(x)).astype(I32)
    x = to_native(x)
    if x.ndim == 0:
        if x.dtype.kind in "iu":
            return rng.permutation(int(x)).astype(I32)
        raise ValueError("random.permutation: expected an int or an array with at least one axis")
    return x[rng.permutation(x.shape[0])]


def shuffle(x, axis=0, seed=None):
    x = to_native(x)
    axis = axis_arg(axis, x.ndim)
    return np.take(x, _generator(seed).permutation(x.shape[axis]), axis=axis)


def dropout(x, rate, noise_shape=None, seed=None):
    x = to_native(x)
    if x.dtype.kind in "biu":
        x = x.astype(floatx())
    rate = float(rate)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"random.dropout: rate must be in [0, 1], received {rate}")
    if rate == 0.0:
        return x
    if rate == 1.0:
        return np.zeros_like(x)
    if noise_shape is None:
        mask_shape = x.shape
    else:
        noise_shape = tuple(noise_shape)
        if len(noise_shape) != x.ndim:
            raise ValueError(f"random.dropout: noise_shape {noise_shape} must have rank {x.ndim} (x is {x.shape})")
        mask_shape = tuple(x.shape[i] if d is None else int(d) for i, d in enumerate(noise_shape))
    keep = _generator(seed).random(mask_shape) >= rate
    return np.where(keep, x / (1.0 - rate), 0).astype(x.dtype, copy=False)
