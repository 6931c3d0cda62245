"""ZeRO-style sharding of the optimizer state: which rank owns which elements, and the all-gather.

Under ``ember.distribute.initialize(shard_optimizer=True)`` every rank still holds all the
parameters, but keeps the optimizer slots (Adam's moments, SGD's momentum ...) of its own part
of them only and updates only that part; the updated parameters are then gathered on every rank.

The trainable variables, in their flat order (``optree`` order of the params tree), are seen as
one flat concatenation of ``total`` elements. Each rank's part is a list of *pieces*, one
``(lo, hi)`` range of elements per variable (``(0, 0)``: none of it), in one of three layouts:

* :func:`element_pieces`: rank ``r`` owns elements ``[offset, offset + count)`` of the
  concatenation (:func:`ember.distribute.shard_rows`: ``total / N``, to one element), cutting
  variables where they cross a boundary. For optimizers whose update is element-wise (SGD,
  Adam/AdamW, Adamax, Nadam, RMSprop, Adagrad, Adadelta, Lion without ``clipnorm``): the update
  of a slice of a variable is the slice of its update.
* :func:`variable_pieces`: whole variables, contiguous runs of about ``total / N`` elements
  (:func:`partition`), for every other optimizer (per-variable norms, factored moments): its
  math is unchanged, and a rank holds at most ``total / N + largest variable`` elements per slot.
* :func:`row_pieces`: rank ``r`` owns chunk ``r`` of each variable's first axis, as torch's FSDP2
  shards its parameters (``fully_shard=True``): ``torch.chunk`` rows of ``ceil(rows / N)``, the last
  ranks fewer or none; a 0-d variable is one row. Element-wise optimizers only, like the first.

:func:`gather_owned` is the all-gather of the updated pieces. The engines offer one collective
on every backend (``all_sum``: gloo, ``mx.distributed``, MPI), so the gather is an all-sum of one
flat buffer per dtype in which each rank writes its pieces and zeros elsewhere: exact
(``x + 0 == x``), at twice the traffic of a true all-gather.

Example:
    >>> from ember.distribute import zero
    >>> zero.partition([8, 40, 3, 24], world_size=2)
    [0, 0, 1, 1]
    >>> zero.variable_pieces([8, 40, 3, 24], rank=1, world_size=2)
    [(0, 0), (0, 0), (0, 3), (0, 24)]
    >>> zero.element_pieces([8, 40, 3, 24], rank=1, world_size=2)
    [(0, 0), (30, 40), (0, 3), (0, 24)]
    >>> [zero.piece_elements(zero.element_pieces([8, 40, 3, 24], r, 2)) for r in range(2)]
    [38, 37]
    >>> zero.row_pieces([(8,), (5, 8), (3,), ()], rank=1, world_size=2)
    [(4, 8), (24, 40), (2, 3), (0, 0)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember import ops
from ember.distribute.sharding import shard_rows

Piece = tuple[int, int]
# The key of a sharded optimizer state that holds ``[rank, world_size]`` of the shard.
SHARD_KEY = "zero_shard"


def _check(sizes: Sequence[int], world_size: int) -> list[int]:
    if isinstance(world_size, bool) or not isinstance(world_size, (int, np.integer)) or world_size < 1:
        raise ValueError(f"zero: world_size must be an int >= 1, received {world_size!r}")
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes):
        raise ValueError(f"zero: variable sizes must be >= 0, received {sizes}")
    return sizes


def partition(sizes: Sequence[int], world_size: int) -> list[int]:
    """The owning rank of each whole variable: contiguous runs of about ``total / world_size`` elements.

    Variable ``i`` spans elements ``[start_i, start_i + sizes[i])`` of the flat concatenation;
    its owner is ``floor(world_size * midpoint / total)``: owners never decrease along the list,
    and each rank's share is within one variable of ``total / world_size``.

    Raises:
        ValueError: ``world_size < 1`` or a negative size.
    """
    sizes = _check(sizes, world_size)
    total = sum(sizes)
    owners, start = [], 0
    for size in sizes:
        midpoint2 = 2 * start + size  # twice the midpoint: integer arithmetic, no rounding
        owners.append(0 if total == 0 else min(world_size - 1, world_size * midpoint2 // (2 * total)))
        start += size
    return owners


def variable_pieces(sizes: Sequence[int], rank: int, world_size: int) -> list[Piece]:
    """``rank``'s pieces in the whole-variable layout (:func:`partition`)."""
    sizes = _check(sizes, world_size)
    return [(0, size) if owner == rank else (0, 0) for size, owner in zip(sizes, partition(sizes, world_size))]


def element_pieces(sizes: Sequence[int], rank: int, world_size: int) -> list[Piece]:
    """``rank``'s pieces in the element layout: elements ``[offset, offset + count)`` of the concatenation."""
    sizes = _check(sizes, world_size)
    offset, count = shard_rows(sum(sizes), rank, world_size)
    pieces, start = [], 0
    for size in sizes:
        lo, hi = max(offset, start) - start, min(offset + count, start + size) - start
        pieces.append((lo, hi) if hi > lo else (0, 0))
        start += size
    return pieces


