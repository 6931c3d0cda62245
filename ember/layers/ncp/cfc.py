"""``CfC``: the closed-form continuous-time recurrent layer, dense or wired.

``CfC(units)`` is ``RNN(CfCCell(units, ...))``; ``CfC(wiring)`` is
``RNN(WiredCfCCell(wiring, ...))`` with the output size of the wiring's motor neurons;
``mixed_memory=True`` wraps either in a :class:`~ember.layers.MixedMemoryCell` (an LSTM
memory alongside). The equations, and which published formulation they follow (the ncps
package's PyTorch cell), are in :mod:`ember.layers.ncp.cfc_cell`.

Irregularly sampled sequences: ``layer.apply(state, x, timespans=t)`` with ``t`` of shape
``(batch, time)`` (or ``(batch, time, 1)``) gives each step its elapsed time (1.0 by
default); in a functional model, ``cfc(x, timespans=t)`` with ``t`` an ``ember.Input``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ember.layers.ncp._common import compact_repr, default_name
from ember.layers.ncp.cfc_cell import CfCCell
from ember.layers.ncp.mixed_memory import MixedMemoryCell
from ember.layers.ncp.wired_cfc_cell import WiredCfCCell
from ember.layers.rnn.cell import RNNCell
from ember.layers.rnn.rnn import RNN
from ember.validation import check_bool
from ember.wirings import Wiring


class CfC(RNN):
    """Closed-form continuous-time RNN layer (Hasani et al., 2022).

    Args:
        units: an int (a dense ``CfCCell`` of that many units) or an
            :class:`~ember.wirings.Wiring` (a ``WiredCfCCell``; the output has
            ``wiring.output_dim`` features, the state ``wiring.units``).
        mixed_memory: add an LSTM memory (states ``[h, c]`` instead of ``[h]``).
        mode: ``"default"``, ``"no_gate"`` or ``"pure"`` (see :class:`CfCCell`).
        activation: the backbone's activation (dense cells; ``"lecun_tanh"``).
        backbone_units: backbone width (dense cells; None means 128).
        backbone_layers: backbone depth (dense cells; None means 1).
        backbone_dropout: backbone dropout while training (dense cells; None means 0).
        fully_recurrent: wired cells: all-to-all recurrence within each wiring layer.
        seed: seed of the backbone dropout masks when ``apply`` gets no ``rng``.
        return_sequences, return_state, go_backwards, stateful, unroll, time_major,
            zero_output_for_mask: as for :class:`~ember.layers.RNN` (keyword-only).

    The backbone arguments apply to dense cells only: giving one with a wiring raises.
    The state is the cell's (see :class:`CfCCell`, :class:`WiredCfCCell`,
    :class:`MixedMemoryCell` for the layouts).

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> cfc = layers.CfC(wirings.AutoNCP(12, 2, seed=0), return_sequences=True)
        >>> state = cfc.build((None, 5, 3), seed=0)
        >>> ops.shape(cfc.apply(state, ops.ones((4, 5, 3)), timespans=ops.ones((4, 5)))[0])
        (4, 5, 2)
        >>> ops.shape(layers.CfC(8, backbone_units=16).apply(
        ...     layers.CfC(8, backbone_units=16).build((None, 5, 3), seed=0), ops.ones((4, 5, 3)))[0])
        (4, 8)
    """

    units: Any
    mixed_memory: bool = False
    mode: str = "default"
    activation: Any = "lecun_tanh"
    backbone_units: int | None = None
    backbone_layers: int | None = None
    backbone_dropout: float | None = None
    fully_recurrent: bool = True
    seed: int | None = None
    cell: Any = dataclasses.field(init=False, repr=False)

    _cell_class = CfCCell  # the layer builds its cell from its fields (see _make_cell)
    _dense_cell: ClassVar[type[CfCCell]] = CfCCell  # the cells _make_cell builds (StrideAwareCfC: its own)
    _wired_cell: ClassVar[type[WiredCfCCell]] = WiredCfCCell

    def _extra_cell_fields(self) -> dict:
        """Fields a subclass passes on to both of its cells (none here)."""
        return {}

    def __post_init__(self) -> None:
        default_name(self, "cfc")
        super().__post_init__()

    def __repr__(self) -> str:
        return compact_repr(self)

    def _make_cell(self) -> RNNCell:
        check_bool(self.name, "mixed_memory", self.mixed_memory)
        common: dict[str, Any] = {"name": self.name, "dtype": self.dtype, "trainable": self.trainable}
        extra = self._extra_cell_fields()
        cell: RNNCell
        if isinstance(self.units, Wiring):
            given = [f for f in ("backbone_units", "backbone_layers", "backbone_dropout")
                     if getattr(self, f) is not None]
            if given:
                raise ValueError(f"{self.name}: {', '.join(given)} cannot be used with a wiring "
                                 f"(a wired CfC has no backbone); leave them None")
            cell = self._wired_cell(self.units, mode=self.mode, fully_recurrent=self.fully_recurrent,
                                    **extra, **common)
            self._normalize("units", cell.wiring)  # the cell's private copy
        else:
            cfc = self._dense_cell(
                self.units, mode=self.mode, activation=self.activation,
                backbone_units=128 if self.backbone_units is None else self.backbone_units,
                backbone_layers=1 if self.backbone_layers is None else self.backbone_layers,
                backbone_dropout=0.0 if self.backbone_dropout is None else self.backbone_dropout,
                seed=self.seed, **extra, **common)
            self._normalize("activation", cfc.activation)
            cell = cfc
        if self.mixed_memory:
            cell = MixedMemoryCell(cell, **common)
        return cell
