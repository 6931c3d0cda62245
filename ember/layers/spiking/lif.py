"""``LIFCell`` / ``LIF``: the leaky integrate-and-fire neuron (snntorch's ``Leaky`` / ``RLeaky``).

One step (the currents ``I_t``, masks, refractory period and outputs are in
:mod:`ember.layers.spiking.cell`; ``R_t = stop_gradient(S_{t-1})``)::

    U_t = beta * U_{t-1} + I_t - R_t * threshold          reset="subtract"
    U_t = beta * (1 - R_t) * U_{t-1} + I_t                reset="zero"
    U_t = beta * U_{t-1} + I_t                            reset="none"
    S_t = H(U_t - threshold)      (backward: the surrogate's derivative)

With ``recurrent=False`` this is ``snntorch.Leaky(beta, threshold, spike_grad,
reset_mechanism)`` applied to ``x @ W_in + b``; with ``recurrent=True`` (default) and
``reset`` "subtract" or "none" it is ``snntorch.RLeaky`` with ``all_to_all=True`` and
``V`` the recurrent kernel (RLeaky's "zero" also zeroes the new input; Ember's "zero" is
Leaky's for both).
"""

from __future__ import annotations

from typing import Any

from ember.layers.spiking.cell import SpikingCell, leaky_membrane
from ember.layers.spiking.spiking_rnn import SpikingRNN


class LIFCell(SpikingCell):
    """Leaky integrate-and-fire cell (equations in the module docstring).

    Args:
        units: a positive int (that many neurons, all connected, all outputs) or an
            :class:`~ember.wirings.Wiring` (masks on the input and recurrent kernels; the
            output is the motor neurons'). The cell keeps a copy of a wiring.
        beta: membrane decay per step, in ``[0, 1]``.
        threshold: firing threshold.
        reset: ``"subtract"`` (default), ``"zero"`` or ``"none"``.
        refractory: steps after a spike during which the neuron neither integrates nor fires.
        surrogate: the spike's surrogate gradient: ``"atan"`` (default, as snntorch),
            ``"fast_sigmoid"``, ``"straight_through"``, ``"triangle"`` or a
            :class:`~ember.layers.spiking.surrogates.Surrogate`.
        recurrent: feed the previous spikes back through ``recurrent_kernel``.
        output: ``"spikes"`` (default), ``"membrane"`` or ``"both"`` (``[spikes, membranes]``).
        learn_beta, learn_threshold: make ``beta`` / ``threshold`` per-neuron weights.
        use_bias: add ``bias`` to the input current.
        kernel_initializer, recurrent_initializer, bias_initializer: initializers.
        kernel_regularizer, recurrent_regularizer: penalties on the masked kernels (e.g.
            :class:`~ember.layers.SpatialRegularizer`).

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> cell = layers.LIFCell(wirings.AutoNCP(8, 2, seed=0), beta=0.8)
        >>> state = cell.build((None, 3), seed=0)
        >>> cell.state_size, cell.output_size
        ((8, 8), 2)
        >>> spikes, *_ = layers.RNN(cell, return_sequences=True).apply(state, ops.ones((4, 5, 3)))
        >>> ops.shape(spikes)
        (4, 5, 2)
    """

    def integrate(self, params: dict, current: Any, prev: dict, reset: Any, context: dict) -> tuple[dict, Any]:
        threshold = context["threshold"]
        mem = leaky_membrane(prev["mem"], current, reset, context["beta"], threshold, self.reset)
        return {"mem": mem}, threshold


class LIF(SpikingRNN):
    """A leaky integrate-and-fire layer: ``RNN(LIFCell(units, ...))``.

    Args:
        units, beta, threshold, reset, refractory, surrogate, recurrent, output, learn_beta,
            learn_threshold, use_bias, kernel_initializer, recurrent_initializer,
            bias_initializer, kernel_regularizer, recurrent_regularizer: as for :class:`LIFCell`.
        return_sequences, return_state, go_backwards, stateful, unroll, time_major,
            zero_output_for_mask: as for :class:`~ember.layers.RNN` (keyword-only).

    ``return_sequences=True`` gives the spike train ``(batch, time, outputs)``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> lif = layers.LIF(4, beta=0.5, threshold=0.5, return_sequences=True)
        >>> state = lif.build((None, 6, 2), seed=0)
        >>> ops.shape(lif.apply(state, ops.ones((3, 6, 2)))[0])
        (3, 6, 4)
    """

    _cell_class = LIFCell
