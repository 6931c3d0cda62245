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

(``fit``'s ``SGD``/``Adam``/``AdamW`` steps on NumPy, and on torch's CPU, need no second set: they
write in place all or nothing, the whole update planned first, then written by C code only under
held signals, :mod:`ember.backends._held_signals`. These buffers serve the other cases:
constraints, ``ember.distribute``, torch's other optimizers and devices.)

The update kernels write *out of place*: each new value is computed from the given arrays
straight into the spare ones, so those arrays need no refill (``overwritten``). Only the
arrays a step does not rewrite (frozen params, params without a gradient, optimizers
without an out-of-place kernel) are refilled with a copy. The cost is a second set of
the params and optimizer slots alive during ``fit``. A step continuing from the previous one's
result checks only the arrays that step did not hand out (each handed-out array was matched to
its spare one then), so the bookkeeping costs a flatten and an identity test per array.

Example:
    >>> import numpy as np
    >>> buffers = StepBuffers(clone=np.copy, fits=lambda spare, leaf: spare.shape == leaf.shape,
    ...                       copy=lambda targets, sources: [np.copyto(t, s) for t, s in zip(targets, sources)])
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

from collections.abc import Callable
from typing import Any

import optree


class StepBuffers:
    """The spare arrays of one backend's in-place fit steps (see the module docstring).

    Args:
        clone: a new array with the value of a leaf (non-arrays are returned as they are).
        fits: ``fits(spare, leaf)``: whether the array ``spare`` (not ``leaf`` itself) can hold the
            next value of ``leaf`` (same kind of array, shape, dtype, device and flags).
        copy: ``copy(targets, sources)``: copy each source array into its target (one batched call).
    """

    def __init__(self, clone: Callable[[Any], Any], fits: Callable[[Any, Any], bool],
                 copy: Callable[[list, list], None]) -> None:
        self._clone = clone
        self._fits = fits
        self._copy = copy
        # The last completed step: (the params and optimizer state it returned, the leaves of the state
        # it was given: free once the caller continues from its result, and the writable leaves it was
        # handed, with whether each was a spare array that fits).
        self._last: tuple | None = None
        # The last ``writable`` call: (params, opt_state, their leaves, the leaves handed out, fitted).
        self._pending: tuple | None = None
        self._scratch: tuple | None = None  # (key, arrays) of :meth:`scratch`

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
            fresh, fitted = self._reuse(last[2], leaves, last[3], last[4], overwritten)
        else:  # the first step on this state (or the caller went back to an older one): new arrays
            fresh, fitted = [self._clone(leaf) for leaf in leaves], [False] * len(leaves)
        self._pending = (params, opt_state, leaves, fresh, fitted)
        return spec.unflatten(fresh)

    def _reuse(self, spare: list, leaves: list, handed: list, handed_fitted: list,
               overwritten: frozenset) -> tuple[list, list]:
        """Each leaf's spare array (a fresh clone where it does not fit), refilled unless overwritten.

        A leaf that is the array the previous step was handed at its place fits that place's spare
        array without a check: the two were matched then (the spare is the leaf the step was given).
        """
        out, fitted, targets, sources = [], [], [], []
        for target, leaf, previous, known in zip(spare, leaves, handed, handed_fitted):
            if (known and leaf is previous) or self._fits(target, leaf):
                if id(leaf) not in overwritten:
                    targets.append(target)
                    sources.append(leaf)
                out.append(target)
                fitted.append(True)
            else:
                out.append(self._clone(leaf))
                fitted.append(False)
        if targets:
            self._copy(targets, sources)
        return out, fitted

    def commit(self, params: Any, opt_state: Any, new_params: Any, new_opt_state: Any) -> None:
        """Record a completed step: the arrays of its input become the next step's spare ones."""
        pending = self._pending
        if pending is not None and pending[0] is params and pending[1] is opt_state:
            spare, handed, fitted = pending[2], pending[3], pending[4]
        else:  # the step was given arrays that did not come from writable
            spare = optree.tree_leaves((params, opt_state), none_is_leaf=True)
            handed, fitted = [None] * len(spare), [False] * len(spare)
        self._last = (new_params, new_opt_state, spare, handed, fitted)
        self._pending = None

    def scratch(self, key: Any, make: Callable[[], list]) -> list:
        """Arrays a step may overwrite freely (e.g. an update's denominators), kept between steps.

        ``make()`` builds them when ``key`` (the shapes and dtypes they serve) differs from the
        last call's; :meth:`clear` drops them with the spare arrays.
        """
        if self._scratch is None or self._scratch[0] != key:
            self._scratch = (key, make())
        return self._scratch[1]

    def clear(self) -> None:
        """Drop the spare and scratch arrays (``fit`` ends: they are not needed until the next one)."""
        self._last = None
        self._pending = None
        self._scratch = None
