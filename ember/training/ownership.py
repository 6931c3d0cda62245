"""Which arrays of a state nobody but the state itself can reach: the ones ``fit`` may adopt.

``fit`` updates the params and optimizer slots of its own state in place (torch's fused
kernels, NumPy's double buffers). It used to start by copying the whole state, so that arrays
the caller holds (``before = model.state``) keep their values: a second copy of the weights
and of the optimizer state at the start of every ``fit``. Most of the time nobody holds them:
the model handle is their only owner, and the copy only doubles the memory.

:func:`unshared_leaves` proves that case from CPython's reference counts, the way NumPy elides
temporaries (an operand with a reference count of one is reused for the result): a leaf is
unshared when its container is its only holder, every container above it is held only by the
one above, and the root is held only by the references the caller accounts for. A leaf that
anything else reaches (a variable, a list, a weak reference, a ``dict`` the user kept) is
left out, and ``fit`` copies it as before. Whether another array shares a leaf's *memory* (a
NumPy view, a torch alias) is the backend's question (its ``own(state, donated)`` checks it);
this module answers the Python-level one.

Example:
    (In a function, as ``fit`` uses it: a module-level name may have holders a session adds.)

    >>> import numpy as np
    >>> def adoptable():
    ...     state = {"params": {"w": np.zeros(3), "b": np.zeros(1)}}
    ...     alone = len(unshared_leaves(state, holders=1))   # held only by the name ``state``
    ...     kept = state["params"]["w"]                       # someone else holds one array
    ...     unshared = unshared_leaves(state, holders=1)
    ...     one_held = [key for key in state["params"] if id(state["params"][key]) in unshared]
    ...     mine = state                                      # a second, unaccounted holder of the root
    ...     return alone, one_held, unshared_leaves(state, holders=1)
    >>> adoptable()
    (2, ['b'], frozenset())
"""

from __future__ import annotations

import sys
import weakref
from typing import Any


def _count(value: Any) -> int:
    """``sys.getrefcount(value)`` seen through one call (the same path for every value)."""
    return sys.getrefcount(value)


def _call_references() -> int:
    """What a :func:`_count` call itself holds on its argument (its parameter, getrefcount's own
    argument), measured now on an unheld object.

    Measured per use, not once: frame evaluation can change during a session (after a failed
    ``torch.compile``, torch's frame hook holds one more reference to each argument of every
    Python call), and a stale figure would make every leaf look shared.
    """
    return _count(object())


def unshared_leaves(tree: Any, holders: int) -> frozenset[int]:
    """``id()`` of the leaves of ``tree`` that nothing but ``tree`` reaches (see the module docstring).

    Args:
        tree: nested dicts, lists and tuples (other containers are treated as shared).
        holders: the references to ``tree`` itself that the caller accounts for (each a container
            or variable it owns). A root held by more is shared whole: nothing is returned.

    Returns:
        The ids of the unshared leaves (valid while ``tree`` is alive).
    """
    call = _call_references()
    parameter = call - 1  # what this function's own parameter holds: all of a call's share but getrefcount's
    if _count(tree) - call - parameter != holders:
        return frozenset()
    found: list[int] = []
    _collect(tree, found, call)
    return frozenset(found)


def _collect(node: Any, found: list[int], call: int) -> None:
    """Add the unshared leaves under ``node`` (a container held only by its parent) to ``found``;
    ``call``: :func:`_call_references`."""
    if isinstance(node, dict):
        keys: Any = list(node)
    elif type(node) in (list, tuple):
        keys = range(len(node))
    else:
        return
    for key in keys:
        if _count(node[key]) - call != 1:  # held by something besides ``node``: shared
            continue
        child = node[key]
        if isinstance(child, (dict, list, tuple)):
            _collect(child, found, call)
        elif _weakly_referenced(child) == 0:
            found.append(id(child))


def _weakly_referenced(value: Any) -> int:
    """How many weak references point at ``value`` (a holder that reads it without owning it)."""
    return weakref.getweakrefcount(value)
