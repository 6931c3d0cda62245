"""Causal links: which presynaptic events drove each spike, across which weight, with what share.

Definitions (for a spike of neuron ``j`` at step ``t`` in batch element ``b``):

* **Integration window**: the steps ``s`` with ``start <= s <= t``, where ``start`` is one
  step after ``j``'s previous spike (its reset acts at that step; 0 when it had none),
  raised to ``t - window + 1`` when a ``window`` (in steps) is given. Steps during a
  refractory period are skipped: the neuron integrates nothing there.
* **Presynaptic events** arriving at step ``s``: a non-zero input ``x[b, s, i]`` (an input
  spike, or any non-zero input value) and, with recurrence, a spike of neuron ``k`` at
  step ``s - 1`` (a recurrent spike reaches the others one step later, as
  ``I_s = x_s W_in + S_{s-1} W_rec``).
* A **causal link** joins such an event to the spike when the effective weight is not 0:
  ``(W_in * M_in)[i, j]`` or ``(W_rec * M_rec)[k, j]`` (the kernel times the wiring's
  mask). Its ``contribution`` is ``value * weight * decay``: what the event added to the
  membrane ``U_t``, with ``decay = beta_j ** (t - s)`` (``LIF``, ``ALIF``: the membrane
  leak over the ``t - s`` steps since arrival) or, for ``Synaptic`` neurons, the synaptic
  kernel ``sum_{q=0}^{t-s} beta_j ** (t-s-q) * alpha ** q``. Inhibitory links (negative
  weight) are listed too: their contribution is negative.

The links of a leaky neuron with ``reset="zero"`` and no refractory period account for
its whole membrane: ``U_t = sum(contributions) + bias * sum_{s in window} beta ** (t - s)``.
With ``reset="subtract"`` or ``"none"``, charge left from before the previous spike is not
attributed (it belongs to that spike's causes); so is a ``Synaptic`` neuron's current that
arrived before the window.

Example:
    >>> import numpy as np
    >>> from ember.causal.links import causal_links
    >>> spikes = np.array([[[0.0], [1.0]]])           # neuron 0 fires at step 1
    >>> inputs = np.array([[[1.0], [1.0]]])           # one input channel, on at both steps
    >>> links, starts = causal_links(spikes, inputs, np.ones_like(spikes), np.array([[0.7]]), None,
    ...                              np.array([0.5]), None, window=None)
    >>> [(link.source_step, link.contribution) for link in links], starts.tolist()
    ([(0, 0.35), (1, 0.7)], [0])
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ember.layers.spiking.raster import spike_times


@dataclass(frozen=True)
class CausalLink:
    """One presynaptic event that drove a spike (module docstring for the definitions).

    Attributes:
        target: index of the driven spike in the context's ``events``.
        kind: ``"input"`` (an input channel) or ``"neuron"`` (a recurrent spike).
        source: the input channel or the presynaptic neuron.
        source_step: the step of the presynaptic event.
        source_event: its index in the context's ``input_events`` (kind ``"input"``) or ``events``.
        arrival: the step it reached the neuron (``source_step``, or ``+ 1`` for a recurrent spike).
        value: the input value (1 for a spike).
        weight: the effective weight (kernel times mask).
        decay: the membrane's decay of the arrival's charge up to the spike.
        contribution: ``value * weight * decay``.
        necessary: whether removing the source event changes the spike (the event ablation of
            :mod:`ember.causal.influence`); None when not measured.

    Example:
        >>> import numpy as np
        >>> from ember import layers
        >>> from ember.causal import causal_context
        >>> lif = layers.LIF(1, beta=0.5, recurrent=False, use_bias=False)
        >>> state = {"params": {"kernel": np.array([[1.2]], dtype="float32")}, "buffers": {}}  # over threshold
        >>> link = causal_context(lif, state, np.ones((1, 3, 1))).links[0]  # the first spike's one cause
        >>> link.kind, link.target, link.source_step, round(link.weight, 2)
        ('input', 0, 0, 1.2)
    """

    target: int
    kind: str
    source: int
    source_step: int
    source_event: int
    arrival: int
    value: float
    weight: float
    decay: float
    contribution: float
    necessary: bool | None = None

    def to_dict(self) -> dict:
        """The link as plain data."""
        return asdict(self)


def decay_kernel(beta: np.ndarray, alpha: float | None, lag: int) -> np.ndarray:
    """``(units,)`` share of a charge arriving ``lag`` steps before that is left in the membrane.

    ``beta ** lag`` without a synaptic current (``alpha`` None); with one,
    ``sum_{q=0}^{lag} beta ** (lag - q) * alpha ** q``.

    Example:
        >>> import numpy as np
        >>> from ember.causal.links import decay_kernel
        >>> decay_kernel(np.array([0.5]), None, 2).tolist(), decay_kernel(np.array([0.5]), 0.5, 1).tolist()
        ([0.25], [1.0])
    """
    if alpha is None:
        return beta ** lag
    return np.sum([beta ** (lag - q) * alpha ** q for q in range(lag + 1)], axis=0)


def input_events(inputs: np.ndarray) -> np.ndarray:
    """``(events, 3)`` rows ``(batch, step, channel)`` of the non-zero inputs, ordered as :func:`spike_times`."""
    return spike_times(inputs)


def window_starts(spikes: np.ndarray, events: np.ndarray, window: int | None) -> np.ndarray:
    """The first step of each spike's integration window (module docstring), one per row of ``events``."""
    starts = np.zeros(len(events), dtype=np.int64)
    for n, (b, t, j) in enumerate(events):
        before = np.flatnonzero(spikes[b, :t, j])
        start = int(before[-1]) + 1 if before.size else 0
        starts[n] = start if window is None else max(start, int(t) - window + 1)
    return starts


