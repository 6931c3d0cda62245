"""Influence: how much an input, a spike or a neuron changes a spiking layer's output spikes.

Two measures, both per target neuron ``j`` (by default the layer's output neurons) and
per batch element:

* **Gradient x input** (:func:`gradient_x_input`): ``x[b, s, i] * d N_j[b] / d x[b, s, i]``
  with ``N_j[b] = sum_t S_t[b, j]`` the spike count of ``j``, differentiated with
  :class:`~ember.GradientTape` through the layer's surrogate gradients (the spikes' backward
  is the surrogate derivative, the reset's is stopped, as in training). A first-order,
  local estimate: cheap (one backward per target neuron), not exact for discrete spikes.
* **Ablation** (exact): remove something, run the layer forward again, and compare
  the spike trains. ``count_change`` is ``N_j(ablated) - N_j(original)``;
  ``spikes_changed`` is the number of steps at which ``j``'s spike differs (a moved spike
  counts twice, a lost one once). What is removed:
  :func:`ablate_channels` sets one input channel to 0 at every step;
  :func:`ablate_events` removes one event: sets one input entry ``x[b, s, i]`` to 0, or
  deletes one spike of one neuron (the spike reaches no neuron and does not reset its
  own; the neuron then goes on from the membrane it had);
  :func:`ablate_neurons` silences one neuron at every step.

All the ablated runs of one kind go through the layer as one batch (one forward pass of
``features * batch``, ``events`` or ``units * batch`` sequences).

Example:
    >>> import numpy as np
    >>> from ember import layers
    >>> from ember.causal.influence import ablate_channels
    >>> lif = layers.LIF(1, beta=0.5, recurrent=False, use_bias=False)
    >>> params = {"kernel": np.array([[1.5], [0.25]], dtype="float32")}
    >>> x = np.array([[[1.0, 1.0], [0.0, 1.0]]])
    >>> change, flipped = ablate_channels(lif.cell, params, x, [0])
    >>> change[0, :, 0].tolist(), flipped[0, :, 0].tolist()   # channel 0 drives the only spike
    ([-1, 0], [1, 0])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes, ops
from ember.autodiff.tape import GradientTape
from ember.causal.unroll import unroll
from ember.layers.spiking.cell import SpikingCell


def tensor(cell: SpikingCell, values: np.ndarray) -> Any:
    """``values`` as a backend array of the cell's variable dtype."""
    dtype = cell.variable_dtype
    return ops.convert_to_tensor(np.asarray(values).astype(dtypes.to_numpy_dtype(dtype)), dtype=dtype)


def run_spikes(cell: SpikingCell, params: dict, inputs: np.ndarray, silence: np.ndarray | None = None) -> np.ndarray:
    """``(batch, time, units)`` int spikes of every neuron (NumPy), optionally with spikes removed."""
    run = unroll(cell, params, tensor(cell, inputs), None if silence is None else tensor(cell, silence))
    return np.asarray(ops.to_numpy(run["spikes"])).astype(np.int64)


def _changes(original: np.ndarray, ablated: np.ndarray, targets: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """``(count_change, spikes_changed)`` per leading index and target, from spikes ``(..., time, units)``."""
    count = ablated[..., targets].sum(axis=-2) - original[..., targets].sum(axis=-2)
    flipped = (ablated[..., targets] != original[..., targets]).sum(axis=-2)
    return count.astype(np.int64), flipped.astype(np.int64)


def gradient_x_input(cell: SpikingCell, params: dict, inputs: np.ndarray, targets: list[int]) -> np.ndarray:
    """``(batch, time, features, targets)`` float64: input times the gradient of each target's spike count."""
    x = tensor(cell, inputs)
    out = np.zeros((*np.shape(inputs), len(targets)))
    with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        counts = ops.sum(unroll(cell, params, x)["spikes"], axis=1)
    for n, j in enumerate(targets):
        onehot = np.zeros(ops.shape(counts))
        onehot[:, j] = 1.0
        grad = tape.gradient(counts, x, output_gradients=tensor(cell, onehot), unconnected_gradients="zero")
        out[..., n] = np.asarray(ops.to_numpy(grad), dtype=np.float64) * np.asarray(inputs, dtype=np.float64)
    return out


def ablate_channels(cell: SpikingCell, params: dict, inputs: np.ndarray,
                    targets: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """``(count_change, spikes_changed)``, each ``(batch, features, targets)``: input channel ``i`` set to 0."""
    batch, time, features = np.shape(inputs)
    original = run_spikes(cell, params, inputs)
    ablated = np.repeat(np.asarray(inputs)[None], features, axis=0)  # (features, batch, time, features)
    ablated[np.arange(features), :, :, np.arange(features)] = 0.0
    spikes = run_spikes(cell, params, ablated.reshape(features * batch, time, features))
    count, flipped = _changes(original[None], spikes.reshape(features, batch, time, -1), targets)
    return count.transpose(1, 0, 2), flipped.transpose(1, 0, 2)


def ablate_neurons(cell: SpikingCell, params: dict, inputs: np.ndarray,
                   targets: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """``(count_change, spikes_changed)``, each ``(batch, units, targets)``: neuron ``k`` silenced throughout.

    A silenced target neuron loses all its spikes (its own count change is minus its count).
    """
    batch, time, features = np.shape(inputs)
    units = cell.size
    original = run_spikes(cell, params, inputs)
    silence = np.ones((units, batch, time, units))
    silence[np.arange(units), :, :, np.arange(units)] = 0.0
    repeated = np.broadcast_to(np.asarray(inputs), (units, batch, time, features))
    repeated = repeated.reshape(units * batch, time, features)
    spikes = run_spikes(cell, params, repeated, silence.reshape(units * batch, time, units))
    count, flipped = _changes(original[None], spikes.reshape(units, batch, time, units), targets)
    return count.transpose(1, 0, 2), flipped.transpose(1, 0, 2)


def ablate_events(cell: SpikingCell, params: dict, inputs: np.ndarray, input_rows: np.ndarray,
                  spike_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The spike trains with one event removed, and which spikes that changes.

    Args:
        input_rows: ``(n_in, 3)`` input events ``(batch, step, channel)`` to remove one at a time.
        spike_rows: ``(n_spk, 3)`` spikes ``(batch, step, neuron)`` to remove one at a time.

    Returns:
        ``(trains, changed)``: ``trains`` ``(n_in + n_spk, time, units)`` the ablated spikes of
        the event's batch element; ``changed`` the same shape, True where a spike differs
        from the original run (the removed spike itself included).
    """
    batch, time, features = np.shape(inputs)
    original = run_spikes(cell, params, inputs)
    rows = [*input_rows.tolist(), *spike_rows.tolist()]
    if not rows:
        return np.zeros((0, time, cell.size), np.int64), np.zeros((0, time, cell.size), bool)
    sequences = np.asarray(inputs)[[b for b, _, _ in rows]].copy()
    silence = np.ones((len(rows), time, cell.size))
    for n, (_, s, i) in enumerate(rows):
        if n < len(input_rows):
            sequences[n, s, i] = 0.0
        else:
            silence[n, s, i] = 0.0
    spikes = run_spikes(cell, params, sequences, silence if len(spike_rows) else None)
    return spikes, spikes != original[[b for b, _, _ in rows]]
