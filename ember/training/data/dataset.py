"""``ember.data.Dataset``: the batch-indexed dataset protocol (Keras's ``PyDataset``).

Subclass it and implement ``__len__`` (the number of batches) and ``__getitem__(index)``
returning one batch: ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``.
``on_epoch_end`` runs after every epoch (reshuffle your data there). With
``shuffle=True``, ``fit`` visits the batches in a seeded random order each epoch.
``workers > 1`` prefetches batches with that many threads (useful when ``__getitem__``
reads files or releases the GIL); multiprocessing is not offered.
"""

from __future__ import annotations

import collections
import concurrent.futures
import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np

from ember.training.data.batch import DataAdapter, native_batch, unpack_batch
from ember.validation import check_positive_int


class Dataset:
    """Base class of batch-indexed datasets (see the module docstring).

    Args:
        workers: threads that prefetch batches (1: load in the training loop).
        use_multiprocessing: must stay False (Ember never pickles data across processes).
        max_queue_size: batches prefetched ahead when ``workers > 1``.

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import layers
        >>> class Squares(ember.data.Dataset):
        ...     def __len__(self):
        ...         return 4
        ...     def __getitem__(self, index):
        ...         x = np.arange(8, dtype="float32").reshape(8, 1) / 8 + index
        ...         return x, 2 * x
        >>> model = ember.Sequential([ember.Input((1,)), layers.Dense(1)])
        >>> _ = model.build(seed=0)
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> history = model.fit(Squares(), epochs=2, verbose=0)
        >>> len(history.history["loss"])
        2
    """

    def __init__(self, workers: int = 1, use_multiprocessing: bool = False, max_queue_size: int = 10) -> None:
        owner = type(self).__name__
        for name, value in (("workers", workers), ("max_queue_size", max_queue_size)):
            check_positive_int(owner, name, value)
        if use_multiprocessing:
            raise NotImplementedError(
                f"{owner}: use_multiprocessing=True is not supported (it would pickle the data); use workers=N "
                "for thread prefetching, or a torch DataLoader with num_workers on the torch backend")
        self._workers = int(workers)
        self._max_queue_size = int(max_queue_size)

    @property
    def workers(self) -> int:
        return getattr(self, "_workers", 1)

    @property
    def max_queue_size(self) -> int:
        return getattr(self, "_max_queue_size", 10)

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__ (the number of batches)")

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__(index) returning a batch")

    def on_epoch_end(self) -> None:
        """Called after every epoch."""


class DatasetAdapter(DataAdapter):
    """Iterates a :class:`Dataset` batch by batch (seeded order with ``shuffle``).

    Example:
        >>> import numpy as np
        >>> from ember import data, ops
        >>> class Pairs(data.Dataset):
        ...     def __len__(self):
        ...         return 3
        ...     def __getitem__(self, index):
        ...         return np.full((2, 1), index, "float32"), np.zeros((2, 1), "float32")
        >>> adapter = data.DatasetAdapter(Pairs())
        >>> [ops.to_numpy(x)[0, 0].item() for x, y, w in adapter.batches(0)]
        [0.0, 1.0, 2.0]
    """

    num_batches: int  # len(dataset), checked in __init__

    def __init__(self, dataset: Dataset, shuffle: bool = False, class_weight: dict | None = None,
                 seed: int = 0) -> None:
        self.dataset = dataset
        self.shuffle = shuffle
        self.class_weight = class_weight
        self.seed = int(seed)
        # __len__ called directly: len() would turn -1 or 2.5 into its own bare error first.
        count = type(dataset).__len__(dataset)
        if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
            raise ValueError(
                f"x: {type(dataset).__name__}.__len__() returned {count!r}; it must return the number of batches "
                "as a non-negative int (e.g. math.ceil(samples / batch_size))")
        self.num_batches = int(count)

    def _item(self, index: int, load: Any = None) -> Any:
        """Batch ``index`` of the dataset (``load``: a pending result of ``__getitem__``); an
        IndexError inside ``__getitem__`` means ``__len__`` overstates the data: said so."""
        try:
            return self.dataset[index] if load is None else load.result()
        except IndexError as error:
            name = type(self.dataset).__name__
            raise IndexError(
                f"x: {name}.__getitem__({index}) raised IndexError ({error}) although {name}.__len__() returned "
                f"{self.num_batches}, so indices 0..{self.num_batches - 1} must each give a batch: make __len__ "
                "return the number of batches __getitem__ can give") from error

    def _order(self, epoch: int) -> list[int]:
        if self.shuffle:
            return [int(i) for i in np.random.default_rng((self.seed, epoch)).permutation(self.num_batches)]
        return list(range(self.num_batches))

    def _convert(self, item: Any) -> tuple:
        where = f"{type(self.dataset).__name__}.__getitem__"
        return native_batch(*unpack_batch(item, where), class_weight=self.class_weight)

    def batches(self, epoch: int = 0) -> Iterator[tuple]:
        order = self._order(epoch)
        if self.dataset.workers <= 1:
            for index in order:
                yield self._convert(self._item(index))
            return
        with concurrent.futures.ThreadPoolExecutor(self.dataset.workers) as pool:
            pending: collections.deque = collections.deque()
            ahead = max(self.dataset.max_queue_size, self.dataset.workers)
            position = 0
            while position < len(order) or pending:
                while position < len(order) and len(pending) < ahead:
                    pending.append((order[position], pool.submit(self.dataset.__getitem__, order[position])))
                    position += 1
                index, load = pending.popleft()
                yield self._convert(self._item(index, load))

    def peek(self) -> tuple:
        if self.num_batches == 0:
            raise ValueError(f"the data is empty: {type(self.dataset).__name__} has 0 batches")
        return self._convert(self._item(0))

    def on_epoch_end(self) -> None:
        self.dataset.on_epoch_end()
