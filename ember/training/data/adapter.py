"""Data adapters: every kind of training data seen as an iterable of ``(x, y, sample_weight)`` batches.

:func:`get_adapter` picks the adapter for what ``fit``/``evaluate``/``predict`` received:

* arrays (NumPy, native, ``ember.Tensor``, lists/dicts of them): :class:`ArrayAdapter`
  batches them on the active backend, shuffling with a seeded permutation;
* an :class:`ember.data.Dataset` (``__len__``, ``__getitem__`` returning a batch,
  ``on_epoch_end``): :class:`~ember.training.data.dataset.DatasetAdapter`;
* a ``torch.utils.data.DataLoader`` (recognised by duck typing, torch is never imported
  here), or any Python iterable / generator of ``(x, y[, sample_weight])`` tuples:
  :class:`~ember.training.data.generator_adapter.GeneratorAdapter`. A Python *list of tuples*
  given without ``y`` is such an iterable (a list of batches); a list of arrays is the inputs
  of a multi-input model.

Batches are ``(x, y, sample_weight)`` with ``y``/``sample_weight`` possibly ``None``, every
array native to the active backend, floats cast to ``floatx()``.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import optree

from ember import ops
from ember.training.data.batch import (  # noqa: F401  (re-exported: the old home of these names)
    DataAdapter,
    check_class_weight,
    class_weight_to_sample_weight,
    native_batch,
    unpack_batch,
)
from ember.training.data.convert import flatten, is_array_like, num_samples, to_native
from ember.training.data.dataset import Dataset, DatasetAdapter
from ember.training.data.generator_adapter import GeneratorAdapter
from ember.training.data.list_checks import check_list_data, looks_like_rows
from ember.validation import check_positive_int

# The adapter protocol and batch plumbing live in .batch (the adapters below build on them).

# --------------------------------------------------------------------------------- arrays
def check_cardinality(x: Any, y: Any, sample_weight: Any) -> int:
    """The common number of samples of every array, or a ValueError listing them."""
    sizes = {name: [num_samples(a) for a in flatten(value)] for name, value in
             (("x", x), ("y", y), ("sample_weight", sample_weight)) if value is not None}
    distinct = {n for values in sizes.values() for n in values}
    if not sizes.get("x"):
        raise ValueError("x holds no arrays")
    if len(distinct) > 1:
        detail = "; ".join(f"{name} sizes: {', '.join(map(str, values))}" for name, values in sizes.items())
        raise ValueError(f"Data cardinality is ambiguous: {detail}. Make sure all arrays contain the same "
                         "number of samples.")
    count = distinct.pop()
    if count == 0:
        raise ValueError("the data holds 0 samples")
    return count


def _slice(value: Any, start: int, stop: int) -> Any:
    if value is None:
        return None
    if is_array_like(value):
        return value[start:stop]
    if isinstance(value, dict):
        return {k: _slice(v, start, stop) for k, v in value.items()}
    return type(value)(_slice(v, start, stop) for v in value)


class ArrayAdapter(DataAdapter):
    """In-memory arrays, batched on the active backend.

    Args:
        x, y, sample_weight: arrays or lists/dicts of arrays with one common first dimension.
        batch_size: samples per batch (the last batch may be smaller).
        shuffle: True (a fresh seeded permutation every epoch), ``"batch"`` (shuffle the
            order of contiguous batches) or False.
        class_weight: ``{class: weight}`` folded into the sample weights.
        seed: seeds the shuffling; epoch ``e`` uses the permutation of ``(seed, e)``.

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import ops
        >>> from ember.training.data import get_adapter
        >>> adapter = get_adapter(np.zeros((10, 3)), np.arange(10), batch_size=4)
        >>> [ops.shape(x)[0] for x, y, sw in adapter.batches(epoch=0)]
        [4, 4, 2]
    """

    exact_order = True  # epoch e's batches depend only on (seed, e): a resumed fit can skip to batch k

    def __init__(self, x: Any, y: Any = None, sample_weight: Any = None, batch_size: int = 32,
                 shuffle: Any = False, class_weight: dict | None = None, seed: int = 0) -> None:
        self.num_samples = check_cardinality(x, y, sample_weight)
        if class_weight is not None:
            _, _, sample_weight = native_batch(None, y, sample_weight, class_weight)
        self.x, self.y = to_native(x, "x"), to_native(y, "y")
        self.sample_weight = to_native(sample_weight, "sample_weight")
        self._flat = optree.tree_flatten((self.x, self.y, self.sample_weight), none_is_leaf=False)
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.seed = int(seed)
        self.num_batches = math.ceil(self.num_samples / self.batch_size)

    def all_targets(self) -> Any:
        return self.y

    def all_inputs(self) -> Any:
        return self.x

    def batches(self, epoch: int = 0) -> Iterator[tuple]:
        n, size = self.num_samples, self.batch_size
        leaves, treedef = self._flat
        unflatten = treedef.unflatten
        if self.shuffle is True:
            order = np.random.default_rng((self.seed, epoch)).permutation(n)
            index = ops.convert_to_tensor(order, dtype="int64")
            for start in range(0, n, size):
                part = index[start:start + size]
                yield unflatten([leaf[part] for leaf in leaves])  # native gathers along axis 0
            return
        starts = list(range(0, n, size))
        if self.shuffle == "batch":
            starts = [starts[i] for i in np.random.default_rng((self.seed, epoch)).permutation(len(starts))]
        for start in starts:
            stop = start + size
            yield unflatten([leaf[start:stop] for leaf in leaves])


def split_validation(x: Any, y: Any, sample_weight: Any, validation_split: float) -> tuple:
    """Keras's ``validation_split``: the *last* fraction of the samples, taken before shuffling."""
    if isinstance(validation_split, bool) or not isinstance(validation_split, numbers.Real) or not (
            0.0 <= validation_split < 1.0):
        raise ValueError(f"validation_split must be a float in [0, 1), received {validation_split!r}")
    n = check_cardinality(x, y, sample_weight)
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(
            f"validation_split={validation_split} leaves {split_at} training and {n - split_at} validation "
            f"samples out of {n}; use a split that leaves samples on both sides")
    native = (to_native(x, "x"), to_native(y, "y"), to_native(sample_weight, "sample_weight"))
    train = tuple(_slice(v, 0, split_at) for v in native)
    val = tuple(_slice(v, split_at, n) for v in native)
    return train, val


