"""``SimpleRNNCell`` and ``SimpleRNN``: the fully connected (Elman) recurrence.

One step: ``h = activation(x @ kernel + h @ recurrent_kernel + bias)``; the output is ``h``.
Weights in Keras's layout: ``kernel (features, units)``, ``recurrent_kernel (units,
units)``, ``bias (units,)``.

From/to PyTorch (``torch.nn.RNN``, tanh, single layer): ``weight_ih_l0 = kernel.T``,
``weight_hh_l0 = recurrent_kernel.T``, ``bias_ih_l0 = bias``, ``bias_hh_l0 = 0``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember import activations, ops
from ember.layers.rnn.cell import DenseCell, init_weight
from ember.layers.rnn.rnn import RNN


class SimpleRNNCell(DenseCell):
    """One step of a fully connected recurrence.

    Args:
        units: size of the output and of the state.
        activation: applied to the pre-activation (``"tanh"``).
        use_bias: add ``bias``.
        kernel_initializer, recurrent_initializer, bias_initializer: initializers.
        kernel_regularizer, recurrent_regularizer, bias_regularizer: penalties on
            ``kernel``, ``recurrent_kernel``, ``bias`` (see :mod:`ember.regularizers`),
            reported by :meth:`regularization_losses`.
        kernel_constraint, recurrent_constraint, bias_constraint: projections of those
            weights after each optimizer step (see :mod:`ember.constraints`), reported
            by :meth:`constraints`.
        dropout: fraction of the input features dropped while training (one mask per call).
        recurrent_dropout: fraction of ``h`` dropped before the recurrent matmul while
            training (one mask per call).
        seed: seed of the dropout masks when ``apply`` gets no ``rng``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> cell = layers.SimpleRNNCell(3)
        >>> state = cell.build((None, 2), seed=0)
        >>> y, (h,) = cell.step(state["params"], ops.ones((4, 2)), cell.get_initial_state(4))
        >>> ops.shape(y)
        (4, 3)
    """

    units: int
    activation: Any = "tanh"
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
    seed: int | None = None

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        features = self.step_input_shape(input_shape)[-1]
        params = {
            "kernel": init_weight(self, self.kernel_initializer, (features, self.units), seed, "kernel"),
            "recurrent_kernel": init_weight(self, self.recurrent_initializer, (self.units, self.units), seed,
                                            "recurrent_kernel"),
        }
        if self.use_bias:
            params["bias"] = init_weight(self, self.bias_initializer, (self.units,), seed, "bias")
        return self.make_state(params=params)

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        h = states[0] if context is None else ops.multiply(states[0], context)
        h = activations.get(self.activation)(ops.add(step_input, ops.matmul(h, params["recurrent_kernel"])))
        return h, [h]


class SimpleRNN(RNN):
    """Fully connected recurrent layer: ``RNN(SimpleRNNCell(...))`` with the cell's arguments flattened in.

    Args:
        units, activation, use_bias, kernel_initializer, recurrent_initializer,
            bias_initializer, kernel_regularizer, recurrent_regularizer, bias_regularizer,
            kernel_constraint, recurrent_constraint, bias_constraint, dropout, recurrent_dropout,
            seed: as for :class:`SimpleRNNCell`.
        activity_regularizer: penalty on the layer's output (on every output, states
            included, with ``return_state``), passed to ``add_loss`` in ``apply``.
        return_sequences, return_state, go_backwards, stateful, unroll, time_major,
            zero_output_for_mask: as for :class:`~ember.layers.RNN` (keyword-only).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> rnn = layers.SimpleRNN(4, return_sequences=True)
        >>> state = rnn.build((None, 6, 2), seed=0)
        >>> ops.shape(rnn.apply(state, ops.ones((3, 6, 2)))[0])
        (3, 6, 4)
    """

    units: int
    activation: Any = "tanh"
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
    seed: int | None = None
    cell: Any = dataclasses.field(init=False, repr=False)

    _cell_class = SimpleRNNCell
