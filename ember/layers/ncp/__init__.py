"""Neural circuit policy cells and layers: CfC, LTC and wiring-masked cells.

* :class:`CfCCell`, :class:`WiredCfCCell`, :class:`LTCCell`, :class:`NCPCell` (alias
  ``NCP`` in :mod:`ember.layers`): cells following the RNN cell protocol
  (:mod:`ember.layers.rnn.cell`), usable in :class:`~ember.layers.RNN` and as one-step layers;
* :class:`MixedMemoryCell`: any of them with an LSTM memory alongside;
* :class:`CfC`, :class:`LTC`: the sequence layers (``RNN`` around those cells);
* :class:`StrideAwareCfC` (cells :class:`StrideAwareCfCCell`, :class:`StrideAwareWiredCfCCell`):
  a CfC whose elapsed time is the step's stride times ``stride_length * time_scale_factor``.

Formulations: the CfC follows the ncps package's PyTorch cell (tanh heads, time gate
``sigmoid(t_a * t + t_b)``; see :mod:`ember.layers.ncp.cfc_cell` for why), the LTC the
ncps fused semi-implicit ODE solver (or explicit Euler / RK4 with ``solver=``), the mixed
memory the ncps PyTorch layers. Wirings come from :mod:`ember.wirings`.
"""

from ember.layers.ncp.cfc import CfC
from ember.layers.ncp.cfc_cell import CfCCell
from ember.layers.ncp.ltc import LTC
from ember.layers.ncp.ltc_cell import LTCCell
from ember.layers.ncp.mixed_memory import MixedMemoryCell
from ember.layers.ncp.ncp_cell import NCPCell
from ember.layers.ncp.stride_aware_cfc import StrideAwareCfC, StrideAwareCfCCell, StrideAwareWiredCfCCell
from ember.layers.ncp.wired_cfc_cell import WiredCfCCell

__all__ = ["CfC", "CfCCell", "LTC", "LTCCell", "MixedMemoryCell", "NCPCell", "StrideAwareCfC", "StrideAwareCfCCell",
           "StrideAwareWiredCfCCell", "WiredCfCCell"]
