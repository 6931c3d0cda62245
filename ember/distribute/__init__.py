"""``ember.distribute``: data-parallel ``fit`` over N processes on existing engines.

Launch the same script N times with ``torchrun`` (torch and NumPy backends) or
``mlx.launch`` (MLX backend), and make a :class:`DataParallel` strategy active::

    strategy = ember.distribute.initialize()     # joins the launcher's process group
    model.fit(x, y, batch_size=64, epochs=5)     # 64 is the GLOBAL batch
    ember.distribute.shutdown()

Semantics: ``batch_size`` is the global batch; each rank runs its rows of every batch
(contiguous, the first ranks one row more, see :func:`shard_rows`), gradients are weighted
by each rank's row count and summed inside the step, metric states (not averages) are
summed, so weights, losses, metrics and ``History`` equal those of one process with the
same global batch, to float32 rounding, on every rank. Random layers draw for the global
batch (:mod:`ember.distribute.batch_window`), so dropout masks do not depend on the
number of processes. ``evaluate`` is sharded the same way; ``predict`` is sharded and its
outputs are gathered in order on every rank. ``train_on_batch``, ``test_on_batch``,
``predict_on_batch`` and a hand-driven ``Trainer`` are not sharded: each rank runs the whole
batch it is given, without collectives. BatchNormalization uses per-rank batch statistics
(like torch DDP) and its moving statistics are averaged over the ranks after every step, so
every rank holds the same buffers. Callbacks that write files (``ModelCheckpoint``,
``BackupAndRestore``, ``CSVLogger``) write on the main process only, followed by a barrier; with the
optimizer state sharded, ``BackupAndRestore`` writes every rank's shard (a sharded checkpoint).

Sharded optimizer state (ZeRO-1/2): with ``initialize(shard_optimizer=True)`` each rank keeps the
optimizer slots of 1/N of the trainable elements only (:mod:`ember.distribute.zero`): gradients are
all-reduced as above and each rank reads its slice, updates it, and the updated parameters are
all-gathered, so the weights equal the unsharded run's. ``model.save`` then refuses to write a
rank's partial state: ``ember.saving.save_sharded`` (every rank) writes one file per rank and an
index, ``ember.saving.load_sharded`` reads it on any number of processes (resharding), and
``ember.saving.export_sharded`` makes the single file ``load_model`` reads.

Fully sharded parameters (torch only): with ``initialize(fully_shard=True)`` ``fit`` trains through
torch's FSDP2 (``ember/backends/torch/fsdp.py``): each rank keeps its rows of every trainable
variable, their gradients (FSDP2's reduce-scatter) and their optimizer state, and the weights
equal one process's. It implies ``shard_optimizer`` (checkpoints through ``save_sharded``, layout
``"rows"``). NumPy and MLX raise NotImplementedError naming ``shard_optimizer=True``.

Limits: metric states are summed over the ranks, which is right for every built-in metric (their
states are totals and counts); a custom metric whose state is not a sum (a running maximum) is
not. Arrays and Datasets are read whole on every rank (each keeps its rows of every batch), so
memory and I/O are not divided. On torch a parameter the loss does not use gets a zero
gradient under a strategy (one process skips it). A rank of the MLX ring that dies before the
first collective may go unnoticed by that collective (the ring fills in zeros); later ones raise.

Outside a strategy everything runs in one process and the helpers below answer for one
process.

Example:
    >>> from ember import distribute
    >>> distribute.world_size(), distribute.is_main_process()
    (1, True)
    >>> distribute.all_reduce({"n": 3.0})["n"]
    3.0
    >>> distribute.shard_rows(5, rank=1, world_size=2)
    (3, 2)
"""

from __future__ import annotations

from typing import Any

from ember.distribute.sharding import shard_rows, shard_sizes
from ember.distribute.strategy import (
    DataParallel,
    RankFailureError,
    get_strategy,
    set_strategy,
)


def initialize(timeout: float = 300.0, *, shard_optimizer: bool = False, fully_shard: bool = False) -> DataParallel:
    """Create a :class:`DataParallel` strategy from the launcher's environment and make it active.

    ``shard_optimizer=True``: ZeRO-1/2, each rank keeps the optimizer state of ~1/N of the variables
    (:mod:`ember.distribute.zero`); ``fully_shard=True``: torch's FSDP2, each rank keeps its rows of the
    params, gradients and optimizer state (torch only; see :class:`DataParallel`).
    """
    strategy = DataParallel(timeout=timeout, shard_optimizer=shard_optimizer, fully_shard=fully_shard)
    set_strategy(strategy)
    return strategy


def rank() -> int:
    """This process's rank (0 without a strategy)."""
    strategy = get_strategy()
    return 0 if strategy is None else strategy.rank


def world_size() -> int:
    """The number of processes (1 without a strategy)."""
    strategy = get_strategy()
    return 1 if strategy is None else strategy.world_size


def is_main_process() -> bool:
    """Whether this is the main process (rank 0): the one that writes files and prints."""
    return rank() == 0


def barrier() -> None:
    """Wait until every rank arrives (nothing to wait for without a strategy)."""
    strategy = get_strategy()
    if strategy is not None:
        strategy.barrier()


def all_reduce(tree: Any, op: str = "sum") -> Any:
    """Sum or average every array of ``tree`` over the ranks (the tree itself without a strategy).

    Raises:
        ValueError: ``op`` is not ``"sum"`` or ``"mean"``.
    """
    strategy = get_strategy()
    if strategy is None:
        if op not in ("sum", "mean"):
            raise ValueError(f"all_reduce: op must be one of ('sum', 'mean'), received {op!r}")
        return tree
    return strategy.all_reduce(tree, op)


def shutdown() -> None:
    """Leave the process group cleanly and deactivate the strategy (no-op without one)."""
    strategy = get_strategy()
    if strategy is not None:
        strategy.shutdown()
    set_strategy(None)


__all__ = [
    "DataParallel",
    "RankFailureError",
    "all_reduce",
    "barrier",
    "get_strategy",
    "initialize",
    "is_main_process",
    "rank",
    "set_strategy",
    "shard_rows",
    "shard_sizes",
    "shutdown",
    "world_size",
]
