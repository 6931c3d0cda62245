"""The causal context of a spiking layer: proximity, causality and influence.

The tape design Ember comes from asks a ``CausalContext`` to record, besides the op graph,
where the neurons are (**spatial** context, proximity), when they fire and what made them
fire (**temporal** context and **causal** links), and how much one event changes another
(**influence**). :func:`causal_context` builds one from a run of a spiking layer:

* :mod:`~ember.causal.context`: :func:`causal_context` and :class:`CausalContext`;
* :mod:`~ember.causal.links`: integration windows and causal links (their definitions);
* :mod:`~ember.causal.influence`: gradient x input and exact ablations (their definitions);
* :mod:`~ember.causal.unroll`: the run that keeps every neuron's spikes and membranes;
* :mod:`~ember.causal.op_steps`: the run's op graph (``GradientTape(record_graph=True)``) with
  the time step of every op;
* :mod:`~ember.causal.export`: plain data / JSON, networkx and DOT;
* :mod:`~ember.causal.plotting`: raster plots with causal arrows, neurons in space by influence.

It is a separate pass, run on demand: a layer, a model or a ``GradientTape`` pays nothing
for it when it is not used.

Example:
    >>> import numpy as np
    >>> from ember import layers
    >>> from ember.causal import causal_context
    >>> lif = layers.LIF(2, beta=0.5, recurrent=False, use_bias=False)
    >>> state = {"params": {"kernel": np.array([[1.5, 0.0], [0.0, 0.8]], dtype="float32")}, "buffers": {}}
    >>> ctx = causal_context(lif, state, np.ones((1, 2, 2)))
    >>> ctx.events.tolist(), ctx.influence["channel_count_change"][0].tolist()
    ([[0, 0, 0], [0, 1, 0], [0, 1, 1]], [[-2, 0], [0, -1]])
"""

from ember.causal import export, influence, links, op_steps, plotting, unroll
from ember.causal.context import CausalContext, causal_context
from ember.causal.links import CausalLink
from ember.causal.plotting import plot_raster, plot_space

__all__ = ["CausalContext", "CausalLink", "causal_context", "export", "influence", "links", "op_steps",
           "plot_raster", "plot_space", "plotting", "unroll"]
