"""``SpikingRNN``: what the spiking layers (``LIF``, ``ALIF``, ``Synaptic``) share.

Each is an :class:`~ember.layers.RNN` that builds its cell (``_cell_class``) from its own fields,
as ``LSTM`` builds an ``LSTMCell``: the :class:`~ember.layers.spiking.cell.SpikingFields` after
the RNN's, then the cell's own (``ALIF``'s ``adaptation``, ``rho``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember.layers.ncp._common import compact_repr
from ember.layers.rnn.rnn import RNN
from ember.layers.spiking.cell import SpikingFields


class SpikingRNN(SpikingFields, RNN):
    """Base of the spiking layers: an RNN over the spiking cell its subclass names in
    ``_cell_class``, configured by the same fields (the cell is not an argument).

    Example:
        >>> import ember
        >>> from ember import layers
        >>> from ember.layers.spiking.spiking_rnn import SpikingRNN
        >>> lif = layers.LIF(3, refractory=2)
        >>> isinstance(lif, SpikingRNN), lif.cell.state_names
        (True, ('mem', 'spk', 'refractory'))
    """

    cell: Any = dataclasses.field(init=False, repr=False)

    def __repr__(self) -> str:
        return compact_repr(self)
