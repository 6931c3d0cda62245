"""Plot a wiring with matplotlib (an optional extra: ``pip install "ember[plot]"``).

Neurons are laid out in columns by type, sensory inputs first, then inter, command and
motor neurons; synapses are arrows coloured by polarity (excitatory / inhibitory), and
synapses between neurons of one column are drawn as arcs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

NEURON_COLORS = {"sensory": "tab:olive", "inter": "tab:blue", "command": "tab:orange", "motor": "tab:purple"}
SYNAPSE_COLORS = {1: "tab:green", -1: "tab:red"}
_COLUMNS = ("sensory", "inter", "command", "motor")


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError('wiring.draw() needs matplotlib: pip install "ember[plot]"') from None
    return plt


def neuron_positions(wiring: Any) -> dict:
    """``{("sensory", i) or ("neuron", i): (x, y)}``: one column per neuron type present."""
    groups: dict[str, list] = {kind: [] for kind in _COLUMNS}
    if wiring.input_dim is not None:
        groups["sensory"] = [("sensory", i) for i in range(wiring.input_dim)]
    for i, kind in enumerate(wiring.neuron_types):
        groups[kind].append(("neuron", i))
    columns = [groups[kind] for kind in _COLUMNS if groups[kind]]
    tallest = max(len(c) for c in columns)
    positions = {}
    for x, column in enumerate(columns):
        offset = (tallest - len(column)) / 2.0
        for y, key in enumerate(column):
            positions[key] = (float(x), float(tallest - 1 - offset - y))
    return positions


def draw_wiring(wiring: Any, ax: Any = None, neuron_colors: dict | None = None, synapse_colors: dict | None = None,
                draw_labels: bool = False, neuron_size: float = 120.0, legend: bool = True) -> Any:
    """Draw ``wiring`` on ``ax`` (a new figure when None) and return the Axes.

    Args:
        wiring: a :class:`~ember.wirings.Wiring` (built or not; sensory inputs are shown
            once it is built).
        ax: a matplotlib Axes to draw on.
        neuron_colors: ``{type: color}`` overriding :data:`NEURON_COLORS`.
        synapse_colors: ``{1: color, -1: color}`` overriding :data:`SYNAPSE_COLORS`.
        draw_labels: write each neuron's id next to it.
        neuron_size: marker area of a neuron.
        legend: add a legend of neuron types and synapse polarities.

    Example:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> from ember import wirings
        >>> wiring = wirings.AutoNCP(8, 2, seed=0)
        >>> wiring.build(3)
        >>> ax = wiring.draw()
        >>> sorted(t.get_text() for t in ax.get_legend().get_texts())[:2]
        ['command', 'excitatory']
    """
    plt = _pyplot()
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch

    colors = {**NEURON_COLORS, **(neuron_colors or {})}
    polarity_colors = {**SYNAPSE_COLORS, **(synapse_colors or {})}
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 5))
    positions = neuron_positions(wiring)
    types = wiring.neuron_types

    def arrow(start: tuple, end: tuple, polarity: int) -> None:
        same_column = start[0] == end[0]
        if start == end:  # a self-synapse: a small loop above the neuron
            ax.add_patch(FancyArrowPatch((start[0] - 0.05, start[1] + 0.05), (start[0] + 0.05, start[1] + 0.05),
                                         connectionstyle="arc3,rad=-2.5", arrowstyle="-|>", mutation_scale=8,
                                         color=polarity_colors[polarity], linewidth=0.8, alpha=0.7))
            return
        ax.add_patch(FancyArrowPatch(start, end, connectionstyle=f"arc3,rad={0.4 if same_column else 0.0}",
                                     arrowstyle="-|>", mutation_scale=8, shrinkA=6, shrinkB=6,
                                     color=polarity_colors[polarity], linewidth=0.8, alpha=0.6))

    if wiring.sensory_adjacency_matrix is not None:
        for src, dest in zip(*np.nonzero(wiring.sensory_adjacency_matrix)):
            arrow(positions[("sensory", int(src))], positions[("neuron", int(dest))],
                  int(wiring.sensory_adjacency_matrix[src, dest]))
    for src, dest in zip(*np.nonzero(wiring.adjacency_matrix)):
        arrow(positions[("neuron", int(src))], positions[("neuron", int(dest))],
              int(wiring.adjacency_matrix[src, dest]))

    for (group, index), (x, y) in positions.items():
        kind = "sensory" if group == "sensory" else types[index]
        ax.scatter([x], [y], s=neuron_size, color=colors[kind], zorder=3, edgecolors="black", linewidths=0.5)
        if draw_labels:
            ax.annotate(f"{'s' if group == 'sensory' else ''}{index}", (x, y), textcoords="offset points",
                        xytext=(6, 4), fontsize=7)
    if legend:
        present = [kind for kind in _COLUMNS if kind in {("sensory" if g == "sensory" else types[i])
                                                          for g, i in positions}]
        handles = [Line2D([], [], marker="o", linestyle="", color=colors[kind], markeredgecolor="black",
                          label=kind) for kind in present]
        handles += [Line2D([], [], color=polarity_colors[1], label="excitatory"),
                    Line2D([], [], color=polarity_colors[-1], label="inhibitory")]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax.set_axis_off()
    ax.autoscale_view()
    ax.set_title(plot_title(wiring))
    return ax


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def plot_title(wiring: Any) -> str:
    """The plot's title: the neurons and sensory inputs drawn, then the synapses between neurons and those
    from the inputs (counted apart, so a count of synapses is never read as one of inputs).

    Example:
        >>> from ember import wirings
        >>> wiring = wirings.AutoNCP(8, 2, seed=0)
        >>> plot_title(wiring)
        'AutoNCP: 8 neurons; 9 synapses'
        >>> wiring.build(1)
        >>> plot_title(wiring)
        'AutoNCP: 8 neurons, 1 sensory input; 9 synapses, 4 from the input'
    """
    text = f"{type(wiring).__name__}: {_count(wiring.units, 'neuron')}"
    if wiring.input_dim is None:
        return f"{text}; {_count(wiring.synapse_count, 'synapse')}"
    inputs = "the input" if wiring.input_dim == 1 else "the inputs"
    return (f"{text}, {_count(wiring.input_dim, 'sensory input')}; {_count(wiring.synapse_count, 'synapse')}, "
            f"{wiring.sensory_synapse_count} from {inputs}")
