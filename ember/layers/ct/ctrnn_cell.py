"""``CTRNNCell``: a continuous-time RNN (the CT-RNN baseline of the liquid time-constant paper).

Each neuron ``j`` has a state ``h_j`` following::

    dh/dt = -h / tau + act(x @ (kernel * M_s) + h @ (recurrent_kernel * M) + bias)

with the wiring's masks ``M_s = |sensory_adjacency_matrix|`` ``(features, units)`` and
``M = |adjacency_matrix|`` ``(units, units)`` (all ones for ``FullyConnected``, i.e. an int
``units``; polarities are not used, each weight carries its own sign) and a positive time
constant per neuron ``tau = softplus(tau_param)``. One step over the elapsed time ``t``
(1.0 unless ``timespans=`` gives it) runs ``ode_unfolds`` explicit Euler steps of
``dt = t / ode_unfolds``::

    repeat ode_unfolds times:
        h <- h + dt * (-h / tau + act(x @ (kernel * M_s) + h @ (recurrent_kernel * M) + bias))
    output = h[:, :output_dim]                           # the motor neurons

This is Hasani et al.'s published CT-RNN baseline (``ctrnn_model.py`` of
``raminmh/liquid_time_constant_networks``, with ``global_feedback=True``: the network reads
``[x, h]`` at every unfold) with two documented differences: the unfold step is
``t / ode_unfolds`` instead of a fixed 0.1 (pass ``timespans = 0.1 * ode_unfolds`` to
reproduce it), and ``tau`` is one trainable constant per neuron (the baseline's
``fix_tau=False`` has a single one). Explicit Euler is stable while ``dt / tau < 2``.

Weights (``state["params"]``): ``kernel (features, units)``, ``recurrent_kernel
(units, units)``, ``bias (units,)``, ``tau (units,)`` (the pre-softplus value,
initialized to ``log(e - 1)`` so that ``tau = 1``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

from ember import ops
from ember.layers.ct._common import motor_output, step_size
from ember.layers.ncp._common import default_name
from ember.layers.ncp.ncp_cell import NCPCell
from ember.validation import check_positive_int

TAU_ONE = math.log(math.e - 1.0)  # softplus(TAU_ONE) = 1


class CTRNNCell(NCPCell):
    """A continuous-time RNN cell on a wiring (equations in the module docstring): the wired
    recurrence of :class:`~ember.layers.NCPCell` as the drive of ``dh/dt = -h / tau + drive``.

    Args:
        wiring: an :class:`~ember.wirings.Wiring`, or an int ``units`` for
            ``FullyConnected(units)``. The cell keeps a copy; an unbuilt wiring is built for
            the input size without being modified.
        activation: the nonlinearity of the drive (``"tanh"``).
        use_bias: add ``bias`` to the drive.
        kernel_initializer, recurrent_initializer, bias_initializer: initializers.
        ode_unfolds: explicit Euler steps per time step (positive int; keyword-only).

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> cell = layers.CTRNNCell(wirings.AutoNCP(6, 2, seed=0), ode_unfolds=3)
        >>> state = cell.build((None, 3), seed=0)
        >>> cell.state_size, cell.output_size, sorted(state["params"])
        (6, 2, ['bias', 'kernel', 'recurrent_kernel', 'tau'])
        >>> ops.shape(layers.RNN(cell).apply(state, ops.ones((4, 5, 3)))[0])
        (4, 2)
    """

    ode_unfolds: int = dataclasses.field(default=6, kw_only=True)

    accepts_timespan: ClassVar[bool] = True

    def __post_init__(self) -> None:
        default_name(self, "ctrnn_cell")
        super().__post_init__()
        self._normalize("ode_unfolds", check_positive_int(self.name, "ode_unfolds", self.ode_unfolds))

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        params = dict(super().build(input_shape, seed)["params"])
        params["tau"] = ops.full((self.wiring.units,), TAU_ONE, dtype=self.variable_dtype)
        return self.make_state(params=params)

    def prepare_sequence(self, params: dict, sequences: Any, *, training: bool = False,
                         rng: Any = None) -> tuple[Any, Any]:
        """The drive's input part for every step at once (:class:`NCPCell`'s); the masked recurrent
        kernel and ``1 / tau`` as context."""
        projected, recurrent = super().prepare_sequence(params, sequences, training=training, rng=rng)
        return projected, (recurrent, ops.divide(1.0, ops.nn.softplus(params["tau"])))

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        recurrent, inverse_tau = context
        dt = step_size(timespan, self.ode_unfolds)
        h = states[0]
        for _ in range(self.ode_unfolds):
            drive = super().prepared_step(params, step_input, [h], recurrent)[1][0]
            h = ops.add(h, ops.multiply(dt, ops.subtract(drive, ops.multiply(h, inverse_tau))))
        return motor_output(self.wiring, h), [h]

    def step(self, params: dict, inputs: Any, states: list, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        projected, context = self.prepare_sequence(params, inputs, training=training, rng=rng)
        return self.prepared_step(params, projected, states, context, timespan=timespan)
