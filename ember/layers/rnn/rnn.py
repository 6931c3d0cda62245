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
SimpleRNN, in Keras's shapes, so weights copy over from Keras as they are. A
``stateful=True`` RNN adds its carried states to the buffers (``rnn_state_0``, ...; see
:mod:`ember.layers.rnn.carried_state`).

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

import optree

from ember import dtypes, ops, regularizers
from ember.layers.layer import DeclarativeLayer, Layer
from ember.layers.loss_collection import add_loss
from ember.layers.rnn import carried_state
from ember.layers.rnn.cell import RNNCell
from ember.layers.rnn.structure import (
    StateStructure,
    initial_states,
    is_keras_cell,
    is_tensor,
    keras_cell_step,
    output_size,
    state_structure,
)
from ember.symbolic import is_shape
from ember.validation import check_bool

_FLAGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll", "time_major",
          "zero_output_for_mask")


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


def sequence_shapes(layer: Layer, input_shape: Any, nested_ok: bool) -> tuple[list, Any]:
    """``(leaf shapes, structure)`` of the input shape; several (nested) sequences only with ``nested_ok``
    (a Keras-style cell, whose ``call`` takes the structure)."""
    if is_shape(input_shape) or not nested_ok or not isinstance(input_shape, (list, tuple, dict)):
        shape = sequence_shape(layer, input_shape)
        return [shape], None
    leaves, spec = optree.tree_flatten(input_shape, is_leaf=is_shape, none_is_leaf=False)
    if not leaves or not all(is_shape(leaf) for leaf in leaves):
        raise ValueError(f"layer {layer.name!r}: inputs must be (batch, time, features) sequences, possibly nested "
                         f"in tuples/lists/dicts, received shapes {input_shape!r}")
    first = leaves[0]
    for leaf in leaves[1:]:
        if len(leaf) < 2 or leaf[:2] != first[:2]:
            raise ValueError(f"layer {layer.name!r}: nested input sequences must share their batch and time "
                             f"sizes, received shapes {input_shape!r}")
    return [tuple(leaf) for leaf in leaves], spec


def state_shapes(layer: Layer, initial_state: Any) -> list | None:
    """Shapes of an ``initial_state`` argument given as shapes (graph building) or arrays, flat
    (nested states in leaf order)."""
    if initial_state is None:
        return None
    if is_shape(initial_state) or ops.is_array(initial_state) or is_tensor(initial_state):
        initial_state = [initial_state]
    if not isinstance(initial_state, (list, tuple)):
        raise TypeError(f"layer {layer.name!r}: initial_state must be a list of arrays, "
                        f"received {type(initial_state).__name__}")
    leaves = optree.tree_leaves(list(initial_state), none_is_leaf=True,
                                is_leaf=lambda v: is_shape(v) or ops.is_array(v) or is_tensor(v))
    return [tuple(s) if is_shape(s) else tuple(ops.shape(s)) for s in leaves]


