"""``ember.data``: the data ``fit``/``evaluate``/``predict`` read, and the :class:`Dataset` protocol.

Accepted data: NumPy arrays, native arrays, ``ember.Tensor``s, lists/dicts of them;
Python generators and iterables of ``(x, y[, sample_weight])``; an :class:`ember.data.Dataset`;
a ``torch.utils.data.DataLoader`` (recognised without importing torch).

This package is the namespace's one home: ``ember.data`` is this module object (see
:mod:`ember._namespaces`).

Example:
    >>> import numpy as np
    >>> import ember
    >>> adapter = ember.data.get_adapter(np.zeros((10, 2), "float32"), np.zeros(10, "float32"), batch_size=4)
    >>> type(adapter).__name__, adapter.num_samples, adapter.num_batches
    ('ArrayAdapter', 10, 3)
"""

from ember.training.data.adapter import (
    ArrayAdapter,
    DataAdapter,
    check_cardinality,
    get_adapter,
    split_validation,
    unpack_batch,
)
from ember.training.data.dataset import Dataset, DatasetAdapter
from ember.training.data.epoch_iterator import EpochIterator
from ember.training.data.generator_adapter import GeneratorAdapter

__all__ = [
    "ArrayAdapter",
    "DataAdapter",
    "Dataset",
    "DatasetAdapter",
    "EpochIterator",
    "GeneratorAdapter",
    "check_cardinality",
    "get_adapter",
    "split_validation",
    "unpack_batch",
]
