"""``LTC``: the liquid time-constant recurrent layer, on a wiring or fully connected.

``LTC(units_or_wiring)`` is ``RNN(LTCCell(units_or_wiring, ...))`` (an int means a
``FullyConnected(units)`` wiring); the output has the wiring's ``output_dim`` (motor
neuron) features. ``mixed_memory=True`` wraps the cell in a
:class:`~ember.layers.MixedMemoryCell`. The equations, the ODE solver and the parameter
constraints are in :mod:`ember.layers.ncp.ltc_cell`.

Irregularly sampled sequences: ``layer.apply(state, x, timespans=t)`` with ``t`` of shape
``(batch, time)`` gives each step its elapsed time (1.0 by default).

On an NCP wiring keep ``ode_unfolds >= 3``: each solver unfold crosses one synapse, and
an input needs three (sensory -> inter -> command -> motor) to reach the outputs in the
same step (see :mod:`ember.layers.ncp.ltc_cell`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember.layers.ncp._common import compact_repr
from ember.layers.ncp.ltc_cell import LTCCell
from ember.layers.ncp.mixed_memory import MixedMemoryCell
from ember.layers.rnn.cell import RNNCell
from ember.layers.rnn.rnn import RNN
from ember.validation import check_bool
from ember.wirings import Wiring


class LTC(RNN):
    """Liquid time-constant RNN layer (Hasani et al., 2021).

    Args:
        units: an int (fully connected wiring of that many neurons, all of them outputs) or
            an :class:`~ember.wirings.Wiring`.
        mixed_memory: add an LSTM memory (states ``[v, c]`` instead of ``[v]``).
        input_mapping, output_mapping, ode_unfolds, epsilon, implicit_param_constraints,
            initialization_ranges, solver: as for :class:`LTCCell` (``solver``:
            ``"semi_implicit"``, ``"euler"`` or ``"rk4"``).
        return_sequences, return_state, go_backwards, stateful, unroll, time_major,
            zero_output_for_mask: as for :class:`~ember.layers.RNN` (keyword-only).

    With ``implicit_param_constraints=False`` the layer reports ``NonNeg`` constraints for
    the synaptic weights and capacitances (:meth:`constraints`), which ``fit`` applies.

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> ltc = layers.LTC(wirings.AutoNCP(8, 1, seed=0), ode_unfolds=3, return_sequences=True)
        >>> state = ltc.build((None, 6, 2), seed=0)
        >>> ops.shape(ltc.apply(state, ops.ones((3, 6, 2)), timespans=ops.ones((3, 6)))[0])
        (3, 6, 1)
    """

    units: Any
    mixed_memory: bool = False
    input_mapping: str | None = "affine"
    output_mapping: str | None = "affine"
    ode_unfolds: int = 6
    epsilon: float = 1e-8
    implicit_param_constraints: bool = True
    initialization_ranges: dict | None = None
    solver: str = "semi_implicit"
    cell: Any = dataclasses.field(init=False, repr=False)

    _cell_class = LTCCell  # the layer builds its cell from its fields (see _make_cell)

    def __repr__(self) -> str:
        return compact_repr(self)

    def _make_cell(self) -> RNNCell:
        check_bool(self.name, "mixed_memory", self.mixed_memory)
        common: dict[str, Any] = {"name": self.name, "dtype": self.dtype, "trainable": self.trainable}
        ltc = LTCCell(self.units, input_mapping=self.input_mapping, output_mapping=self.output_mapping,
                      ode_unfolds=self.ode_unfolds, epsilon=self.epsilon,
                      implicit_param_constraints=self.implicit_param_constraints,
                      initialization_ranges=self.initialization_ranges, solver=self.solver, **common)

        if isinstance(self.units, Wiring):
            self._normalize("units", ltc.wiring)  # the cell's private copy
        for field in ("ode_unfolds", "epsilon", "initialization_ranges"):
            self._normalize(field, getattr(ltc, field))
        if self.mixed_memory:
            return MixedMemoryCell(ltc, **common)
        return ltc