def causal_links(spikes: np.ndarray, inputs: np.ndarray, active: np.ndarray, kernel: np.ndarray,
                 recurrent: np.ndarray | None, beta: np.ndarray, alpha: float | None,
                 window: int | None) -> tuple[list[CausalLink], np.ndarray]:
    """The causal links of every spike (module docstring) and each spike's window start.

    Args:
        spikes: ``(batch, time, units)`` 0/1 spikes of every neuron.
        inputs: ``(batch, time, features)`` inputs.
        active: ``(batch, time, units)``, 0 where the neuron was refractory.
        kernel: ``(features, units)`` effective input weights (kernel times mask).
        recurrent: ``(units, units)`` effective recurrent weights, or None without recurrence.
        beta: ``(units,)`` membrane decays; ``alpha``: the synaptic decay or None.
        window: the longest integration window in steps, or None (back to the previous spike).

    Returns:
        ``(links, starts)``: links ordered by spike (as :func:`~ember.layers.spiking.spike_times`),
        then arrival step, inputs before neurons, then source index.
    """
    events = spike_times(spikes)
    inputs_at = {tuple(row): n for n, row in enumerate(input_events(inputs).tolist())}
    spikes_at = {tuple(row): n for n, row in enumerate(events.tolist())}
    starts = window_starts(spikes, events, window)
    links: list[CausalLink] = []
    for n, (b, t, j) in enumerate(events.tolist()):
        for s in range(int(starts[n]), t + 1):
            if not active[b, s, j]:
                continue
            decay = float(decay_kernel(beta, alpha, t - s)[j])
            for i in np.flatnonzero((inputs[b, s] != 0) & (kernel[:, j] != 0)).tolist():
                value, weight = float(inputs[b, s, i]), float(kernel[i, j])
                links.append(CausalLink(n, "input", i, s, inputs_at[(b, s, i)], s, value, weight, decay,
                                        value * weight * decay))
            if recurrent is None or s == 0:
                continue
            for k in np.flatnonzero((spikes[b, s - 1] != 0) & (recurrent[:, j] != 0)).tolist():
                value, weight = float(spikes[b, s - 1, k]), float(recurrent[k, j])
                links.append(CausalLink(n, "neuron", k, s - 1, spikes_at[(b, s - 1, k)], s, value, weight, decay,
                                        value * weight * decay))
    return links, starts
