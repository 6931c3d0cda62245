"""Functional index updates for :class:`ember.Tensor`: ``t.at[key].set(v)`` / ``.add(v)``.

The update is written once over :mod:`ember.ops`, so it runs on every backend and
gradient tapes see (and differentiate through) it. The flat positions that ``key``
selects come from indexing an ``arange`` laid out like the tensor with the very
same key, so every NumPy indexing form (ints, slices, ``None``, ``...``, boolean
masks, integer arrays) means exactly what it means for ``t[key]``; the values are
then scattered into the flattened tensor and the result is reshaped back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops


class AtIndexer:
    """The object behind ``Tensor.at``; indexing it names the entries to update.

    Example:
        >>> import ember
        >>> ember.set_backend("numpy")
        >>> t = ember.tensor([1, 2, 3])
        >>> t.at[1].set(10).tolist()
        [1, 10, 3]
    """

    __slots__ = ("_tensor",)

    def __init__(self, tensor: Any):
        self._tensor = tensor

    def __getitem__(self, key: Any) -> AtRef:
        return AtRef(self._tensor, key)

    def __repr__(self) -> str:
        return f"<at indexer of {self._tensor!r}>"


class AtRef:
    """The entries ``tensor[key]``, ready for a functional update.

    Each method returns a *new* Tensor; the original is never modified.
    """

    __slots__ = ("_tensor", "_key")

    def __init__(self, tensor: Any, key: Any):
        self._tensor = tensor
        self._key = key

    def get(self) -> Any:
        """``tensor[key]``.

        Example:
            >>> import ember
            >>> ember.set_backend("numpy")
            >>> ember.tensor([1, 2, 3]).at[-1].get().item()
            3
        """
        return self._tensor[self._key]

    def set(self, values: Any) -> Any:
        """A copy of the tensor with the selected entries replaced by ``values``.

        ``values`` is broadcast to the shape of ``tensor[key]`` and cast to the
        tensor's dtype. Where ``key`` selects one entry several times (repeated
        integer indices), which of the values lands there is unspecified (as in
        JAX).

        Example:
            >>> import ember
            >>> ember.set_backend("numpy")
            >>> t = ember.tensor([[1, 2], [3, 4]])
            >>> t.at[:, 0].set(0).tolist()
            [[0, 2], [0, 4]]
        """
        return self._tensor._apply_at(self._key, values, "set")

    def add(self, values: Any) -> Any:
        """A copy of the tensor with ``values`` added to the selected entries.

        Repeated indices accumulate (as JAX's ``.at[].add`` and NumPy's
        ``np.add.at``, unlike ``x[idx] += v``): ``t.at[[0, 0]].add(1)`` adds 2
        to ``t[0]``.

        Example:
            >>> import ember
            >>> ember.set_backend("numpy")
            >>> ember.tensor([0, 0, 0]).at[[0, 0, 2]].add(1).tolist()
            [2, 0, 1]
        """
        return self._tensor._apply_at(self._key, values, "add")

    def __repr__(self) -> str:
        return f"<at[{self._key!r}] of {self._tensor!r}>"


def update_native(x: Any, key: Any, values: Any, mode: str) -> Any:
    """``x`` (a native array of the active backend) with ``x[key]`` set to / increased by ``values``.

    ``key`` must already be free of ``ember.Tensor`` objects. Raises ``IndexError``
    for an out-of-range key (from ``ops.getitem``) and ``ValueError`` when ``values``
    does not broadcast to the selected shape.
    """
    shape = ops.shape(x)
    size = ops.size(x)
    index_dtype = "int32" if size < 2**31 else "int64"
    positions = ops.getitem(ops.reshape(ops.arange(size, dtype=index_dtype), shape), key)
    selected = ops.shape(positions)
    count = ops.size(positions)
    values = ops.cast(values, ops.dtype(x))
    value_shape = ops.shape(values)
    try:
        fits = np.broadcast_shapes(value_shape, selected) == tuple(selected)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"Tensor.at[...].{mode}: values of shape {tuple(value_shape)} cannot be broadcast "
            f"to the shape {tuple(selected)} that the index selects"
        )
    if count == 0:
        return x
    values = ops.reshape(ops.broadcast_to(values, selected), (count,))
    indices = ops.reshape(positions, (count, 1))
    flat = ops.reshape(x, (size,))
    if mode == "set":
        flat = ops.scatter_update(flat, indices, values)
    else:
        flat = ops.scatter_add(flat, indices, values)
    return ops.reshape(flat, shape)
