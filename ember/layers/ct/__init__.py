"""Continuous-time recurrent cells and layers beyond CfC/LTC: CT-RNN and CT-GRU.

* :class:`CTRNNCell`, :class:`CTGRUCell`: cells following the RNN cell protocol
  (:mod:`ember.layers.rnn.cell`), on a wiring (NCP/AutoNCP, ...) or fully connected (an
  int ``units``), usable in :class:`~ember.layers.RNN` and as one-step layers;
* :class:`CTRNN`, :class:`CTGRU`: the sequence layers (``RNN`` around those cells).

Both are the continuous-time baselines published with the liquid time-constant paper
(Hasani et al., AAAI 2021); the LTC with a selectable ODE solver and the stride-aware CfC
live with the other NCP cells in :mod:`ember.layers.ncp`.
"""

from ember.layers.ct.ctgru import CTGRU
from ember.layers.ct.ctgru_cell import CTGRUCell
from ember.layers.ct.ctrnn import CTRNN
from ember.layers.ct.ctrnn_cell import CTRNNCell

__all__ = ["CTGRU", "CTGRUCell", "CTRNN", "CTRNNCell"]
