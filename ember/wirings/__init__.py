"""``ember.wirings``: connectivity of neural circuits for the wired cells (NCP, LTC, CfC).

* :class:`Wiring`: the base (adjacency matrices with synapse polarity, neuron types);
* :class:`FullyConnected`, :class:`Random`: dense and randomly sparse circuits;
* :class:`NCP`, :class:`AutoNCP`: Neural Circuit Policies (sensory -> inter -> command -> motor);
* :class:`SpatialWiring`: any of them with neuron coordinates (spatially embedded networks).

Wirings are backend-independent data (NumPy int matrices from a seed); the cells in
:mod:`ember.layers.ncp` turn them into weight masks. ``wiring.draw()`` needs matplotlib
(``pip install "ember[plot]"``).

Example:
    >>> from ember import wirings
    >>> wiring = wirings.AutoNCP(12, output_size=2, sparsity_level=0.5, seed=1)
    >>> wiring.units, wiring.output_dim, [len(wiring.get_neurons_of_layer(i)) for i in range(3)]
    (12, 2, [6, 4, 2])
"""

from ember.wirings.auto_ncp import AutoNCP
from ember.wirings.base import NEURON_TYPES, Wiring
from ember.wirings.fully_connected import FullyConnected
from ember.wirings.ncp import NCP
from ember.wirings.random import Random
from ember.wirings.spatial import SpatialWiring

__all__ = ["AutoNCP", "FullyConnected", "NCP", "NEURON_TYPES", "Random", "SpatialWiring", "Wiring"]
