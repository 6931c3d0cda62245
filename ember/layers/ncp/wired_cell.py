"""``WiredCell``: what the recurrent cells on a wiring share (``NCPCell``, ``LTCCell``,
``WiredCfCCell``, ``CTGRUCell`` and their subclasses).

Such a cell's first field is its ``wiring`` (an :class:`~ember.wirings.Wiring`; an int ``units``
for ``FullyConnected(units)`` where the cell allows it), of which it keeps a private copy. Its
state holds one value per neuron (``CTGRUCell``: one per time scale) and its output is the motor neurons' (the first
``wiring.output_dim``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ember.layers.ncp._common import compact_repr, normalize_wiring
from ember.layers.rnn.cell import RNNCell


class WiredCell(RNNCell):
    """Base of the cells on a wiring: the ``wiring`` field (checked and copied after the base
    checks), ``state_size`` (one state per neuron; ``CTGRUCell`` overrides it), ``output_size``
    (the motor neurons) and a repr that shows the wiring by its own short repr.
    ``_wiring_allows_units = False`` refuses an int for the wiring.

    Example:
        >>> from ember import layers, wirings
        >>> from ember.layers.ncp.wired_cell import WiredCell
        >>> cell = layers.NCPCell(wirings.AutoNCP(8, 2, seed=0))
        >>> isinstance(cell, WiredCell), cell.state_size, cell.output_size
        (True, 8, 2)
    """

    wiring: Any

    _wiring_allows_units: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        normalize_wiring(self, allow_units=self._wiring_allows_units)

    def __repr__(self) -> str:
        return compact_repr(self)

    @property
    def state_size(self) -> int:
        return self.wiring.units

    @property
    def output_size(self) -> int:
        return self.wiring.output_dim
