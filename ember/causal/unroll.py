"""Run a spiking cell over a sequence and keep every neuron's spikes and membranes.

A spiking layer (``LIF``, ``ALIF``, ``Synaptic``, ``SeRSNN`` or ``RNN(spiking_cell)``)
returns only its motor neurons' spikes. The causal context needs every neuron's, so
:func:`unroll` runs the layer's cell through the same hooks ``RNN`` uses
(``prepare_sequence`` then ``prepared_step`` per step, from zero initial states) and keeps
the full states of every step. Its motor-neuron spikes equal the layer's
``return_sequences=True`` output (the tests check it).

``silence`` ``(batch, time, units)`` (0 removes a spike, 1 keeps it) multiplies the spike
state after each step: a removed spike reaches no other neuron, does not reset its own
neuron and is absent from the output (the ablations of :mod:`ember.causal.influence`).

Example:
    >>> from ember import layers, ops
    >>> from ember.causal.unroll import unroll
    >>> lif = layers.LIF(3, beta=0.5, recurrent=False)
    >>> state = lif.build((None, 4, 2), seed=0)
    >>> run = unroll(lif.cell, state["params"], ops.ones((1, 4, 2)))
    >>> ops.shape(run["spikes"]), ops.shape(run["membranes"])
    ((1, 4, 3), (1, 4, 3))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import ops
from ember.layers.rnn.rnn import RNN
from ember.layers.spiking.cell import SpikingCell


def spiking_cell(layer: Any, caller: str = "causal_context") -> SpikingCell:
    """The :class:`~ember.layers.spiking.SpikingCell` of ``layer`` (a spiking ``RNN`` layer or the cell).

    Raises:
        TypeError: ``layer`` is neither a spiking cell nor an ``RNN`` of one.
        NotImplementedError: the RNN runs backwards (``go_backwards=True``).
    """
    if isinstance(layer, SpikingCell):
        return layer
    if isinstance(layer, RNN) and isinstance(layer.cell, SpikingCell):
        if layer.go_backwards:
            raise NotImplementedError(f"{caller}: layer {layer.name!r} has go_backwards=True; the causal context "
                                      f"follows time forwards: use a layer with go_backwards=False")
        return layer.cell
    raise TypeError(f"{caller}: layer must be a spiking layer (LIF, ALIF, Synaptic, SeRSNN, RNN of a spiking cell) "
                    f"or a SpikingCell, received {layer!r}")


def unroll(cell: SpikingCell, params: dict, inputs: Any, silence: Any = None,
           on_step: Callable[[int], None] | None = None) -> dict:
    """Every step's states of ``cell`` on ``inputs`` ``(batch, time, features)`` (backend arrays).

    ``on_step(t)``, when given, is called before step ``t`` runs, and ``on_step(time)`` after the
    last (e.g. to mark where each step's ops begin in a recorded op graph).

    Returns:
        ``{"spikes", "membranes", "active"}``, each ``(batch, time, units)``: the spikes
        ``S_t``, the membranes ``U_t`` (before their reset), and 1 where the neuron
        integrated its input at step ``t`` (0 during a refractory period).
    """
    batch, time = ops.shape(inputs)[0], ops.shape(inputs)[1]
    sequence = ops.swapaxes(inputs, 0, 1)
    currents, context = cell.prepare_sequence(params, sequence)
    states = cell.get_initial_state(batch, dtype=ops.dtype(currents))
    names = cell.state_names
    spk, mem = names.index("spk"), names.index("mem")
    spikes, membranes, active = [], [], []
    for t in range(time):
        if on_step is not None:
            on_step(t)
        if cell.refractory:
            refractory = states[names.index("refractory")]
            active.append(ops.cast(ops.less_equal(refractory, 0.0), ops.dtype(currents)))
        else:
            active.append(ops.ones((batch, cell.size), dtype=ops.dtype(currents)))
        _, states = cell.prepared_step(params, ops.getitem(currents, t), states, context)
        states = list(states)
        if silence is not None:
            states[spk] = ops.multiply(states[spk], ops.getitem(silence, (slice(None), t)))
        spikes.append(states[spk])
        membranes.append(states[mem])
    if on_step is not None:
        on_step(time)
    return {name: ops.stack(values, axis=1) for name, values in
            (("spikes", spikes), ("membranes", membranes), ("active", active))}
