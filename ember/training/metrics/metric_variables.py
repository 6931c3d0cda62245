"""Keras-style metrics: state declared with ``add_variable``, updated with ``assign_add``.

A Keras 3 metric subclass declares its state in ``__init__`` and writes ``update_state``
and ``result`` against it::

    class TruePositiveRate(ember.metrics.Metric):
        def __init__(self, name="tpr", **kwargs):
            super().__init__(name=name, **kwargs)
            self.hits = self.add_variable(shape=(), initializer="zeros", name="hits")
            self.total = self.add_variable(shape=(), initializer="zeros", name="total")

        def update_state(self, y_true, y_pred, sample_weight=None):
            positive = ops.cast(ops.greater(y_true, 0.5), "float32")
            self.hits.assign_add(ops.sum(positive * ops.cast(ops.greater(y_pred, 0.5), "float32")))
            self.total.assign_add(ops.sum(positive))

        def result(self):
            return ops.divide_no_nan(self.hits, self.total)

The pure metric state stays underneath: ``add_variable`` records a
:class:`~ember.layers.weights.WeightSpec` and returns an :class:`ember.Variable` view onto
the entry of that name in the metric's state dict. ``init_state()`` creates the dict from
the declarations; ``stateless_update_state(state, ...)`` runs the user's ``update_state`` in
a frame (:mod:`ember.layers.scope`) holding a copy of ``state`` and returns the frame's
state (the variables' ``assign`` calls replace entries of that copy, never an array in
place), which is what the compiled training steps carry; ``stateless_result(state)`` runs
``result`` the same way. Used directly (``m.update_state(y, p)``), the metric keeps its
current state dict and the same functions run on it.

Example:
    >>> import ember
    >>> from ember import ops
    >>> ember.set_backend("numpy")
    >>> class Total(ember.metrics.Metric):
    ...     def __init__(self, name="total", **kwargs):
    ...         super().__init__(name=name, **kwargs)
    ...         self.total = self.add_variable(shape=(), initializer="zeros", name="total")
    ...     def update_state(self, values, sample_weight=None):
    ...         self.total.assign_add(ops.sum(values))
    ...     def result(self):
    ...         return self.total
    >>> metric = Total()
    >>> metric.update_state([1.0, 2.0]); metric.update_state([4.0])
    >>> float(metric.result()), sorted(metric.init_state())
    (7.0, ['total'])
"""

from __future__ import annotations

from typing import Any

import optree

from ember import ops
from ember.layers import scope
from ember.layers.variable import Variable
from ember.layers.weights import WeightSpec, create_weights


def add_variable(metric: Any, shape: Any, initializer: Any, dtype: Any, name: str | None) -> Variable:
    """See :meth:`ember.metrics.Metric.add_variable`."""
    owner = f"{type(metric).__name__} {getattr(metric, 'name', '?')!r}"
    specs = metric.__dict__.setdefault("_variable_specs", [])
    if metric.__dict__.get("_stateful_state") is not None:
        raise RuntimeError(f"{owner}: add_variable must be called in __init__ (before the first update_state)")
    if name is None:
        name = f"variable_{len(specs)}" if specs else "variable"
    if not isinstance(name, str) or not name:
        raise TypeError(f"{owner}: add_variable name must be a non-empty string, received {name!r}")
    if any(spec.name == name for spec in specs):
        raise ValueError(f"{owner}: a variable named {name!r} already exists; variable names must be unique")
    try:
        spec = WeightSpec(name, () if shape is None else shape, initializer or "zeros", None, None, False,
                          dtype or metric.dtype)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{owner}: add_variable {name!r}: {error}") from None
    if any(d is None for d in spec.shape):
        raise ValueError(f"{owner}: add_variable {name!r} needs a fully known shape, received {spec.shape}")
    specs.append(spec)
    return Variable.view(metric, ("buffers", name), spec)


def declared_state(metric: Any) -> dict:
    """A fresh state ``{name: array}`` from the metric's ``add_variable`` declarations."""
    return create_weights(metric.__dict__.get("_variable_specs", []), seed=0)["buffers"]


def run_in_frame(metric: Any, state: dict, function: Any, args: tuple, kwargs: dict) -> tuple[Any, dict]:
    """``function(metric, *args, **kwargs)`` with the metric's variables reading/writing ``state``
    (a copy): ``(what it returned as native arrays, the new state)``."""
    check_declared_state(metric, state)
    frame = scope.Frame("apply", metric, {"params": {}, "buffers": state})
    with scope.frames(frame):
        returned = function(metric, *args, **kwargs)
    return natives(returned), frame.state["buffers"]


def check_declared_state(metric: Any, state: Any) -> None:
    """ValueError unless ``state`` holds exactly the declared variables."""
    names = [spec.name for spec in metric.__dict__.get("_variable_specs", [])]
    if not isinstance(state, dict) or set(state) != set(names):
        got = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"{metric.name}: state must be the dict init_state() returns, with the variables "
                         f"{sorted(names)} declared by add_variable; received {got}")


def natives(tree: Any) -> Any:
    """``ember.Tensor``s (and Variables) in ``tree`` as native arrays."""
    def native(value: Any) -> Any:
        return value._native if getattr(type(value), "__ember_tensor__", False) else value

    if getattr(type(tree), "__ember_tensor__", False):
        return tree._native
    if isinstance(tree, (list, tuple, dict)):
        return optree.tree_map(native, tree, none_is_leaf=True)
    return tree


def to_natives(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Arguments of a direct ``update_state`` call as native arrays (lists and NumPy converted)."""
    def convert(value: Any) -> Any:
        if value is None or ops.is_array(value):
            return value
        if getattr(type(value), "__ember_tensor__", False):
            return value._native
        return ops.convert_to_tensor(value)

    return tuple(convert(a) for a in args), {k: convert(v) for k, v in kwargs.items()}


def variables(metric: Any) -> list[Variable]:
    """The metric's declared variables as views onto its current state."""
    return [Variable.view(metric, ("buffers", spec.name), spec)
            for spec in metric.__dict__.get("_variable_specs", [])]
