"""Spike-train losses for classification (snntorch.functional's, on batch-major spikes).

``spikes`` is ``(batch, time, classes)`` (``RNN(..., return_sequences=True)``), ``targets``
integer class ids ``(batch,)``; each loss is a mean over the batch:

* :func:`ce_count_loss`: cross-entropy of the spike counts ``sum_t S`` as logits
  (``snntorch.functional.ce_count_loss()``);
* :func:`ce_rate_loss`: the mean over steps of the cross-entropy of each step's spikes
  (``ce_rate_loss()``);
* :func:`first_spike_time`: each neuron's first spike step (``time - 1`` if it never
  fires); its gradient is ``-1`` on the spike at that step (snntorch's ``SpikeTime.FirstSpike``);
* :func:`ce_temporal_loss`: cross-entropy of ``-first_spike_time`` (``inverse="negate"``) or
  ``1 / (first_spike_time + 1)`` (``"reciprocal"``) as logits: the target should fire first
  (``ce_temporal_loss()``).

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.layers.spiking import losses
    >>> ember.set_backend("numpy")
    >>> spikes = ops.convert_to_tensor([[[0.0, 1.0], [1.0, 1.0]]])
    >>> ops.to_numpy(losses.first_spike_time(spikes)).tolist()
    [[1.0, 0.0]]
"""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.autodiff.custom_gradient import custom_gradient


def _cross_entropy(logits: Any, targets: Any) -> Any:
    """Mean over the batch of ``-log_softmax(logits)[target]``."""
    log_p = ops.nn.log_softmax(logits, axis=-1)
    one_hot = ops.one_hot(ops.cast(targets, "int32"), ops.shape(logits)[-1], dtype=ops.dtype(logits))
    return ops.negative(ops.mean(ops.sum(ops.multiply(log_p, one_hot), axis=-1)))


def ce_count_loss(spikes: Any, targets: Any) -> Any:
    """Cross-entropy of the spike counts (module docstring)."""
    return _cross_entropy(ops.sum(spikes, axis=1), targets)


def ce_rate_loss(spikes: Any, targets: Any) -> Any:
    """Mean over time steps of each step's cross-entropy (module docstring)."""
    steps = ops.shape(spikes)[1]
    losses = [_cross_entropy(ops.getitem(spikes, (slice(None), t)), targets) for t in range(steps)]
    return ops.divide(ops.sum(ops.stack(losses)), float(steps))


def _first_index(spikes: Any) -> Any:
    steps = ops.shape(spikes)[1]
    times = ops.reshape(ops.arange(steps, dtype=ops.dtype(spikes)), (1, steps, 1))
    return ops.min(ops.where(ops.greater(spikes, 0.0), times, float(steps - 1)), axis=1), times


@custom_gradient
def first_spike_time(spikes: Any) -> tuple[Any, Any]:
    """The first spike step of each neuron ``(batch, neurons)`` (``time - 1`` if none; module docstring)."""
    first, times = _first_index(spikes)

    def grad_fn(upstream: Any) -> Any:
        at_first = ops.cast(ops.equal(times, ops.expand_dims(first, 1)), ops.dtype(spikes))
        return ops.negative(ops.multiply(at_first, ops.expand_dims(upstream, 1)))

    return first, grad_fn


def ce_temporal_loss(spikes: Any, targets: Any, inverse: str = "negate") -> Any:
    """Cross-entropy of the (inverted) first spike times (module docstring)."""
    if inverse not in ("negate", "reciprocal"):
        raise ValueError(f"ce_temporal_loss: inverse must be 'negate' or 'reciprocal', received {inverse!r}")
    times = first_spike_time(spikes)
    logits = ops.negative(times) if inverse == "negate" else ops.reciprocal(ops.add(times, 1.0))
    return _cross_entropy(logits, targets)
