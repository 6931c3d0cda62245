"""``CTGRUCell``: the continuous-time GRU of Mozer et al. (2017), as the liquid time-constant paper's baseline.

Each of the ``U`` neurons keeps ``M`` traces ``hh[:, j, i]`` that decay with the fixed
time scales ``tau_i = 10 ** (i / 2)``, ``i = 0 .. M-1`` (1, 3.16, 10, ...); the neuron's
value is their sum. One step, for input ``x`` ``(batch, features)``, state ``hh``
``(batch, U * M)`` (``hh[:, j * M + i]``: neuron ``j``, time scale ``i``) and elapsed time
``t`` ``(batch, 1)`` (1.0 unless ``timespans=`` gives it)::

    h     = sum_i hh[:, :, i]                                       # (batch, U)
    z     = [x, h]
    r     = softmax_i(-(z @ (W_r * R) + b_r - ln tau_i) ** 2)      # retrieval scales, (batch, U, M)
    q     = tanh([x, sum_i r * hh] @ (W_q * Z) + b_q)              # the detected event, (batch, U)
    s     = softmax_i(-(z @ (W_s * R) + b_s - ln tau_i) ** 2)      # storage scales, (batch, U, M)
    hh'   = ((1 - s) * hh + s * q[:, :, None]) * exp(-t / tau_i)
    h'    = sum_i hh'[:, :, i];   output = h'[:, :output_dim]       # the motor neurons

The wiring masks the kernels: ``Z = |[sensory_adjacency; adjacency]|``
``(features + U, U)`` (all ones for ``FullyConnected``, i.e. an int ``units``) and ``R`` the
same with each column repeated ``M`` times (column ``j * M + i`` is ``Z[:, j]``).

This follows Hasani et al.'s published baseline (``CTGRU`` in ``ctrnn_model.py`` of
``raminmh/liquid_time_constant_networks``: one log-time-scale logit per neuron and time
scale, ``M = 8`` by default) with one correction: the baseline decays by
``exp(-1 / ln tau_i)``, which is ``exp(-1 / 0) = 0`` for ``tau_0 = 1`` (a division by
``ln tau`` where Mozer et al.'s equations divide by ``tau``); Ember decays by
``exp(-t / tau_i)`` as in Mozer et al., with the elapsed time ``t``.

Weights (``state["params"]``, Keras layout ``(fan_in, fan_out)``)::

    tau_r, tau_s: {"kernel": (features + U, U * M), "bias": (U * M,)}
    detect:       {"kernel": (features + U, U), "bias": (U,)}
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ember import initializers, ops
from ember.layers.ct._common import motor_output
from ember.layers.ncp._common import (
    built_wiring,
    check_features,
    default_name,
    split_rows,
    to_array,
    to_mask,
)
from ember.layers.ncp.wired_cell import WiredCell
from ember.layers.rnn.cell import init_weight
from ember.validation import check_positive_int


def log_timescales(m: int) -> np.ndarray:
    """``ln tau_i`` for ``tau_i = 10 ** (i / 2)``, ``i = 0 .. m-1``.

    Example:
        >>> [round(float(v), 4) for v in log_timescales(3)]
        [0.0, 1.1513, 2.3026]
    """
    return np.arange(m, dtype=np.float64) * (0.5 * math.log(10.0))


class CTGRUCell(WiredCell):
    """A continuous-time GRU cell on a wiring (equations in the module docstring).

    Args:
        wiring: an :class:`~ember.wirings.Wiring`, or an int ``units`` for
            ``FullyConnected(units)``. The cell keeps a copy; an unbuilt wiring is built for
            the input size without being modified.
        timescales: ``M``, the number of time scales per neuron (positive int, 8 as in the
            published baseline).
        kernel_initializer, bias_initializer: for every kernel and bias.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> cell = layers.CTGRUCell(4, timescales=3)
        >>> state = cell.build((None, 2), seed=0)
        >>> cell.state_size, cell.output_size, sorted(state["params"])
        (12, 4, ['detect', 'tau_r', 'tau_s'])
        >>> ops.shape(layers.RNN(cell, return_sequences=True).apply(state, ops.ones((3, 5, 2)))[0])
        (3, 5, 4)
    """

    timescales: int = 8
    kernel_initializer: Any = "glorot_uniform"
    bias_initializer: Any = "zeros"

    accepts_timespan: ClassVar[bool] = True

    def __post_init__(self) -> None:
        default_name(self, "ctgru_cell")
        super().__post_init__()  # WiredCell's: checks and copies the wiring
        self._normalize("timescales", check_positive_int(self.name, "timescales", self.timescales))
        for field in ("kernel_initializer", "bias_initializer"):
            self._normalize(field, initializers.get(getattr(self, field)))

    @property
    def state_size(self) -> int:
        return self.wiring.units * self.timescales  # M states per neuron

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        features = self.step_input_shape(input_shape)[-1]
        built_wiring(self, self.wiring, features)
        units, m = self.wiring.units, self.timescales
        fan_in = features + units
        params = {}
        for name, width in (("tau_r", units * m), ("tau_s", units * m), ("detect", units)):
            params[name] = {
                "kernel": init_weight(self, self.kernel_initializer, (fan_in, width), seed, f"{name}_kernel"),
                "bias": init_weight(self, self.bias_initializer, (width,), seed, f"{name}_bias"),
            }
        return self.make_state(params=params)

    def masks(self, features: int) -> tuple[np.ndarray, np.ndarray]:
        """The 0/1 NumPy masks ``(Z, R)`` of the detect and time-scale kernels."""
        wiring = built_wiring(self, self.wiring, features)
        z = np.abs(np.concatenate([wiring.sensory_adjacency_matrix, wiring.adjacency_matrix], axis=0))
        return z, np.repeat(z, self.timescales, axis=1)

    def prepare_sequence(self, params: dict, sequences: Any, *, training: bool = False,
                         rng: Any = None) -> tuple[Any, Any]:
        """The input rows of the three kernels applied to every step at once; the recurrent rows,
        the log time scales and ``1 / tau`` as context."""
        units = self.wiring.units
        features = ops.shape(params["detect"]["kernel"])[0] - units
        check_features(self, sequences, features)
        dtype = ops.dtype(params["detect"]["kernel"])
        z_mask, r_mask = self.masks(features)
        kernels = [ops.multiply(params[name]["kernel"], to_mask(mask, dtype))
                   for name, mask in (("tau_r", r_mask), ("tau_s", r_mask), ("detect", z_mask))]
        rows = [split_rows(k, features) for k in kernels]
        kernel_x = ops.concatenate([r[0] for r in rows], axis=1)
        bias = ops.concatenate([params[name]["bias"] for name in ("tau_r", "tau_s", "detect")], axis=0)
        projected = ops.add(ops.matmul(sequences, kernel_x), bias)
        log_tau = log_timescales(self.timescales)
        context = {
            "recurrent_rs": ops.concatenate([rows[0][1], rows[1][1]], axis=1),  # h -> tau_r, tau_s
            "recurrent_q": rows[2][1],  # retrieved state -> detect
            "log_tau": to_array(log_tau, dtype),
            "inverse_tau": to_array(np.exp(-log_tau), dtype),
        }
        return projected, context

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        units, m = self.wiring.units, self.timescales
        hh = ops.reshape(states[0], (-1, units, m))
        h = ops.sum(hh, axis=-1)
        x_r, x_s, x_q = ops.split(step_input, [units * m, 2 * units * m], axis=-1)
        from_h_r, from_h_s = ops.split(ops.matmul(h, context["recurrent_rs"]), 2, axis=-1)

        def scale_weights(logits: Any) -> Any:
            distance = ops.subtract(ops.reshape(logits, (-1, units, m)), context["log_tau"])
            return ops.nn.softmax(ops.negative(ops.square(distance)), axis=-1)

        r = scale_weights(ops.add(x_r, from_h_r))
        retrieved = ops.sum(ops.multiply(r, hh), axis=-1)
        q = ops.tanh(ops.add(x_q, ops.matmul(retrieved, context["recurrent_q"])))
        s = scale_weights(ops.add(x_s, from_h_s))
        stored = ops.add(hh, ops.multiply(s, ops.subtract(ops.expand_dims(q, -1), hh)))  # (1 - s) hh + s q
        elapsed = 1.0 if timespan is None else ops.expand_dims(timespan, -1)  # (batch, 1, 1)
        decay = ops.exp(ops.negative(ops.multiply(elapsed, context["inverse_tau"])))
        hh = ops.multiply(stored, decay)
        h = ops.sum(hh, axis=-1)
        return motor_output(self.wiring, h), [ops.reshape(hh, (-1, units * m))]

    def step(self, params: dict, inputs: Any, states: list, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        projected, context = self.prepare_sequence(params, inputs, training=training, rng=rng)
        return self.prepared_step(params, projected, states, context, timespan=timespan)
