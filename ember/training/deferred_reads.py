"""Per-step values kept on the device and read on the host in one transfer, at a sync that happens anyway.

On a CUDA (or MPS) device, reading a value on the host (``.item()``, ``float(t)``, ``.cpu()``)
waits for every queued kernel: one such read per step stalls the pipeline the asynchronous
launches build. The checks ``fit`` runs on every batch (the sparse-label range check of
:mod:`ember.training.label_check`, the NaN watch of :mod:`ember.training.nonfinite_loss`)
therefore record small device values per step (0-d, or a short vector such as a
``[min, max]``) in a :class:`DeferredReads` and read them all at
once where the loop synchronises for its logs anyway: at the end of an epoch or evaluation
(the epoch's logs are read as floats) and whenever a callback or the progress bar reads a
batch's logs. The number of host reads per epoch is then a constant, independent of the
number of steps (``tests/training/test_host_syncs.py`` counts them).

Memory stays bounded too: every :data:`CHUNK` recorded values are stacked into one array on
the device (a kernel, no host read), so an epoch of ``n`` steps holds ``n / CHUNK`` arrays.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.training.deferred_reads import DeferredReads
    >>> ember.set_backend("numpy")
    >>> reads = DeferredReads(columns=1)
    >>> for step in range(3):
    ...     reads.add(("epoch 0", step), ops.convert_to_tensor(float(step) * 2))
    >>> [(tag, float(values[0])) for tag, values in reads.read()]
    [(('epoch 0', 0), 0.0), (('epoch 0', 1), 2.0), (('epoch 0', 2), 4.0)]
    >>> reads.read()  # read once: nothing is left
    []
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops
from ember.validation import check_positive_int

# Recorded values stacked into one device array every this many steps (a kernel, never a host read).
CHUNK = 100


class DeferredReads:
    """Values recorded per step (``columns`` of them), read together by :meth:`read`.

    Each column's values share one shape (0-d, or a short vector): a column is stacked on the
    device and read as one array.

    Args:
        columns: how many values each :meth:`add` records (each column is read as one array).
        chunk: values stacked on the device into one array every ``chunk`` records (None: :data:`CHUNK`).
    """

    def __init__(self, columns: int, chunk: int | None = None) -> None:
        chunk = CHUNK if chunk is None else chunk
        check_positive_int("DeferredReads", "columns", columns)
        check_positive_int("DeferredReads", "chunk", chunk)
        self.columns = int(columns)
        self.chunk = int(chunk)
        self._tags: list = []
        self._stacked: list[list] = [[] for _ in range(self.columns)]  # per column: stacked device arrays
        self._open: list[list] = [[] for _ in range(self.columns)]  # per column: one device array per step

    def __len__(self) -> int:
        return len(self._tags)

    def add(self, tag: Any, *values: Any) -> None:
        """Record one step's ``values`` (one per column, each column's of one shape) under ``tag``
        (kept on the host)."""
        if len(values) != self.columns:
            raise ValueError(f"DeferredReads.add: expected {self.columns} values, received {len(values)}")
        self._tags.append(tag)
        for column, value in zip(self._open, values):
            column.append(value)
        if len(self._open[0]) >= self.chunk:
            self._stack_open()

    def _stack_open(self) -> None:
        """The open values of each column as one array on the device (no host read)."""
        if not self._open[0]:
            return
        for stacked, column in zip(self._stacked, self._open):
            stacked.append(ops.stack(column))
            column.clear()

    def read(self) -> list[tuple[Any, tuple]]:
        """Every recorded ``(tag, values)`` in order, as NumPy scalars or arrays (one host transfer
        per column); the record is emptied."""
        if not self._tags:
            return []
        self._stack_open()
        columns = []
        for stacked in self._stacked:
            whole = stacked[0] if len(stacked) == 1 else ops.concatenate(stacked, axis=0)
            columns.append(np.asarray(ops.to_numpy(whole)))
        tags = self.clear()
        return [(tag, tuple(column[i] for column in columns)) for i, tag in enumerate(tags)]

    def clear(self) -> list:
        """Forget everything recorded (returns the tags that were recorded)."""
        tags, self._tags = self._tags, []
        self._stacked = [[] for _ in range(self.columns)]
        self._open = [[] for _ in range(self.columns)]
        return tags
