"""Structured recurrent states and Keras-style cells for :class:`~ember.layers.RNN`.

Keras's ``RNN(cell)`` accepts any layer with a ``state_size`` and a ``call(inputs, states)``;
the states may be nested structures. ``state_size`` is an ``int`` (one state) or a list/tuple
with one entry per state, and each entry is an ``int`` or itself a list, tuple or dict of
entries (``[units, [units, units]]``, ``[{"h": 4, "c": 4}]``). Every leaf ``n`` is one
``(batch, n)`` array. The RNN keeps the states flat (one list of arrays, in ``optree``'s
leaf order) and rebuilds the structure where the cell and the user see it: the cell's
``call``, ``initial_state=`` and ``return_state=True``'s outputs.

A *Keras-style cell* is a Keras-style ``Layer`` subclass (``call(self, inputs, states,
training=None)`` reading weights declared with ``self.add_weight`` in ``build``) that has no
Ember ``step``; :func:`keras_cell_step` runs its ``call`` in an apply frame on the RNN's
state, exactly as a Keras-style layer's ``apply`` does. Its inputs may be nested too (a
tuple or dict of ``(batch, time, features)`` sequences gives the cell a tuple or dict of
``(batch, features)`` steps), as in Keras 2's ``NestedCell`` example.

Example:
    >>> from ember.layers.rnn.structure import state_structure
    >>> structure = state_structure("rnn", [3, (2, 2)])
    >>> structure.leaves, structure.unflatten(["h", "a", "b"])
    ((3, 2, 2), ['h', ('a', 'b')])
"""

from __future__ import annotations

import numbers
from typing import Any

import optree

from ember import ops
from ember.layers import scope


def _natives(tree: Any) -> Any:
    """``tree`` with every ``ember.Tensor`` replaced by its native array."""
    return optree.tree_map(lambda v: v._native if getattr(type(v), "__ember_tensor__", False) else v, tree,
                           none_is_leaf=True)


class StateStructure:
    """The nesting of a cell's states: ``leaves`` (the sizes, flat) and ``unflatten``.

    Built by :func:`state_structure`; ``top_level`` is the number of states the RNN returns
    with ``return_state=True`` (Keras returns ``output, *states``, one per top-level entry).
    """

    def __init__(self, tree: list) -> None:
        leaves, self._spec = optree.tree_flatten(tree)
        self.leaves = tuple(int(n) for n in leaves)
        self.top_level = len(tree)
        self.nested = any(not isinstance(entry, int) for entry in tree)

    def unflatten(self, flat: list) -> list:
        """The structure (a list with one entry per state) holding ``flat``'s arrays."""
        return optree.tree_unflatten(self._spec, list(flat))

    def flatten(self, layer_name: str, states: Any, what: str) -> list:
        """``states`` (the structure, or a flat list when the structure is flat) as a flat list (in
        leaf order); a ValueError naming the layer when the number of arrays differs."""
        if not isinstance(states, (list, tuple)):
            states = [states]
        states = list(states)
        if not self.nested:
            return states
        leaves = optree.tree_leaves(states, none_is_leaf=True, is_leaf=lambda v: ops.is_array(v) or is_tensor(v))
        if len(leaves) != len(self.leaves):
            raise ValueError(f"layer {layer_name!r}: {what} must have the structure of the cell's state_size "
                             f"{self.unflatten(list(self.leaves))}, received {_describe(states)}")
        return leaves


def is_tensor(value: Any) -> bool:
    return bool(getattr(type(value), "__ember_tensor__", False))


def _describe(states: Any) -> Any:
    return optree.tree_map(lambda v: tuple(ops.shape(v)) if ops.is_array(v) or is_tensor(v) else v, states,
                           none_is_leaf=True, is_leaf=lambda v: ops.is_array(v) or is_tensor(v))


def state_structure(layer_name: str, state_size: Any) -> StateStructure:
    """Check a cell's ``state_size`` (Keras's rules, see the module docstring) and describe it."""
    if isinstance(state_size, numbers.Integral) and not isinstance(state_size, bool):
        tree: list = [int(state_size)]
    elif isinstance(state_size, (list, tuple)) and state_size:
        tree = list(state_size)
    else:
        raise TypeError(f"layer {layer_name!r}: the cell's state_size must be an int or a non-empty list/tuple "
                        f"(one entry per state), received {state_size!r}")
    leaves = optree.tree_leaves(tree)
    if not leaves or any(isinstance(n, bool) or not isinstance(n, numbers.Integral) or n <= 0 for n in leaves):
        raise TypeError(f"layer {layer_name!r}: every size in the cell's state_size must be a positive int "
                        f"(nested in lists, tuples or dicts), received {state_size!r}")
    return StateStructure(tree)


def is_keras_cell(cell: Any) -> bool:
    """A Keras-style cell: ``call(inputs, states)`` and no Ember ``step``."""
    return bool(getattr(type(cell), "_keras_style", False)) and not hasattr(cell, "step")


def output_size(cell: Any, structure: StateStructure) -> int:
    """The cell's ``output_size``, or (as Keras) the size of its first state."""
    size = getattr(cell, "output_size", None)
    return structure.leaves[0] if size is None else size


def initial_states(cell: Any, structure: StateStructure, layer_name: str, batch: int, dtype: str) -> list:
    """The cell's initial states, flat: its ``get_initial_state`` or zeros."""
    getter = getattr(cell, "get_initial_state", None)
    if getter is None:
        return [ops.zeros((batch, n), dtype=dtype) for n in structure.leaves]
    if is_keras_cell(cell):
        states = getter(batch_size=batch)  # Keras's signature
    else:
        states = getter(batch, dtype=dtype)
    flat = structure.flatten(layer_name, _natives(states), "the cell's get_initial_state()")
    return [s if ops.dtype(s) == dtype else ops.cast(s, dtype) for s in flat]


def keras_cell_step(cell: Any, cell_state: dict, structure: StateStructure, layer_name: str) -> Any:
    """``step(params, inputs, states, context, training=, rng=, timespan=)`` for a Keras-style cell:
    its ``call(inputs, states)`` in an apply frame on ``cell_state``, states flat in and out."""

    def step(params: dict, inputs: Any, states: list, context: Any, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        kwargs = {"training": bool(training)} if cell._call_takes_training else {}
        frame = scope.Frame("apply", cell, {"params": params, "buffers": cell_state["buffers"]}, rng=rng,
                            training=training)
        with scope.frames(frame):
            result = cell.call(inputs, structure.unflatten(states), **kwargs)
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise TypeError(f"layer {layer_name!r}: the cell's call(inputs, states) must return (output, new_states), "
                            f"received {type(result).__name__}")
        output, new_states = _natives(result[0]), _natives(result[1])
        if not structure.nested and not isinstance(new_states, (list, tuple)):
            new_states = [new_states]
        return output, structure.flatten(layer_name, new_states, "the new states the cell returns")

    return step
