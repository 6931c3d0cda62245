"""``CTGRU``: the continuous-time GRU layer (Mozer et al., 2017), on a wiring or fully connected.

``CTGRU(units_or_wiring)`` is ``RNN(CTGRUCell(units_or_wiring, ...))`` (an int means a
``FullyConnected(units)`` wiring); the output has the wiring's ``output_dim`` features and
the state ``units * timescales``. The equations are in :mod:`ember.layers.ct.ctgru_cell`.
Irregularly sampled sequences: ``layer.apply(state, x, timespans=t)`` with ``t`` of shape
``(batch, time)`` (the traces decay by ``exp(-t / tau_i)``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember.layers.ct.ctgru_cell import CTGRUCell
from ember.layers.ncp._common import compact_repr, default_name
from ember.layers.rnn.cell import RNNCell
from ember.layers.rnn.rnn import RNN
from ember.wirings import Wiring


class CTGRU(RNN):
    """Continuous-time GRU layer (the CT-GRU baseline of Hasani et al., 2021).

    Args:
        units: an int (fully connected wiring of that many neurons, all of them outputs) or
            an :class:`~ember.wirings.Wiring`.
        timescales, kernel_initializer, bias_initializer: as for :class:`CTGRUCell`.
        return_sequences, return_state, go_backwards, stateful, unroll, time_major,
            zero_output_for_mask: as for :class:`~ember.layers.RNN` (keyword-only).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> ctgru = layers.CTGRU(4, timescales=3, return_state=True)
        >>> state = ctgru.build((None, 5, 2), seed=0)
        >>> y, hh = ctgru.apply(state, ops.ones((3, 5, 2)))[0]
        >>> ops.shape(y), ops.shape(hh)
        ((3, 4), (3, 12))
    """

    units: Any
    timescales: int = 8
    kernel_initializer: Any = "glorot_uniform"
    bias_initializer: Any = "zeros"
    cell: Any = dataclasses.field(init=False, repr=False)

    _cell_class = CTGRUCell  # the layer builds its cell from its fields (see _make_cell)

    def __post_init__(self) -> None:
        default_name(self, "ctgru")
        super().__post_init__()

    def __repr__(self) -> str:
        return compact_repr(self)

    def _make_cell(self) -> RNNCell:
        cell = CTGRUCell(self.units, timescales=self.timescales, kernel_initializer=self.kernel_initializer,
                         bias_initializer=self.bias_initializer, name=self.name, dtype=self.dtype,
                         trainable=self.trainable)
        if isinstance(self.units, Wiring):
            self._normalize("units", cell.wiring)  # the cell's private copy
        for field in ("timescales", "kernel_initializer", "bias_initializer"):
            self._normalize(field, getattr(cell, field))
        return cell
