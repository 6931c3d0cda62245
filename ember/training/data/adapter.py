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

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import ops
    >>> from ember.training.data import get_adapter
    >>> ember.set_backend("numpy")
    >>> adapter = get_adapter(np.zeros((10, 3)), np.arange(10), batch_size=4)
    >>> [ops.shape(x)[0] for x, y, sw in adapter.batches(epoch=0)]
    [4, 4, 2]
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Iterator

import numpy as np
import optree

from ember.training.data.convert import flatten, is_array_like, num_samples, to_native, to_numpy_host


class DataAdapter:
    """Base: ``num_batches`` (None when unknown) and ``batches(epoch)`` yielding native batches."""

    num_batches: int | None = None
    reiterable: bool = True

    def batches(self, epoch: int = 0) -> Iterator[tuple]:
        raise NotImplementedError

    def on_epoch_end(self) -> None:
        """Called after each epoch (a :class:`ember.data.Dataset` reshuffles here)."""

    def peek(self) -> tuple:
        """The first batch (without consuming it), for building a model from the data's shapes."""
        for batch in self.batches(epoch=0):
            return batch
        raise ValueError("the training data is empty: it yields no batches")


# ------------------------------------------------------------------------------- batches
def unpack_batch(item: Any, where: str = "the data") -> tuple:
    """``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)`` (tuple or list) -> ``(x, y, sw)``."""
    if isinstance(item, (tuple, list)) and not is_array_like(item):
        if len(item) == 1:
            return item[0], None, None
        if len(item) == 2:
            return item[0], item[1], None
        if len(item) == 3:
            return item[0], item[1], item[2]
        raise ValueError(
            f"{where} must yield x, (x,), (x, y) or (x, y, sample_weight); received a {type(item).__name__} "
            f"of {len(item)} elements")
    if isinstance(item, dict) or is_array_like(item):
        return item, None, None
    raise TypeError(f"{where} must yield arrays or tuples of arrays, received {type(item).__name__}")


def native_batch(x: Any, y: Any, sample_weight: Any, class_weight: dict | None = None) -> tuple:
    """One batch converted to native arrays, with ``class_weight`` folded into its sample weights."""
    if class_weight is not None:
        if y is None:
            raise ValueError("class_weight needs targets y")
        weights = class_weight_to_sample_weight(y, class_weight)
        if sample_weight is not None:
            weights = weights * to_numpy_host(sample_weight).astype(np.float32).reshape(weights.shape[0], -1)[:, 0]
        sample_weight = weights
    return to_native(x), to_native(y), to_native(sample_weight)


def check_class_weight(class_weight: Any) -> dict | None:
    """Validate ``class_weight``: ``{class_index: weight}``."""
    if class_weight is None:
        return None
    if not isinstance(class_weight, dict) or not class_weight:
        raise TypeError(f"class_weight must be a non-empty dict {{class_index: weight}}, received {class_weight!r}")
    checked = {}
    for key, value in class_weight.items():
        if isinstance(key, bool) or not isinstance(key, numbers.Integral) or key < 0:
            raise ValueError(f"class_weight keys must be class indices (non-negative ints), received {key!r}")
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
            raise ValueError(f"class_weight[{key}] must be a non-negative number, received {value!r}")
        checked[int(key)] = float(value)
    return checked


def class_weight_to_sample_weight(y: Any, class_weight: dict) -> np.ndarray:
    """Per-sample weights from labels as Keras does: integer labels or one-hot rows (argmax);
    classes missing from ``class_weight`` weigh 1."""
    if not is_array_like(y):
        raise ValueError("class_weight is only supported for models with a single output (one array y), "
                         f"received y of type {type(y).__name__}; pass sample_weight per output instead")
    labels = to_numpy_host(y)
    if labels.ndim > 1:
        labels = np.argmax(labels, axis=-1) if labels.shape[-1] != 1 else np.squeeze(labels, axis=-1)
    labels = np.round(labels).astype(np.int64).reshape(-1)
    table = np.ones(max(int(labels.max(initial=0)), max(class_weight)) + 1, dtype=np.float32)
    for key, value in class_weight.items():
        table[key] = value
    return table[np.clip(labels, 0, None)]


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
    """

    def __init__(self, x: Any, y: Any = None, sample_weight: Any = None, batch_size: int = 32,
                 shuffle: Any = False, class_weight: dict | None = None, seed: int = 0) -> None:
        self.num_samples = check_cardinality(x, y, sample_weight)
        if class_weight is not None:
            _, _, sample_weight = native_batch(None, y, sample_weight, class_weight)
        self.x, self.y, self.sample_weight = to_native(x), to_native(y), to_native(sample_weight)
        self._flat = optree.tree_flatten((self.x, self.y, self.sample_weight), none_is_leaf=False)
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.seed = int(seed)
        self.num_batches = math.ceil(self.num_samples / self.batch_size)

    def batches(self, epoch: int = 0) -> Iterator[tuple]:
        from ember import ops

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
    native = to_native((x, y, sample_weight))
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
    from ember.training.data.dataset import Dataset, DatasetAdapter
    from ember.training.data.generator_adapter import GeneratorAdapter

    class_weight = check_class_weight(class_weight)
    if x is None:
        raise ValueError(f"{caller}: x is required, received None")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral)
                                   or batch_size <= 0):
        raise ValueError(f"{caller}: batch_size must be a positive int, received {batch_size!r}")
    if shuffle not in (True, False, "batch"):
        raise ValueError(f"{caller}: shuffle must be True, False or 'batch', received {shuffle!r}")
    batches_list = (y is None and isinstance(x, list) and len(x) > 0
                    and all(isinstance(item, tuple) and 1 <= len(item) <= 3 for item in x))
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
    if batch_size is not None:
        raise ValueError(f"{caller}: `batch_size` must not be given when x is {kind}: it yields whole batches")
    if isinstance(x, Dataset):
        return DatasetAdapter(x, shuffle=bool(shuffle), class_weight=class_weight, seed=seed)
    if is_torch_dataloader(x) or hasattr(x, "__iter__") or hasattr(x, "__next__"):
        if isinstance(x, (str, bytes)):
            raise TypeError(f"{caller}: x must be arrays, a Dataset, a DataLoader or a generator, received a string")
        return GeneratorAdapter(x, class_weight=class_weight)
    raise TypeError(f"{caller}: x must be arrays (NumPy, native, ember.Tensor, or lists/dicts of them), an "
                    f"ember.data.Dataset, a torch DataLoader or a generator of (x, y[, sample_weight]); received "
                    f"{type(x).__name__}")
