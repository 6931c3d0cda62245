"""``MixedMemoryCell``: a continuous-time cell with an LSTM memory alongside (``mixed_memory=True``).

Following the ncps package's PyTorch ``CfC``/``LTC`` layers (the "mixed memory" of
Lechner & Hasani, arXiv:2006.04418), the LSTM and the continuous-time cell share the
hidden state ``h``; the LSTM also carries its cell state ``c``. One step, for input ``x``
and elapsed time ``t``::

    h1, c' = LSTM(x, [h, c])                             # ember.layers.LSTMCell(units = cell.state_size)
    y, h'  = cell(x, h1, t)                              # the CfC / LTC / wired cell
    states: [h', c'], output: y

The continuous-time cell reads the raw inputs (so a wiring's sensory neurons stay the
input features) and starts from the LSTM's updated hidden state; the LSTM's gated memory
``c`` carries information over long horizons, which a continuous-time state alone
forgets (vanishing gradients). The LSTM uses ember's ``LSTMCell`` (Keras gate order,
``unit_forget_bias=True``: forget-gate bias initialized to 1, the ncps ``+1`` offset).

Weights: ``state["params"] = {"memory": <LSTMCell params>, "cell": <the cell's params>}``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember import ops
from ember.layers.ncp._common import compact_repr
from ember.layers.rnn.cell import RNNCell
from ember.layers.rnn.lstm import LSTMCell
from ember.seeds import sub_seed


class MixedMemoryCell(RNNCell):
    """Wraps a single-state recurrent cell with an LSTM memory (equations in the module docstring).

    Args:
        cell: an :class:`~ember.layers.RNNCell` with one state (``CfCCell``,
            ``WiredCfCCell``, ``LTCCell``, ``NCPCell``, ...).

    The states are ``[h, c]`` (both ``cell.state_size`` wide); the output is the cell's.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> cell = layers.MixedMemoryCell(layers.CfCCell(4, backbone_units=8))
        >>> state = cell.build((None, 3), seed=0)
        >>> sorted(state["params"]), cell.state_size
        (['cell', 'memory'], (4, 4))
        >>> sequence, h, c = layers.RNN(cell, return_sequences=True, return_state=True).apply(
        ...     state, ops.ones((2, 5, 3)))[0]
        >>> ops.shape(sequence), ops.shape(c)
        ((2, 5, 4), (2, 4))
    """

    cell: Any
    memory_cell: Any = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        cell = self.cell
        if not isinstance(cell, RNNCell):
            raise TypeError(f"{self.name}: cell must be an RNNCell (CfCCell, LTCCell, ...), received {cell!r}")
        if not isinstance(cell.state_size, int):
            raise ValueError(f"{self.name}: cell must carry a single state to share with the LSTM memory, "
                             f"{type(cell).__name__} has state_size {cell.state_size!r}")
        self._normalize("memory_cell", LSTMCell(cell.state_size, name=f"{self.name}_memory", dtype=self.dtype,
                                                trainable=self.trainable))

    def __repr__(self) -> str:
        return compact_repr(self)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["memory_cell"]  # derived from the cell
        return config

    @property
    def accepts_timespan(self) -> bool:  # type: ignore[override]  # per instance (its cell's); a class flag in RNNCell
        return bool(getattr(self.cell, "accepts_timespan", False))

    @property
    def state_size(self) -> tuple[int, int]:
        return (self.cell.state_size, self.cell.state_size)

    @property
    def output_size(self) -> int:
        return self.cell.output_size

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        x_shape = self.step_input_shape(input_shape)
        memory = self.memory_cell.build(x_shape, sub_seed(seed, "memory"))
        inner = self.cell.build(x_shape, sub_seed(seed, "cell"))
        buffers = {name: s["buffers"] for name, s in (("memory", memory), ("cell", inner)) if s["buffers"]}
        return self.make_state(params={"memory": memory["params"], "cell": inner["params"]}, buffers=buffers)

    def regularization_losses(self, params: dict) -> list:
        """The wrapped cell's weight penalties (from ``params["cell"]``); none when frozen."""
        return self.cell.regularization_losses(params["cell"]) if self.trainable else []

    def constraints(self) -> dict:
        """The wrapped cell's constraints, under ``"cell"``."""
        inner = self.cell.constraints() if self.trainable else {}
        return {"cell": inner} if inner else {}

    def prepare_sequence(self, params: dict, sequences: Any, *, training: bool = False,
                         rng: Any = None) -> tuple[Any, Any]:
        """Both cells' per-sequence work; their step inputs side by side."""
        memory_in, memory_context = self.memory_cell.prepare_sequence(params["memory"], sequences,
                                                                      training=training, rng=rng)
        cell_in, cell_context = self.cell.prepare_sequence(params["cell"], sequences, training=training, rng=rng)
        width = ops.shape(memory_in)[-1]
        return ops.concatenate([memory_in, cell_in], axis=-1), (width, memory_context, cell_context)

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        width, memory_context, cell_context = context
        memory_in, cell_in = ops.split(step_input, [width], axis=-1)
        h, c = states
        _, (h, c) = self.memory_cell.prepared_step(params["memory"], memory_in, [h, c], memory_context,
                                                   training=training, rng=rng)
        extra = {"timespan": timespan} if self.accepts_timespan else {}
        output, (h,) = self.cell.prepared_step(params["cell"], cell_in, [h], cell_context, training=training,
                                               rng=rng, **extra)
        return output, [h, c]

    def step(self, params: dict, inputs: Any, states: list, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        prepared, context = self.prepare_sequence(params, inputs, training=training, rng=rng)
        return self.prepared_step(params, prepared, states, context, training=training, rng=rng, timespan=timespan)
