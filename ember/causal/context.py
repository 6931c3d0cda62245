"""``CausalContext``: the spatial, temporal and causal record of one run of a spiking layer.

:func:`causal_context` runs a spiking layer (``LIF``, ``ALIF``, ``Synaptic``, ``SeRSNN``, or
``RNN`` of a spiking cell) on ``inputs`` and records, for every spike of every neuron
(batch ``b``, step ``t``, neuron ``j``):

* **temporal** context: the step of each spike and of each non-zero input, every
  neuron's spike times, its membrane at the spike and its integration window;
* **spatial** context: the neurons' coordinates when the layer's wiring is a
  :class:`~ember.wirings.SpatialWiring` (``None`` otherwise), and the neuron types of a wiring;
* **causal** links: the presynaptic events (inputs and recurrent spikes) inside the
  spike's integration window that reached it across a non-zero effective weight, each
  with its weight and contribution (definitions in :mod:`ember.causal.links`);
* **influence**: gradient x input through the surrogate gradients, and exact ablations
  of input channels, single events and neurons (definitions in :mod:`ember.causal.influence`);
  each link also says whether removing its source event changes the spike it drove.

It is a separate pass over the layer's weights, after (or instead of) the ordinary call:
nothing is recorded, and nothing costs anything, when it is not used. Its own cost is one
forward pass for the record, one forward and one backward per target neuron for the
gradients, and one batched forward per ablation kind (``features * batch``, ``events``,
``units * batch`` sequences): meant for small networks and short sequences.

The records are NumPy data (float64), the same on every backend for the same weights
and inputs (spikes, links and ablations exactly; membranes and gradients to float32
rounding). Export with :meth:`CausalContext.to_json`, :meth:`~CausalContext.to_networkx`,
:meth:`~CausalContext.to_dot`; plot with :func:`ember.causal.plot_raster` and
:func:`ember.causal.plot_space`.

Example:
    >>> import numpy as np
    >>> from ember import layers
    >>> from ember.causal import causal_context
    >>> lif = layers.LIF(1, beta=0.5, recurrent=False, use_bias=False)
    >>> state = {"params": {"kernel": np.array([[0.7]], dtype="float32")}, "buffers": {}}
    >>> ctx = causal_context(lif, state, np.ones((1, 3, 1)))
    >>> ctx.events.tolist()                        # (batch, step, neuron): fires at step 1
    [[0, 1, 0]]
    >>> [(link.source_step, round(link.contribution, 2)) for link in ctx.links]
    [(0, 0.35), (1, 0.7)]
"""

from __future__ import annotations

import dataclasses
import json
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ember import ops
from ember.causal import export
from ember.causal import influence as measures
from ember.causal.links import CausalLink, causal_links, input_events
from ember.causal.op_steps import recorded_unroll
from ember.causal.unroll import spiking_cell, unroll
from ember.layers import handles
from ember.layers.rnn.rnn import RNN
from ember.layers.spiking.cell import SpikingCell
from ember.layers.spiking.raster import spike_times
from ember.layers.spiking.synaptic import SynapticCell
from ember.wirings import SpatialWiring, Wiring

INFLUENCES = ("gradient", "channels", "events", "neurons")


