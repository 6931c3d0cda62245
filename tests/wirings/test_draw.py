"""``wiring.draw()``: matplotlib figure content (neurons by type, synapses by polarity) and the
error naming the extra when matplotlib is missing."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from ember import wirings
from ember.wirings.draw import NEURON_COLORS, SYNAPSE_COLORS, neuron_positions

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def _rgba(color):
    return tuple(np.round(matplotlib.colors.to_rgba(color), 6))


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def test_draw_colours_neurons_and_synapses():
    wiring = wirings.NCP(4, 3, 2, 2, 2, 3, 2, seed=1)
    wiring.build(3)
    ax = wiring.draw(draw_labels=True)
    # One arrow per synapse, coloured by polarity.
    arrows = [p for p in ax.patches if isinstance(p, matplotlib.patches.FancyArrowPatch)]
    assert len(arrows) == wiring.synapse_count + wiring.sensory_synapse_count
    colours = sorted(_rgba(p.get_edgecolor())[:3] for p in arrows)
    expected = sorted([_rgba(SYNAPSE_COLORS[1])[:3]] * int(np.sum(wiring.adjacency_matrix == 1)
                                                          + np.sum(wiring.sensory_adjacency_matrix == 1))
                      + [_rgba(SYNAPSE_COLORS[-1])[:3]] * int(np.sum(wiring.adjacency_matrix == -1)
                                                             + np.sum(wiring.sensory_adjacency_matrix == -1)))
    assert colours == expected
    # One marker per neuron (inputs included), coloured by type.
    faces = [_rgba(c.get_facecolor()[0]) for c in ax.collections]
    counts = {kind: faces.count(_rgba(color)) for kind, color in NEURON_COLORS.items()}
    assert counts == {"sensory": 3, "inter": 4, "command": 3, "motor": 2}
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {
        "sensory", "inter", "command", "motor", "excitatory", "inhibitory"}
    assert len(ax.texts) == 12  # labels


def test_draw_on_given_axes_and_unbuilt_wiring():
    import matplotlib.pyplot as plt

    _, ax = plt.subplots()
    wiring = wirings.FullyConnected(3, output_dim=1, self_connections=True)
    assert wiring.draw(ax=ax, legend=False, synapse_colors={1: "black"}) is ax
    assert len(ax.patches) == 9 and ax.get_legend() is None
    positions = neuron_positions(wiring)
    assert set(positions) == {("neuron", i) for i in range(3)}
    assert positions[("neuron", 0)][0] > positions[("neuron", 1)][0]  # motor column right of the inter column


def test_draw_without_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r'pip install "ember\[plot\]"'):
        wirings.FullyConnected(2).draw()


@pytest.mark.parametrize("inputs", [1, 3])
def test_the_title_counts_the_sensory_inputs_drawn_and_their_synapses_apart(inputs):
    """The title used to say "8 sensory" (the synapses from one input) under one sensory neuron."""
    wiring = wirings.AutoNCP(8, 2, seed=0)
    wiring.build(inputs)
    assert wiring.sensory_synapse_count > inputs  # the two counts differ: the title must not mix them up
    ax = wiring.draw()
    faces = [_rgba(c.get_facecolor()[0]) for c in ax.collections]
    drawn = faces.count(_rgba(NEURON_COLORS["sensory"]))
    title = ax.get_title()
    assert drawn == inputs
    assert f", {inputs} sensory input{'s' if inputs > 1 else ''};" in title
    assert title.endswith(f"; {wiring.synapse_count} synapses, {wiring.sensory_synapse_count} from the "
                          f"input{'s' if inputs > 1 else ''}"), title
    assert title.startswith("AutoNCP: 8 neurons, ")


def test_the_title_of_an_unbuilt_wiring_has_no_inputs():
    assert wirings.FullyConnected(3).draw().get_title() == "FullyConnected: 3 neurons; 9 synapses"