# ---------------------------------------------------------------------------- dispatcher
def is_torch_dataloader(data: Any) -> bool:
    """A ``torch.utils.data.DataLoader`` (duck typing: torch is not imported)."""
    module = type(data).__module__ or ""
    return module.startswith("torch.utils.data") and hasattr(data, "__iter__") and hasattr(data, "dataset")


def is_array_data(x: Any) -> bool:
    """Arrays or a list/tuple/dict structure of arrays (not a generator, Dataset or loader)."""
    if is_array_like(x):
        return True
    if isinstance(x, dict):
        return bool(x) and all(is_array_data(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return bool(x) and all(is_array_data(v) for v in x)
    return False


def get_adapter(x: Any, y: Any = None, sample_weight: Any = None, batch_size: int | None = None,
                shuffle: Any = False, class_weight: Any = None, seed: int = 0, caller: str = "fit") -> DataAdapter:
    """The adapter for ``x`` (see the module docstring); validates the arguments that go with it.

    Raises:
        ValueError: arrays of different lengths, ``y``/``sample_weight``/``batch_size`` given
            with a generator or Dataset (which carry their own), a bad ``class_weight``.
        TypeError: data of a kind Ember cannot read.
    """
    class_weight = check_class_weight(class_weight)
    if x is None:
        raise ValueError(f"{caller}: x is required, received None")
    if batch_size is not None:
        check_positive_int(caller, "batch_size", batch_size)
    if shuffle not in (True, False, "batch"):
        raise ValueError(f"{caller}: shuffle must be True, False or 'batch', received {shuffle!r}")
    batches_list = (y is None and isinstance(x, list) and len(x) > 0
                    and all(isinstance(item, tuple) and 1 <= len(item) <= 3 for item in x))
    for name, value in (("x", None if batches_list else x), ("y", y), ("sample_weight", sample_weight)):
        if looks_like_rows(value):  # ragged, or holding strings/None: a clear error, not NumPy's
            check_list_data(caller, name, value)
    if is_array_data(x) and not batches_list:
        if y is not None and not is_array_data(y):
            raise TypeError(f"{caller}: y must be arrays like x, received {type(y).__name__}")
        return ArrayAdapter(x, y, sample_weight, batch_size or 32, shuffle, class_weight, seed)
    kind = ("an ember.data.Dataset" if isinstance(x, Dataset) else "a torch DataLoader" if is_torch_dataloader(x)
            else "a generator/iterable")
    for name, value in (("y", y), ("sample_weight", sample_weight)):
        if value is not None:
            raise ValueError(f"{caller}: `{name}` must not be given when x is {kind}: it yields (x, y, "
                             "sample_weight) tuples itself")
    if batch_size is not None:  # Keras ignores it here; a warning says so rather than ignoring it silently
        warnings.warn(f"{caller}: batch_size={batch_size} is ignored: x is {kind}, which yields whole batches "
                      f"(set the batch size where the batches are made)", UserWarning, stacklevel=3)
    if isinstance(x, Dataset):
        return DatasetAdapter(x, shuffle=bool(shuffle), class_weight=class_weight, seed=seed)
    if is_torch_dataloader(x) or hasattr(x, "__iter__") or hasattr(x, "__next__"):
        if isinstance(x, (str, bytes)):
            raise TypeError(f"{caller}: x must be arrays, a Dataset, a DataLoader or a generator, received a string")
        return GeneratorAdapter(x, class_weight=class_weight)
    raise TypeError(f"{caller}: x must be arrays (NumPy, native, ember.Tensor, or lists/dicts of them), an "
                    f"ember.data.Dataset, a torch DataLoader or a generator of (x, y[, sample_weight]); received "
                    f"{type(x).__name__}")
