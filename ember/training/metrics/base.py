"""The ``Metric`` base class: pure state functions plus a Keras-style stateful handle.

A metric object is configuration only. Its state is a dict of native arrays (a pytree),
created by ``init_state()`` and threaded through the *pure* methods:

* ``init_state(y_pred_shape=None) -> state``
* ``update_state(state, y_true, y_pred, sample_weight=None) -> new_state`` (the old state
  is never modified; reducing metrics such as :class:`Mean` take ``(state, values,
  sample_weight=None)`` as in Keras)
* ``result(state) -> scalar`` (or an array, e.g. per-class F1 scores)

so a trainer can carry metric state through a compiled step. ``metric.stateful()``
returns a :class:`StatefulMetric` with Keras's stateful API (``update_state(y_true,
y_pred, sample_weight=None)``, ``result()``, ``reset_state()``), and calling a metric
``metric(y_true, y_pred)`` evaluates it on just those values.

Example:
    >>> import ember
    >>> from ember import metrics
    >>> ember.set_backend("numpy")
    >>> acc = metrics.BinaryAccuracy()
    >>> state = acc.init_state()
    >>> state = acc.update_state(state, [[1.0], [0.0]], [[0.9], [0.8]])
    >>> float(acc.result(state))
    0.5
    >>> handle = acc.stateful()
    >>> handle.update_state([[1.0]], [[0.7]])
    >>> float(handle.result())
    1.0
"""

from __future__ import annotations

from typing import Any

from ember import dtypes, ops
from ember.training.losses.base import float_dtype, to_snake_case


class Metric:
    """Base class of metrics (see the module docstring for the pure/stateful API).

    Subclasses implement :meth:`init_state`, :meth:`update_state` and :meth:`result`.
    A metric whose state size depends on the data (``F1Score``, ``R2Score``) sets
    ``state_needs_shape = True`` and needs ``init_state(y_pred_shape=...)``.

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
    """

    state_needs_shape = False

    def __init__(self, name: str | None = None, dtype: Any = None):
        owner = type(self).__name__
        if name is not None and not isinstance(name, str):
            raise TypeError(f"{owner}: name must be a string or None, received {name!r}")
        self.name = name if name is not None else to_snake_case(owner)
        self._dtype = None if dtype is None else float_dtype(dtype, owner)

    @property
    def dtype(self) -> str:
        """The dtype new state is created in."""
        return self._dtype or dtypes.floatx()

    # ------------------------------------------------------------------ pure API
    def init_state(self, y_pred_shape: tuple | None = None) -> dict:
        """A fresh state: a dict of native arrays.

        Args:
            y_pred_shape: the predictions' shape (the batch entry may be None); only metrics
                with ``state_needs_shape`` use it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement init_state()")

    def update_state(self, state: dict, y_true: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        """A new state with one batch accumulated (``state`` itself is left unchanged)."""
        raise NotImplementedError(f"{type(self).__name__} must implement update_state(state, ...)")

    def result(self, state: dict) -> Any:
        """The metric's value for ``state`` (a native array)."""
        raise NotImplementedError(f"{type(self).__name__} must implement result(state)")

    # ------------------------------------------------------------- conveniences
    def stateful(self) -> "StatefulMetric":
        """A :class:`StatefulMetric` handle with Keras's stateful methods."""
        return StatefulMetric(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The metric over just the given values: ``result(update_state(init_state(), ...))``.

        The object holds no state, so (unlike Keras) nothing accumulates across calls.
        """
        state = self.init_state(self.shape_from_arguments(args, kwargs))
        return self.result(self.update_state(state, *args, **kwargs))

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
                             f"y_true, y_pred); for Keras's stateful calls use metric.stateful())")

    def get_config(self) -> dict:
        """The constructor arguments (JSON data)."""
        return {"name": self.name, "dtype": self._dtype}

    @classmethod
    def from_config(cls, config: dict) -> "Metric":
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
