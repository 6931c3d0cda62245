"""``ember.random`` additions from Keras: ``SeedGenerator`` and the gamma, beta and binomial distributions.

They are built from the protocol's ``uniform``/``normal`` draws, so they run on every
backend and follow its seeding: an int ``seed`` gives the same numbers on every call
and run, ``seed=None`` draws from the backend's global stream, and a
:class:`SeedGenerator` hands out a new seed each time it is used.

Example:
    >>> import ember
    >>> from ember import ops, random
    >>> with ember.using_backend("numpy"):
    ...     ops.shape(random.gamma((2, 3), alpha=2.0, seed=1))
    (2, 3)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ember import dtypes, ops

__all__ = ["SeedGenerator", "gamma", "beta", "binomial"]

_MAX_ROUNDS = 1000  # Marsaglia-Tsang accepts > 95 % per round; this bound is never reached in practice


class SeedGenerator:
    """A stateful source of seeds (Keras's ``keras.random.SeedGenerator``).

    Pass it as ``seed=`` to any ``ember.random`` function: each use draws the next seed
    of a deterministic sequence fixed by ``seed`` (``None``: fresh entropy), so
    successive calls give different numbers and a re-created generator repeats them.
    It is an integer-like object (``operator.index`` advances it).

    Args:
        seed: int seed of the sequence, or None.

    Example:
        >>> from ember import random
        >>> a, b = random.SeedGenerator(7), random.SeedGenerator(7)
        >>> a.next() == b.next() and a.next() != a.next()
        True
    """

    def __init__(self, seed: int | None = None, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"SeedGenerator: unexpected arguments {sorted(kwargs)}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise TypeError(f"SeedGenerator: seed must be an int or None, received {seed!r}")
        self.seed = int.from_bytes(os.urandom(8), "little") if seed is None else int(seed)
        self.count = 0

    def next(self) -> int:
        """The next seed of the sequence (a non-negative 63-bit int)."""
        sequence = np.random.SeedSequence(entropy=self.seed % (2**128), spawn_key=(self.count,))
        self.count += 1
        return int(sequence.generate_state(1, np.uint64)[0] >> np.uint64(1))

    def __index__(self) -> int:
        return self.next()

    def get_config(self) -> dict:
        return {"seed": self.seed}

    def __repr__(self) -> str:
        return f"SeedGenerator(seed={self.seed}, count={self.count})"


def _seeds(seed: Any):
    """A function ``i -> seed`` for the i-th internal draw (None stays None: the global stream)."""
    if seed is None:
        return lambda i: None
    base = SeedGenerator(seed.next() if isinstance(seed, SeedGenerator) else seed)
    return lambda i: base.next()


def _float_dtype(dtype: Any, op: str) -> str:
    name = dtypes.floatx() if dtype is None else dtypes.standardize_dtype(dtype)
    if not dtypes.is_float(name):
        raise TypeError(f"random.{op}: dtype must be a floating dtype, received {name!r}")
    return name


def _parameter(value: Any, shape: tuple, dtype: str, op: str, argument: str) -> Any:
    array = ops.cast(value if ops.is_array(value) else ops.convert_to_tensor(value), dtype)
    try:
        return ops.broadcast_to(array, shape)
    except Exception as error:
        raise ValueError(f"random.{op}: {argument} of shape {ops.shape(array)} does not broadcast to "
                         f"shape {shape}") from error


def _gamma(shape: tuple, alpha: Any, dtype: str, draw) -> Any:
    """Marsaglia & Tsang (2000): ``d v`` for accepted ``v = (1 + c z)^3``; ``alpha < 1`` boosted by ``U^(1/alpha)``."""
    boost = ops.less(alpha, 1.0)
    a = ops.where(boost, ops.add(alpha, 1.0), alpha)
    d = ops.subtract(a, 1.0 / 3.0)
    c = ops.rsqrt(ops.multiply(d, 9.0))
    result = ops.zeros(shape, dtype=dtype)
    done = ops.zeros(shape, dtype="bool")
    for round_ in range(_MAX_ROUNDS):
        z = ops.random.normal(shape, dtype=dtype, seed=draw(2 * round_))
        u = ops.random.uniform(shape, dtype=dtype, seed=draw(2 * round_ + 1))
        v = ops.power(ops.add(1.0, ops.multiply(c, z)), 3.0)
        positive = ops.greater(v, 0.0)
        safe_v = ops.where(positive, v, ops.ones_like(v))
        log_term = ops.add(ops.subtract(1.0, safe_v), ops.log(safe_v))
        bound = ops.add(ops.multiply(0.5, ops.square(z)), ops.multiply(d, log_term))
        accept = ops.logical_and(positive, ops.less(ops.log(u), bound))
        result = ops.where(ops.logical_and(accept, ops.logical_not(done)), ops.multiply(d, safe_v), result)
        done = ops.logical_or(done, accept)
        if bool(ops.to_numpy(ops.all(done))):
            break
    u = ops.random.uniform(shape, dtype=dtype, seed=draw(-1 % (2**31)))
    factor = ops.power(u, ops.divide(1.0, alpha))
    return ops.where(boost, ops.multiply(result, factor), result)


def gamma(shape, alpha, dtype=None, seed=None):
    """Gamma samples with concentration ``alpha`` (> 0; scalar or broadcastable to ``shape``) and scale 1.

    Example:
        >>> from ember import ops
        >>> x = ops.random.gamma((2, 3), alpha=2.0, seed=0)
        >>> ops.shape(x), bool(ops.all(ops.greater(x, 0.0)))
        ((2, 3), True)
    """
    dtype = _float_dtype(dtype, "gamma")
    shape = tuple(shape)
    alpha = _parameter(alpha, shape, dtype, "gamma", "alpha")
    if not bool(ops.to_numpy(ops.all(ops.greater(alpha, 0.0)))):
        raise ValueError("random.gamma: alpha must be > 0")
    draws = _seeds(seed)
    return _gamma(shape, alpha, dtype, draws)


def beta(shape, alpha, beta, dtype=None, seed=None):
    """Beta samples ``X / (X + Y)`` with ``X ~ Gamma(alpha)``, ``Y ~ Gamma(beta)`` (both > 0).

    Example:
        >>> from ember import ops
        >>> x = ops.random.beta((4,), alpha=2.0, beta=3.0, seed=0)
        >>> ops.shape(x), bool(ops.all(ops.logical_and(ops.greater(x, 0.0), ops.less(x, 1.0))))
        ((4,), True)
    """
    dtype = _float_dtype(dtype, "beta")
    shape = tuple(shape)
    a = _parameter(alpha, shape, dtype, "beta", "alpha")
    b = _parameter(beta, shape, dtype, "beta", "beta")
    if not bool(ops.to_numpy(ops.logical_and(ops.all(ops.greater(a, 0.0)), ops.all(ops.greater(b, 0.0))))):
        raise ValueError("random.beta: alpha and beta must be > 0")
    draws = _seeds(seed)
    x = _gamma(shape, a, dtype, lambda i: draws(2 * i) if seed is not None else None)
    y = _gamma(shape, b, dtype, lambda i: draws(2 * i + 1) if seed is not None else None)
    return ops.divide(x, ops.add(x, y))


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    """Binomial samples: successes in ``counts`` trials of probability ``probabilities`` (broadcast to ``shape``).

    Each trial is one uniform draw, so memory grows with ``max(counts)``: meant for
    moderate counts (up to a few thousand).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.random.binomial((3,), counts=5, probabilities=1.0, seed=0)).tolist()
        [5.0, 5.0, 5.0]
    """
    dtype = _float_dtype(dtype, "binomial")
    shape = tuple(shape)
    n = _parameter(counts, shape, "float32", "binomial", "counts")
    p = _parameter(probabilities, shape, "float32", "binomial", "probabilities")
    top = int(np.ceil(float(ops.to_numpy(ops.max(n))))) if ops.size(n) else 0
    if top < 0 or not bool(ops.to_numpy(ops.logical_and(ops.all(ops.greater_equal(p, 0.0)),
                                                         ops.all(ops.less_equal(p, 1.0))))):
        raise ValueError("random.binomial: counts must be >= 0 and probabilities in [0, 1]")
    if top == 0:
        return ops.zeros(shape, dtype=dtype)
    draws = _seeds(seed)
    u = ops.random.uniform(shape + (top,), seed=draws(0))
    trial = ops.less(ops.cast(ops.arange(top), "float32"), ops.expand_dims(n, -1))
    success = ops.logical_and(ops.less(u, ops.expand_dims(p, -1)), trial)
    return ops.cast(ops.sum(ops.cast(success, "int32"), axis=-1), dtype)
