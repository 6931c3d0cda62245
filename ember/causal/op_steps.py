"""The op graph of a spiking layer's run, with the time step of every op.

:func:`recorded_unroll` runs the layer under ``GradientTape(record_graph=True)`` (the
tape's :class:`~ember.autodiff.op_graph.OpGraph`: op names, shapes, order, edges) and
marks where each step's ops begin, so every recorded op gets its step: ``t`` for the ops
of step ``t`` of the recurrent unroll, ``-1`` for the ops that serve every step at once
(the input currents of all steps, computed before the loop, and the final stacking).

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> from ember.causal.op_steps import recorded_unroll
    >>> ember.set_backend("numpy")
    >>> lif = layers.LIF(2, recurrent=False)
    >>> state = lif.build((None, 3, 2), seed=0)
    >>> graph, steps = recorded_unroll(lif.cell, state["params"], np.ones((1, 3, 2)))
    >>> len(steps) == len(graph.nodes), sorted(set(steps))
    (True, [-1, 0, 1, 2])

Every backend's recorder records an ``ember.custom_gradient`` call (the spikes' surrogate) as
one op; :func:`recorded_unroll` checks that every step's spike op is in the graph and raises
``NotImplementedError`` for a recorder that misses them (the recurrent part of each step would
be missing from the record).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import backends
from ember.autodiff.tape import GradientTape
from ember.causal.influence import tensor
from ember.causal.unroll import unroll
from ember.layers.spiking.cell import SpikingCell


def recorded_unroll(cell: SpikingCell, params: dict, inputs: np.ndarray) -> tuple[Any, list[int]]:
    """``(op_graph, op_steps)``: the recorded graph of one run on ``inputs`` (watched) and each op's step.

    Raises:
        NotImplementedError: the backend's recorder misses the spikes' ``custom_gradient`` ops.
    """
    x = tensor(cell, inputs)
    marks: list[int] = []
    with GradientTape(record_graph=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        unroll(cell, params, x, on_step=lambda t: marks.append(len(tape.graph.nodes)))
    graph = tape.graph
    spikes = sum(node.op == "custom_gradient" for node in graph.nodes)
    if spikes < len(marks) - 1:
        raise NotImplementedError(
            f"causal_context(record_graph=True): the {backends.current().name} tape's recorded graph misses the "
            f"spikes' ember.custom_gradient ops ({spikes} recorded for {len(marks) - 1} steps) and the ops that "
            f"use them; record the op graph on the numpy or mlx backend (the other records are the same)")
    steps = [-1] * len(graph.nodes)
    for t in range(len(marks) - 1):
        steps[marks[t]:marks[t + 1]] = [t] * (marks[t + 1] - marks[t])
    return graph, steps
