"""``RNN``: loops a cell (see :mod:`ember.layers.rnn.cell`) over the time axis.

The loop is a Python ``for`` over time steps calling ``ember.ops`` (a compiled scan is
not available on every backend); cells hoist what they can out of it (LSTM/GRU/
SimpleRNN compute ``x @ kernel + bias`` for every step in one matmul before the loop).
A cell may instead run the whole sequence in one op (``RNNCell.fused_sequence``): LSTM
and GRU do, through ``ops.nn.lstm``/``ops.nn.gru`` (torch's fused kernels), when there is
no mask and no timespans and their configuration fits the op (see
:mod:`ember.layers.rnn.lstm` and :mod:`ember.layers.rnn.gru`).

State layout: the RNN's state IS its cell's state, with no extra nesting:
``state["params"]["kernel"]``, ``["recurrent_kernel"]``, ``["bias"]`` for LSTM/GRU/
SimpleRNN, in Keras's shapes, so weights copy over from Keras as they are.

Masks (Keras semantics): ``mask`` is ``(batch, time)``, True where a step is real. At a
masked step the states keep their previous values and the output repeats the
previous step's output (zeros before the first real step; zeros throughout with
``zero_output_for_mask=True``, which ``Bidirectional`` sets for sequence outputs).
Masks reach an RNN as ``apply(..., mask=)``, or, in ``Sequential``/functional models,
from a mask-producing layer upstream (``Masking``, ``Embedding(mask_zero=True)``).

In a functional model the call arguments may be symbolic tensors:
``lstm(x, initial_state=[h, c])``, ``rnn(x, timespans=t, mask=m)``.

Example:
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> rnn = layers.RNN(layers.SimpleRNNCell(4), return_sequences=True, return_state=True)
    >>> state = rnn.build((None, 5, 3), seed=0)
    >>> sorted(state["params"])
    ['bias', 'kernel', 'recurrent_kernel']
    >>> y, h = rnn.apply(state, ops.ones((2, 5, 3)))[0]
    >>> ops.shape(y), ops.shape(h)
    ((2, 5, 4), (2, 4))
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ember.validation import check_bool
from ember import dtypes
from ember.layers.layer import Layer, add_loss
from ember.layers.rnn.cell import RNNCell
from ember.symbolic import is_shape
from ember import ops
from ember import regularizers

_FLAGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll", "time_major",
          "zero_output_for_mask")


def _flag(default: bool = False) -> Any:
    return dataclasses.field(default=default, kw_only=True)


def first_mask(mask: Any) -> Any:
    """The sequence's mask out of a structured mask (Keras flattens and takes the first)."""
    while isinstance(mask, (list, tuple)) and not ops.is_array(mask):
        mask = mask[0] if mask else None
    return mask


def sequence_shape(layer: Layer, input_shape: Any) -> tuple:
    """``input_shape`` as a tuple; a ValueError naming the layer when it is not one shape."""
    try:
        shape = tuple(input_shape)
    except TypeError:
        raise TypeError(f"layer {layer.name!r} expects a (batch, time, features) input shape, "
                        f"received {input_shape!r}") from None
    if not is_shape(shape):
        raise ValueError(f"layer {layer.name!r} ({type(layer).__name__}) takes one sequence input of shape "
                         f"(batch, time, features) (pass initial states as initial_state=), received {input_shape!r}")
    return shape


def state_shapes(layer: Layer, initial_state: Any) -> list | None:
    """Shapes of an ``initial_state`` argument given as shapes (graph building) or arrays."""
    if initial_state is None:
        return None
    if is_shape(initial_state) or ops.is_array(initial_state):
        initial_state = [initial_state]
    if not isinstance(initial_state, (list, tuple)):
        raise TypeError(f"layer {layer.name!r}: initial_state must be a list of arrays, "
                        f"received {type(initial_state).__name__}")
    return [tuple(s) if is_shape(s) else tuple(ops.shape(s)) for s in initial_state]


