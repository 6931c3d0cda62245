"""``FileDataset``: batches of files read from disk, labelled, for ``fit`` and for Python loops.

The dataset the ``*_dataset_from_directory`` loaders return. It is an :class:`ember.data.Dataset`
(Keras's ``PyDataset``), so ``model.fit(dataset, epochs=...)`` takes it on every backend, and
it iterates as ``for x, y in dataset:`` (NumPy arrays; ``x`` alone without labels). It exposes
Keras's attributes ``class_names`` and ``file_paths``, and ``len(dataset)`` is the number of
batches (the last one may be short).

Order: ``file_paths`` (and the training/validation partition) are Keras's exactly for the same
seed (:mod:`ember.training.data.folder_index`). With ``shuffle=True`` the files are visited in a
new order every epoch, ``np.random.default_rng((seed, epoch)).permutation``; deterministic for
a given seed, but not Keras's: Keras shuffles with ``tf.data.Dataset.shuffle(8 * batch_size,
seed)``, whose random stream exists only in TensorFlow, so the batches of a shuffled Keras
dataset cannot be reproduced without it. Without ``shuffle`` batch ``k`` holds
``file_paths[k * batch_size:(k + 1) * batch_size]``, as in Keras.

Prefetching: ``dataset.prefetch(buffer_size)`` (Keras's ``tf.data`` spelling; ``-1``, Keras's
``AUTOTUNE``, means 2) reads batches in a background thread, ``buffer_size`` ahead, when the
dataset is iterated (:mod:`ember.training.data.background`: bounded queue, exceptions re-raised
in the loop, the thread stopped when the loop ends), and makes ``fit`` load batches in a
thread ahead of the training step (``workers=2``, ``max_queue_size=buffer_size``).

``dataset.take(n)`` lists the first ``n`` batches (``for images, labels in dataset.take(1):``).

Epochs: ``fit`` moves to the next order through ``on_epoch_end``; a Python loop that runs to the
end of the dataset does too (so each ``for`` pass is shuffled anew, as a ``tf.data`` dataset is).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ember.training.data.background import prefetched
from ember.training.data.dataset import Dataset

LABEL_MODES = ("int", "categorical", "binary", None)
AUTOTUNE = -1


def encode_labels(labels: np.ndarray, label_mode: str, num_classes: int) -> np.ndarray:
    """Keras's label encodings: int32 ids, float32 one-hot rows, or float32 ``(n, 1)`` 0/1 values.

    Example:
        >>> import numpy as np
        >>> encode_labels(np.array([1, 0]), "categorical", 2).tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    if label_mode == "binary":
        return labels.astype(np.float32)[:, None]
    if label_mode == "categorical":
        return np.eye(num_classes, dtype=np.float32)[labels]
    return labels.astype(np.int32)


