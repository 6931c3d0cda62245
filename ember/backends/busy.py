"""Model calls in progress, per thread: what ``ember.set_backend`` checks before it switches.

The active backend is one per process (every ``ember.ops`` name is re-bound on a switch),
so switching while another thread is inside ``fit``/``predict``/``evaluate`` would hand
that thread the other backend's functions half-way through its call. Ember refuses such
a switch instead (:func:`refuse_switch` raises a ``RuntimeError`` naming the busy thread
and the call); switching from the thread that runs the call (a callback) is allowed, as
before. The training entry points register their calls with :func:`running` (once per
call, never per op or per step).

Example:
    >>> from ember.backends import busy
    >>> with busy.running("predict of model 'demo'"):
    ...     busy.calls_in_other_threads()
    []
    >>> busy.calls_in_other_threads()
    []
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_lock = threading.Lock()  # taken on entering and leaving a model call only
_calls: dict[int, list[str]] = {}  # thread ident -> the calls it is inside, outermost first


@contextlib.contextmanager
def running(description: str) -> Iterator[None]:
    """Mark the current thread as inside ``description`` (e.g. ``"fit of model 'net'"``) for the block."""
    ident = threading.get_ident()
    with _lock:
        _calls.setdefault(ident, []).append(description)
    try:
        yield
    finally:
        with _lock:
            stack = _calls.get(ident)
            if stack:
                stack.pop()
                if not stack:
                    del _calls[ident]


def calls_in_other_threads() -> list[tuple[str, str]]:
    """``(thread name, call)`` for each other thread inside a model call now (its innermost call)."""
    me = threading.get_ident()
    with _lock:
        busy = {ident: stack[-1] for ident, stack in _calls.items() if ident != me and stack}
    if not busy:
        return []
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    return [(names.get(ident, f"thread {ident}"), call) for ident, call in busy.items()]


def refuse_switch(current: str, requested: str) -> None:
    """Raise a RuntimeError when another thread is inside a model call (the switch would change
    the functions under it); a no-op otherwise."""
    busy = calls_in_other_threads()
    if busy:
        thread, call = busy[0]
        more = f" (and {len(busy) - 1} other thread(s))" if len(busy) > 1 else ""
        raise RuntimeError(
            f"set_backend({requested!r}): thread {thread!r} is inside {call} on the {current!r} backend{more}; "
            "the active backend is one per process, so switch backends only when no model is running in "
            "another thread (join those threads first)")


__all__ = ["calls_in_other_threads", "refuse_switch", "running"]
