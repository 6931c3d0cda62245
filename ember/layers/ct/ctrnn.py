"""``CTRNN``: the continuous-time RNN layer, on a wiring or fully connected.

``CTRNN(units_or_wiring)`` is ``RNN(CTRNNCell(units_or_wiring, ...))`` (an int means a
``FullyConnected(units)`` wiring); the output has the wiring's ``output_dim`` (motor
neuron) features. The equations and the Euler unfolding are in
:mod:`ember.layers.ct.ctrnn_cell`. Irregularly sampled sequences:
``layer.apply(state, x, timespans=t)`` with ``t`` of shape ``(batch, time)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember.layers.ct.ctrnn_cell import CTRNNCell
from ember.layers.ncp._common import compact_repr, default_name
from ember.layers.rnn.cell import RNNCell
from ember.layers.rnn.rnn import RNN
from ember.wirings import Wiring


class CTRNN(RNN):
    """Continuous-time RNN layer (the CT-RNN baseline of Hasani et al., 2021).

    Args:
        units: an int (fully connected wiring of that many neurons, all of them outputs) or
            an :class:`~ember.wirings.Wiring`.
        activation, ode_unfolds, kernel_initializer, recurrent_initializer,
            bias_initializer: as for :class:`CTRNNCell`.
        return_sequences, return_state, go_backwards, stateful, unroll, time_major,
            zero_output_for_mask: as for :class:`~ember.layers.RNN` (keyword-only).

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> ctrnn = layers.CTRNN(wirings.AutoNCP(8, 1, seed=0), ode_unfolds=2, return_sequences=True)
        >>> state = ctrnn.build((None, 6, 2), seed=0)
        >>> ops.shape(ctrnn.apply(state, ops.ones((3, 6, 2)), timespans=ops.ones((3, 6)))[0])
        (3, 6, 1)
    """

    units: Any
    activation: Any = "tanh"
    ode_unfolds: int = 6
    kernel_initializer: Any = "glorot_uniform"
    recurrent_initializer: Any = "orthogonal"
    bias_initializer: Any = "zeros"
    cell: Any = dataclasses.field(init=False, repr=False)

    _cell_class = CTRNNCell  # the layer builds its cell from its fields (see _make_cell)

    def __post_init__(self) -> None:
        default_name(self, "ctrnn")
        super().__post_init__()

    def __repr__(self) -> str:
        return compact_repr(self)

    def _make_cell(self) -> RNNCell:
        cell = CTRNNCell(self.units, activation=self.activation, ode_unfolds=self.ode_unfolds,
                         kernel_initializer=self.kernel_initializer,
                         recurrent_initializer=self.recurrent_initializer, bias_initializer=self.bias_initializer,
                         name=self.name, dtype=self.dtype, trainable=self.trainable)
        if isinstance(self.units, Wiring):
            self._normalize("units", cell.wiring)  # the cell's private copy
        for field in ("activation", "ode_unfolds", "kernel_initializer", "recurrent_initializer", "bias_initializer"):
            self._normalize(field, getattr(cell, field))
        return cell
