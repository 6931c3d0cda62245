"""``LSTMCell`` and ``LSTM``: long short-term memory (Hochreiter & Schmidhuber, 1997).

Weights in Keras's layout (gate order i, f, c, o along the last axis)::

    kernel            (features, 4 * units)
    recurrent_kernel  (units, 4 * units)
    bias              (4 * units,)

One step: ``z = x @ kernel + h @ recurrent_kernel + bias``; ``i, f, c~, o = split(z, 4)``;
``c = sigmoid(f) * c + sigmoid(i) * tanh(c~)``; ``h = sigmoid(o) * tanh(c)`` (with
``recurrent_activation`` for sigmoid and ``activation`` for tanh). The states are
``[h, c]``; the output is ``h``.

Whole-sequence kernel: ``LSTM`` runs the sequence as one ``ops.nn.lstm`` call (torch's
fused LSTM on torch; a NumPy loop with its own VJP rule on NumPy; a composite op on MLX)
when ``activation="tanh"``, ``recurrent_activation="sigmoid"``, the inputs, weights and
states share one dtype (float32 or float64), there is no mask, no timespans and no
recurrent dropout while training. Input dropout still applies (to the inputs, before
the op). Otherwise it loops over steps; both paths compute the same function.

From/to PyTorch (``torch.nn.LSTM``, single layer): torch's gate order i, f, g, o is
Keras's i, f, c, o, so no reordering is needed: ``weight_ih_l0 = kernel.T``,
``weight_hh_l0 = recurrent_kernel.T``, ``bias_ih_l0 = bias`` and ``bias_hh_l0 = 0``
(going back, ``bias = bias_ih_l0 + bias_hh_l0``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember import activations, ops
from ember.layers.rnn.cell import DenseCell, fused_inputs, init_weight
from ember.layers.rnn.rnn import RNN


class LSTMCell(DenseCell):
    """One LSTM step (see the module docstring for the math and the weight layout).

    Args:
        units: size of the output and of both states.
        activation: for the candidate and the output (``"tanh"``).
        recurrent_activation: for the gates (``"sigmoid"``).
        use_bias: add ``bias``.
        kernel_initializer, recurrent_initializer, bias_initializer: initializers of
            the three variables.
        unit_forget_bias: initialize the forget gate's bias to 1 (Jozefowicz et al.).
        kernel_regularizer, recurrent_regularizer, bias_regularizer: as for :class:`SimpleRNNCell`.
        kernel_constraint, recurrent_constraint, bias_constraint: as for :class:`SimpleRNNCell`.
        dropout: fraction of the input features dropped while training (one mask per
            call, shared by every step and gate).
        recurrent_dropout, seed: as for :class:`SimpleRNNCell`.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> cell = layers.LSTMCell(4)
        >>> state = cell.build((None, 3), seed=0)
        >>> cell.state_size, [ops.shape(state["params"][k]) for k in ("kernel", "recurrent_kernel", "bias")]
        ((4, 4), [(3, 16), (4, 16), (16,)])
        >>> h, new_states = cell.step(state["params"], ops.ones((2, 3)), cell.get_initial_state(2))
        >>> ops.shape(h), len(new_states)
        ((2, 4), 2)
    """

    units: int
    activation: Any = "tanh"
    recurrent_activation: Any = "sigmoid"
    use_bias: bool = True
    kernel_initializer: Any = "glorot_uniform"
    recurrent_initializer: Any = "orthogonal"
    bias_initializer: Any = "zeros"
    unit_forget_bias: bool = True
    kernel_regularizer: Any = None
    recurrent_regularizer: Any = None
    bias_regularizer: Any = None
    kernel_constraint: Any = None
    recurrent_constraint: Any = None
    bias_constraint: Any = None
    dropout: float = 0.0
    recurrent_dropout: float = 0.0
    seed: int | None = None

    @property
    def state_size(self) -> tuple[int, int]:
        return (self.units, self.units)

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        features = self.step_input_shape(input_shape)[-1]
        units = self.units
        params = {
            "kernel": init_weight(self, self.kernel_initializer, (features, 4 * units), seed, "kernel"),
            "recurrent_kernel": init_weight(self, self.recurrent_initializer, (units, 4 * units), seed,
                                            "recurrent_kernel"),
        }
        if self.use_bias:
            if self.unit_forget_bias:
                params["bias"] = ops.concatenate([
                    init_weight(self, self.bias_initializer, (units,), seed, "bias"),
                    ops.ones((units,), dtype=self.variable_dtype),
                    init_weight(self, self.bias_initializer, (2 * units,), seed, "bias_co"),
                ])
            else:
                params["bias"] = init_weight(self, self.bias_initializer, (4 * units,), seed, "bias")
        return self.make_state(params=params)

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        h, c = states
        h_in = h if context is None else ops.multiply(h, context)
        z = ops.add(step_input, ops.matmul(h_in, params["recurrent_kernel"]))
        i, f, g, o = ops.split(z, 4, axis=-1)
        gate = activations.get(self.recurrent_activation)
        act = activations.get(self.activation)
        c = ops.add(ops.multiply(gate(f), c), ops.multiply(gate(i), act(g)))
        h = ops.multiply(gate(o), act(c))
        return h, [h, c]

    def fused_sequence(self, params: dict, sequences: Any, states: list, *, training: bool = False,
                       rng: Any = None, go_backwards: bool = False, time_major: bool = False) -> tuple | None:
        """The sequence as one ``ops.nn.lstm`` call, or None where that op does not apply
        (see the module docstring): ``(sequence_outputs, h, [h, c])``."""
        x = fused_inputs(self, self.recurrent_activation, params, sequences, states, training, rng, time_major)
        if x is None:
            return None
        outputs, h, c = ops.nn.lstm(x, states[0], states[1], params["kernel"], params["recurrent_kernel"],
                                    params["bias"] if self.use_bias else None, go_backwards=go_backwards,
                                    time_major=time_major)
        return outputs, h, [h, c]


class LSTM(RNN):
    """Long short-term memory layer: ``RNN(LSTMCell(...))`` with the cell's arguments flattened in.

    Args:
        units, activation, recurrent_activation, use_bias, kernel_initializer,
            recurrent_initializer, bias_initializer, unit_forget_bias, kernel_regularizer,
            recurrent_regularizer, bias_regularizer, kernel_constraint, recurrent_constraint,
            bias_constraint, dropout, recurrent_dropout, seed: as for :class:`LSTMCell`.
        activity_regularizer: as for :class:`SimpleRNN`.
        return_sequences, return_state, go_backwards, stateful, unroll, time_major,
            zero_output_for_mask: as for :class:`~ember.layers.RNN` (keyword-only).

    The state is the cell's: ``{"params": {"kernel", "recurrent_kernel", "bias"}}`` in
    Keras's shapes (see the module docstring for copying weights from Keras or torch).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> lstm = layers.LSTM(8, return_sequences=True, return_state=True)
        >>> state = lstm.build((None, 5, 3), seed=0)
        >>> sequence, h, c = lstm.apply(state, ops.ones((2, 5, 3)))[0]
        >>> ops.shape(sequence), ops.shape(h), ops.shape(c)
        ((2, 5, 8), (2, 8), (2, 8))
    """

    units: int
    activation: Any = "tanh"
    recurrent_activation: Any = "sigmoid"
    use_bias: bool = True
    kernel_initializer: Any = "glorot_uniform"
    recurrent_initializer: Any = "orthogonal"
    bias_initializer: Any = "zeros"
    unit_forget_bias: bool = True
    kernel_regularizer: Any = None
    recurrent_regularizer: Any = None
    bias_regularizer: Any = None
    activity_regularizer: Any = None
    kernel_constraint: Any = None
    recurrent_constraint: Any = None
    bias_constraint: Any = None
    dropout: float = 0.0
    recurrent_dropout: float = 0.0
    seed: int | None = None
    cell: Any = dataclasses.field(init=False, repr=False)

    _cell_class = LSTMCell
