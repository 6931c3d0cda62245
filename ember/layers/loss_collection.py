"""Activity losses of a forward pass: :func:`add_loss` from inside a layer's ``call``, collected by
:class:`collect_losses` around the pass (the trainer, an eager call, a symbolic probe).

The collectors are per thread: two threads running forward passes (two ``fit`` calls on two
models, a ``predict`` beside a ``fit``) never receive each other's losses.

Example:
    >>> from ember.layers.loss_collection import add_loss, collect_losses
    >>> with collect_losses() as losses:
    ...     add_loss(0.5)
    >>> losses
    [0.5]
"""

from __future__ import annotations

import threading
from typing import Any


class _PerThread(threading.local):
    """Each thread's stack of collectors (``threading.local`` runs ``__init__`` once per thread).

    The list exists before any forward pass reads it, rather than being made by the first one:
    ``torch.compile`` guards a compiled step on what it read here, and an attribute that the first
    step itself created failed that guard on every later step (which then ran uncompiled).
    """

    def __init__(self) -> None:
        self.collectors: list[list] = []


_local = _PerThread()


def _collectors() -> list[list]:
    return _local.collectors


class collect_losses:  # noqa: N801  (lower case: used like a function, ``with collect_losses() as losses``)
    """Collect the scalars layers pass to :func:`add_loss` while the block runs (in this thread).

    The trainer wraps each forward pass in this to add activity losses to the loss. (A class
    with ``__enter__``/``__exit__`` rather than a generator context manager: it runs in every
    training step.)
    """

    __slots__ = ("collected",)

    def __init__(self) -> None:
        self.collected: list = []

    def __enter__(self) -> list:
        _collectors().append(self.collected)
        return self.collected

    def __exit__(self, *exc_info: object) -> None:
        collected, collectors = self.collected, _collectors()
        for index in range(len(collectors) - 1, -1, -1):  # by identity: `==` would compare arrays
            if collectors[index] is collected:
                del collectors[index]
                break


def add_loss(value: Any) -> None:
    """Add a scalar to the loss of the forward pass being collected in this thread (no-op otherwise).

    Layers call this from ``call`` for losses that depend on activations
    (``ActivityRegularization``, ``activity_regularizer=``); weight penalties come
    from ``Layer.regularization_losses`` instead, so a shared layer counts once.
    """
    collectors = _collectors()
    if collectors:
        collectors[-1].append(value)