@dataclass
class CausalContext:
    """The record of :func:`causal_context` (module docstring). Arrays are NumPy.

    Attributes:
        layer: the layer's name; ``cell``: its cell's class name.
        inputs: ``(batch, time, features)`` float64 inputs.
        spikes: ``(batch, time, units)`` int spikes of every neuron.
        membranes: ``(batch, time, units)`` float64 membranes ``U_t`` (before their reset).
        events: ``(spikes, 3)`` rows ``(batch, step, neuron)`` (:func:`~ember.layers.spiking.spike_times`).
        input_events: ``(inputs, 3)`` rows ``(batch, step, channel)`` of the non-zero inputs.
        window_starts: the first step of each spike's integration window.
        links: the :class:`~ember.causal.links.CausalLink` of every spike.
        kernel, recurrent: the effective weights (kernel times mask; ``recurrent`` None without recurrence).
        bias: ``(units,)`` the constant input current (not an event: no link carries it), or None.
        beta: ``(units,)`` membrane decays; ``alpha``: the synaptic decay (``Synaptic``) or None.
        threshold: ``(units,)`` thresholds (the base threshold of an ``ALIF``).
        reset, refractory, window: the neuron's reset, refractory period, and the window bound.
        targets: the neurons whose spike counts the influences measure.
        positions: ``(units, dims)`` coordinates (a :class:`~ember.wirings.SpatialWiring`) or None.
        neuron_types: each neuron's wiring type (``"inter"``, ``"command"``, ``"motor"``) or None.
        influence: ``{name: array}``: ``"gradient_x_input"`` ``(batch, time, features, targets)``;
            ``"channel_count_change"``, ``"channel_spikes_changed"`` ``(batch, features, targets)``;
            ``"neuron_count_change"``, ``"neuron_spikes_changed"`` ``(batch, units, targets)``;
            ``"input_event_count_change"`` ``(input events, targets)`` and
            ``"spike_event_count_change"`` ``(spikes, targets)`` (whichever were asked for).
        op_graph: with ``record_graph=True``, the :class:`~ember.autodiff.op_graph.OpGraph` of
            the run (``GradientTape(record_graph=True)`` with the inputs watched); else None.
        op_steps: the time step of each op of ``op_graph`` (-1: an op serving every step), or None.

    Example:
        >>> import numpy as np
        >>> from ember import layers
        >>> from ember.causal import causal_context
        >>> lif = layers.LIF(1, beta=0.9, recurrent=False, use_bias=False)  # a slow leak: two spikes in four steps
        >>> state = {"params": {"kernel": np.array([[0.7]], dtype="float32")}, "buffers": {}}
        >>> ctx = causal_context(lif, state, np.ones((1, 4, 1)))
        >>> ctx.spikes[0, :, 0].tolist(), len(ctx.links)
        ([0, 1, 0, 1], 4)
    """

    layer: str
    cell: str
    inputs: np.ndarray
    spikes: np.ndarray
    membranes: np.ndarray
    events: np.ndarray
    input_events: np.ndarray
    window_starts: np.ndarray
    links: list[CausalLink]
    kernel: np.ndarray
    recurrent: np.ndarray | None
    bias: np.ndarray | None
    beta: np.ndarray
    alpha: float | None
    threshold: np.ndarray
    reset: str
    refractory: int
    window: int | None
    targets: list[int]
    positions: np.ndarray | None = None
    neuron_types: list[str] | None = None
    influence: dict[str, np.ndarray] = field(default_factory=dict)
    op_graph: Any = None
    op_steps: list[int] | None = None

    @property
    def units(self) -> int:
        """The number of neurons."""
        return int(self.spikes.shape[-1])

    def spike_times_of(self, neuron: int, batch: int = 0) -> list[int]:
        """The steps at which ``neuron`` fired in batch element ``batch``."""
        return np.flatnonzero(self.spikes[batch, :, neuron]).tolist()

    def links_of(self, event: int) -> list[CausalLink]:
        """The causal links into spike ``event`` (an index into :attr:`events`)."""
        return [link for link in self.links if link.target == event]

    def neuron_influence(self) -> np.ndarray:
        """``(units,)`` float64 influence of each neuron on the targets.

        With the ``"neurons"`` ablation: the number of target spikes that change when the
        neuron is silenced, summed over the batch and the targets (a silenced target counts
        its own lost spikes). Without it: the summed ``|contribution|`` of the neuron's
        outgoing causal links.
        """
        changed = self.influence.get("neuron_spikes_changed")
        if changed is not None:
            return changed.sum(axis=(0, 2)).astype(np.float64)
        out = np.zeros(self.units)
        for link in self.links:
            if link.kind == "neuron":
                out[link.source] += abs(link.contribution)
        return out

    # --- export ----------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The record as plain data (lists, dicts, strings, numbers, None): JSON-serializable."""
        return export.to_dict(self)

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as JSON text (``kwargs`` go to ``json.dumps``, e.g. ``indent=2``)."""
        return json.dumps(self.to_dict(), **kwargs)

    def to_networkx(self) -> Any:
        """A ``networkx.DiGraph`` of events and causal links (:func:`ember.causal.export.to_networkx`)."""
        return export.to_networkx(self)

    def to_dot(self, name: str = "causal") -> str:
        """Graphviz DOT text of events and causal links (:func:`ember.causal.export.to_dot`)."""
        return export.to_dot(self, name)


# --- building ------------------------------------------------------------------------------
def _state(layer: Any, state_or_model: Any) -> dict:
    if isinstance(state_or_model, dict):
        if "params" not in state_or_model:
            raise ValueError(f"causal_context: state_or_model must be the layer's state (a dict with 'params'), "
                             f"a model holding the layer, or None; received a dict with keys "
                             f"{sorted(state_or_model)}")
        return state_or_model
    if state_or_model is not None and layer not in getattr(state_or_model, "layers", ()):
        raise ValueError(f"causal_context: layer {getattr(layer, 'name', layer)!r} is not a layer of "
                         f"{state_or_model!r}; pass the layer's state, or the model that holds it")
    return handles.read_state(layer)


def _window(window: Any) -> int | None:
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, numbers.Integral) or int(window) < 1:
        raise ValueError(f"causal_context: window must be None or an int >= 1 (steps), received {window!r}")
    return int(window)


def _targets(cell: SpikingCell, targets: Any) -> list[int]:
    if targets is None:
        return list(range(cell.motor_size))
    chosen = [targets] if isinstance(targets, numbers.Integral) else list(targets)
    bad = [t for t in chosen if isinstance(t, bool) or not isinstance(t, numbers.Integral)
           or not 0 <= int(t) < cell.size]
    if bad or not chosen:
        raise ValueError(f"causal_context: targets must be neuron indices in [0, {cell.size}), "
                         f"received {targets!r}")
    return [int(t) for t in chosen]


def _influences(kinds: Any) -> tuple[str, ...]:
    chosen = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    bad = [k for k in chosen if k not in INFLUENCES]
    if bad:
        raise ValueError(f"causal_context: influence must be a subset of {INFLUENCES}, received {kinds!r}")
    return chosen


def _inputs(layer: Any, cell: SpikingCell, params: dict, inputs: Any) -> np.ndarray:
    values = np.asarray(ops.to_numpy(inputs), dtype=np.float64)
    if isinstance(layer, RNN) and layer.time_major and values.ndim == 3:
        values = values.swapaxes(0, 1)
    features = int(ops.shape(params["kernel"])[0])
    if values.ndim != 3 or values.shape[-1] != features or values.shape[1] == 0:
        raise ValueError(f"causal_context: layer {cell.name!r} expects inputs (batch, time, {features}) with "
                         f"time >= 1, received shape {values.shape}")
    return values


def _per_neuron(value: Any, units: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(ops.to_numpy(value) if ops.is_array(value) else value,
                                      dtype=np.float64), (units,)).copy()


def causal_context(layer: Any, state_or_model: Any, inputs: Any, *, window: int | None = None,
                   targets: Any = None, influence: Any = INFLUENCES, record_graph: bool = False) -> CausalContext:
    """Run ``layer`` on ``inputs`` and record its causal context (module docstring).

    Args:
        layer: a spiking layer (``LIF``, ``ALIF``, ``Synaptic``, ``SeRSNN``, ``RNN`` of a
            spiking cell; not ``go_backwards``) or a :class:`~ember.layers.spiking.SpikingCell`.
        state_or_model: the layer's state (``layer.build(...)``'s dict with ``"params"``), a
            model that holds the layer (its current weights are read), or None (the layer's
            own current weights).
        inputs: ``(batch, time, features)`` (``(time, batch, features)`` for a ``time_major``
            layer), an array or Tensor of any backend, or NumPy data.
        window: the longest integration window in steps (None: back to the neuron's previous spike).
        targets: the neuron(s) whose spike counts the influences measure (default: the output
            neurons, the wiring's motor neurons).
        influence: which influences to compute, a subset of ``("gradient", "channels",
            "events", "neurons")`` (default all; ``()`` for none).
        record_graph: also record the run's op graph and the time step of each op
            (:mod:`ember.causal.op_steps`; numpy and mlx).

    Returns:
        A :class:`CausalContext`.

    Raises:
        TypeError: ``layer`` is not a spiking layer.
        ValueError: bad ``state_or_model``, ``inputs`` shape, ``window``, ``targets``, ``influence``
            or ``record_graph``.
        NotImplementedError: ``record_graph=True`` where the tape's recorder misses the spikes' ops
            (none of the three backends does).
    """
    cell = spiking_cell(layer)
    params = _state(layer, state_or_model)["params"]
    values = _inputs(layer, cell, params, inputs)
    window, chosen, kinds = _window(window), _targets(cell, targets), _influences(influence)
    if not isinstance(record_graph, bool):
        raise ValueError(f"causal_context: record_graph must be True or False, received {record_graph!r}")
    op_graph, op_steps = recorded_unroll(cell, params, values) if record_graph else (None, None)
    run = {name: np.asarray(ops.to_numpy(value), dtype=np.float64)
           for name, value in unroll(cell, params, measures.tensor(cell, values)).items()}
    spikes = run["spikes"].astype(np.int64)
    masked, masked_recurrent = cell.masked_kernels(params)
    kernel = np.asarray(ops.to_numpy(masked), dtype=np.float64)
    recurrent = None if masked_recurrent is None else np.asarray(ops.to_numpy(masked_recurrent), dtype=np.float64)
    beta = _per_neuron(ops.clip(params["beta"], 0.0, 1.0) if cell.learn_beta else cell.beta, cell.size)
    alpha = float(cell.alpha) if isinstance(cell, SynapticCell) else None
    links, starts = causal_links(spikes, values, run["active"], kernel, recurrent, beta, alpha, window)
    events, in_events = spike_times(spikes), input_events(values)
    measured, links = _measure(cell, params, values, kinds, chosen, spikes, in_events, links)
    wiring = cell.units if isinstance(cell.units, Wiring) else None
    return CausalContext(
        layer=cell.name, cell=type(cell).__name__, inputs=values, spikes=spikes, membranes=run["membranes"],
        events=events, input_events=in_events, window_starts=starts, links=links, kernel=kernel,
        recurrent=recurrent,
        bias=np.asarray(ops.to_numpy(params["bias"]), dtype=np.float64) if cell.use_bias else None,
        beta=beta, alpha=alpha,
        threshold=_per_neuron(params["threshold"] if cell.learn_threshold else cell.threshold, cell.size),
        reset=cell.reset, refractory=cell.refractory, window=window, targets=chosen,
        positions=wiring.positions.copy() if isinstance(wiring, SpatialWiring) else None,
        neuron_types=None if wiring is None else list(wiring.neuron_types), influence=measured,
        op_graph=op_graph, op_steps=op_steps)


def _measure(cell: SpikingCell, params: dict, values: np.ndarray, kinds: tuple[str, ...], chosen: list[int],
             spikes: np.ndarray, in_events: np.ndarray,
             links: list[CausalLink]) -> tuple[dict[str, np.ndarray], list[CausalLink]]:
    """The influences asked for, and the links with ``necessary`` set when events were ablated."""
    measured: dict[str, np.ndarray] = {}
    if "gradient" in kinds:
        measured["gradient_x_input"] = measures.gradient_x_input(cell, params, values, chosen)
    if "channels" in kinds:
        measured["channel_count_change"], measured["channel_spikes_changed"] = measures.ablate_channels(
            cell, params, values, chosen)
    if "neurons" in kinds:
        measured["neuron_count_change"], measured["neuron_spikes_changed"] = measures.ablate_neurons(
            cell, params, values, chosen)
    if "events" not in kinds:
        return measured, links
    events = spike_times(spikes)
    trains, changed = measures.ablate_events(cell, params, values, in_events, events)
    originals = spikes[[*in_events[:, 0].tolist(), *events[:, 0].tolist()]]
    counts = trains[..., chosen].sum(axis=1) - originals[..., chosen].sum(axis=1)
    measured["input_event_count_change"] = counts[:len(in_events)]
    measured["spike_event_count_change"] = counts[len(in_events):]
    offset = {"input": 0, "neuron": len(in_events)}
    return measured, [dataclasses.replace(link, necessary=bool(
        changed[offset[link.kind] + link.source_event, events[link.target, 1], events[link.target, 2]]))
        for link in links]

