"""Spike encoders: turn values in ``[0, 1]`` (or a signal over time) into spike trains.

Ember's spike trains are batch-major, ``(batch, time, features)``, as ``RNN`` takes them
(snntorch's ``spikegen`` is time-major: transpose axes 0 and 1 to compare).

* :func:`rate`: Bernoulli spikes, ``S[b, t, f] = 1`` where ``u[b, t, f] < data[b, f]`` for
  uniform draws ``u`` (seeded); :func:`rate_from_uniform` takes the draws.
* :func:`latency`: one spike per feature, earlier for larger values: snntorch's
  ``spikegen.latency(data, num_steps, threshold, linear=True, normalize=True, clip=clip)``:
  spike time ``round(min(tau (1 - x), tau (1 - threshold)))`` with
  ``tau = (num_steps - 1) / (1 - threshold)``; with ``clip=True`` values below ``threshold``
  do not spike.
* :func:`delta`: a spike where the signal rose by at least ``threshold`` since the last
  step (and ``-1`` where it fell that much, with ``off_spike=True``): snntorch's
  ``spikegen.delta`` along the time axis.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.layers.spiking import encoders
    >>> ember.set_backend("numpy")
    >>> ops.to_numpy(encoders.latency(ops.convert_to_tensor([[1.0, 0.5]]), num_steps=3))[0].tolist()
    [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
"""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.validation import check_positive_int


def rate_from_uniform(data: Any, uniform: Any) -> Any:
    """Spikes where ``uniform`` ``(batch, time, features)`` is below ``data`` ``(batch, features)``."""
    return ops.cast(ops.less(uniform, ops.expand_dims(data, 1)), ops.dtype(uniform))


def rate(data: Any, num_steps: int, seed: Any = None) -> Any:
    """Bernoulli (Poisson-like) rate code ``(batch, num_steps, features)`` of ``data`` ``(batch, features)``.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.layers.spiking import encoders
        >>> ember.set_backend("numpy")
        >>> ops.shape(encoders.rate(ops.ones((2, 3)), num_steps=4, seed=0))
        (2, 4, 3)
    """
    num_steps = check_positive_int("rate", "num_steps", num_steps)
    batch, features = ops.shape(data)
    uniform = ops.random.uniform((batch, num_steps, features), dtype=ops.dtype(data), seed=seed)
    return rate_from_uniform(data, uniform)


def latency(data: Any, num_steps: int, threshold: float = 0.01, clip: bool = False) -> Any:
    """Linear, normalised latency code ``(batch, num_steps, features)`` (module docstring)."""
    num_steps = check_positive_int("latency", "num_steps", num_steps)
    if not 0.0 <= threshold < 1.0:
        raise ValueError(f"latency: threshold must be in [0, 1), received {threshold!r}")
    tau = (num_steps - 1) / (1.0 - threshold)
    spike_time = ops.minimum(ops.multiply(ops.subtract(1.0, data), tau), tau * (1.0 - threshold))
    step = ops.clip(ops.round(spike_time), 0.0, float(num_steps - 1))
    times = ops.reshape(ops.arange(num_steps, dtype=ops.dtype(data)), (1, num_steps, 1))
    spikes = ops.cast(ops.equal(ops.expand_dims(step, 1), times), ops.dtype(data))
    if clip:
        spikes = ops.multiply(spikes, ops.expand_dims(ops.cast(ops.greater_equal(data, threshold), ops.dtype(data)), 1))
    return spikes


def delta(data: Any, threshold: float = 0.1, padding: bool = False, off_spike: bool = False) -> Any:
    """Delta code of ``data`` ``(batch, time, features)`` along time (module docstring)."""
    first = ops.getitem(data, (slice(None), slice(0, 1)))
    previous = ops.concatenate([first if padding else ops.zeros_like(first),
                                ops.getitem(data, (slice(None), slice(0, -1)))], axis=1)
    change = ops.subtract(data, previous)
    spikes = ops.cast(ops.greater_equal(change, threshold), ops.dtype(data))
    if off_spike:
        spikes = ops.subtract(spikes, ops.cast(ops.less_equal(change, -threshold), ops.dtype(data)))
    return spikes
