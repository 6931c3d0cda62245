"""The recorded graph shared by the NumPy and MLX tape engines (moved here from ``ember.autodiff.graph``).

Every value a tape tracks gets a *slot*: a watched source gets one when watched, and
each output of a recorded op gets a fresh one. Arrays are matched to slots by
identity (the tape keeps a reference to each, so an ``id`` is never reused while the
tape lives). An op whose output is one of its inputs (``convert_to_tensor`` of a
native array) still gets a new slot, so cotangents are never counted twice.

``tape.graph`` exposes the nodes in execution order: op name, input slots and output
slots, which is what the NumPy engine walks backwards and the MLX engine replays
forwards as a pure function of the sources.

Example:
    >>> import numpy as np
    >>> from ember.recorded.graph import RecordedGraph
    >>> graph = RecordedGraph()
    >>> x = np.ones(2)
    >>> graph.watch(x)
    >>> y = np.exp(x)
    >>> graph.record("exp", np.exp, (x,), {}, y), graph.record("exp", np.exp, (np.ones(2),), {}, y)
    (True, False)
    >>> graph.nodes
    [Node(0: exp, inputs=(0,), outputs=1)]
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False, slots=True)
class Node:
    """One recorded op call.

    Attributes:
        op: qualified op name (``"add"``, ``"nn.softmax"``, ``"linalg.inv"``).
        function: the backend function that ran.
        args: positional arguments as passed (native arrays, lists of them, scalars).
        kwargs: keyword arguments as passed.
        out: the result (an array, or a tuple/list of arrays).
        in_slots: for each positional argument, its slot (int), a list of slots for a
            list/tuple argument, or None for an untracked value; ``kw_slots`` likewise.
        out_slots: slot per output (a single int for a single array).
    """

    op: str
    function: Callable
    args: tuple
    kwargs: dict
    out: Any
    in_slots: tuple
    kw_slots: dict
    out_slots: Any
    index: int = field(default=0)
    inputs: tuple = field(default=())  # every input slot, flattened (positional and keyword)
    outputs: tuple = field(default=())  # every output slot, flattened

    def __repr__(self) -> str:
        return f"Node({self.index}: {self.op}, inputs={self.in_slots}, outputs={self.out_slots})"


def _is_array_like(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


class RecordedGraph:
    """Slots, nodes and the bookkeeping to extract the part between sources and targets."""

    def __init__(self, weak_outputs: bool = False) -> None:
        self.nodes: list[Node] = []
        # id(array) -> (latest slot, weak reference or None when ``_keep`` holds the array)
        self._slot_of: dict[int, tuple[int, Any]] = {}
        self._keep: list[Any] = []  # references that keep ids unique
        # With weak_outputs, op results are held weakly: once one dies, a new array reusing its
        # id is not mistaken for it (lookups compare the weak reference), and an engine may drop
        # node references to values its rules do not need, freeing their memory early.
        self._weak = weak_outputs
        self._next_slot = 0
        self.source_slots: dict[int, int] = {}  # id(watched array) -> slot at watch time
        self.watched: list[Any] = []

    # --- tracking ----------------------------------------------------------------
    def _new_slot(self, array: Any, weak: bool = False) -> int:
        slot = self._next_slot
        self._next_slot += 1
        if weak:
            # No weakref callback: a callback is Python code run at an arbitrary moment, where a
            # KeyboardInterrupt would be swallowed ("Exception ignored"). A dead array's entry
            # stays, and lookups check that the weak reference still points at the value.
            try:
                self._slot_of[id(array)] = (slot, weakref.ref(array))
                return slot
            except TypeError:  # not weak-referenceable: keep it alive instead
                pass
        self._slot_of[id(array)] = (slot, None)
        self._keep.append(array)
        return slot

    def watch(self, array: Any) -> None:
        if id(array) in self.source_slots:
            return
        # An array the record already produced keeps its slot: watching it must not cut it
        # off from the sources it was computed from (TensorFlow semantics).
        slot = self.slot(array)
        self.source_slots[id(array)] = self._new_slot(array) if slot is None else slot
        self.watched.append(array)

    def slot(self, array: Any) -> int | None:
        entry = self._slot_of.get(id(array))
        if entry is None or (entry[1] is not None and entry[1]() is not array):
            return None
        return entry[0]

    def is_tracked(self, array: Any) -> bool:
        return self.slot(array) is not None

    def _slots_of(self, value: Any) -> Any:
        if type(value) in (list, tuple):
            slots = [self.slot(v) for v in value]
            return slots if any([s is not None for s in slots]) else None
        return self.slot(value)

    # --- recording ---------------------------------------------------------------
    def record(self, op: str, function: Callable, args: tuple, kwargs: dict, out: Any) -> bool:
        """Keep the call if an input is tracked; give its outputs fresh slots. True if kept."""
        slot_of = self._slot_of
        in_slots: list[Any] = []
        inputs: list[int] = []
        for arg in args:
            kind = type(arg)
            if kind is list or kind is tuple:
                slots = self._slots_of(arg)
                if slots is not None:
                    inputs.extend(s for s in slots if s is not None)
            else:
                entry = slot_of.get(id(arg))  # self.slot(arg), inlined: this runs for every op
                slots = None if entry is None or (entry[1] is not None and entry[1]() is not arg) else entry[0]
                if slots is not None:
                    inputs.append(slots)
            in_slots.append(slots)
        kw_slots = {}
        if kwargs:
            for key, arg in kwargs.items():
                slots = self._slots_of(arg)
                if slots is not None:
                    kw_slots[key] = slots
                    inputs.extend(flat_slots(slots))
        if not inputs:
            return False
        weak = self._weak
        out_slots: Any
        outputs: tuple[int, ...]
        if type(out) in (list, tuple):
            out_slots = [self._new_slot(o, weak) if _is_array_like(o) else None for o in out]
            outputs = tuple(s for s in out_slots if s is not None)
        else:
            out_slots = self._new_slot(out, weak)
            outputs = (out_slots,)
        node = Node(op, function, args, kwargs, out, tuple(in_slots), kw_slots, out_slots, len(self.nodes),
                    tuple(inputs), outputs)
        self.nodes.append(node)
        return True

    # --- queries -------------------------------------------------------------------
    def relevant_nodes(self, source_slots: set[int], target_slots: set[int]) -> list[Node]:
        """Nodes on some path from a source slot to a target slot, in execution order."""
        forward: set[int] = set(source_slots)
        reaching: list[Node] = []
        for node in self.nodes:
            for s in node.inputs:
                if s in forward:
                    forward.update(node.outputs)
                    reaching.append(node)
                    break
        needed: set[int] = set(target_slots)
        kept: list[Node] = []
        for node in reversed(reaching):
            for s in node.outputs:
                if s in needed:
                    needed.update(node.inputs)
                    kept.append(node)
                    break
        kept.reverse()
        return kept

    def clear(self) -> None:
        RecordedGraph.__init__(self, self._weak)


def flat_slots(slots: Any) -> list[int]:
    """The slot numbers in a node's (nested) slots, in order; None gives none.

    Example:
        >>> from ember.recorded.graph import flat_slots
        >>> flat_slots([3, [4, None], 6]), flat_slots(None)
        ([3, 4, 6], [])
    """
    if slots is None:
        return []
    if isinstance(slots, int):
        return [slots]
    out: list[int] = []
    for s in slots:
        out.extend(flat_slots(s))
    return out