class FileDataset(Dataset):
    """Batches of ``load(path)`` items with their encoded labels (see the module docstring).

    Args:
        file_paths: the files, in Keras's order.
        labels: an int label per file (None: no labels).
        class_names: the class names (None without labels).
        load: reads one file into a NumPy array (or a ``str`` for text).
        stack: makes one batch out of a list of loaded items.
        label_mode: ``"int"``, ``"categorical"``, ``"binary"`` or None (no labels yielded).
        batch_size: files per batch (None: one unbatched item per index).
        shuffle: a new seeded order every epoch.
        seed: the shuffling seed.

    Example:
        >>> import numpy as np
        >>> ds = FileDataset(["a", "b", "c"], np.array([0, 1, 0]), ["x", "y"], load=lambda p: p,
        ...                  stack=np.array, label_mode="int", batch_size=2, shuffle=False, seed=0)
        >>> len(ds), ds[1][0].tolist(), ds[1][1].tolist()
        (2, ['c'], [0])
    """

    def __init__(self, file_paths: list[str], labels: np.ndarray | None, class_names: list | None,
                 load: Callable[[str], Any], stack: Callable[[list], Any], label_mode: str | None,
                 batch_size: int | None, shuffle: bool, seed: int | None) -> None:
        super().__init__()
        self.file_paths = list(file_paths)
        self.labels = None if labels is None else np.asarray(labels, dtype=np.int32)
        self.class_names = class_names
        self.label_mode = label_mode if self.labels is not None else None
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.seed = int(np.random.randint(int(1e6)) if seed is None else seed)
        self.epoch = 0
        self.prefetch_size = 0
        self._load = load
        self._order: tuple[int, np.ndarray] | None = None
        self._stack = stack

    def __len__(self) -> int:
        if self.batch_size is None:
            return len(self.file_paths)
        return (len(self.file_paths) + self.batch_size - 1) // self.batch_size

    def order(self) -> np.ndarray:
        """The file indices of this epoch, in visiting order."""
        if self._order is None or self._order[0] != self.epoch:
            count = len(self.file_paths)
            visit = np.random.default_rng((self.seed, self.epoch)).permutation(count) if self.shuffle \
                else np.arange(count)
            self._order = (self.epoch, visit)
        return self._order[1]

    def _indices(self, index: int) -> np.ndarray:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"{type(self).__name__}: batch index must be an int, received {index!r}")
        if not -len(self) <= index < len(self):
            raise IndexError(f"{type(self).__name__}: batch {index} out of range for {len(self)} batches")
        index = int(index) % len(self)
        size = 1 if self.batch_size is None else self.batch_size
        return self.order()[index * size:(index + 1) * size]

    def __getitem__(self, index: int) -> Any:
        chosen = self._indices(index)
        items = [self._load(self.file_paths[i]) for i in chosen]
        if self.batch_size is None:
            x = items[0]
        else:
            x = self._stack(items)
        labels, label_mode = self.labels, self.label_mode
        if labels is None or label_mode is None:
            return x
        y = encode_labels(labels[chosen], label_mode, len(self.class_names or ()))
        return x, y[0] if self.batch_size is None else y

    def _batches(self) -> Iterator:
        for index in range(len(self)):
            yield self[index]
        self.epoch += 1  # a full pass is an epoch: the next one is visited in a new order

    def __iter__(self) -> Iterator:
        """The batches of the current epoch (read in a background thread after :meth:`prefetch`)."""
        if self.prefetch_size > 0:
            return prefetched(self._batches, self.prefetch_size)
        return self._batches()

    def on_epoch_end(self) -> None:
        """Moves to the next epoch's order (``fit`` calls it after each epoch)."""
        self.epoch += 1

    def take(self, count: int) -> list:
        """The first ``count`` batches of the current epoch's order, as a list (-1: all), for
        ``for x, y in dataset.take(1):`` as with ``tf.data`` (``fit`` takes a list of batches too).

        Raises:
            ValueError: ``count`` is not a non-negative int or -1.
        """
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < -1:
            raise ValueError(f"{type(self).__name__}.take: count must be a non-negative int or -1 (all), "
                             f"received {count!r}")
        return [self[index] for index in range(len(self) if count == -1 else min(int(count), len(self)))]

    def prefetch(self, buffer_size: int = AUTOTUNE) -> FileDataset:
        """Reads batches ``buffer_size`` ahead in a background thread (-1, ``AUTOTUNE``: 2); returns self.

        Raises:
            ValueError: ``buffer_size`` is not a positive int or -1.
        """
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, (int, np.integer)) \
                or not (buffer_size >= 1 or buffer_size == AUTOTUNE):
            raise ValueError(f"{type(self).__name__}.prefetch: buffer_size must be a positive int or -1 "
                             f"(AUTOTUNE), received {buffer_size!r}")
        self.prefetch_size = 2 if buffer_size == AUTOTUNE else int(buffer_size)
        self._workers = 2
        self._max_queue_size = self.prefetch_size
        return self
