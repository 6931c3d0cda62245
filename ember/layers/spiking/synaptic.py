"""``SynapticCell`` / ``Synaptic``: the LIF neuron with a synaptic current (snntorch's ``Synaptic``).

The input current first charges a synaptic current that decays with ``alpha``, which then
drives the membrane (``R_t = stop_gradient(S_{t-1})``; currents ``I_t`` as in
:mod:`ember.layers.spiking.cell`)::

    syn_t = alpha * syn_{t-1} + I_t
    U_t   = beta * U_{t-1} + syn_t - R_t * threshold          reset="subtract"
    U_t   = (1 - R_t) * (beta * U_{t-1} + syn_t)               reset="zero" (snntorch Synaptic's)
    U_t   = beta * U_{t-1} + syn_t                             reset="none"
    S_t   = H(U_t - threshold)

This is ``snntorch.Synaptic(alpha, beta, threshold, spike_grad, reset_mechanism)`` applied to
``x @ W_in + b`` (``recurrent=False``). States: ``[syn, mem, spk]`` (and ``refractory``;
during a refractory period the input current is blocked, the synaptic current decays on).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ember import ops
from ember.layers.spiking.cell import SpikingCell, check_real, leaky_membrane
from ember.layers.spiking.spiking_rnn import SpikingRNN


class SynapticCell(SpikingCell):
    """A LIF cell with a synaptic current (equations in the module docstring).

    Args:
        alpha: decay of the synaptic current per step, in ``[0, 1]``.
        The others: as for :class:`~ember.layers.LIFCell`.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> cell = layers.SynapticCell(3, alpha=0.8, recurrent=False)
        >>> state = cell.build((None, 2), seed=0)
        >>> cell.state_names
        ('syn', 'mem', 'spk')
        >>> ops.shape(layers.RNN(cell).apply(state, ops.ones((4, 5, 2)))[0])
        (4, 3)
    """

    alpha: float = 0.9

    own_states: ClassVar[tuple[str, ...]] = ("syn", "mem")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_real(self, "alpha", 0.0, 1.0)

    def integrate(self, params: dict, current: Any, prev: dict, reset: Any, context: dict) -> tuple[dict, Any]:
        threshold, beta = context["threshold"], context["beta"]
        syn = ops.add(ops.multiply(prev["syn"], self.alpha), current)
        if self.reset == "zero":
            mem = ops.multiply(ops.subtract(1.0, reset), ops.add(ops.multiply(prev["mem"], beta), syn))
        else:
            mem = leaky_membrane(prev["mem"], syn, reset, beta, threshold, self.reset)
        return {"syn": syn, "mem": mem}, threshold


class Synaptic(SpikingRNN):
    """A synaptic LIF layer: ``RNN(SynapticCell(units, ...))`` (arguments as for
    :class:`SynapticCell` and :class:`~ember.layers.RNN`).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Synaptic(4, return_sequences=True)
        >>> ops.shape(layer.apply(layer.build((None, 6, 2), seed=0), ops.ones((3, 6, 2)))[0])
        (3, 6, 4)
    """

    alpha: float = 0.9

    _cell_class = SynapticCell
