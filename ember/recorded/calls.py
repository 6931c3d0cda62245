"""Who records op calls now, and how one call is recorded (shared by every graph-recording tape).

The NumPy engine (in :mod:`ember.autodiff`) and the MLX engine (in
:mod:`ember.backends.mlx`) both build their graph from the op calls offered to them while
they record. What they share lives here, below both of them:

* ``_local.state.engines``: the engines recording now *in this thread*, outermost first (a
  list changed in place only; hot paths test its truth value);
* ``_local.state.depth``: above zero while a recorded op runs in this thread, so the ops that
  op calls inside (an activation written with ``ops.exp``) are not recorded again; the
  tape sees the op the user called. :func:`unrecorded` raises it around a tape's own
  gradient computation;
* :func:`recorder`: the wrapper that runs a backend function and offers the call to each
  recording engine.

Which engines are listed, and binding recorders into ``ember.ops`` while one is, is the
business of :mod:`ember.autodiff.recording` (it starts and stops the engines). Read
``_local.state`` here, never assign its attributes from outside this module and
:mod:`ember.autodiff.recording`.

Both are per thread (``_local`` is a :class:`threading.local`): a tape records the ops
run by the thread that entered it, never another thread's, so two threads may each
differentiate the same model with their own tape. Reading them takes no lock.

Example:
    >>> import numpy as np
    >>> from ember.recorded import calls
    >>> class Engine:
    ...     def __init__(self):
    ...         self.seen = []
    ...     def record(self, name, function, args, kwargs, out):
    ...         self.seen.append(name)
    ...         return False
    >>> exp = calls.recorder("exp", np.exp, None, None)
    >>> engine = Engine()
    >>> calls._local.state.engines.append(engine)
    >>> float(exp(0.0)), engine.seen
    (1.0, ['exp'])
    >>> with calls.unrecorded():
    ...     float(exp(0.0))
    1.0
    >>> calls._local.state.engines.remove(engine)
    >>> engine.seen
    ['exp']
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any


class _ThreadState:
    """What records in one thread: its engines and its depth (slots: the hot paths read them per op)."""

    __slots__ = ("depth", "engines")

    def __init__(self) -> None:
        self.engines: list = []  # engines recording now in this thread, outermost first
        self.depth = 0  # > 0 while a recorded op runs (or a tape computes a gradient): nothing is recorded


class _PerThread(threading.local):
    """Each thread's :class:`_ThreadState` (made fresh on a thread's first use): one thread-local
    read per op (``_local.state``), then plain slot reads."""

    def __init__(self) -> None:
        self.state = _ThreadState()


_local = _PerThread()


def recording_engines() -> list:
    """Engines currently recording in this thread (outermost first)."""
    return _local.state.engines


def is_recording() -> bool:
    """True while at least one engine records op calls in this thread."""
    return bool(_local.state.engines)


@contextlib.contextmanager
def unrecorded() -> Iterator[None]:
    """A block whose op calls no engine records (a tape replaying or differentiating its record).

    Interrupt-safe: the depth is restored, not decremented, so an interrupt before the
    increment cannot leave it raised.
    """
    state = _local.state
    outer = state.depth
    try:
        state.depth = outer + 1
        yield
    finally:
        state.depth = outer


_PLAIN_TYPES: set = {int, float, bool, complex, str, type(None), slice}  # grown with array types seen


def unwrap_tensors(args: tuple) -> tuple:
    """Replace ``ember.Tensor`` arguments (and Tensors inside lists) by their native arrays."""
    plain = _PLAIN_TYPES
    for arg in args:
        kind = type(arg)
        if kind not in plain:
            if kind is list or kind is tuple or getattr(kind, "__ember_tensor__", False):
                return _unwrap_slow(args)
            plain.add(kind)  # neither a Tensor nor a sequence: never needs unwrapping
    return args


def _unwrap_slow(args: tuple) -> tuple:
    out = None
    for i, arg in enumerate(args):
        if getattr(type(arg), "__ember_tensor__", False):
            out = list(args) if out is None else out
            out[i] = arg._native
        elif type(arg) in (list, tuple) and any(getattr(type(a), "__ember_tensor__", False) for a in arg):
            out = list(args) if out is None else out
            out[i] = type(arg)(a._native if getattr(type(a), "__ember_tensor__", False) else a for a in arg)
    return args if out is None else tuple(out)


def recorder(name: str, function: Callable, prepare: Callable | None, wrap: Callable | None) -> Callable:
    """``function`` as op ``name``: run it, then offer the call to every recording engine.

    Args:
        name: the qualified op name engines record (``"add"``, ``"nn.softmax"``).
        function: the backend function to run.
        prepare: the engine's ``prepare_args`` hook (arguments as the backend's fast path
            wants them), or None.
        wrap: the engine's ``wrap_output`` hook (marks a result so its operators are
            recorded too), or None.

    Returns:
        A function with ``function``'s signature that runs it plainly when nothing
        records or a recorded op is already running.
    """

    def recorded(*args: Any, **kwargs: Any) -> Any:
        state = _local.state
        if state.depth or not state.engines:
            return function(*args, **kwargs)
        args = unwrap_tensors(args)
        call_kwargs = kwargs
        if kwargs:
            kwargs = dict(zip(kwargs, unwrap_tensors(tuple(kwargs.values()))))
            call_kwargs = kwargs if prepare is None else dict(zip(kwargs, prepare(tuple(kwargs.values()))))
        call_args = args if prepare is None else prepare(args)
        outer = state.depth
        try:  # restored, not decremented: an interrupt before the increment cannot leave it raised
            state.depth = outer + 1
            out = function(*call_args, **call_kwargs)
        finally:
            state.depth = outer
        # Wrap before recording: the engines key slots by the identity of the object the
        # caller receives (a wrapped view is a new object).
        recorded_out = out if wrap is None else wrap(out)
        kept = False
        for engine in state.engines:
            kept = engine.record(name, function, args, kwargs, recorded_out) or kept
        return recorded_out if kept else out

    recorded.__name__ = function.__name__
    recorded.__doc__ = function.__doc__
    recorded.__wrapped__ = function  # type: ignore[attr-defined]  # as functools.wraps sets it
    return recorded
