"""The data-adapter protocol and one batch's plumbing: unpacking, class weights, native arrays.

Every adapter (arrays, :class:`ember.data.Dataset`, generators and data loaders) builds on
these; :mod:`ember.training.data.adapter` picks the adapter for what ``fit`` received.

Example:
    >>> import numpy as np
    >>> from ember.training.data.batch import unpack_batch
    >>> x, y, sample_weight = unpack_batch((np.zeros(3), np.ones(3)))
    >>> sample_weight is None
    True
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np

from ember.training.data.convert import is_array_like, to_native, to_numpy_host


class DataAdapter:
    """Base: ``num_batches`` (None when unknown) and ``batches(epoch)`` yielding native batches.

    Example:
        >>> import numpy as np
        >>> from ember import data
        >>> adapter = data.ArrayAdapter(np.zeros((5, 2), "float32"), np.zeros(5), batch_size=2)
        >>> isinstance(adapter, data.DataAdapter), adapter.num_batches
        (True, 3)
    """

    num_batches: int | None = None
    reiterable: bool = True
    exact_order = False  # whether batches(epoch) repeats exactly in a new process (see ArrayAdapter)

    def batches(self, epoch: int = 0) -> Iterator[tuple]:
        raise NotImplementedError

    def on_epoch_end(self) -> None:
        """Called after each epoch (a :class:`ember.data.Dataset` reshuffles here)."""

    def all_targets(self) -> Any:
        """Every batch's targets as whole arrays when the adapter holds them in memory (the ``y`` of
        array data), else None. ``fit``/``evaluate`` check sparse labels once over these
        (:meth:`ember.training.label_check.SparseLabelCheck.vouch`) instead of batch by batch."""
        return None

    def all_inputs(self) -> Any:
        """Every batch's inputs as whole arrays when the adapter holds them in memory (the ``x`` of
        array data), else None: Embedding indices are then checked once over these
        (:mod:`ember.training.input_check`), and no batch can be empty."""
        return None

    def peek(self) -> tuple:
        """The first batch (without consuming it), for building a model from the data's shapes."""
        batches = self.batches(epoch=0)
        try:
            for batch in batches:
                return batch
        finally:
            # Closed here, not when garbage-collected: an interrupt raised while the generator
            # closes then propagates instead of being printed as "Exception ignored".
            close = getattr(batches, "close", None)
            if close is not None:
                close()
        raise ValueError("the training data is empty: it yields no batches")


# ------------------------------------------------------------------------------- batches
def unpack_batch(item: Any, where: str = "the data") -> tuple[Any, Any, Any]:
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
    return to_native(x, "x"), to_native(y, "y"), to_native(sample_weight, "sample_weight")


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
