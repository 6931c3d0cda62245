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

import math
from typing import Any, ClassVar

from ember import activations, initializers, ops
from ember.layers.ct._common import motor_output, step_size
from ember.layers.ncp._common import (
    built_wiring,
    check_features,
    compact_repr,
    default_name,
    normalize_wiring,
    to_mask,
)
from ember.layers.rnn.cell import RNNCell, init_weight
from ember.validation import check_positive_int

TAU_ONE = math.log(math.e - 1.0)  # softplus(TAU_ONE) = 1


class CTRNNCell(RNNCell):
    """A continuous-time RNN cell on a wiring (equations in the module docstring).

    Args:
        wiring: an :class:`~ember.wirings.Wiring`, or an int ``units`` for
            ``FullyConnected(units)``. The cell keeps a copy; an unbuilt wiring is built for
            the input size without being modified.
        activation: the nonlinearity of the drive (``"tanh"``).
        ode_unfolds: explicit Euler steps per time step (positive int).
        kernel_initializer, recurrent_initializer, bias_initializer: initializers.

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

    wiring: Any
    activation: Any = "tanh"
    ode_unfolds: int = 6
    kernel_initializer: Any = "glorot_uniform"
    recurrent_initializer: Any = "orthogonal"
    bias_initializer: Any = "zeros"

    accepts_timespan: ClassVar[bool] = True

    def __post_init__(self) -> None:
        default_name(self, "ctrnn_cell")
        super().__post_init__()
        normalize_wiring(self)
        self._normalize("activation", activations.standardize(self.activation, f"{self.name}: activation"))
        self._normalize("ode_unfolds", check_positive_int(self.name, "ode_unfolds", self.ode_unfolds))
        for field in ("kernel_initializer", "recurrent_initializer", "bias_initializer"):
            self._normalize(field, initializers.get(getattr(self, field)))

    def __repr__(self) -> str:
        return compact_repr(self)

    @property
    def state_size(self) -> int:
        return self.wiring.units

    @property
    def output_size(self) -> int:
        return self.wiring.output_dim

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        features = self.step_input_shape(input_shape)[-1]
        built_wiring(self, self.wiring, features)
        units = self.wiring.units
        params = {
            "kernel": init_weight(self, self.kernel_initializer, (features, units), seed, "kernel"),
            "recurrent_kernel": init_weight(self, self.recurrent_initializer, (units, units), seed,
                                            "recurrent_kernel"),
            "bias": init_weight(self, self.bias_initializer, (units,), seed, "bias"),
            "tau": ops.full((units,), TAU_ONE, dtype=self.variable_dtype),
        }
        return self.make_state(params=params)

    def prepare_sequence(self, params: dict, sequences: Any, *, training: bool = False,
                         rng: Any = None) -> tuple[Any, Any]:
        """``x @ (kernel * M_s) + bias`` for every step at once; the masked recurrent kernel and
        ``1 / tau`` as context."""
        features = ops.shape(params["kernel"])[0]
        check_features(self, sequences, features)
        wiring = built_wiring(self, self.wiring, features)
        dtype = ops.dtype(params["kernel"])
        kernel = ops.multiply(params["kernel"], to_mask(wiring.sensory_adjacency_matrix, dtype))
        projected = ops.add(ops.matmul(sequences, kernel), params["bias"])
        recurrent = ops.multiply(params["recurrent_kernel"], to_mask(wiring.adjacency_matrix, dtype))
        return projected, (recurrent, ops.divide(1.0, ops.nn.softplus(params["tau"])))

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        recurrent, inverse_tau = context
        act = activations.get(self.activation)
        dt = step_size(timespan, self.ode_unfolds)
        h = states[0]
        for _ in range(self.ode_unfolds):
            drive = act(ops.add(step_input, ops.matmul(h, recurrent)))
            h = ops.add(h, ops.multiply(dt, ops.subtract(drive, ops.multiply(h, inverse_tau))))
        return motor_output(self.wiring, h), [h]

    def step(self, params: dict, inputs: Any, states: list, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        projected, context = self.prepare_sequence(params, inputs, training=training, rng=rng)
        return self.prepared_step(params, projected, states, context, timespan=timespan)
