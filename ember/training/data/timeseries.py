"""``timeseries_dataset_from_array``: sliding windows over a series as a batch-indexed ``Dataset``.

Keras returns a ``tf.data.Dataset``; Ember returns an :class:`ember.data.Dataset` (Keras's
``PyDataset``), which ``fit``/``evaluate``/``predict`` take and Python iterates batch by batch,
so ``for inputs, targets in dataset:`` and ``model.fit(dataset)`` work unchanged. Window ``k``
starts at ``start_index + k * sequence_stride`` and holds ``sequence_length`` steps taken every
``sampling_rate`` steps; its target is ``targets[start]``.

Example:
    >>> import numpy as np
    >>> from ember.utils import timeseries_dataset_from_array
    >>> series = np.arange(10)
    >>> dataset = timeseries_dataset_from_array(series, series[3:], sequence_length=3, batch_size=2)
    >>> len(dataset)
    4
    >>> inputs, targets = dataset[0]
    >>> inputs.tolist(), targets.tolist()
    ([[0, 1, 2], [1, 2, 3]], [3, 4])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.training.data.dataset import Dataset


def _positive(name: str, value: Any, allow_none: bool = False) -> None:
    if allow_none and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"timeseries_dataset_from_array: {name} must be a positive int, received {value!r}")


class TimeseriesDataset(Dataset):
    """The windows of :func:`timeseries_dataset_from_array` (see there)."""

    def __init__(self, data: np.ndarray, targets: np.ndarray | None, starts: np.ndarray, sequence_length: int,
                 sampling_rate: int, batch_size: int | None) -> None:
        super().__init__()
        self.data = data
        self.targets = targets
        self.starts = starts
        self.offsets = np.arange(sequence_length) * sampling_rate
        self.batch_size = batch_size

    def __len__(self) -> int:
        if self.batch_size is None:
            return len(self.starts)
        return (len(self.starts) + self.batch_size - 1) // self.batch_size

    def __getitem__(self, index: int) -> Any:
        if not -len(self) <= index < len(self):
            raise IndexError(f"TimeseriesDataset: batch {index} out of range for {len(self)} batches")
        index %= len(self)
        if self.batch_size is None:
            starts = self.starts[index:index + 1]
        else:
            starts = self.starts[index * self.batch_size:(index + 1) * self.batch_size]
        windows = self.data[starts[:, None] + self.offsets]
        if self.batch_size is None:
            windows = windows[0]
        if self.targets is None:
            return windows
        targets = self.targets[starts]
        return windows, targets[0] if self.batch_size is None else targets


def timeseries_dataset_from_array(data: Any, targets: Any, sequence_length: int, sequence_stride: int = 1,
                                  sampling_rate: int = 1, batch_size: int | None = 128, shuffle: bool = False,
                                  seed: int | None = None, start_index: int | None = None,
                                  end_index: int | None = None) -> TimeseriesDataset:
    """Sliding windows over ``data`` (time on axis 0), batched, with their targets.

    Args:
        data: array-like, time steps on axis 0.
        targets: ``targets[i]`` is the target of the window starting at ``i`` (None: inputs only).
        sequence_length: steps per window.
        sequence_stride: steps between the starts of consecutive windows.
        sampling_rate: steps between two samples within a window.
        batch_size: windows per batch (None: one window per item, unbatched).
        shuffle: shuffle the windows once, with ``seed``.
        seed: the shuffling seed.
        start_index, end_index: use only ``data[start_index:end_index]`` for windows.

    Returns:
        A :class:`TimeseriesDataset` (an ``ember.data.Dataset``).

    Raises:
        ValueError: non-positive lengths/strides/rates/batch size, bad indices, or ``targets`` shorter
            than the first window requires.
    """
    data = np.asarray(data)
    for name, value in (("sequence_length", sequence_length), ("sequence_stride", sequence_stride),
                        ("sampling_rate", sampling_rate)):
        _positive(name, value)
    _positive("batch_size", batch_size, allow_none=True)
    start = 0 if start_index is None else int(start_index)
    end = len(data) if end_index is None else int(end_index)
    if not 0 <= start < max(end, 1) or end > len(data):
        raise ValueError(f"timeseries_dataset_from_array: need 0 <= start_index < end_index <= len(data) "
                         f"({len(data)}), received start_index={start_index}, end_index={end_index}")
    count = end - start - (sequence_length - 1) * sampling_rate
    target_array = None
    if targets is not None:
        target_array = np.asarray(targets)
        count = min(count, len(target_array) - start)
    if count <= 0:
        raise ValueError(f"timeseries_dataset_from_array: no complete window of {sequence_length} steps (sampling "
                         f"rate {sampling_rate}) fits in data[{start}:{end}]"
                         + ("" if target_array is None else f" with {len(target_array)} targets"))
    starts = start + np.arange(0, count, sequence_stride)
    if shuffle:
        np.random.default_rng(seed).shuffle(starts)
    return TimeseriesDataset(data, target_array, starts, int(sequence_length), int(sampling_rate), batch_size)
