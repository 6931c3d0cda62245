"""Double buffers that make in-place training steps all-or-nothing.

NumPy and torch update the params and optimizer slots of ``fit`` in place (``out=`` and
``torch._foreach_*`` kernels). An exception or a KeyboardInterrupt in the middle of such
an update would leave some arrays a step ahead of others: a *torn* state that no number
of steps produces, which ``fit``'s cleanup would then publish and ``save`` would store.

So a fit step never writes into the arrays of the state it was given. It asks
:meth:`StepBuffers.writable` for a second set of arrays (the previous step's arrays, which
nobody reads any more), writes the new state into them, and calls :meth:`StepBuffers.commit`
as its last action. Until the step returns, the caller's state is untouched; an interrupted
step is simply not taken.

The update kernels write *out of place*: each new value is computed from the given arrays
straight into the spare ones, so those arrays need no refill (``overwritten``). Only the
arrays a step does not rewrite (frozen params, params without a gradient, optimizers
without an out-of-place kernel) are refilled with a copy. The cost is a second set of
the params and optimizer slots alive during ``fit``.

Example:
    >>> import numpy as np
    >>> buffers = StepBuffers(clone=np.copy, refill=lambda spare, leaves, keep: [
    ...     np.copyto(s, v) or s if k else s for s, v, k in zip(spare, leaves, keep)])
    >>> params, opt = {"w": np.zeros(2)}, {"m": np.zeros(2)}
    >>> new_params, new_opt = buffers.writable(params, opt)
    >>> new_params["w"] += 1.0                     # the step's in-place update
    >>> buffers.commit(params, opt, new_params, new_opt)
    >>> params["w"].tolist(), new_params["w"].tolist()   # the given state is untouched
    ([0.0, 0.0], [1.0, 1.0])
    >>> again, _ = buffers.writable(new_params, new_opt)  # the next step reuses the old arrays
    >>> again["w"] is params["w"], again["w"].tolist()
    (True, [1.0, 1.0])
"""

from __future__ import annotations

from typing import Any, Callable

import optree


class StepBuffers:
    """The spare arrays of one backend's in-place fit steps (see the module docstring).

    Args:
        clone: a new array with the value of a leaf (non-arrays are returned as they are).
        refill: ``refill(spare_leaves, leaves, keep) -> writable_leaves``: the spare array of each
            leaf (a fresh clone where the two do not match), holding the leaf's value where ``keep``
            is true (one copy; elsewhere the caller overwrites it whole).
    """

    def __init__(self, clone: Callable[[Any], Any], refill: Callable[[list, list], list]) -> None:
        self._clone = clone
        self._refill = refill
        # (params, optimizer state) returned by the last completed step, and the leaves of the
        # state that step was given: free once the caller continues from the step's result.
        self._last: tuple | None = None

    def writable(self, params: Any, opt_state: Any, overwritten: frozenset = frozenset()) -> tuple[Any, Any]:
        """Arrays for the next ``params`` and ``opt_state`` that the caller does not hold.

        Args:
            params: the params the step was given.
            opt_state: the optimizer state the step was given.
            overwritten: ``id()`` of the leaves whose new arrays the step writes whole from the old
                ones (out of place): their arrays come back with stale values. Every other array
                comes back holding its leaf's value.
        """
        leaves, spec = optree.tree_flatten((params, opt_state), none_is_leaf=True)
        last = self._last
        if last is not None and last[0] is params and last[1] is opt_state and len(last[2]) == len(leaves):
            fresh = self._refill(last[2], leaves, [id(leaf) not in overwritten for leaf in leaves])
        else:  # the first step on this state (or the caller went back to an older one): new arrays
            fresh = [self._clone(leaf) for leaf in leaves]
        return spec.unflatten(fresh)

    def commit(self, params: Any, opt_state: Any, new_params: Any, new_opt_state: Any) -> None:
        """Record a completed step: the arrays of its input become the next step's spare ones."""
        spare = optree.tree_leaves((params, opt_state), none_is_leaf=True)
        self._last = (new_params, new_opt_state, spare)

    def clear(self) -> None:
        """Drop the spare arrays (``fit`` ends: they are not needed until the next one)."""
        self._last = None
