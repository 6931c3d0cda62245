"""``ember.data``: the data ``fit``/``evaluate``/``predict`` read, and the :class:`Dataset` protocol.

Accepted data: NumPy arrays, native arrays, ``ember.Tensor``s, lists/dicts of them;
Python generators and iterables of ``(x, y[, sample_weight])``; an :class:`ember.data.Dataset`;
a ``torch.utils.data.DataLoader`` (recognised without importing torch).
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
