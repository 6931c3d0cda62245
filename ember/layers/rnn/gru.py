"""``GRUCell`` and ``GRU``: gated recurrent unit (Cho et al., 2014), Keras's variants.

Weights in Keras's layout (gate order z, r, h along the last axis)::

    kernel            (features, 3 * units)
    recurrent_kernel  (units, 3 * units)
    bias              (2, 3 * units)   reset_after=True (default): row 0 input, row 1 recurrent
                      (3 * units,)     reset_after=False

One step with ``reset_after=True``: ``x_z, x_r, x_h = split(x @ kernel + bias[0])``,
``r_z, r_r, r_h = split(h @ recurrent_kernel + bias[1])``; ``z = sigmoid(x_z + r_z)``,
``r = sigmoid(x_r + r_r)``, ``h~ = tanh(x_h + r * r_h)``; ``h = z * h + (1 - z) * h~``.
With ``reset_after=False`` the reset gate multiplies ``h`` before its matmul:
``h~ = tanh(x_h + (r * h) @ recurrent_kernel[:, 2u:])``.

From/to PyTorch (``torch.nn.GRU``, which is the reset_after=True variant: its n-gate
is ``tanh(W_in x + b_in + r * (W_hn h + b_hn))``): torch's gate order is r, z, n, so
the blocks are reordered. With ``u = units`` and ``reorder(w) = concat([w[..., u:2u],
w[..., :u], w[..., 2u:]])`` (z, r, h -> r, z, n)::

    weight_ih_l0 = reorder(kernel).T          bias_ih_l0 = reorder(bias[0])
    weight_hh_l0 = reorder(recurrent_kernel).T  bias_hh_l0 = reorder(bias[1])

Recurrent dropout multiplies ``h`` only where it enters the recurrent matmul; the
final blend ``z * h + (1 - z) * h~`` uses the undropped ``h``.

Whole-sequence kernel: with ``reset_after=True``, ``activation="tanh"``,
``recurrent_activation="sigmoid"``, one dtype (float32 or float64) for inputs, weights
and state, no mask, no timespans and no recurrent dropout while training, ``GRU`` runs
the sequence as one ``ops.nn.gru`` call (torch's fused GRU on the torch backend; a
composite op on NumPy and MLX); otherwise it loops over steps. Input dropout still
applies (to the inputs, before the op).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember import activations, ops
from ember.layers.rnn.cell import DenseCell, fused_inputs, init_weight, project_inputs
from ember.layers.rnn.rnn import RNN


class GRUCell(DenseCell):
    """One GRU step (see the module docstring for the math and the weight layout).

    Args:
        units: size of the output and of the state.
        activation: for the candidate (``"tanh"``).
        recurrent_activation: for the update and reset gates (``"sigmoid"``).
        use_bias: add biases.
        kernel_initializer, recurrent_initializer, bias_initializer: initializers.
        kernel_regularizer, recurrent_regularizer, bias_regularizer: as for :class:`SimpleRNNCell`.
        kernel_constraint, recurrent_constraint, bias_constraint: as for :class:`SimpleRNNCell`.
        dropout, recurrent_dropout: as for :class:`SimpleRNNCell`.
        reset_after: apply the reset gate after the recurrent matmul (Keras's default,
            cuDNN's and torch's convention; two bias rows) or before it.
        seed: as for :class:`SimpleRNNCell`.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> cell = layers.GRUCell(4)
        >>> state = cell.build((None, 3), seed=0)
        >>> ops.shape(state["params"]["bias"])
        (2, 12)
        >>> h, (h_again,) = cell.step(state["params"], ops.ones((2, 3)), cell.get_initial_state(2))
        >>> ops.shape(h)
        (2, 4)
    """

    units: int
    activation: Any = "tanh"
    recurrent_activation: Any = "sigmoid"
    use_bias: bool = True
    kernel_initializer: Any = "glorot_uniform"
    recurrent_initializer: Any = "orthogonal"
    bias_initializer: Any = "zeros"
    kernel_regularizer: Any = None
    recurrent_regularizer: Any = None
    bias_regularizer: Any = None
    kernel_constraint: Any = None
    recurrent_constraint: Any = None
    bias_constraint: Any = None
    dropout: float = 0.0
    recurrent_dropout: float = 0.0
    reset_after: bool = True
    seed: int | None = None

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        features = self.step_input_shape(input_shape)[-1]
        units = self.units
        params = {
            "kernel": init_weight(self, self.kernel_initializer, (features, 3 * units), seed, "kernel"),
            "recurrent_kernel": init_weight(self, self.recurrent_initializer, (units, 3 * units), seed,
                                            "recurrent_kernel"),
        }
        if self.use_bias:
            shape = (2, 3 * units) if self.reset_after else (3 * units,)
            params["bias"] = init_weight(self, self.bias_initializer, shape, seed, "bias")
        return self.make_state(params=params)

    def prepare_sequence(self, params: dict, sequences: Any, *, training: bool = False,
                         rng: Any = None) -> tuple[Any, Any]:
        """``x @ kernel + input bias`` for every step; context: recurrent dropout mask,
        recurrent bias (reset_after) or the split recurrent kernel (reset_after=False)."""
        input_bias = recurrent_bias = None
        if self.use_bias:
            bias = params["bias"]
            if self.reset_after:
                input_bias, recurrent_bias = ops.getitem(bias, 0), ops.getitem(bias, 1)
            else:
                input_bias = bias
        projected, recurrent_mask = project_inputs(self, params, sequences, training, rng, input_bias)
        kernel = params["recurrent_kernel"]
        if self.reset_after:
            return projected, (recurrent_mask, recurrent_bias, kernel, None)
        units = self.units
        return projected, (recurrent_mask, None, ops.getitem(kernel, (slice(None), slice(0, 2 * units))),
                           ops.getitem(kernel, (slice(None), slice(2 * units, None))))

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        recurrent_mask, recurrent_bias, kernel, kernel_h = context
        h = states[0]
        h_in = h if recurrent_mask is None else ops.multiply(h, recurrent_mask)
        gate = activations.get(self.recurrent_activation)
        act = activations.get(self.activation)
        x_z, x_r, x_h = ops.split(step_input, 3, axis=-1)
        inner = ops.matmul(h_in, kernel)
        if self.reset_after:
            if recurrent_bias is not None:
                inner = ops.add(inner, recurrent_bias)
            r_z, r_r, r_h = ops.split(inner, 3, axis=-1)
            z = gate(ops.add(x_z, r_z))
            r = gate(ops.add(x_r, r_r))
            candidate = act(ops.add(x_h, ops.multiply(r, r_h)))
        else:
            r_z, r_r = ops.split(inner, 2, axis=-1)
            z = gate(ops.add(x_z, r_z))
            r = gate(ops.add(x_r, r_r))
            candidate = act(ops.add(x_h, ops.matmul(ops.multiply(r, h_in), kernel_h)))
        # z * h + (1 - z) * candidate, with one op fewer.
        h = ops.add(candidate, ops.multiply(z, ops.subtract(h, candidate)))
        return h, [h]

    def fused_sequence(self, params: dict, sequences: Any, states: list, *, training: bool = False,
                       rng: Any = None, go_backwards: bool = False, time_major: bool = False) -> tuple | None:
        """The sequence as one ``ops.nn.gru`` call, or None where that op does not apply
        (see the module docstring): ``(sequence_outputs, h, [h])``."""
        if not self.reset_after:
            return None
        x = fused_inputs(self, self.recurrent_activation, params, sequences, states, training, rng, time_major)
        if x is None:
            return None
        outputs, h = ops.nn.gru(x, states[0], params["kernel"], params["recurrent_kernel"],
                                params["bias"] if self.use_bias else None, go_backwards=go_backwards,
                                time_major=time_major)
        return outputs, h, [h]


class GRU(RNN):
    """Gated recurrent unit layer: ``RNN(GRUCell(...))`` with the cell's arguments flattened in.

    Args:
        units, activation, recurrent_activation, use_bias, kernel_initializer,
            recurrent_initializer, bias_initializer, kernel_regularizer, recurrent_regularizer,
            bias_regularizer, kernel_constraint, recurrent_constraint, bias_constraint, dropout,
            recurrent_dropout, reset_after, seed: as for :class:`GRUCell`.
        activity_regularizer: as for :class:`SimpleRNN`.
        return_sequences, return_state, go_backwards, stateful, unroll, time_major,
            zero_output_for_mask: as for :class:`~ember.layers.RNN` (keyword-only).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> gru = layers.GRU(6, return_state=True)
        >>> state = gru.build((None, 4, 3), seed=0)
        >>> last, h = gru.apply(state, ops.ones((2, 4, 3)))[0]
        >>> ops.shape(last), bool(ops.to_numpy(ops.all(ops.equal(last, h))))
        ((2, 6), True)
    """

    units: int
    activation: Any = "tanh"
    recurrent_activation: Any = "sigmoid"
    use_bias: bool = True
    kernel_initializer: Any = "glorot_uniform"
    recurrent_initializer: Any = "orthogonal"
    bias_initializer: Any = "zeros"
    kernel_regularizer: Any = None
    recurrent_regularizer: Any = None
    bias_regularizer: Any = None
    activity_regularizer: Any = None
    kernel_constraint: Any = None
    recurrent_constraint: Any = None
    bias_constraint: Any = None
    dropout: float = 0.0
    recurrent_dropout: float = 0.0
    reset_after: bool = True
    seed: int | None = None
    cell: Any = dataclasses.field(init=False, repr=False)

    _cell_class = GRUCell