class RNN(Layer):
    """Runs a recurrent cell over the time axis of ``(batch, time, features)`` inputs.

    Args:
        cell: an :class:`~ember.layers.rnn.cell.RNNCell` (``LSTMCell(8)``, ``CfCCell(...)``).
        return_sequences: return the output of every step ``(batch, time, output_size)``
            instead of the last one ``(batch, output_size)``.
        return_state: also return the final states: ``[output, *states]``.
        go_backwards: process the sequence in reverse (and return the reversed sequence).
        stateful: not supported: ember layers hold no arrays. Carry states yourself:
            run with ``return_state=True`` and pass the returned states as the next
            call's ``initial_state=``.
        unroll: accepted for Keras compatibility; the loop is always a Python loop.
        time_major: inputs (and sequence outputs) are ``(time, batch, ...)``.
        zero_output_for_mask: masked steps output zeros instead of repeating the
            previous output.

    Call arguments of ``apply(state, inputs, *, training=False, rng=None,
    initial_state=None, mask=None, timespans=None)``: ``initial_state`` a list with one
    ``(batch, size)`` array per state (zeros by default); ``mask`` ``(batch, time)``
    booleans; ``timespans`` ``(batch, time)`` or ``(batch, time, 1)`` elapsed times for
    cells with ``accepts_timespan`` (default 1.0 per step); ``rng`` an int seed for
    dropout.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> rnn = layers.RNN(layers.LSTMCell(3))
        >>> state = rnn.build((None, 4, 2), seed=0)
        >>> y, _ = rnn.apply(state, ops.ones((5, 4, 2)))
        >>> ops.shape(y)
        (5, 3)
    """

    cell: Any
    return_sequences: bool = _flag()
    return_state: bool = _flag()
    go_backwards: bool = _flag()
    stateful: bool = _flag()
    unroll: bool = _flag()
    time_major: bool = _flag()
    zero_output_for_mask: bool = _flag()

    # Layers that build their own cell from their config (LSTM, GRU, SimpleRNN).
    _cell_class: ClassVar[type | None] = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self._cell_class is not None:
            self._normalize("cell", self._make_cell())
        if self._has_activity_field():  # LSTM/GRU/SimpleRNN take Keras's activity_regularizer

            self._normalize("activity_regularizer", regularizers.get(
                self.activity_regularizer, f"{self.name}: activity_regularizer"))
        cell = self.cell
        if isinstance(cell, (list, tuple)):
            raise TypeError(f"{self.name}: cell must be a single RNNCell; stacked cells are not supported, "
                            f"stack RNN layers (return_sequences=True) instead")
        missing = [a for a in ("state_size", "output_size", "step", "get_initial_state", "build")
                   if not hasattr(cell, a)]
        if not isinstance(cell, Layer) or missing:
            raise TypeError(f"{self.name}: cell must be an RNNCell (a Layer with state_size, output_size, step, "
                            f"get_initial_state), received {cell!r}")
        for flag in _FLAGS:
            check_bool(self.name, flag, getattr(self, flag))
        if self.stateful:
            raise NotImplementedError(
                f"{self.name}: stateful=True is not supported: ember layers hold no arrays between calls. "
                "Carry the state explicitly: use return_state=True and pass the returned states to the "
                "next call as apply(..., initial_state=states)"
            )

    def _make_cell(self) -> RNNCell:
        cls = self._cell_class
        names = [f.name for f in dataclasses.fields(cls) if f.name not in ("name", "trainable", "dtype")]
        # The cell carries the layer's name so its validation errors name the layer.
        cell = cls(**{n: getattr(self, n) for n in names}, name=self.name, dtype=self.dtype,
                   trainable=self.trainable)
        for n in names:  # keep the cell's normalized values (activation names, initializers)
            self._normalize(n, getattr(cell, n))
        return cell

    @classmethod
    def _has_activity_field(cls) -> bool:
        return any(f.name == "activity_regularizer" for f in dataclasses.fields(cls))

    def get_config(self) -> dict:
        config = super().get_config()
        if self._cell_class is not None:
            del config["cell"]  # rebuilt from the other fields, as in Keras
        return config

    # --- shapes ------------------------------------------------------------------------
    @property
    def state_sizes(self) -> tuple[int, ...]:
        size = self.cell.state_size
        return (size,) if isinstance(size, int) else tuple(size)

    @property
    def supports_masking(self) -> bool:
        """Masks pass through to the output only when it is a sequence (``apply`` always accepts ``mask=``)."""
        return self.return_sequences

    def _batch_time(self, shape: tuple) -> tuple:
        return (shape[1], shape[0]) if self.time_major else (shape[0], shape[1])

    def compute_output_shape(self, input_shape: Any, initial_state: Any = None) -> Any:
        shape = sequence_shape(self, input_shape)
        states = state_shapes(self, initial_state)
        if len(shape) < 3:
            raise ValueError(f"layer {self.name!r} expects inputs of shape "
                             f"{'(time, batch, features)' if self.time_major else '(batch, time, features)'}, "
                             f"received shape {shape}")
        batch, time = self._batch_time(shape)
        if states is not None:
            self._check_state_shapes(states, batch)
        size = self.cell.output_size
        if self.return_sequences:
            output = (time, batch, size) if self.time_major else (batch, time, size)
        else:
            output = (batch, size)
        if self.return_state:
            return [output] + [(batch, s) for s in self.state_sizes]
        return output

    def _check_state_shapes(self, shapes: list, batch: int | None) -> None:
        sizes = self.state_sizes
        expected = [(batch, s) for s in sizes]
        if len(shapes) != len(sizes) or any(
            len(got) != 2 or got[1] != size or (batch is not None and got[0] not in (None, batch))
            for got, size in zip(shapes, sizes)
        ):
            raise ValueError(f"layer {self.name!r}: initial_state must be {len(sizes)} array(s) of shapes "
                             f"{expected}, received shapes {shapes}")

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        mask = first_mask(mask)
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(self.state_sizes)
        return output_mask

    def regularization_losses(self, params: dict) -> list:
        """The cell's weight penalties (the RNN's params are the cell's); none when frozen."""
        return self.cell.regularization_losses(params) if self.trainable else []

    def constraints(self) -> dict:
        """The cell's weight constraints (the RNN's state is the cell's, so the paths match)."""
        return self.cell.constraints() if self.trainable else {}

    def output_dtype(self, input_dtype: str) -> str:
        return input_dtype if dtypes.is_float(input_dtype) else self.variable_dtype

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        shape = sequence_shape(self, input_shape)
        self.compute_output_shape(shape)
        batch, _ = self._batch_time(shape)
        return self.cell.build((batch, *shape[2:]), seed)

    # --- computation ---------------------------------------------------------------------
    def apply(self, state: dict, inputs: Any, *, training: bool = False, rng: Any = None,
              initial_state: Any = None, mask: Any = None, timespans: Any = None) -> tuple[Any, dict]:
        """``(outputs, state)``: outputs as in :meth:`compute_output_shape`; the state is unchanged."""
        output, states = self._run(state["params"], inputs, first_mask(mask), initial_state, timespans, training, rng)
        outputs = [output, *states] if self.return_state else [output]
        activity = getattr(self, "activity_regularizer", None)
        if activity is not None:  # as in Keras, on every output (the states too with return_state)
            for value in outputs:
                add_loss(activity(value))
        return (outputs if self.return_state else output), state

    def _run(self, params: dict, sequences: Any, mask: Any, initial_state: Any, timespans: Any,
             training: bool, rng: Any) -> tuple[Any, list]:
        if getattr(type(sequences), "__ember_tensor__", False):
            sequences = sequences._native
        elif not ops.is_array(sequences):
            sequences = ops.convert_to_tensor(sequences)
        shape = tuple(ops.shape(sequences))
        self.compute_output_shape(shape)
        batch, time = self._batch_time(shape)
        if time == 0:
            raise ValueError(f"layer {self.name!r} needs at least one time step, received inputs of shape {shape}")
        cell = self.cell
        dtype = ops.dtype(sequences) if dtypes.is_float(ops.dtype(sequences)) else cell.variable_dtype
        states = self._initial_states(initial_state, batch, dtype)
        masks = self._time_major_mask(mask, batch, time)
        span_constant, span_sequence = self._time_major_timespans(timespans, batch, time, dtype)
        if masks is None and span_constant is None and span_sequence is None and isinstance(cell, RNNCell):
            # A cell with a whole-sequence op (LSTM/GRU: ops.nn.lstm/gru) runs it when it applies.
            fused = cell.fused_sequence(params, sequences, states, training=training, rng=rng,
                                        go_backwards=self.go_backwards, time_major=self.time_major)
            if fused is not None:
                sequence_outputs, last, states = fused
                return (sequence_outputs if self.return_sequences else last), list(states)
        x = sequences if self.time_major else ops.swapaxes(sequences, 0, 1)
        # The fast-path hooks come with RNNCell; a cell implementing only the protocol's
        # step() (not an RNNCell subclass) runs through step() directly.
        if isinstance(cell, RNNCell):
            step_inputs, context = cell.prepare_sequence(params, x, training=training, rng=rng)
            step = cell.prepared_step
        else:
            step_inputs, context = x, None
            step = _plain_step(cell)
        # One split into per-step slices (its gradient is one concatenate), not a slice per
        # step: each slice's gradient would be a zero-padded full-size array.
        step_inputs = _unstack(step_inputs, time)
        masks = None if masks is None else _unstack(masks, time)
        span_sequence = None if span_sequence is None else _unstack(span_sequence, time)
        outputs: list = []
        previous = None
        for t in (range(time - 1, -1, -1) if self.go_backwards else range(time)):
            span = span_constant if span_sequence is None else span_sequence[t]
            output, new_states = step(params, step_inputs[t], states, context, training=training, rng=rng,
                                      timespan=span)
            new_states = list(new_states)
            if masks is not None:
                keep = masks[t]
                new_states = [ops.where(keep, new, old) for new, old in zip(new_states, states)]
                if self.zero_output_for_mask or previous is None:
                    output = ops.where(keep, output, ops.zeros_like(output))
                else:
                    output = ops.where(keep, output, previous)
            states = new_states
            previous = output
            if self.return_sequences:
                outputs.append(output)
        if self.return_sequences:
            return ops.stack(outputs, axis=0 if self.time_major else 1), states
        return previous, states

    def _initial_states(self, initial_state: Any, batch: int, dtype: str) -> list:
        if initial_state is None:
            return list(self.cell.get_initial_state(batch, dtype=dtype))
        if ops.is_array(initial_state) or getattr(type(initial_state), "__ember_tensor__", False):
            initial_state = [initial_state]
        if not isinstance(initial_state, (list, tuple)):
            raise TypeError(f"layer {self.name!r}: initial_state must be a list of arrays, "
                            f"received {type(initial_state).__name__}")
        states = [s._native if getattr(type(s), "__ember_tensor__", False) else s for s in initial_state]
        states = [s if ops.is_array(s) else ops.convert_to_tensor(s, dtype=dtype) for s in states]
        self._check_state_shapes([tuple(ops.shape(s)) for s in states], batch)
        return states

    def _time_major_mask(self, mask: Any, batch: int, time: int) -> Any:
        """The mask as ``(time, batch, 1)`` booleans, or None."""
        if mask is None:
            return None
        if getattr(type(mask), "__ember_tensor__", False):
            mask = mask._native
        if not ops.is_array(mask):
            mask = ops.convert_to_tensor(mask)
        expected = (time, batch) if self.time_major else (batch, time)
        if tuple(ops.shape(mask)) != expected:
            raise ValueError(f"layer {self.name!r}: mask must have shape {expected} "
                             f"({'time, batch' if self.time_major else 'batch, time'}), "
                             f"received {tuple(ops.shape(mask))}")
        if ops.dtype(mask) != "bool":
            mask = ops.not_equal(mask, 0)
        if not self.time_major:
            mask = ops.swapaxes(mask, 0, 1)
        return ops.expand_dims(mask, -1)

    def _time_major_timespans(self, timespans: Any, batch: int, time: int, dtype: str) -> Any:
        """``(constant, sequence)``: a ``(batch, 1)`` timespan for every step, or a
        ``(time, batch, 1)`` one per step; both None when the cell takes no timespan."""
        if not getattr(self.cell, "accepts_timespan", False):
            if timespans is not None:
                raise ValueError(f"layer {self.name!r}: timespans given, but its cell "
                                 f"{type(self.cell).__name__} does not accept a timespan")
            return None, None
        if timespans is None:
            return ops.ones((batch, 1), dtype=dtype), None
        if getattr(type(timespans), "__ember_tensor__", False):
            timespans = timespans._native
        if isinstance(timespans, (int, float)) and not isinstance(timespans, bool):
            return ops.full((batch, 1), float(timespans), dtype=dtype), None
        if not ops.is_array(timespans):
            timespans = ops.convert_to_tensor(timespans, dtype=dtype)
        shape = tuple(ops.shape(timespans))
        expected = (time, batch) if self.time_major else (batch, time)
        if shape not in (expected, expected + (1,)):
            raise ValueError(f"layer {self.name!r}: timespans must have shape {expected} or {expected + (1,)}, "
                             f"received {shape}")
        if ops.dtype(timespans) != dtype:
            timespans = ops.cast(timespans, dtype)
        if len(shape) == 2:
            timespans = ops.expand_dims(timespans, -1)
        if not self.time_major:
            timespans = ops.swapaxes(timespans, 0, 1)
        return None, timespans


def _unstack(x: Any, time: int) -> list:
    """The ``time`` slices ``x[t]`` of a time-major array."""
    if time == 1:
        return [ops.squeeze(x, 0)]
    return [ops.squeeze(part, 0) for part in ops.split(x, time, axis=0)]


def _plain_step(cell: Any) -> Any:
    """``prepared_step`` for a cell that has only ``step``."""
    takes_timespan = getattr(cell, "accepts_timespan", False)

    def step(params: dict, inputs: Any, states: list, context: Any, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        if takes_timespan:
            return cell.step(params, inputs, states, training=training, rng=rng, timespan=timespan)
        return cell.step(params, inputs, states, training=training, rng=rng)

    return step
