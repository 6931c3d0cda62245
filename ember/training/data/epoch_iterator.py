"""Walking an adapter epoch by epoch, with Keras's ``steps_per_epoch`` semantics.

Without ``steps_per_epoch`` an epoch is one pass over the data. With it, an epoch is that
many batches, drawn from one iterator that persists across epochs and restarts only when
the data is exhausted at an epoch boundary; data that runs out in the middle of an epoch
ends it early and sets :attr:`EpochIterator.ran_out` (``fit`` then stops with a warning).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from typing import Any

from ember.training.data.batch import DataAdapter


def check_steps(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} must be a positive int or None, received {value!r}")
    return int(value)


class EpochIterator:
    """Yields ``(step, batch)`` for each epoch (see the module docstring).

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember.training.data import get_adapter
        >>> from ember.training.data.epoch_iterator import EpochIterator
        >>> it = EpochIterator(get_adapter(np.zeros((10, 1)), batch_size=2), steps_per_epoch=3)
        >>> [[step for step, _ in it.epoch(e)] for e in range(2)]  # 5 batches: the second epoch runs out
        [[0, 1, 2], [0, 1]]
        >>> it.ran_out
        True
    """

    def __init__(self, adapter: DataAdapter, steps_per_epoch: int | None = None) -> None:
        self.adapter = adapter
        self.steps_per_epoch = steps_per_epoch
        self.ran_out = False
        self._current: Iterator | None = None
        self._pass = 0

    @property
    def num_steps(self) -> int | None:
        """Steps in one epoch, if known."""
        if self.steps_per_epoch is not None:
            return self.steps_per_epoch
        return self.adapter.num_batches

    def epoch(self, epoch: int) -> Iterator[tuple[int, tuple]]:
        if self.steps_per_epoch is None:
            produced = 0
            for step, batch in enumerate(self.adapter.batches(epoch)):
                produced += 1
                yield step, batch
            if produced == 0:
                self.ran_out = True
            return
        step = 0
        restarted = False
        while step < self.steps_per_epoch:
            if self._current is None:
                self._current = iter(self.adapter.batches(self._pass))
                self._pass += 1
            try:
                batch = next(self._current)
            except StopIteration:
                self._current = None
                if step == 0 and not restarted and self.adapter.reiterable:
                    restarted = True
                    continue
                self.ran_out = True
                return
            yield step, batch
            step += 1
