"""Items of an iterable produced by a background thread, a bounded number ahead of the consumer.

:func:`prefetched` runs ``make_iterator()`` in a daemon thread that puts its items into a
``queue.Queue(maxsize=buffer_size)``, so at most ``buffer_size`` items wait (the producer blocks
when the queue is full). Order is kept. An exception raised by the producer is re-raised in the
consumer at the position it happened (with its traceback). Closing the generator (``break``
out of a ``for`` loop, ``close()``, garbage collection) stops the producer: it checks a stop
flag before each item and never blocks for more than a fraction of a second, and the consumer
joins it.

Example:
    >>> from ember.training.data.background import prefetched
    >>> list(prefetched(lambda: iter(range(5)), buffer_size=2))
    [0, 1, 2, 3, 4]
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

_POLL_SECONDS = 0.05
_DONE = object()


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def _produce(make_iterator: Callable[[], Iterator], buffer: queue.Queue, stop: threading.Event) -> None:
    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                buffer.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    try:
        for item in make_iterator():
            if not put(item):
                return
    except BaseException as error:  # handed to the consumer, which re-raises it
        put(_Failure(error))
        return
    put(_DONE)


def prefetched(make_iterator: Callable[[], Iterator], buffer_size: int = 1) -> Iterator:
    """The items of ``make_iterator()``, produced in a background thread up to ``buffer_size`` ahead.

    Args:
        make_iterator: called once, in the background thread, to create the iterator.
        buffer_size: the most items waiting in the queue (>= 1).

    Raises:
        ValueError: ``buffer_size`` is not a positive int.
        Exception: whatever the producer raised, re-raised here.
    """
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 1:
        raise ValueError(f"prefetched: buffer_size must be a positive int, received {buffer_size!r}")
    buffer: queue.Queue = queue.Queue(maxsize=buffer_size)
    stop = threading.Event()
    worker = threading.Thread(target=_produce, args=(make_iterator, buffer, stop), daemon=True,
                              name="ember-prefetch")
    worker.start()
    try:
        while True:
            item = buffer.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item
    finally:
        stop.set()
        worker.join()