def row_pieces(shapes: Sequence[Sequence[int]], rank: int, world_size: int) -> list[Piece]:
    """``rank``'s pieces in the row layout: chunk ``rank`` of each variable's first axis, cut as
    ``torch.chunk(variable, world_size)`` cuts it (chunks of ``ceil(rows / world_size)`` rows; the last
    ranks hold fewer, or none). A row of a C-ordered array is a contiguous run of elements, so each
    chunk is one ``(lo, hi)`` range of the flat variable.

    Raises:
        ValueError: ``world_size < 1``, ``rank`` outside ``[0, world_size)``, or a negative dimension.
    """
    shapes = [tuple(int(d) for d in shape) for shape in shapes]
    _check([d for shape in shapes for d in shape], world_size)
    if not 0 <= rank < world_size:
        raise ValueError(f"zero: rank must be in [0, world_size), received rank={rank}, world_size={world_size}")
    pieces = []
    for shape in shapes:
        rows = shape[0] if shape else 1
        width = int(np.prod(shape[1:], dtype=np.int64)) if shape else 1
        chunk = -(-rows // world_size)  # ceil: torch.chunk's chunk size
        lo, hi = min(rank * chunk, rows), min((rank + 1) * chunk, rows)
        pieces.append((lo * width, hi * width) if hi > lo and width else (0, 0))
    return pieces


def piece_elements(pieces: Sequence[Piece]) -> int:
    """The number of elements in ``pieces`` (one slot's worth of a rank's optimizer state)."""
    return sum(hi - lo for lo, hi in pieces)


def size_of(array: Any) -> int:
    """The number of elements of a native array."""
    return int(np.prod(tuple(ops.shape(array)), dtype=np.int64))


def piece_of(array: Any, piece: Piece, copy: bool = True) -> Any:
    """The part of ``array`` a piece stands for: ``array`` itself (whole), a 1-d array of its flat
    elements ``[lo, hi)``, or a zero-size placeholder (``(0, 0)`` of a non-empty array).

    ``copy``: the part is a new array, which does not keep the whole one alive (what a kept slot
    needs); False: a view where the backend makes one (for a value used within one step)."""
    lo, hi = piece
    size = size_of(array)
    if (lo, hi) == (0, size):
        return array
    part = ops.reshape(array, (-1,))[lo:hi]
    return ops.copy(part) if copy else part


def gather_owned(all_sum: Callable[..., Any], leaves: Sequence[Any], values: Sequence[Any],
                 pieces: Sequence[Piece]) -> list:
    """Every variable whole, on every rank, from each rank's updated pieces: one ``all_sum`` per dtype
    of a flat buffer holding this rank's ``values`` (piece ``i`` of variable ``i``) and zeros elsewhere.

    The buffer is made in one allocation where this rank's pieces are one run of the flat
    concatenation (the element and whole-variable layouts: its values padded with zeros), and the
    engine sums it in place (``donate``): the variables come back as views of it.

    Args:
        all_sum: the strategy's ``all_sum(array, donate)``.
        leaves: the variables before the update (their shapes, dtypes and devices).
        values: this rank's new value of each piece (ignored where the piece is ``(0, 0)``).
        pieces: this rank's ``(lo, hi)`` of each variable.
    """
    groups: dict[str, list[int]] = {}
    for i, leaf in enumerate(leaves):
        if size_of(leaf):
            groups.setdefault(str(ops.dtype(leaf)), []).append(i)
    out = list(leaves)  # zero-size variables stay as they are
    for indices in groups.values():
        buffer, owned = _flat_buffer(leaves, values, pieces, indices)
        flat = all_sum(buffer, donate=owned)
        start = 0
        for i in indices:
            size = size_of(leaves[i])
            out[i] = ops.reshape(flat[start:start + size], tuple(ops.shape(leaves[i])))
            start += size
    return out


def _flat_buffer(leaves: Sequence[Any], values: Sequence[Any], pieces: Sequence[Piece],
                 indices: list[int]) -> tuple[Any, bool]:
    """``(buffer, new)``: the flat concatenation of variables ``indices`` with this rank's values in its
    pieces and zeros elsewhere; ``new``: the buffer is a new array (not one of ``values``)."""
    runs, start = [], 0  # (offset in the concatenation, flat value) of each piece, in order
    for i in indices:
        lo, hi = pieces[i]
        if hi > lo:
            runs.append((start + lo, ops.reshape(values[i], (-1,))))
        start += size_of(leaves[i])
    like = ops.reshape(leaves[indices[0]], (-1,))
    if not runs:
        return ops.zeros_like(ops.broadcast_to(like[:1], (start,))), True
    contiguous = all(a[0] + size_of(a[1]) == b[0] for a, b in zip(runs, runs[1:]))
    if contiguous:
        first = runs[0][0]
        mine = ops.concatenate([v for _, v in runs], axis=0) if len(runs) > 1 else runs[0][1]
        before, after = first, start - first - size_of(mine)
        if not before and not after:
            return mine, len(runs) > 1
        return ops.pad(mine, [(before, after)]), True
    parts, cursor = [], 0  # pieces apart (the row layout): zeros between them
    for offset, value in runs:
        if offset > cursor:
            parts.append(ops.zeros_like(ops.broadcast_to(like[:1], (offset - cursor,))))
        parts.append(value)
        cursor = offset + size_of(value)
    if start > cursor:
        parts.append(ops.zeros_like(ops.broadcast_to(like[:1], (start - cursor,))))
    return ops.concatenate(parts, axis=0), True
