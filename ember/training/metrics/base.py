"""The ``Metric`` base class: pure state functions, used directly with Keras's stateful API.

A metric's state is a dict of native arrays (a pytree), created by ``init_state()`` and
threaded through the *pure* functions the compiled training steps use:

* ``init_state(y_pred_shape=None) -> state``
* ``stateless_update_state(state, y_true, y_pred, sample_weight=None) -> new_state`` (the old
  state is never modified; reducing metrics such as :class:`Mean` take ``(state, values,
  sample_weight=None)`` as in Keras)
* ``stateless_result(state) -> scalar`` (or an array, e.g. per-class F1 scores)

Used directly, a metric is Keras's stateful object: ``update_state(y_true, y_pred,
sample_weight=None)`` accumulates into the metric's current state (replaced whole, a failing
call leaves it unchanged), ``result()`` reads it and ``reset_state()`` starts over. The pure
forms are also reachable under the Keras names, told apart by their first argument:
``update_state(state, ...)`` with a state dict and ``result(state)`` return a new state and
a value without touching the metric's own state. Subclasses write either form: the pure one
(``init_state`` plus ``update_state(self, state, ...)``/``result(self, state)``), or Keras's
(``self.add_variable(...)`` in ``__init__``, ``update_state(self, y_true, y_pred, ...)`` and
``result(self)`` over the variables; see :mod:`ember.training.metrics.metric_variables`).
``metric.stateful()`` (the earlier Ember-only handle) still works. Calling
``metric(y_true, y_pred)`` evaluates the metric on just those values.

Example:
    >>> import ember
    >>> from ember import metrics
    >>> ember.set_backend("numpy")
    >>> acc = metrics.BinaryAccuracy()
    >>> acc.update_state([[1.0], [0.0]], [[0.9], [0.8]])
    >>> float(acc.result())
    0.5
    >>> acc.reset_state(); float(acc.result())
    0.0
    >>> state = acc.update_state(acc.init_state(), [[1.0]], [[0.7]])  # the pure form
    >>> float(acc.result(state))
    1.0
"""

from __future__ import annotations

import inspect
from typing import Any

from ember import dtypes, ops
from ember.training.losses.base import float_dtype, to_snake_case
from ember.training.metrics import metric_variables


def _install(cls: type, **methods: Any) -> None:
    """Set ``methods`` on ``cls`` (a subclass's update_state/result, sorted into the pure or Keras form)."""
    for name, method in methods.items():
        setattr(cls, name, method)


