"""Python generators, iterables and torch DataLoaders as training data.

Each element is ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)`` (a tuple, or a
list as a ``torch.utils.data.DataLoader`` yields); its arrays are converted to the active
backend per batch. A re-iterable source (a list, a DataLoader, any object whose
``__iter__`` returns a fresh iterator) is iterated anew every epoch; a one-shot iterator
(a generator) is consumed across epochs, as Keras does: give ``steps_per_epoch`` to
spread it over several epochs.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from ember.training.data.batch import DataAdapter, native_batch, unpack_batch


class GeneratorAdapter(DataAdapter):
    """Batches from an iterable or an iterator (see the module docstring).

    Args:
        source: a generator/iterator, an iterable, or a torch ``DataLoader``.
        class_weight: ``{class: weight}`` folded into each batch's sample weights.

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember.training.data.generator_adapter import GeneratorAdapter
        >>> batches = [(np.zeros((2, 3)), np.ones(2))] * 3
        >>> adapter = GeneratorAdapter(batches)
        >>> adapter.num_batches, len(list(adapter.batches(epoch=0)))
        (3, 3)
    """

    def __init__(self, source: Any, class_weight: dict | None = None) -> None:
        self.source = source
        self.class_weight = class_weight
        self.reiterable = not hasattr(source, "__next__")
        self.num_batches = None
        if self.reiterable and hasattr(source, "__len__"):
            try:
                self.num_batches = len(source)
            except TypeError:  # e.g. a DataLoader over an IterableDataset
                self.num_batches = None
        self._iterator: Iterator | None = None
        self._peeked: list = []

    def _raw(self) -> Iterator:
        if self.reiterable:
            return iter(self.source)
        if self._iterator is None:
            self._iterator = self.source
        return self._iterator

    def batches(self, epoch: int = 0) -> Iterator[tuple]:
        raw = self._raw()
        if self._peeked and not self.reiterable:
            raw = itertools.chain(self._peeked, raw)
            self._peeked = []
        for item in raw:
            yield native_batch(*unpack_batch(item, "a data generator"), class_weight=self.class_weight)

    def peek(self) -> tuple:
        if self.reiterable:
            for item in iter(self.source):
                return native_batch(*unpack_batch(item, "a data generator"), class_weight=self.class_weight)
            raise ValueError("the data is empty: the iterable yields no batches")
        if not self._peeked:
            try:
                self._peeked = [next(self._raw())]
            except StopIteration:
                raise ValueError("the data is empty: the generator yields no batches") from None
        return native_batch(*unpack_batch(self._peeked[0], "a data generator"), class_weight=self.class_weight)
