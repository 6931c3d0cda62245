"""``RNNCell``: the protocol every recurrent cell implements (one time step).

A cell is a :class:`~ember.layers.Layer` that computes one step of a recurrence. The
:class:`~ember.layers.RNN` layer loops a cell over the time axis; ``LSTMCell``,
``GRUCell``, ``SimpleRNNCell`` and the NCP cells (``CfCCell``, ``LTCCell``) all follow
this protocol, so any of them can be wrapped in ``RNN`` (and ``Bidirectional``).

The protocol:

* ``state_size`` (property): an ``int``, or a tuple of ints when the cell carries
  several state tensors (LSTM: ``(units, units)`` for ``[h, c]``). Known from the
  config alone (before ``build``).
* ``output_size`` (property): the ``int`` size of one step's output.
* ``build(input_shape, seed=None) -> state``: ``input_shape`` is ``(batch, features)``
  of ONE step (the RNN passes ``(batch, *sequence_shape[2:])``). The cell's state
  (``{"params": ..., "buffers": ...}``) is the RNN layer's state as is: no extra
  nesting, so ``rnn_state["params"]["kernel"]`` is the cell's kernel.
* ``get_initial_state(batch_size, dtype=None) -> list``: one zeros array
  ``(batch_size, size)`` per entry of ``state_size`` (a list even for one state).
* ``step(params, inputs, states, *, training=False, rng=None, timespan=None)
  -> (output, new_states)``: ``inputs`` is ``(batch, features)``, ``states`` and
  ``new_states`` are lists of arrays in ``state_size`` order. ``rng`` is an int seed
  or None; the RNN passes the SAME ``rng`` to every step of one call, so a dropout
  mask derived from it is the same at every step (Keras's "variational" dropout).
* ``accepts_timespan`` (class attribute, default False): when True the RNN passes
  ``timespan``, a ``(batch, 1)`` array holding the elapsed time of this step (1.0
  unless ``RNN.apply(..., timespans=)`` gives it), to every step. Cells that do not
  accept one are never given it; continuous-time cells (LTC, CfC) set it True.

Optional fast path (the defaults fall back to ``step``; a cell only overrides these
to hoist work out of the time loop):

* ``prepare_sequence(params, sequences, *, training=False, rng=None)
  -> (step_inputs, context)`` runs once per call on the time-major sequence
  ``(time, batch, features)``; the RNN splits ``step_inputs`` along its first axis
  once and feeds slice ``t`` to ``prepared_step``. LSTM/GRU/SimpleRNN compute
  ``x @ kernel + bias`` for all time steps here in one matmul, and draw their dropout
  masks once.
* ``prepared_step(params, step_input, states, context, *, training=False, rng=None,
  timespan=None) -> (output, new_states)``.
* ``fused_sequence(params, sequences, states, *, training=False, rng=None,
  go_backwards=False, time_major=False) -> (sequence_outputs, last_output, new_states)``
  or None: the whole sequence in one op, tried by the RNN when there is no mask and no
  timespan (``sequences`` and ``sequence_outputs`` in the RNN's own layout, the outputs
  in processing order). None (the default) means "loop over steps"; LSTM/GRU return
  None unless their configuration fits ``ops.nn.lstm``/``ops.nn.gru``.

A cell is also a one-step layer: ``cell.apply(state, x)`` runs ``step`` from zero
states, and ``cell.apply(state, [x, *states])`` from the given ones, returning
``[output, *new_states]`` (a ``build`` override calls :meth:`RNNCell.step_input_shape`
first to accept that list form). That is what ``run_layer_test`` exercises.

A cell that only implements the protocol (a plain ``Layer`` with ``state_size``,
``output_size``, ``get_initial_state`` and ``step``) also runs in ``RNN``, through
``step`` alone.

Example:
    >>> import ember
    >>> from ember import layers, ops
    >>> from ember.layers.rnn.cell import RNNCell
    >>> class Accumulate(RNNCell):
    ...     '''``h_t = h_{t-1} + x_t``: a running sum.'''
    ...     units: int = 2
    ...     @property
    ...     def state_size(self):
    ...         return self.units
    ...     @property
    ...     def output_size(self):
    ...         return self.units
    ...     def step(self, params, inputs, states, *, training=False, rng=None, timespan=None):
    ...         h = ops.add(states[0], inputs)
    ...         return h, [h]
    >>> ember.set_backend("numpy")
    >>> rnn = layers.RNN(Accumulate(), return_sequences=True)
    >>> state = rnn.build((None, 3, 2))
    >>> y, _ = rnn.apply(state, ops.ones((1, 3, 2)))
    >>> ops.to_numpy(y)[0, :, 0].tolist()
    [1.0, 2.0, 3.0]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ember import activations, constraints, initializers, ops, regularizers, validation
from ember.distribute import batch_window
from ember.layers.layer import DeclarativeLayer, Layer
from ember.seeds import call_seed, check_seed, sub_seed
from ember.symbolic import is_shape
from ember.validation import check_positive_int


def check_rate(layer: Layer, field: str) -> None:
    """Validate (and store as float) a dropout rate field in ``[0, 1)``."""
    layer._normalize(field, validation.check_rate(layer.name, field, getattr(layer, field)))


def check_units(layer: Layer, units: Any) -> None:
    """Validate (and store) the ``units`` config field, whose value is ``units``."""
    layer._normalize("units", check_positive_int(layer.name, "units", units))


def dropout_mask(layer: Layer, shape: tuple, rate: float, rng: Any, which: str, dtype: str) -> Any:
    """A ``(batch, size)`` dropout mask (kept entries ``1 / (1 - rate)``, dropped 0).

    The seed comes from ``rng`` (the apply call's), else the layer's ``seed``, else the
    backend's global stream; ``which`` names the mask (``"dropout"``,
    ``"recurrent_dropout"``) so the two differ.
    """
    base = call_seed(layer, rng)
    seed = sub_seed(base, which)
    return batch_window.draw_rows(lambda full: ops.random.dropout(ops.ones(full, dtype=dtype), rate, seed=seed),
                                  tuple(shape))


class RNNCell(DeclarativeLayer):
    """Base class of recurrent cells: one step of a recurrence (see the module docstring).

    Subclasses declare their config fields, implement ``state_size``,
    ``output_size``, ``build`` and ``step``, and may override ``prepare_sequence`` /
    ``prepared_step`` to move per-sequence work out of the time loop.

    Example:
        >>> from ember import layers, ops
        >>> rnn = layers.RNN(layers.SimpleRNNCell(4))
        >>> state = rnn.build((None, 5, 3), seed=0)
        >>> outputs, _ = rnn.apply(state, ops.ones((2, 5, 3)))
        >>> ops.shape(outputs), isinstance(layers.SimpleRNNCell(4), layers.RNNCell)
        ((2, 4), True)
    """

    accepts_timespan: ClassVar[bool] = False

    # --- protocol ------------------------------------------------------------------------
    @property
    def state_size(self) -> int | tuple[int, ...]:
        """Size of the state tensor, or a tuple of sizes for several."""
        raise NotImplementedError(f"{type(self).__name__} must define the state_size property")

    @property
    def output_size(self) -> int:
        """Size of one step's output."""
        raise NotImplementedError(f"{type(self).__name__} must define the output_size property")

    @property
    def state_sizes(self) -> tuple[int, ...]:
        """``state_size`` as a tuple (one entry per state tensor)."""
        size = self.state_size
        return (size,) if isinstance(size, int) else tuple(size)

    def get_initial_state(self, batch_size: int, dtype: Any = None) -> list:
        """One zeros array ``(batch_size, size)`` per state tensor."""
        dtype = dtype or self.variable_dtype
        return [ops.zeros((batch_size, size), dtype=dtype) for size in self.state_sizes]

    def step(self, params: dict, inputs: Any, states: list, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        """One time step: ``(output, new_states)`` for ``inputs`` ``(batch, features)``."""
        raise NotImplementedError(f"{type(self).__name__} must implement step(params, inputs, states, ...)")

    def prepare_sequence(self, params: dict, sequences: Any, *, training: bool = False,
                         rng: Any = None) -> tuple[Any, Any]:
        """Once per call, on the time-major ``(time, batch, ...)`` inputs: ``(step_inputs, context)``.

        The default hands the inputs through unchanged (``context`` None).
        """
        return sequences, None

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        """One step on ``prepare_sequence``'s per-step input; the default calls :meth:`step`."""
        if self.accepts_timespan:
            return self.step(params, step_input, states, training=training, rng=rng, timespan=timespan)
        return self.step(params, step_input, states, training=training, rng=rng)

    def fused_sequence(self, params: dict, sequences: Any, states: list, *, training: bool = False,
                       rng: Any = None, go_backwards: bool = False, time_major: bool = False) -> tuple | None:
        """The whole sequence in one op, ``(sequence_outputs, last_output, new_states)``, or None
        to have the RNN loop over steps (the default)."""
        return None

    # --- one-step layer ------------------------------------------------------------------
    def _split_call_shape(self, input_shape: Any) -> tuple[tuple, list | None]:
        if is_shape(input_shape):
            return tuple(input_shape), None
        if isinstance(input_shape, (list, tuple)) and input_shape and all(is_shape(tuple(s)) for s in input_shape):
            return tuple(input_shape[0]), [tuple(s) for s in input_shape[1:]]
        raise ValueError(
            f"cell {self.name!r} expects a (batch, features) input shape or a list [inputs, *states], "
            f"received {input_shape!r}"
        )

    def compute_output_shape(self, input_shape: Any) -> Any:
        x_shape, state_shapes = self._split_call_shape(input_shape)
        if len(x_shape) != 2:
            raise ValueError(f"cell {self.name!r} expects inputs of shape (batch, features), received {x_shape}")
        batch = x_shape[0]
        if state_shapes is None:
            return (batch, self.output_size)
        self._check_state_shapes(state_shapes, batch)
        return [(batch, self.output_size)] + [(batch, size) for size in self.state_sizes]

    def _check_state_shapes(self, shapes: list, batch: int | None) -> None:
        sizes = self.state_sizes
        if len(shapes) != len(sizes):
            raise ValueError(f"cell {self.name!r} carries {len(sizes)} state(s) of sizes {list(sizes)}, "
                             f"received {len(shapes)} with shapes {shapes}")
        for shape, size in zip(shapes, sizes):
            if len(shape) != 2 or shape[1] != size or (batch is not None and shape[0] not in (None, batch)):
                raise ValueError(f"cell {self.name!r} expects states of shapes "
                                 f"{[(batch, s) for s in sizes]}, received {shapes}")

    def step_input_shape(self, input_shape: Any) -> tuple:
        """The ``(batch, features)`` step shape from ``build``'s argument: a step shape, or
        ``[step_shape, *state_shapes]`` for the one-step layer form. ``build`` overrides
        call this first so ``cell.apply(state, [x, *states])`` works."""
        x_shape, _ = self._split_call_shape(input_shape)
        if len(x_shape) != 2 or x_shape[-1] is None:
            raise ValueError(f"cell {self.name!r} expects step inputs of shape (batch, features) with known "
                             f"features, received {x_shape}")
        return x_shape

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        """Variables for step inputs of ``input_shape`` ``(batch, features)``; none by default."""
        self.compute_output_shape(input_shape)
        return self.make_state()

    def call(self, params: dict, inputs: Any, training: bool = False, rng: Any = None) -> Any:
        if isinstance(inputs, (list, tuple)) and not ops.is_array(inputs):
            x, states = inputs[0], list(inputs[1:])
            self._check_state_shapes([tuple(ops.shape(s)) for s in states], ops.shape(x)[0])
        else:
            x, states = inputs, None
        if ops.ndim(x) != 2:
            raise ValueError(f"cell {self.name!r} expects inputs of shape (batch, features), "
                             f"received {tuple(ops.shape(x))}")
        if states is None:
            states = self.get_initial_state(ops.shape(x)[0], dtype=ops.dtype(x))
        timespan = {"timespan": ops.ones((ops.shape(x)[0], 1), dtype=ops.dtype(x))} if self.accepts_timespan else {}
        output, new_states = self.step(params, x, states, training=training, rng=rng, **timespan)
        if isinstance(inputs, (list, tuple)) and not ops.is_array(inputs):
            return [output, *new_states]
        return output


# --- shared by the dense-kernel cells (SimpleRNN, LSTM, GRU) ---------------------------------
# Each weight and the prefix of its ``*_regularizer`` / ``*_constraint`` fields (Keras's names).
DENSE_CELL_WEIGHTS = {"kernel": "kernel", "recurrent_kernel": "recurrent", "bias": "bias"}


def normalize_dense_cell(cell: DenseCell) -> None:
    """Validate and standardize the config fields the dense-kernel cells share."""
    check_units(cell, cell.units)
    for prefix in DENSE_CELL_WEIGHTS.values():
        field = f"{prefix}_regularizer"
        cell._normalize(field, regularizers.get(getattr(cell, field), f"{cell.name}: {field}"))
        field = f"{prefix}_constraint"
        cell._normalize(field, constraints.get(getattr(cell, field), f"{cell.name}: {field}"))
    for field in ("activation", "recurrent_activation"):
        if hasattr(cell, field):
            cell._normalize(field, activations.standardize(getattr(cell, field), f"{cell.name}: {field}"))
    for field in ("kernel_initializer", "recurrent_initializer", "bias_initializer"):
        cell._normalize(field, initializers.get(getattr(cell, field)))
    for field in ("use_bias", "unit_forget_bias", "reset_after"):
        if hasattr(cell, field) and not isinstance(getattr(cell, field), bool):
            raise TypeError(f"{cell.name}: {field} must be a bool, received {getattr(cell, field)!r}")
    check_rate(cell, "dropout")
    check_rate(cell, "recurrent_dropout")
    cell._normalize("seed", check_seed(cell.seed, f"{cell.name}: seed"))


class DenseCell(RNNCell):
    """Base of the dense-kernel cells (``SimpleRNNCell``, ``LSTMCell``, ``GRUCell``): their
    shared validation, their ``units``-sized state and output, the input projection of the whole
    sequence before the steps, and Keras's ``kernel_regularizer``, ``recurrent_regularizer``,
    ``bias_regularizer``, ``kernel_constraint``, ``recurrent_constraint`` and
    ``bias_constraint`` on ``kernel``, ``recurrent_kernel`` and ``bias``.

    Subclasses declare those fields (at Keras's positions). As in Keras the penalties
    are weight penalties reported by :meth:`regularization_losses` (which ``RNN``
    forwards) and the constraints are applied by the optimizer after each update
    (:meth:`constraints`); neither touches the forward pass, so the whole-sequence
    kernels (``fused_sequence``) run as they do without them.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> cell = layers.SimpleRNNCell(2, recurrent_regularizer="l2", bias_constraint="non_neg")
        >>> state = cell.build((None, 3), seed=0)
        >>> len(cell.regularization_losses(state["params"])), cell.constraints()
        (1, {'bias': NonNeg()})
    """

    if TYPE_CHECKING:  # config fields every subclass declares (at Keras's positions)
        @property
        def units(self) -> int: ...
        @property
        def activation(self) -> Any: ...
        @property
        def use_bias(self) -> bool: ...
        @property
        def dropout(self) -> float: ...
        @property
        def recurrent_dropout(self) -> float: ...
        @property
        def seed(self) -> int | None: ...

    def __post_init__(self) -> None:
        super().__post_init__()
        normalize_dense_cell(self)

    @property
    def state_size(self) -> int | tuple[int, ...]:
        """``units``: one state (``LSTMCell`` has two)."""
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    def prepare_sequence(self, params: dict, sequences: Any, *, training: bool = False,
                         rng: Any = None) -> tuple[Any, Any]:
        """``x @ kernel + bias`` for every step at once; the recurrent dropout mask as context
        (``GRUCell`` also splits its bias and recurrent kernel)."""
        return project_inputs(self, params, sequences, training, rng, params.get("bias") if self.use_bias else None)

    def step(self, params: dict, inputs: Any, states: list, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        """One step: :meth:`prepare_sequence` on the step's inputs, then :meth:`prepared_step`."""
        projected, context = self.prepare_sequence(params, inputs, training=training, rng=rng)
        return self.prepared_step(params, projected, states, context)

    def regularization_losses(self, params: dict) -> list:
        """``[kernel_regularizer(kernel), recurrent_regularizer(recurrent_kernel),
        bias_regularizer(bias)]`` for those set (none when frozen)."""
        return regularizers.weight_penalties(
            self, params, {name: getattr(self, f"{prefix}_regularizer") for name, prefix in DENSE_CELL_WEIGHTS.items()})

    def constraints(self) -> dict:
        """``{"kernel": kernel_constraint, "recurrent_kernel": recurrent_constraint, "bias":
        bias_constraint}`` for those set (none when frozen; no bias entry without a bias)."""
        return constraints.weight_constraints(
            self, {name: getattr(self, f"{prefix}_constraint") for name, prefix in DENSE_CELL_WEIGHTS.items()
                   if name != "bias" or self.use_bias})


def check_features(cell: Layer, params: dict, x: Any) -> tuple:
    """``x``'s shape; ValueError naming the layer when its last axis is not the kernel's input size."""
    shape = tuple(ops.shape(x))
    features = ops.shape(params["kernel"])[0]
    if shape[-1] != features:
        raise ValueError(f"layer {cell.name!r} expects {features} input features (the last axis), "
                         f"received {shape[-1]}")
    return shape


_FUSED_DTYPES = ("float32", "float64")


def fused_inputs(cell: DenseCell, recurrent_activation: Any, params: dict, sequences: Any, states: list,
                 training: bool, rng: Any, time_major: bool) -> Any:
    """The inputs for a dense cell's whole-sequence op (``ops.nn.lstm``/``gru``), or None when it
    does not apply: activations other than tanh/sigmoid, recurrent dropout while training, or
    inputs, weights and states not all float32 (or all float64).

    With ``training`` the input dropout mask is applied here: the loop path's mask
    (``(batch, features)``, same seed), broadcast over time.
    """
    if (cell.activation != "tanh" or recurrent_activation != "sigmoid"
            or (training and cell.recurrent_dropout > 0.0)):
        return None
    dtype = ops.dtype(sequences)
    if dtype not in _FUSED_DTYPES:
        return None
    arrays = [params["kernel"], params["recurrent_kernel"], *states]
    if cell.use_bias:
        arrays.append(params["bias"])
    if any(ops.dtype(a) != dtype for a in arrays):
        return None
    shape = check_features(cell, params, sequences)
    if training and cell.dropout > 0.0:
        mask = dropout_mask(cell, (shape[1 if time_major else 0], shape[-1]), cell.dropout, rng, "dropout", dtype)
        sequences = ops.multiply(sequences, mask if time_major else ops.expand_dims(mask, 1))
    return sequences


def project_inputs(cell: DenseCell, params: dict, x: Any, training: bool, rng: Any,
                   bias: Any = None) -> tuple[Any, Any]:
    """``(x @ kernel + bias, recurrent_dropout_mask)`` for ``x`` ``(..., batch, features)``.

    With ``training`` the input dropout mask ``(batch, features)`` multiplies ``x`` (the
    same mask at every step) and a ``(batch, units)`` recurrent mask is drawn for the
    caller to apply to ``h`` before the recurrent matmul; otherwise the mask is None.
    """
    shape = check_features(cell, params, x)
    dtype = ops.dtype(x)
    if training and cell.dropout > 0.0:
        x = ops.multiply(x, dropout_mask(cell, shape[-2:], cell.dropout, rng, "dropout", dtype))
    projected = ops.matmul(x, params["kernel"])
    if bias is not None:
        projected = ops.add(projected, bias)
    recurrent_mask = None
    if training and cell.recurrent_dropout > 0.0:
        recurrent_mask = dropout_mask(cell, (shape[-2], cell.units), cell.recurrent_dropout, rng,
                                      "recurrent_dropout", dtype)
    return projected, recurrent_mask


def init_weight(cell: Layer, initializer: Any, shape: tuple, seed: int | None, name: str) -> Any:
    """``initializer(shape)`` in the cell's variable dtype, seeded per variable name."""
    return initializer(shape, cell.variable_dtype, sub_seed(seed, name))
