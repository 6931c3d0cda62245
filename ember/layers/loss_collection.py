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

_local = threading.local()


def _collectors() -> list[list]:
    collectors = getattr(_local, "collectors", None)
    if collectors is None:
        collectors = _local.collectors = []
    return collectors


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