class RNN(DeclarativeLayer):
    """Runs a recurrent cell over the time axis of ``(batch, time, features)`` inputs.

    Args:
        cell: an :class:`~ember.layers.rnn.cell.RNNCell` (``LSTMCell(8)``, ``CfCCell(...)``), or a
            Keras-style cell (``state_size`` and ``call(inputs, states)``), whose states and
            inputs may be nested structures (see :mod:`ember.layers.rnn.structure`).
        return_sequences: return the output of every step ``(batch, time, output_size)``
            instead of the last one ``(batch, output_size)``.
        return_state: also return the final states: ``[output, *states]``.
        go_backwards: process the sequence in reverse (and return the reversed sequence).
        stateful: carry the final states of each call (each batch in ``fit``/``predict``/
            ``evaluate``) over as the next one's initial states; they live in the layer's
            buffers (see :mod:`ember.layers.rnn.carried_state`), :meth:`reset_states`
            restores the initial states.
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
    return_sequences: bool = dataclasses.field(default=False, kw_only=True)
    return_state: bool = dataclasses.field(default=False, kw_only=True)
    go_backwards: bool = dataclasses.field(default=False, kw_only=True)
    stateful: bool = dataclasses.field(default=False, kw_only=True)
    unroll: bool = dataclasses.field(default=False, kw_only=True)
    time_major: bool = dataclasses.field(default=False, kw_only=True)
    zero_output_for_mask: bool = dataclasses.field(default=False, kw_only=True)

    # Layers that build their own cell from their config (LSTM, GRU, SimpleRNN).
    _cell_class: ClassVar[type[RNNCell] | None] = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self._cell_class is not None:
            self._normalize("cell", self._make_cell())
        if self._has_activity_field():  # LSTM/GRU/SimpleRNN take Keras's activity_regularizer
            activity = getattr(self, "activity_regularizer", None)  # a field of those subclasses only
            self._normalize("activity_regularizer", regularizers.get(activity, f"{self.name}: activity_regularizer"))
        cell = self.cell
        if isinstance(cell, (list, tuple)):
            raise TypeError(f"{self.name}: cell must be a single RNNCell; stacked cells are not supported, "
                            f"stack RNN layers (return_sequences=True) instead")
        needed = ("state_size",) if is_keras_cell(cell) else ("state_size", "output_size", "step",
                                                                 "get_initial_state", "build")
        missing = [a for a in needed if not hasattr(cell, a)]
        if not isinstance(cell, Layer) or missing:
            raise TypeError(f"{self.name}: cell must be an RNNCell (a Layer with state_size, output_size, step, "
                            f"get_initial_state) or a Keras-style cell (a Layer with state_size and "
                            f"call(inputs, states)), received {cell!r}")
        self._structure()  # checks the cell's state_size
        for flag in _FLAGS:
            check_bool(self.name, flag, getattr(self, flag))

    def _make_cell(self) -> RNNCell:
        cls = self._cell_class
        if cls is None:  # __post_init__ calls this only for the classes that set one
            raise TypeError(f"{type(self).__name__} has no _cell_class to build its cell from")
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
    def _structure(self) -> StateStructure:
        return state_structure(self.name, self.cell.state_size)

    @property
    def state_sizes(self) -> tuple[int, ...]:
        """The size of every state array, flat (nested states in leaf order)."""
        return self._structure().leaves

    @property
    def carried_buffers(self) -> tuple[str, ...]:
        """The buffers holding a stateful RNN's carried states (not weights; none when not stateful)."""
        return tuple(carried_state.buffer_names(len(self.state_sizes))) if self.stateful else ()

    @property
    def supports_masking(self) -> bool:  # type: ignore[override]  # per instance; a class flag in Layer
        """Masks pass through to the output only when it is a sequence (``apply`` always accepts ``mask=``)."""
        return self.return_sequences

    def _batch_time(self, shape: tuple) -> tuple:
        return (shape[1], shape[0]) if self.time_major else (shape[0], shape[1])

    def compute_output_shape(self, input_shape: Any, initial_state: Any = None) -> Any:
        shapes, _ = sequence_shapes(self, input_shape, is_keras_cell(self.cell))
        shape = shapes[0]
        states = state_shapes(self, initial_state)
        if len(shape) < 3:
            raise ValueError(f"layer {self.name!r} expects inputs of shape "
                             f"{'(time, batch, features)' if self.time_major else '(batch, time, features)'}, "
                             f"received shape {shape}")
        batch, time = self._batch_time(shape)
        if states is not None:
            self._check_state_shapes(states, batch)
        structure = self._structure()
        size = output_size(self.cell, structure)
        output: tuple
        if self.return_sequences:
            output = (time, batch, size) if self.time_major else (batch, time, size)
        else:
            output = (batch, size)
        if self.return_state:
            return [output] + structure.unflatten([(batch, s) for s in structure.leaves])
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
            return [output_mask] + [None] * self._structure().top_level
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
        shapes, spec = sequence_shapes(self, input_shape, is_keras_cell(self.cell))
        self.compute_output_shape(input_shape)
        batch, _ = self._batch_time(shapes[0])
        steps = [(batch, *shape[2:]) for shape in shapes]
        cell_state = self.cell.build(steps[0] if spec is None else optree.tree_unflatten(spec, steps), seed)
        if not self.stateful:
            return cell_state
        dtype = self.cell.variable_dtype
        return carried_state.create(self.name, cell_state, self.state_sizes, batch, dtype)

    def reset_states(self, states: Any = None) -> None:
        """Set a stateful RNN's carried states to the cell's initial states (zeros for the built-in
        cells), or to ``states`` (one array per state, as ``initial_state=``), in the state of
        the model that holds the layer (or the layer's own). Keras's ``reset_state``/``reset_states``."""
        if not self.stateful:
            raise ValueError(f"layer {self.name!r}: reset_states() needs stateful=True (a layer built with "
                             f"stateful=False carries no state between calls)")
        state = self._read_state()
        count = len(self.state_sizes)
        current = [state["buffers"][name] for name in carried_state.buffer_names(count)
                   if name in state["buffers"]]
        if len(current) != count:
            raise ValueError(f"layer {self.name!r}: its state has no carried states; build it again")
        batch, dtype = ops.shape(current[0])[0], ops.dtype(current[0])
        if states is None:
            new = initial_states(self.cell, self._structure(), self.name, batch, dtype)
        else:
            if batch == 0:  # given states fix the batch size of a layer built without one
                shapes = state_shapes(self, states) or [()]
                batch = shapes[0][0] if shapes[0] else 0
            new = self._initial_states(states, batch, dtype)
        self._write_state({"params": state["params"], "buffers": carried_state.write(state["buffers"], new)})

    reset_state = reset_states  # Keras 3's name

    # --- computation ---------------------------------------------------------------------
    def apply(self, state: dict, inputs: Any, *, training: bool = False, rng: Any = None,
              initial_state: Any = None, mask: Any = None, timespans: Any = None) -> tuple[Any, dict]:
        """``(outputs, state)``: outputs as in :meth:`compute_output_shape`; the state is unchanged,
        except a stateful RNN's carried states (see :mod:`ember.layers.rnn.carried_state`)."""
        count = len(self.state_sizes)
        cell_state = state
        carried = None
        if self.stateful:
            cell_state = {"params": state["params"], "buffers": carried_state.strip(state["buffers"], count)}
            carried = carried_state.read(self.name, state["buffers"], count, self._input_batch(inputs))
            if initial_state is None:
                initial_state = carried
        output, states = self._run(cell_state, inputs, first_mask(mask), initial_state, timespans, training, rng)
        if self.stateful:
            state = {"params": state["params"], "buffers": carried_state.write(state["buffers"], states)}
        returned = self._structure().unflatten(states) if self.return_state else []
        outputs = [output, *returned] if self.return_state else [output]
        activity = getattr(self, "activity_regularizer", None)
        if activity is not None:  # as in Keras, on every output (the states too with return_state)
            for value in [output, *states] if self.return_state else outputs:
                add_loss(activity(value))
        return (outputs if self.return_state else output), state

    def _input_batch(self, inputs: Any) -> int:
        first = optree.tree_leaves(inputs, is_leaf=lambda v: ops.is_array(v) or is_tensor(v))[0]
        shape = tuple(ops.shape(first._native if is_tensor(first) else first))
        if len(shape) < 2:
            raise ValueError(f"layer {self.name!r} expects inputs of shape (batch, time, features), "
                             f"received shape {shape}")
        return shape[1] if self.time_major else shape[0]

    def _run(self, cell_state: dict, sequences: Any, mask: Any, initial_state: Any, timespans: Any,
             training: bool, rng: Any) -> tuple[Any, list]:
        """``(output, final states (flat))`` of the loop over time."""
        params = cell_state["params"]
        cell = self.cell
        keras_cell = is_keras_cell(cell)
        leaves, spec = self._sequence_leaves(sequences, keras_cell)
        shape = tuple(ops.shape(leaves[0]))
        self.compute_output_shape(shape if spec is None else
                                  optree.tree_unflatten(spec, [tuple(ops.shape(x)) for x in leaves]))
        batch, time = self._batch_time(shape)
        if time == 0:
            raise ValueError(f"layer {self.name!r} needs at least one time step, received inputs of shape {shape}")
        first_dtype = ops.dtype(leaves[0])
        dtype = first_dtype if dtypes.is_float(first_dtype) else cell.variable_dtype
        states = self._initial_states(initial_state, batch, dtype)
        masks = self._time_major_mask(mask, batch, time)
        span_constant, span_sequence = self._time_major_timespans(timespans, batch, time, dtype)
        if (spec is None and masks is None and span_constant is None and span_sequence is None
                and isinstance(cell, RNNCell)):
            # A cell with a whole-sequence op (LSTM/GRU: ops.nn.lstm/gru) runs it when it applies.
            fused = cell.fused_sequence(params, leaves[0], states, training=training, rng=rng,
                                        go_backwards=self.go_backwards, time_major=self.time_major)
            if fused is not None:
                sequence_outputs, last, states = fused
                return (sequence_outputs if self.return_sequences else last), list(states)
        xs = [x if self.time_major else ops.swapaxes(x, 0, 1) for x in leaves]
        # The fast-path hooks come with RNNCell; a cell implementing only the protocol's
        # step() (not an RNNCell subclass) runs through step() directly, a Keras-style cell
        # through its call(inputs, states).
        if isinstance(cell, RNNCell):
            step_inputs, context = cell.prepare_sequence(params, xs[0], training=training, rng=rng)
            step = cell.prepared_step
            per_step = _unstack(step_inputs, time)
        else:
            context = None
            step = keras_cell_step(cell, cell_state, self._structure(), self.name) if keras_cell else _plain_step(cell)
            # One split into per-step slices (its gradient is one concatenate), not a slice per
            # step: each slice's gradient would be a zero-padded full-size array.
            columns = [_unstack(x, time) for x in xs]
            per_step = [column[0] if spec is None else optree.tree_unflatten(spec, list(column))
                        for column in zip(*columns)]
        masks = None if masks is None else _unstack(masks, time)
        span_sequence = None if span_sequence is None else _unstack(span_sequence, time)
        outputs: list = []
        previous = None
        for t in (range(time - 1, -1, -1) if self.go_backwards else range(time)):
            span = span_constant if span_sequence is None else span_sequence[t]
            output, new_states = step(params, per_step[t], states, context, training=training, rng=rng,
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

    def _sequence_leaves(self, sequences: Any, nested_ok: bool) -> tuple[list, Any]:
        """The input sequences as native arrays, flat, and their structure (None for one array)."""
        def native(value: Any) -> Any:
            if is_tensor(value):
                return value._native
            return value if ops.is_array(value) else ops.convert_to_tensor(value)

        if ops.is_array(sequences) or is_tensor(sequences) or not isinstance(sequences, (list, tuple, dict)):
            return [native(sequences)], None
        if not nested_ok:
            raise ValueError(f"layer {self.name!r} ({type(self).__name__}) takes one sequence input of shape "
                             f"(batch, time, features) (nested inputs need a Keras-style cell, whose "
                             f"call(inputs, states) takes them; pass initial states as initial_state=), "
                             f"received a {type(sequences).__name__}")
        leaves, spec = optree.tree_flatten(sequences, is_leaf=lambda v: ops.is_array(v) or is_tensor(v))
        return [native(leaf) for leaf in leaves], spec

    def _initial_states(self, initial_state: Any, batch: int, dtype: str) -> list:
        structure = self._structure()
        if initial_state is None:
            return initial_states(self.cell, structure, self.name, batch, dtype)
        if ops.is_array(initial_state) or is_tensor(initial_state):
            initial_state = [initial_state]
        if not isinstance(initial_state, (list, tuple)):
            raise TypeError(f"layer {self.name!r}: initial_state must be a list of arrays, "
                            f"received {type(initial_state).__name__}")
        states = structure.flatten(self.name, initial_state, "initial_state")
        states = [s._native if is_tensor(s) else s for s in states]
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
