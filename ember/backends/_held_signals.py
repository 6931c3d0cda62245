"""Signals held back while a training step writes its arrays in place.

A step that updates params and optimizer slots in place (one array after another) must not
be stopped half-way: a KeyboardInterrupt between two arrays would leave a *torn* state. CPython
runs a Python-level signal handler (the one raising KeyboardInterrupt, or any handler a program
installs) only between bytecodes of the main thread, at a call or a backward jump. So, while
the arrays are written, :meth:`HeldSignals.hold` swaps every Python-level handler for a
recorder with no Python code (``dict.setdefault``: a signal is noted, nothing is raised), and
:meth:`HeldSignals.release` puts the handlers back and delivers what arrived meanwhile, whose
handler then runs (and raises) right there.

Between ``hold`` and ``release`` the caller enters only C functions (torch kernels, NumPy ufuncs;
no Python function, so a trace function's ``call`` event cannot raise inside either), so the
writes finish once begun. (A trace function that also traces the lines of the writing frame itself is
not covered: no real signal is delivered on a line event.) Only the main thread runs Python
signal handlers; elsewhere there is nothing to hold.

Example:
    >>> import signal
    >>> held = HeldSignals()
    >>> held.hold()
    >>> signal.raise_signal(signal.SIGINT)      # Ctrl-C while the arrays are written: noted
    >>> try:
    ...     held.release()                        # the step is complete: now it interrupts
    ... except KeyboardInterrupt:
    ...     print("interrupted after the step")
    interrupted after the step
    >>> signal.getsignal(signal.SIGINT) is signal.default_int_handler
    True
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # CPython's C module under signal; typeshed has no stub
import signal
import threading

_SIGNALS = tuple(signal.valid_signals())
_MAIN_THREAD = threading.main_thread().ident


class HeldSignals:
    """Python-level signal handlers swapped for a recorder between :meth:`hold` and :meth:`release`."""

    def __init__(self) -> None:
        self._saved: list = []  # (signal number, handler) swapped out, not yet put back
        self._caught: dict = {}  # signal number -> frame, for the signals that arrived while held
        # Every signal's handler as the last hold saw them, and those that are Python callables: reading
        # all handlers is one C-level map, and only a change (rare) walks them again in Python.
        self._seen: tuple = ()
        self._python: tuple = ()

    @property
    def holding(self) -> bool:
        """Whether some handlers are swapped out (``release`` not yet called)."""
        return bool(self._saved)

    def hold(self) -> None:
        """Swap every Python-level handler for the recorder (main thread; a no-op if already held)."""
        if self._saved or threading.get_ident() != _MAIN_THREAD:
            return
        handlers = tuple(map(_signal.getsignal, _SIGNALS))
        if handlers != self._seen:  # a handler was installed or removed since the last hold
            self._python = tuple((signum, handler) for signum, handler in zip(_SIGNALS, handlers)
                                 if callable(handler))
            self._seen = handlers
        saved, record = self._saved, self._caught.setdefault
        for pair in self._python:  # C calls only from here on: recorded at once, so release can undo them
            saved.append(pair)
            _signal.signal(pair[0], record)

    def release(self) -> None:
        """Put the handlers back, then deliver the signals that arrived while held (their handlers run now)."""
        saved, caught = self._saved, self._caught
        while saved:  # popped only once put back: an interrupted release is finished by the next one
            signum, handler = saved[-1]
            _signal.signal(signum, handler)
            saved.pop()
        while caught:
            signum, _ = caught.popitem()
            _signal.raise_signal(signum)
