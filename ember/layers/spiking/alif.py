"""``ALIFCell`` / ``ALIF``: the adaptive leaky integrate-and-fire neuron (Bellec et al., 2018).

A LIF neuron (:mod:`ember.layers.spiking.lif`) whose threshold rises after each spike and
relaxes back (the LSNN's adaptive neurons); ``R_t = stop_gradient(S_{t-1})``::

    a_t   = rho * a_{t-1} + (1 - rho) * S_{t-1}
    A_t   = threshold + adaptation * a_t                  (the threshold of step t)
    U_t   = beta * U_{t-1} + I_t - R_t * A_{t-1}           reset="subtract" (the threshold it crossed)
    U_t   = beta * (1 - R_t) * U_{t-1} + I_t               reset="zero";  "none": no reset term
    S_t   = H(U_t - A_t)           (backward: the surrogate's derivative; also through a_t)

``adaptation = 0`` is the :class:`~ember.layers.LIFCell`. States: ``[mem, adapt, spk]``
(and ``refractory``). snntorch has no adaptive neuron; the tests check it against a NumPy
float64 transcription of these equations.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ember import ops
from ember.layers.spiking.cell import SpikingCell, check_real, leaky_membrane
from ember.layers.spiking.spiking_rnn import SpikingRNN


class ALIFCell(SpikingCell):
    """Adaptive leaky integrate-and-fire cell (equations in the module docstring).

    Args:
        adaptation: how much one unit of adaptation raises the threshold (``>= 0``).
        rho: decay of the adaptation per step, in ``[0, 1]``.
        The others: as for :class:`~ember.layers.LIFCell`.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> cell = layers.ALIFCell(3, adaptation=0.5, rho=0.9)
        >>> state = cell.build((None, 2), seed=0)
        >>> cell.state_names
        ('mem', 'adapt', 'spk')
        >>> ops.shape(layers.RNN(cell).apply(state, ops.ones((4, 5, 2)))[0])
        (4, 3)
    """

    adaptation: float = 1.0
    rho: float = 0.95

    own_states: ClassVar[tuple[str, ...]] = ("mem", "adapt")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_real(self, "adaptation", 0.0)
        check_real(self, "rho", 0.0, 1.0)

    def integrate(self, params: dict, current: Any, prev: dict, reset: Any, context: dict) -> tuple[dict, Any]:
        threshold = context["threshold"]
        previous_threshold = ops.add(ops.multiply(prev["adapt"], self.adaptation), threshold)
        adapt = ops.add(ops.multiply(prev["adapt"], self.rho), ops.multiply(prev["spk"], 1.0 - self.rho))
        mem = leaky_membrane(prev["mem"], current, reset, context["beta"], previous_threshold, self.reset)
        return {"mem": mem, "adapt": adapt}, ops.add(ops.multiply(adapt, self.adaptation), threshold)


class ALIF(SpikingRNN):
    """An adaptive LIF layer: ``RNN(ALIFCell(units, ...))`` (arguments as for :class:`ALIFCell` and
    :class:`~ember.layers.RNN`).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> alif = layers.ALIF(4, return_sequences=True)
        >>> ops.shape(alif.apply(alif.build((None, 6, 2), seed=0), ops.ones((3, 6, 2)))[0])
        (3, 6, 4)
    """

    adaptation: float = 1.0
    rho: float = 0.95

    _cell_class = ALIFCell
