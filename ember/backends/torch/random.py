"""``ember.ops.random`` on torch: seeded sampling with ``torch.Generator``.

* ``seed`` an int: a generator for the target device re-seeded with ``seed`` on
  every call (one cached generator per device, so a call costs a ``manual_seed``,
  not a new generator), hence the same numbers on every call and every run.
* ``seed`` None: the module's global generator for that device, created from the
  seed last given to :func:`set_seed` (or from fresh entropy if none was given).

Sampling happens on the default device with that device's generator, so CPU and
CUDA give different (but each reproducible) streams for one seed.

A 0-d integer *tensor* seed is read on the host and gives the numbers of the same int seed,
except inside :func:`counter_draws` (the ``torch.compile``d train step,
:mod:`ember.backends.torch.compiled_step`): there ``dropout`` draws its mask from a
counter-based generator written in tensor ops (a 32-bit integer hash of the seed and each
element's index), which ``torch.compile`` traces into the graph without reading the seed on
the host, so a new seed per step neither breaks the graph nor recompiles. The same seed gives
the same mask compiled or eager, on every device.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator

import torch

from ember import dtypes as _dt
from ember.backends._common import normalize_axis
from ember.backends.torch._base import (
    DEVICE,
    FLOATING,
    INTEGER,
    Tensor,
    native,
    torch_dtype,
)

# Seeded calls re-seed a cached generator; the cache is per thread so that two threads
# drawing with seeds at once never share (and interleave) one generator's state.
_local = threading.local()
_global: dict[str, torch.Generator] = {}
_global_seed: int | None = None


def _device_key(device: torch.device) -> str:
    return str(device)


def _generator(seed, device: torch.device) -> torch.Generator:
    key = _device_key(device)
    if seed is None:
        gen = _global.get(key)
        if gen is None:
            gen = torch.Generator(device=device)
            if _global_seed is None:
                gen.seed()
            else:
                gen.manual_seed(_global_seed)
            _global[key] = gen
        return gen
    if isinstance(seed, bool) or not isinstance(seed, int):
        try:
            seed = int(seed.__index__())
        except AttributeError:
            raise TypeError(f"seed: expected an int or None, received {seed!r}") from None
    cache = getattr(_local, "generators", None)
    if cache is None:
        cache = _local.generators = {}
    gen = cache.get(key)
    if gen is None:
        gen = cache[key] = torch.Generator(device=device)
    # manual_seed needs a value in [-2**63, 2**64): fold larger/negative seeds into it.
    gen.manual_seed(seed % (1 << 64))
    return gen


def set_seed(seed):
    global _global_seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TypeError(f"set_seed: expected an int or None, received {seed!r}")
    _global_seed = None if seed is None else seed % (1 << 64)
    _global.clear()


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, int):
        return (shape,)
    if isinstance(shape, Tensor):
        shape = shape.tolist()
    return tuple(int(s) for s in shape)


def _float_dtype(dtype, op: str) -> torch.dtype:
    target = torch_dtype(dtype)
    if target not in FLOATING:
        raise TypeError(f"random.{op}: dtype must be a floating dtype, received {_dt.standardize_dtype(dtype)!r}")
    return target


def _param(value, device, dtype):
    if isinstance(value, (int, float)):
        return value
    return native(value, "parameter", device).to(device=device, dtype=dtype)


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    target = _float_dtype(dtype, "uniform")
    device = DEVICE.torch
    sample = torch.rand(_shape(shape), generator=_generator(seed, device), dtype=target, device=device)
    lo, hi = _param(minval, device, target), _param(maxval, device, target)
    return lo + (hi - lo) * sample


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    target = _float_dtype(dtype, "normal")
    device = DEVICE.torch
    sample = torch.randn(_shape(shape), generator=_generator(seed, device), dtype=target, device=device)
    return _param(mean, device, target) + _param(stddev, device, target) * sample


_LOW_CDF = 0.5 * math.erfc(2.0 / math.sqrt(2.0))  # Phi(-2)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    target = _float_dtype(dtype, "truncated_normal")
    device = DEVICE.torch
    compute = torch.float32 if target in (torch.float16, torch.bfloat16) or device.type == "mps" else target
    # Inverse-CDF sampling of N(0, 1) restricted to [-2, 2]: u ~ U(Phi(-2), Phi(2)),
    # z = sqrt(2) * erfinv(2u - 1). Exact, vectorised, no resampling loop.
    u = torch.rand(_shape(shape), generator=_generator(seed, device), dtype=compute, device=device)
    u = _LOW_CDF + (1.0 - 2.0 * _LOW_CDF) * u
    z = math.sqrt(2.0) * torch.special.erfinv(2.0 * u - 1.0)
    z = z.clamp(-2.0, 2.0).to(target)
    return _param(mean, device, target) + _param(stddev, device, target) * z


def bernoulli(shape, p=0.5, seed=None):
    device = DEVICE.torch
    sample = torch.rand(_shape(shape), generator=_generator(seed, device), device=device)
    prob = p if isinstance(p, (int, float)) else native(p, "p", device).to(device=device, dtype=torch.float32)
    return sample < prob


def randint(shape, minval, maxval, dtype="int32", seed=None):
    target = torch_dtype(dtype)
    if target not in INTEGER:
        raise TypeError(f"random.randint: dtype must be an integer dtype, received {_dt.standardize_dtype(dtype)!r}")
    low, high = int(minval), int(maxval)
    if high <= low:
        raise ValueError(f"random.randint: maxval ({high}) must be greater than minval ({low})")
    device = DEVICE.torch
    size = _shape(shape)
    sample = torch.randint(low, high, size, generator=_generator(seed, device), dtype=torch.int64, device=device)
    return sample.to(target)


def categorical(logits, num_samples, dtype="int32", seed=None):
    target = torch_dtype(dtype)
    if target not in INTEGER:
        raise TypeError(
            f"random.categorical: dtype must be an integer dtype, received {_dt.standardize_dtype(dtype)!r}"
        )
    x = native(logits, "logits")
    if x.ndim != 2:
        raise ValueError(f"random.categorical: logits must be (batch, classes), received shape {tuple(x.shape)}")
    probs = torch.softmax(x.to(torch.float64 if x.dtype is torch.float64 else torch.float32), dim=-1)
    gen = _generator(seed, x.device)
    return torch.multinomial(probs, int(num_samples), replacement=True, generator=gen).to(target)


def permutation(x, seed=None):
    device = DEVICE.torch
    if isinstance(x, int) and not isinstance(x, bool):
        return torch.randperm(x, generator=_generator(seed, device), device=device).to(torch.int32)
    t = native(x)
    if t.ndim == 0:
        return torch.randperm(int(t.item()), generator=_generator(seed, device), device=device).to(torch.int32)
    order = torch.randperm(t.shape[0], generator=_generator(seed, t.device), device=t.device)
    return t[order]


def shuffle(x, axis=0, seed=None):
    t = native(x)
    axis_ = normalize_axis(axis, t.ndim)
    order = torch.randperm(t.shape[axis_], generator=_generator(seed, t.device), device=t.device)
    return torch.index_select(t, axis_, order)


_LOW32 = 0xFFFFFFFF
_COUNTER_DRAWS = [0]  # > 0 inside counter_draws()


@contextlib.contextmanager
def counter_draws() -> Iterator[None]:
    """Inside the block, ``dropout`` with a tensor seed draws from the counter-based generator.

    Example:
        >>> x = torch.ones(2, 4)
        >>> with counter_draws():
        ...     a = dropout(x, 0.5, seed=torch.tensor(3))
        >>> b = dropout(x, 0.5, seed=torch.tensor(3))   # outside: the mask of the int seed 3
        >>> bool(torch.equal(b, dropout(x, 0.5, seed=3)))
        True
    """
    _COUNTER_DRAWS[0] += 1
    try:
        yield
    finally:
        _COUNTER_DRAWS[0] -= 1


def _mul32(a: torch.Tensor, constant: int) -> torch.Tensor:
    """``a * constant mod 2**32`` for int64 ``a`` in [0, 2**32), without int64 overflow (halves of 16 bits)."""
    low, high = a & 0xFFFF, a >> 16
    return (low * constant + ((high * (constant & 0xFFFF)) << 16)) & _LOW32


def _hash32(h: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer finaliser (xor-shift-multiply rounds; every input bit affects every output bit)."""
    h = h ^ (h >> 16)
    h = _mul32(h, 0x7FEB352D)
    h = h ^ (h >> 15)
    h = _mul32(h, 0x846CA68B)
    return h ^ (h >> 16)


