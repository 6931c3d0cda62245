"""``FullyConnected``: every neuron connected to every neuron (and every input to every neuron)."""

from __future__ import annotations

import numpy as np

from ember.serialization import register_serializable
from ember.validation import check_bool
from ember.wirings.base import Wiring, check_seed, random_polarity


@register_serializable("ember")
class FullyConnected(Wiring):
    """A dense circuit: a synapse from every neuron to every neuron, random polarities.

    Polarities are excitatory (``+1``) with probability 2/3 and inhibitory (``-1``)
    otherwise, drawn with ``numpy.random.default_rng(erev_init_seed)``; ``build`` connects
    every input feature to every neuron, polarities drawn from a second stream of the
    same seed. ``LTC(units)``, ``LTCCell(units)`` and ``NCPCell(units)`` use this wiring
    when given an int.

    Args:
        units: number of neurons.
        output_dim: number of motor neurons (the first ``output_dim``); default ``units``.
        self_connections: include the synapses ``i -> i``.
        erev_init_seed: seed of the polarities (non-negative int).

    Example:
        >>> from ember import wirings
        >>> wiring = wirings.FullyConnected(4, output_dim=2, self_connections=False)
        >>> wiring.synapse_count, wiring.neuron_types
        (12, ['motor', 'motor', 'inter', 'inter'])
        >>> wiring.build(3)
        >>> wiring.sensory_synapse_count
        12
    """

    def __init__(self, units: int, output_dim: int | None = None, self_connections: bool = True,
                 erev_init_seed: int = 1111) -> None:
        super().__init__(units, output_dim)
        check_bool("FullyConnected", "self_connections", self_connections)
        self.self_connections = self_connections
        self.erev_init_seed = check_seed("FullyConnected", "erev_init_seed", erev_init_seed)
        rng = np.random.default_rng(self.erev_init_seed)
        polarity = random_polarity(rng, size=(self.units, self.units)).astype(np.int32)
        if not self_connections:
            np.fill_diagonal(polarity, 0)
        self.adjacency_matrix = polarity

    def _draw_sensory_synapses(self, sensory: np.ndarray) -> None:
        rng = np.random.default_rng((self.erev_init_seed, 1))
        sensory[...] = random_polarity(rng, size=sensory.shape)

    def _constructor_config(self) -> dict:
        return {"units": self.units, "output_dim": self.output_dim, "self_connections": self.self_connections,
                "erev_init_seed": self.erev_init_seed}
