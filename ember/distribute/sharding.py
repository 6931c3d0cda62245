"""How a global batch is split over the ranks: contiguous rows, the first ranks one row more.

Rank ``r`` of ``W`` gets rows ``[offset, offset + count)`` of a batch of ``total`` rows, as
``numpy.array_split`` would cut them: no divisibility requirement, a rank may get one row
fewer than another (or none, when ``total < W``).

Example:
    >>> [shard_rows(10, r, 3) for r in range(3)]
    [(0, 4), (4, 3), (7, 3)]
    >>> shard_rows(1, 1, 2)
    (1, 0)
"""

from __future__ import annotations


def shard_rows(total: int, rank: int, world_size: int) -> tuple[int, int]:
    """``(offset, count)`` of ``rank``'s rows in a batch of ``total`` rows.

    Raises:
        ValueError: ``world_size < 1`` or ``rank`` outside ``[0, world_size)``, or ``total < 0``.
    """
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"shard_rows: rank must be in [0, world_size), received rank={rank}, "
                         f"world_size={world_size}")
    if total < 0:
        raise ValueError(f"shard_rows: total must be >= 0, received {total}")
    base, extra = divmod(int(total), int(world_size))
    offset = rank * base + min(rank, extra)
    return offset, base + (1 if rank < extra else 0)


def shard_sizes(total: int, world_size: int) -> list[int]:
    """Every rank's row count for a batch of ``total`` rows."""
    return [shard_rows(total, r, world_size)[1] for r in range(world_size)]