def _counter_uniform(seed: torch.Tensor, shape: tuple, device: torch.device) -> torch.Tensor:
    """Uniform float32 draws in [0, 1) from a tensor ``seed``: hash(seed, hash(element index)).

    Example:
        >>> a = _counter_uniform(torch.tensor(7), (2, 3), torch.device("cpu"))
        >>> b = _counter_uniform(torch.tensor(7), (2, 3), torch.device("cpu"))
        >>> bool(torch.equal(a, b)), tuple(a.shape), bool(((a >= 0) & (a < 1)).all())
        (True, (2, 3), True)
    """
    key = _hash32(seed.to(device=device, dtype=torch.int64) & _LOW32)
    index = torch.arange(math.prod(shape), device=device, dtype=torch.int64)
    bits = _hash32(_hash32(index) ^ key)
    return ((bits >> 8).to(torch.float32) * (1.0 / (1 << 24))).reshape(shape)


def dropout(x, rate, noise_shape=None, seed=None):
    t = native(x)
    if t.dtype not in FLOATING:
        t = t.to(torch_dtype(None))
    rate = float(rate)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"random.dropout: rate must be in [0, 1], received {rate}")
    if rate == 0.0:
        return t
    if noise_shape is None:
        mask_shape = tuple(t.shape)
    else:
        dims = tuple(noise_shape)
        if len(dims) != t.ndim:
            raise ValueError(f"random.dropout: noise_shape {dims} does not match input rank {t.ndim}")
        mask_shape = tuple(t.shape[i] if d is None else int(d) for i, d in enumerate(dims))
    if _COUNTER_DRAWS[0] and isinstance(seed, torch.Tensor):  # a compiled step's seed: tensor ops (module docstring)
        keep = _counter_uniform(seed, mask_shape, t.device) >= rate
    else:
        keep = torch.rand(mask_shape, generator=_generator(seed, t.device), device=t.device) >= rate
    if rate == 1.0:
        return torch.zeros_like(t)
    return torch.where(keep, t / (1.0 - rate), torch.zeros((), dtype=t.dtype, device=t.device))
