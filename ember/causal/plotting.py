"""Plots of a :class:`~ember.causal.CausalContext` with matplotlib (an optional extra:
``pip install "ember[plot]"``, imported on first use, as the other plots of Ember).

* :func:`plot_raster`: spikes over time (neurons on the y axis, the inputs' non-zero
  entries below them as rows ``in 0``, ``in 1``, ...), with an arrow for every causal link
  from the presynaptic event to the spike it drove: green when excitatory, red when
  inhibitory, more opaque the larger ``|contribution|``.
* :func:`plot_space`: the neurons at their coordinates (a :class:`~ember.wirings.SpatialWiring`;
  the first two axes of 3-D positions), coloured by influence
  (:meth:`~ember.causal.CausalContext.neuron_influence` unless values are given), with the
  recurrent synapses that carried causal links drawn between them.

Example:
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from ember import layers
    >>> from ember.causal import causal_context, plot_raster
    >>> lif = layers.LIF(1, beta=0.5, recurrent=False, use_bias=False)
    >>> state = {"params": {"kernel": np.array([[1.5]], dtype="float32")}, "buffers": {}}
    >>> ax = plot_raster(causal_context(lif, state, np.ones((1, 2, 1)), influence=()))
    >>> len(ax.patches)   # one arrow per causal link
    2
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _axes(ax: Any, caller: str) -> Any:
    if ax is not None:
        return ax
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(f'{caller} needs matplotlib: pip install "ember[plot]"') from None
    return Figure(figsize=(6, 4)).add_subplot()


def _check_batch(ctx: Any, batch: int, caller: str) -> None:
    if isinstance(batch, bool) or not isinstance(batch, int) or not 0 <= batch < ctx.spikes.shape[0]:
        raise ValueError(f"{caller}: batch must be an index in [0, {ctx.spikes.shape[0]}), received {batch!r}")


def plot_raster(ctx: Any, ax: Any = None, batch: int = 0, arrows: bool = True) -> Any:
    """Raster of batch element ``batch`` with causal arrows (module docstring); returns the Axes.

    Args:
        ctx: a :class:`~ember.causal.CausalContext`.
        ax: a matplotlib Axes to draw on (a new figure's when None).
        batch: the batch element to draw.
        arrows: draw the causal links.

    Raises:
        ValueError: ``batch`` out of range.
    """
    _check_batch(ctx, batch, "plot_raster")
    ax = _axes(ax, "plot_raster")
    features = ctx.inputs.shape[-1]

    def row(kind: str, index: int) -> float:
        return float(index) if kind == "neuron" else -1.0 - index

    spikes = ctx.events[ctx.events[:, 0] == batch]
    inputs = ctx.input_events[ctx.input_events[:, 0] == batch]
    ax.scatter(inputs[:, 1], [row("input", i) for i in inputs[:, 2]], marker="s", s=18, color="tab:gray",
               label="input")
    ax.scatter(spikes[:, 1], spikes[:, 2], marker="|", s=120, color="black", label="spike")
    if arrows:
        from matplotlib.patches import FancyArrowPatch

        largest = max((abs(link.contribution) for link in ctx.links), default=1.0) or 1.0
        for link in ctx.links:
            _, t, j = ctx.events[link.target]
            if ctx.events[link.target, 0] != batch:
                continue
            ax.add_patch(FancyArrowPatch(
                (link.source_step, row(link.kind, link.source)), (float(t), float(j)), arrowstyle="-|>",
                mutation_scale=8, color="tab:green" if link.contribution >= 0 else "tab:red",
                alpha=0.15 + 0.85 * abs(link.contribution) / largest, linewidth=1.0,
                connectionstyle="arc3,rad=0.15"))
    ax.set_yticks([*range(-features, 0), *range(ctx.units)],
                  [*(f"in {i}" for i in range(features - 1, -1, -1)), *(f"n{j}" for j in range(ctx.units))])
    ax.set_xlim(-0.5, ctx.spikes.shape[1] - 0.5)
    ax.set_ylim(-features - 0.5, ctx.units - 0.5)
    ax.set_xlabel("step")
    ax.set_title(f"{ctx.layer}: spikes and causal links (batch {batch})")
    return ax


def plot_space(ctx: Any, ax: Any = None, values: Any = None, links: bool = True) -> Any:
    """The neurons in space coloured by influence (module docstring); returns the Axes.

    Args:
        ctx: a :class:`~ember.causal.CausalContext` of a layer on a :class:`~ember.wirings.SpatialWiring`.
        ax: a matplotlib Axes to draw on (a new figure's when None).
        values: ``(units,)`` values to colour by (default ``ctx.neuron_influence()``).
        links: draw the recurrent synapses that carried causal links.

    Raises:
        ValueError: the layer has no neuron coordinates, or ``values`` has the wrong shape.
    """
    if ctx.positions is None:
        raise ValueError(f"plot_space: layer {ctx.layer!r} has no neuron coordinates; place its neurons with "
                         f"ember.wirings.SpatialWiring")
    colour = ctx.neuron_influence() if values is None else np.asarray(values, dtype=np.float64)
    if colour.shape != (ctx.units,):
        raise ValueError(f"plot_space: values must have shape ({ctx.units},), received {colour.shape}")
    ax = _axes(ax, "plot_space")
    xy = ctx.positions[:, :2] if ctx.positions.shape[1] > 1 else np.c_[ctx.positions[:, 0], np.zeros(ctx.units)]
    if links:
        pairs = {(link.source, int(ctx.events[link.target, 2])) for link in ctx.links if link.kind == "neuron"}
        for k, j in sorted(pairs):
            ax.plot(xy[[k, j], 0], xy[[k, j], 1], color="tab:gray", linewidth=0.8, alpha=0.5, zorder=1)
    points = ax.scatter(xy[:, 0], xy[:, 1], c=colour, cmap="viridis", s=80, zorder=2, edgecolors="black")
    ax.figure.colorbar(points, ax=ax, label="influence")
    for j in range(ctx.units):
        ax.annotate(str(j), xy[j], textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_aspect("equal")
    ax.set_title(f"{ctx.layer}: neurons by influence")
    return ax