def _first_parameter(function: Any) -> str | None:
    """The name of ``function``'s first parameter after ``self`` (None when it has none)."""
    names = [p.name for p in inspect.signature(function).parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[1] if len(names) > 1 else None


def _detached(values: tuple) -> tuple:
    """Native arrays among ``values`` without gradient history (others unchanged)."""
    return tuple(ops.stop_gradient(v._native if getattr(type(v), "__ember_tensor__", False) else v)
                 if ops.is_array(v) or getattr(type(v), "__ember_tensor__", False) else v for v in values)


def _is_state_call(args: tuple, kwargs: dict) -> bool:
    """Whether an ``update_state`` call is the pure form (a state dict first)."""
    return "state" in kwargs or (bool(args) and isinstance(args[0], dict))


def _update_dispatch(pure: Any) -> Any:
    """A pure-form class's public ``update_state``: its own pure function for a state dict first
    (so ``super().update_state(state, ...)`` in a subclass reaches it), else Keras's stateful call."""
    def update_state(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _is_state_call(args, kwargs):
            return pure(self, *args, **kwargs)
        return self._accumulate(args, kwargs)

    update_state.__doc__ = pure.__doc__ or Metric.update_state.__doc__
    update_state._dispatches = True  # type: ignore[attr-defined]  # a marker on the function object
    return update_state


def _result_dispatch(pure: Any) -> Any:
    def result(self: Any, *state: Any) -> Any:
        if state:
            return pure(self, *state)
        return self.stateless_result(self._current_state())

    result.__doc__ = pure.__doc__ or Metric.result.__doc__
    result._dispatches = True  # type: ignore[attr-defined]  # a marker on the function object
    return result


class Metric:
    """Base class of metrics (see the module docstring for the pure/stateful API).

    Subclasses implement either the pure form (:meth:`init_state`, ``update_state(self,
    state, ...)`` returning a new state, ``result(self, state)``) or Keras's form
    (:meth:`add_variable` in ``__init__``, ``update_state(self, y_true, y_pred,
    sample_weight=None)`` assigning the variables, ``result(self)``). A pure metric whose
    state size depends on the data (``F1Score``, ``R2Score``) sets ``state_needs_shape =
    True`` and needs ``init_state(y_pred_shape=...)``.

    Args:
        name: the metric's name (default: the class name in snake case).
        dtype: the state's floating dtype (default ``floatx()`` when the state is created).

    Example:
        >>> import ember
        >>> from ember import metrics, ops
        >>> ember.set_backend("numpy")
        >>> class Largest(metrics.Metric):
        ...     def init_state(self, y_pred_shape=None):
        ...         return {"max": ops.full((), -float("inf"), dtype=self.dtype)}
        ...     def update_state(self, state, y_true, y_pred, sample_weight=None):
        ...         return {"max": ops.maximum(state["max"], ops.max(ops.cast(y_pred, self.dtype)))}
        ...     def result(self, state):
        ...         return state["max"]
        >>> float(Largest()([0.0], [3.0]))
        3.0
        >>> class CountAbove(metrics.Metric):  # Keras's form
        ...     def __init__(self, threshold=0.5, name="count_above", **kwargs):
        ...         super().__init__(name=name, **kwargs)
        ...         self.threshold = threshold
        ...         self.count = self.add_variable(shape=(), initializer="zeros", name="count")
        ...     def update_state(self, y_true, y_pred, sample_weight=None):
        ...         self.count.assign_add(ops.sum(ops.cast(ops.greater(y_pred, self.threshold), self.dtype)))
        ...     def result(self):
        ...         return self.count
        >>> m = CountAbove()
        >>> m.update_state([1, 0], [0.7, 0.9]); m.update_state([1], [0.1])
        >>> float(m.result())
        2.0
    """

    state_needs_shape = False
    # Keras's form of a subclass: its own update_state/result over add_variable variables.
    _keras_update_state: Any = None
    _keras_result: Any = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Sort a subclass's own ``update_state``/``result`` into the pure or Keras form; the public
        names then dispatch (see the module docstring)."""
        super().__init_subclass__(**kwargs)
        update = cls.__dict__.get("update_state")
        if update is not None and not getattr(update, "_dispatches", False):
            if _first_parameter(update) == "state":
                _install(cls, stateless_update_state=update, update_state=_update_dispatch(update))
            else:
                _install(cls, _keras_update_state=update, stateless_update_state=Metric._variables_update_state,
                         update_state=Metric.update_state)
        result = cls.__dict__.get("result")
        if result is not None and not getattr(result, "_dispatches", False):
            if _first_parameter(result) == "state":
                _install(cls, stateless_result=result, result=_result_dispatch(result))
            else:
                _install(cls, _keras_result=result, stateless_result=Metric._variables_result, result=Metric.result)

    def __init__(self, name: str | None = None, dtype: Any = None):
        owner = type(self).__name__
        if name is not None and not isinstance(name, str):
            raise TypeError(f"{owner}: name must be a string or None, received {name!r}")
        self.name = name if name is not None else to_snake_case(owner)
        self._dtype = None if dtype is None else float_dtype(dtype, owner)
        self._stateful_state: dict | None = None  # the state direct update_state calls accumulate into
        self._y_pred_shape: tuple | None = None

    @property
    def dtype(self) -> str:
        """The dtype new state is created in."""
        return self._dtype or dtypes.floatx()

    # ------------------------------------------------------------------ pure API
    def init_state(self, y_pred_shape: tuple | None = None) -> dict:
        """A fresh state: a dict of native arrays (a Keras-style metric's ``add_variable`` declarations).

        Args:
            y_pred_shape: the predictions' shape (the batch entry may be None); only metrics
                with ``state_needs_shape`` use it.
        """
        if self._keras_update_state is not None or self.__dict__.get("_variable_specs"):
            return metric_variables.declared_state(self)
        raise NotImplementedError(f"{type(self).__name__} must implement init_state(), or declare its state with "
                                  "self.add_variable(...) in __init__")

    def stateless_update_state(self, state: dict, *args: Any, **kwargs: Any) -> dict:
        """A new state with one batch accumulated (``state`` itself is left unchanged)."""
        raise NotImplementedError(f"{type(self).__name__} must implement update_state")

    def stateless_result(self, state: dict) -> Any:
        """The metric's value for ``state`` (a native array)."""
        raise NotImplementedError(f"{type(self).__name__} must implement result")

    def _variables_update_state(self, state: dict, *args: Any, **kwargs: Any) -> dict:
        """The pure update of a Keras-style metric: its ``update_state`` over a copy of ``state``."""
        _, new = metric_variables.run_in_frame(self, state, type(self)._keras_update_state, args, kwargs)
        return new

    def _variables_result(self, state: dict) -> Any:
        returned, _ = metric_variables.run_in_frame(self, state, type(self)._keras_result, (), {})
        return returned

    # --------------------------------------------------------------- Keras's API
    def update_state(self, *args: Any, **kwargs: Any) -> Any:
        """Accumulate one batch: ``update_state(y_true, y_pred, sample_weight=None)`` (reducing
        metrics: ``update_state(values, sample_weight=None)``) into the metric's own state; returns None.

        The pure form ``update_state(state, y_true, y_pred, ...)`` returns the new state instead
        and leaves the metric's own state alone.
        """
        if _is_state_call(args, kwargs):
            return self.stateless_update_state(*args, **kwargs)
        return self._accumulate(args, kwargs)

    def _accumulate(self, args: tuple, kwargs: dict) -> None:
        """Keras's stateful update: one batch into the metric's own state (replaced whole). The
        values are taken without their gradient history (a metric is not differentiated, and its
        state must not keep a step's graph alive, as Keras updates metric variables without it)."""
        args, kwargs = _detached(args), {k: _detached((v,))[0] for k, v in kwargs.items()}
        if self._keras_update_state is not None:
            args, kwargs = metric_variables.to_natives(args, kwargs)
        state, shape = self._stateful_state, self._y_pred_shape
        if state is None:
            shape = self.shape_from_arguments(args, kwargs)
            state = self.init_state(shape) if shape is not None else self.init_state()
        new_state = self.stateless_update_state(state, *args, **kwargs)
        self._stateful_state, self._y_pred_shape = new_state, shape
        return None

    def result(self, *state: Any) -> Any:
        """The current value (a native array); ``result(state)`` is the value of a given state."""
        if state:
            return self.stateless_result(*state)
        return self.stateless_result(self._current_state())

    update_state._dispatches = True  # type: ignore[attr-defined]  # a marker on the function object
    result._dispatches = True  # type: ignore[attr-defined]  # a marker on the function object

    def reset_state(self) -> None:
        """Start over: the metric's own state returns to its initial value (a data-shaped state keeps
        its shape)."""
        if self._y_pred_shape is None:
            self._stateful_state = None
        else:
            self._stateful_state = self.init_state(self._y_pred_shape)

    def reset_states(self) -> None:
        """Keras 2's name of :meth:`reset_state`."""
        self.reset_state()

    def _current_state(self) -> dict:
        state = self._stateful_state
        if state is None:
            shape = self._y_pred_shape
            state = self.init_state(shape) if shape is not None else self.init_state()
        return state

    # --- Keras-style variables -------------------------------------------------------------
    def add_variable(self, shape: Any = (), initializer: Any = "zeros", dtype: Any = None, aggregation: str = "sum",
                     name: str | None = None) -> Any:
        """Declare a state variable (Keras 3's ``Metric.add_variable``), in ``__init__``.

        Args:
            shape: its shape (fully known).
            initializer: its initial value (name, config or :class:`ember.initializers.Initializer`).
            dtype: its dtype (default: the metric's ``dtype``).
            aggregation: accepted for Keras compatibility; ember.distribute sums metric states over
                the ranks (Keras's ``"sum"``), so only ``"sum"`` is offered.
            name: its key in the metric's state (unique).

        Returns:
            An :class:`ember.Variable` (``assign``/``assign_add``/``assign_sub``) onto the entry of
            that name in the state the metric is updated with.

        Raises:
            ValueError/TypeError: a duplicate name, an unknown shape, a bad initializer or dtype,
                an aggregation other than ``"sum"``.
        """
        if aggregation != "sum":
            raise ValueError(f"{self.name}: add_variable aggregation={aggregation!r} is not supported: "
                             "ember.distribute sums metric states over the ranks; use 'sum' (write result() so a "
                             "sum is right)")
        return metric_variables.add_variable(self, shape, initializer, dtype, name)

    def add_weight(self, name: str | None = None, initializer: Any = "zeros", shape: Any = (), dtype: Any = None,
                   aggregation: str = "sum") -> Any:
        """Keras's older name of :meth:`add_variable` (same arguments, ``name`` first)."""
        return self.add_variable(shape=shape, initializer=initializer, dtype=dtype, aggregation=aggregation, name=name)

    @property
    def variables(self) -> list:
        """The variables declared with :meth:`add_variable` (views onto the metric's current state)."""
        return metric_variables.variables(self)

    def _read_state(self) -> dict:
        """The owner protocol of :class:`ember.Variable`: the metric's current state as a layer state."""
        state = self._current_state()
        if self._stateful_state is None:
            self._stateful_state = state
        return {"params": {}, "buffers": state}

    def _write_state(self, state: dict) -> None:
        self._stateful_state = state["buffers"]

    # ------------------------------------------------------------- conveniences
    def stateful(self) -> StatefulMetric:
        """A :class:`StatefulMetric` handle with Keras's stateful methods."""
        return StatefulMetric(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The metric over just the given values: ``result(update_state(init_state(), ...))``.

        The object holds no state, so (unlike Keras) nothing accumulates across calls.
        """
        shape = self.shape_from_arguments(args, kwargs)
        state = self.init_state(shape) if shape is not None else self.init_state()
        if self._keras_update_state is not None:
            args, kwargs = metric_variables.to_natives(args, kwargs)
        return self.stateless_result(self.stateless_update_state(state, *args, **kwargs))

    def shape_from_arguments(self, args: tuple, kwargs: dict) -> tuple | None:
        """The ``y_pred`` shape in ``update_state``-style arguments (for lazy state creation)."""
        if not self.state_needs_shape:
            return None
        y_pred = kwargs["y_pred"] if "y_pred" in kwargs else (args[1] if len(args) > 1 else None)
        return None if y_pred is None else ops.shape(ops.convert_to_tensor(y_pred))

    def check_state(self, state: Any, keys: tuple) -> None:
        """``ValueError`` unless ``state`` is a dict with exactly ``keys`` (a state of this metric)."""
        if not isinstance(state, dict) or set(state) != set(keys):
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"{self.name}: state must be the dict {type(self).__name__}.init_state() returns, "
                             f"with keys {sorted(keys)}; received {got} (the pure API is update_state(state, "
                             f"y_true, y_pred); Keras's stateful call is update_state(y_true, y_pred))")

    def get_config(self) -> dict:
        """The constructor arguments (JSON data)."""
        return {"name": self.name, "dtype": self._dtype}

    @classmethod
    def from_config(cls, config: dict) -> Metric:
        """Rebuild from :meth:`get_config`'s output."""
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items() if k != "fn")
        return f"{type(self).__name__}({args})"


class StatefulMetric:
    """A Keras-style stateful handle on a pure :class:`Metric`.

    Holds the current state (``.state``, None until the first update); ``update_state``
    replaces it whole (a failing call leaves it unchanged), ``result()`` reads it and
    ``reset_state()`` starts over.

    Example:
        >>> import ember
        >>> from ember import metrics
        >>> ember.set_backend("numpy")
        >>> mean = metrics.Mean().stateful()
        >>> mean.update_state([1.0, 2.0])
        >>> mean.update_state([6.0])
        >>> float(mean.result())
        3.0
        >>> mean.reset_state()
        >>> float(mean.result())
        0.0
    """

    def __init__(self, metric: Metric):
        if not isinstance(metric, Metric):
            raise TypeError(f"StatefulMetric: expected a Metric, received {metric!r}")
        self.metric = metric
        self.state: dict | None = None
        self._y_pred_shape: tuple | None = None

    @property
    def name(self) -> str:
        """The metric's name."""
        return self.metric.name

    def update_state(self, *args: Any, **kwargs: Any) -> None:
        """Accumulate a batch (the arguments of the metric's pure ``update_state`` minus ``state``)."""
        state, shape = self.state, self._y_pred_shape
        if state is None:
            shape = self.metric.shape_from_arguments(args, kwargs)
            state = self.metric.init_state(shape)
        new_state = self.metric.update_state(state, *args, **kwargs)
        self.state, self._y_pred_shape = new_state, shape

    def result(self) -> Any:
        """The metric's current value."""
        state = self.state if self.state is not None else self.metric.init_state(self._y_pred_shape)
        return self.metric.result(state)

    def reset_state(self) -> None:
        """Start over (a data-shaped state keeps its shape)."""
        self.state = None if self._y_pred_shape is None else self.metric.init_state(self._y_pred_shape)

    def __repr__(self) -> str:
        return f"StatefulMetric({self.metric!r})"
