"""A :class:`~ember.causal.CausalContext` as plain data, a networkx graph, or Graphviz DOT text.

The graph's nodes are events: ``"spike:n"`` (``n`` an index into ``ctx.events``: attributes
``kind="spike"``, ``batch``, ``step``, ``neuron``, ``membrane``, ``window_start``,
``position`` (a list, or None without a :class:`~ember.wirings.SpatialWiring`) and
``neuron_type``) and ``"input:m"`` (``m`` an index into ``ctx.input_events``: ``kind="input"``,
``batch``, ``step``, ``channel``, ``value``). Its edges are the causal links, from the
presynaptic event to the spike, with ``weight`` (the effective synaptic weight),
``contribution``, ``decay``, ``arrival`` and ``necessary`` (the event ablation).

Example:
    >>> import numpy as np
    >>> from ember import layers
    >>> from ember.causal import causal_context
    >>> lif = layers.LIF(1, beta=0.5, recurrent=False, use_bias=False)
    >>> state = {"params": {"kernel": np.array([[1.5]], dtype="float32")}, "buffers": {}}
    >>> ctx = causal_context(lif, state, np.array([[[1.0], [0.0]]]), influence=())
    >>> print(ctx.to_dot())
    digraph "causal" {
      rankdir=LR;
      "input:0" [shape=box, label="in 0 @ 0\\nb0 x=1"];
      "spike:0" [shape=ellipse, label="n0 @ 0\\nb0 U=1.5"];
      "input:0" -> "spike:0" [label="1.5", color="darkgreen"];
    }
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np


def _spike_nodes(ctx: Any) -> list[dict]:
    nodes = []
    for n, (b, t, j) in enumerate(ctx.events.tolist()):
        nodes.append({
            "index": n, "batch": b, "step": t, "neuron": j, "membrane": float(ctx.membranes[b, t, j]),
            "window_start": int(ctx.window_starts[n]),
            "position": None if ctx.positions is None else ctx.positions[j].tolist(),
            "neuron_type": None if ctx.neuron_types is None else ctx.neuron_types[j],
        })
    return nodes


def _input_nodes(ctx: Any) -> list[dict]:
    return [{"index": m, "batch": b, "step": t, "channel": i, "value": float(ctx.inputs[b, t, i])}
            for m, (b, t, i) in enumerate(ctx.input_events.tolist())]


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def to_dict(ctx: Any) -> dict:
    """The context as plain data (JSON-serializable): its settings, the spike times of every
    neuron (``spike_times[b][j]``: the steps), the events, the links, the influences, and the
    op graph with each op's step (None unless recorded)."""
    batch, _, units = ctx.spikes.shape
    return {
        "layer": ctx.layer, "cell": ctx.cell, "batch": int(batch), "steps": int(ctx.spikes.shape[1]),
        "features": int(ctx.inputs.shape[-1]), "units": int(units),
        "beta": ctx.beta.tolist(), "alpha": ctx.alpha, "threshold": ctx.threshold.tolist(), "reset": ctx.reset,
        "refractory": ctx.refractory, "window": ctx.window, "targets": list(ctx.targets),
        "positions": _plain(ctx.positions), "neuron_types": ctx.neuron_types,
        "kernel": ctx.kernel.tolist(), "recurrent": _plain(ctx.recurrent),
        "bias": _plain(ctx.bias),
        "spike_times": [[ctx.spike_times_of(j, b) for j in range(units)] for b in range(batch)],
        "events": _spike_nodes(ctx), "input_events": _input_nodes(ctx),
        "links": [link.to_dict() for link in ctx.links],
        "influence": {name: value.tolist() for name, value in sorted(ctx.influence.items())},
        "op_graph": None if ctx.op_graph is None else ctx.op_graph.to_dict(),
        "op_steps": ctx.op_steps,
    }


def _source_id(link: Any) -> str:
    return f"{'input' if link.kind == 'input' else 'spike'}:{link.source_event}"


def to_networkx(ctx: Any) -> Any:
    """A ``networkx.DiGraph``: events as nodes, causal links as weighted edges (module docstring).

    Raises:
        ImportError: networkx is not installed (``pip install "ember[graph]"``).
    """
    try:
        import networkx as nx
    except ImportError:
        raise ImportError('CausalContext.to_networkx needs networkx: pip install "ember[graph]"') from None
    graph = nx.DiGraph(layer=ctx.layer, cell=ctx.cell)
    for node in _input_nodes(ctx):
        graph.add_node(f"input:{node.pop('index')}", kind="input", **node)
    for node in _spike_nodes(ctx):
        graph.add_node(f"spike:{node.pop('index')}", kind="spike", **node)
    for link in ctx.links:
        graph.add_edge(_source_id(link), f"spike:{link.target}", kind=link.kind, weight=link.weight,
                       contribution=link.contribution, decay=link.decay, arrival=link.arrival,
                       necessary=link.necessary)
    return graph


def to_dot(ctx: Any, name: str = "causal") -> str:
    """Graphviz DOT text: inputs as boxes, spikes as ellipses (``n<neuron> @ <step>``), links labelled
    with their contribution, green when excitatory, red when inhibitory, bold when necessary."""
    lines = [f"digraph {json.dumps(name)} {{", "  rankdir=LR;"]
    for node in _input_nodes(ctx):
        label = f"in {node['channel']} @ {node['step']}\\nb{node['batch']} x={node['value']:.4g}"
        lines.append(f'  "input:{node["index"]}" [shape=box, label="{label}"];')
    for node in _spike_nodes(ctx):
        label = f"n{node['neuron']} @ {node['step']}\\nb{node['batch']} U={node['membrane']:.4g}"
        lines.append(f'  "spike:{node["index"]}" [shape=ellipse, label="{label}"];')
    for link in ctx.links:
        style = ", style=bold" if link.necessary else ""
        color = "darkgreen" if link.contribution >= 0 else "red"
        lines.append(f'  "{_source_id(link)}" -> "spike:{link.target}" '
                     f'[label="{link.contribution:.4g}", color="{color}"{style}];')
    lines.append("}")
    return "\n".join(lines)
