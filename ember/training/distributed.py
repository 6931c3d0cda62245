"""The trainer's side of data parallelism: sharded batches, the in-step all-reduce, gathering.

* :class:`ShardedAdapter` wraps any re-iterable adapter (arrays, :class:`ember.data.Dataset`):
  every rank walks the same global batches (one seeded shuffle shared by all ranks) and keeps
  its contiguous rows as a :class:`ShardedBatch`, which carries its window
  ``(offset, count, total)``. Generators and DataLoaders are refused with a clear error:
  their ranks could run different numbers of steps.
* :class:`StepSync` is what a backend's step calls between the gradient and the optimizer
  update: the gradient of each rank is weighted by ``count / total`` and summed, metric
  states are summed (each rank updates a zero state with its rows), BatchNormalization's
  moving statistics are averaged; one flat buffer per dtype, one all-reduce per step. On MLX
  it runs inside the compiled step (``mx.distributed.all_sum`` traces).
* :func:`gather_predictions` reassembles ``predict`` outputs in the order of the data on
  every rank; :func:`check_same_weights` compares a checksum of the initial weights.

Every rank issues the same collectives in the same order: they happen only inside steps,
at epoch ends (a barrier) and at the start/end of fit/evaluate/predict, never on a timer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import optree

from ember import ops
from ember.distribute import batch_window, shard_sizes
from ember.training.data.adapter import DataAdapter, _slice
from ember.training.data.generator_adapter import GeneratorAdapter
from ember.training.steps import batch_size_of


class ShardedBatch(tuple):
    """``(x, y, sample_weight)`` of this rank's rows, with ``window = (offset, count, total)``."""

    window: tuple[int, int, int]

    def __new__(cls, batch: tuple, window: tuple[int, int, int]) -> ShardedBatch:
        new = super().__new__(cls, batch)
        new.window = window
        return new


def window_of(batch: Any) -> tuple[int, int, int] | None:
    """The batch's window, or None for an ordinary (whole) batch."""
    return getattr(batch, "window", None)


def shard_batch(batch: tuple, strategy: Any) -> ShardedBatch:
    """This rank's rows of a global ``(x, y, sw)`` batch."""
    x, y, sw = batch
    total = batch_size_of(x)
    offset, count = strategy.shard(total)
    local = tuple(_slice(v, offset, offset + count) for v in (x, y, sw))
    return ShardedBatch(local, (offset, count, total))


class ShardedAdapter(DataAdapter):
    """Every rank's view of a re-iterable adapter (see the module docstring).

    Raises:
        ValueError: a generator or DataLoader (ranks could disagree on the number of steps).
    """

    def __init__(self, adapter: DataAdapter, strategy: Any, caller: str) -> None:
        if isinstance(adapter, GeneratorAdapter) or not adapter.reiterable:
            raise ValueError(
                f"{caller}: under ember.distribute.DataParallel the data must be arrays or an ember.data.Dataset "
                "(every rank then runs the same global batches and keeps its rows); a generator or DataLoader "
                "could run a different number of steps on each rank. Convert it to arrays or a Dataset, or "
                "train it in one process")
        self.adapter = adapter
        self.strategy = strategy
        self.num_batches = adapter.num_batches

    @property
    def seed(self) -> int:  # BackupAndRestore resumes the shuffle through adapter.seed
        return self.adapter.seed  # type: ignore[attr-defined]  # the wrapped adapter's; AttributeError if it has none

    @seed.setter
    def seed(self, value: int) -> None:
        self.adapter.seed = value  # type: ignore[attr-defined]  # as the getter: only adapters that shuffle have one

    def batches(self, epoch: int = 0) -> Iterator[tuple]:
        for batch in self.adapter.batches(epoch):
            yield shard_batch(batch, self.strategy)

    def peek(self) -> tuple:
        return self.adapter.peek()  # the whole first batch: building and label checks see all rows

    def on_epoch_end(self) -> None:
        self.adapter.on_epoch_end()


# ------------------------------------------------------------------------------ all-reduce
def _is_float(value: Any) -> bool:
    return "float" in str(ops.dtype(value)) or "complex" in str(ops.dtype(value))


class StepSync:
    """The collectives of one training/test step (see the module docstring).

    Args:
        all_sum: sums one native array over the ranks (the strategy's ``all_sum(array, donate)``).
        world_size: the number of ranks.
    """

    def __init__(self, all_sum: Callable[..., Any], world_size: int) -> None:
        self.all_sum = all_sum
        self.world_size = int(world_size)

    def sum_leaves(self, leaves: list) -> list:
        """Every leaf summed over the ranks: one flat buffer (one all-reduce) per dtype."""
        groups: dict[str, list[int]] = {}
        for i, leaf in enumerate(leaves):
            groups.setdefault(str(ops.dtype(leaf)), []).append(i)
        out = list(leaves)
        for indices in groups.values():
            parts = [ops.reshape(leaves[i], (-1,)) for i in indices]
            if len(parts) > 1:  # a new buffer: the engine may sum it in place
                flat = self.all_sum(ops.concatenate(parts, axis=0), donate=True)
            else:
                flat = self.all_sum(parts[0])
            start = 0
            for i in indices:
                shape = tuple(ops.shape(leaves[i]))
                size = int(np.prod(shape, dtype=np.int64))
                out[i] = ops.reshape(flat[start:start + size], shape)
                start += size
        return out

    def train(self, core: Any, gradients: Callable[[], tuple], state: dict, batch: ShardedBatch,
              trainable: dict) -> tuple[dict, dict, dict]:
        """``(summed gradients, new buffers, new metric state)`` for this rank's part of a global batch.

        ``gradients()`` computes ``((loss, per-output losses, y_pred_flat, new_buffers), grads)``
        on this rank's rows; it runs inside the batch window, so random layers draw as on the
        global batch. A rank without rows contributes zeros.
        """
        offset, count, total = batch.window
        x, y, sw = batch
        metrics = state["metrics"]
        zero_metrics = optree.tree_map(ops.zeros_like, metrics)
        buffers = state["model"]["buffers"]
        if count:
            with batch_window.global_batch(offset, total):
                (loss, per_output, y_pred_flat, new_buffers), grads = gradients()
            delta = core.update_metrics(zero_metrics, x, y, y_pred_flat, sw, loss, per_output)
            weight = count / total
            grads = optree.tree_map(lambda g: ops.multiply(g, weight), grads)
        else:
            grads = optree.tree_map(ops.zeros_like, trainable)
            delta, new_buffers = zero_metrics, buffers
        grads, delta, new_buffers = self._reduce(grads, delta, new_buffers)
        return grads, new_buffers, optree.tree_map(ops.add, metrics, delta)

    def test(self, core: Any, state: dict, batch: ShardedBatch) -> dict:
        """The metric state after this rank's rows of a global evaluation batch, summed over the ranks."""
        _, count, _ = batch.window
        x, y, sw = batch
        metrics = state["metrics"]
        delta = optree.tree_map(ops.zeros_like, metrics)
        if count:
            model_state = state["model"]
            loss, per_output, y_pred_flat = core.eval_loss(model_state["params"], model_state["buffers"], x, y, sw)
            if loss is not None:
                delta = core.update_metrics(delta, x, y, y_pred_flat, sw, loss, per_output)
        leaves, spec = optree.tree_flatten(delta)
        return optree.tree_map(ops.add, metrics, spec.unflatten(self.sum_leaves(leaves)))

    @staticmethod
    def global_batch(batch: ShardedBatch) -> Any:
        """The context in which random layers draw for ``batch``'s rows of the global batch."""
        offset, _, total = batch.window
        return batch_window.global_batch(offset, total)

    def state_after(self, core: Any, state: dict, batch: ShardedBatch, aux: tuple | None) -> tuple[dict, dict]:
        """``(new buffers, new metric state)`` of a step whose gradients were reduced elsewhere (FSDP2's
        reduce-scatter under ``fully_shard=True``): this rank's metric deltas summed and the floating
        buffers averaged over the ranks, in one all-reduce per dtype.

        ``aux``: ``(loss, per-output losses, y_pred_flat, new_buffers)`` of this rank's rows, or None for
        a rank without rows (it contributes zeros and its buffers as they were)."""
        x, y, sw = batch
        metrics = state["metrics"]
        delta = optree.tree_map(ops.zeros_like, metrics)
        buffers = state["model"]["buffers"]
        if aux is not None:
            loss, per_output, y_pred_flat, buffers = aux
            delta = core.update_metrics(delta, x, y, y_pred_flat, sw, loss, per_output)
        _, delta, buffers = self._reduce({}, delta, buffers)
        return buffers, optree.tree_map(ops.add, metrics, delta)

    def _reduce(self, grads: dict, delta: dict, buffers: dict) -> tuple[dict, dict, dict]:
        g_leaves, g_spec = optree.tree_flatten(grads)
        d_leaves, d_spec = optree.tree_flatten(delta)
        b_leaves, b_spec = optree.tree_flatten(buffers)
        averaged = [i for i, leaf in enumerate(b_leaves) if _is_float(leaf)]
        scale = 1.0 / self.world_size
        b_parts = [ops.multiply(b_leaves[i], scale) for i in averaged]
        summed = self.sum_leaves(g_leaves + d_leaves + b_parts)
        n_g, n_d = len(g_leaves), len(d_leaves)
        new_b = list(b_leaves)
        for i, value in zip(averaged, summed[n_g + n_d:]):
            new_b[i] = value
        return g_spec.unflatten(summed[:n_g]), d_spec.unflatten(summed[n_g:n_g + n_d]), b_spec.unflatten(new_b)


# ------------------------------------------------------------------------------- predict
def gather_predictions(strategy: Any, parts: list, totals: list[int]) -> Any:
    """The outputs of every rank, in the order of the data, on every rank.

    Args:
        parts: this rank's outputs per batch (NumPy trees of one structure).
        totals: the global size of each batch.
    """
    leaves_per_batch = [optree.tree_flatten(p) for p in parts]
    spec = leaves_per_batch[0][1]
    world, rank = strategy.world_size, strategy.rank
    sizes = [shard_sizes(t, world) for t in totals]
    per_rank = [sum(s[r] for s in sizes) for r in range(world)]
    width = max(per_rank)
    out = []
    for leaf_index in range(len(leaves_per_batch[0][0])):
        mine = np.concatenate([leaves[leaf_index] for leaves, _ in leaves_per_batch], axis=0)
        table = np.zeros((world, width) + mine.shape[1:], dtype=mine.dtype)
        table[rank, :mine.shape[0]] = mine
        with strategy.guard("predict gather"):
            gathered = np.asarray(ops.to_numpy(strategy.all_sum(ops.convert_to_tensor(table))))
        rows, cursor = [], [0] * world
        for batch_sizes in sizes:
            for r in range(world):
                rows.append(gathered[r, cursor[r]:cursor[r] + batch_sizes[r]])
                cursor[r] += batch_sizes[r]
        out.append(np.concatenate(rows, axis=0).astype(mine.dtype, copy=False))
    return spec.unflatten(out)


# ---------------------------------------------------------------------------- weights check
def weights_checksum(params: dict) -> np.ndarray:
    """``[number of arrays, number of values, sum, sum of squares]`` of a params tree (float64)."""
    leaves = [np.asarray(ops.to_numpy(leaf), dtype=np.float64) for leaf in optree.tree_leaves(params)]
    return np.array([len(leaves), sum(a.size for a in leaves), sum(float(a.sum()) for a in leaves),
                     sum(float((a * a).sum()) for a in leaves)], dtype=np.float64)


def check_same_weights(strategy: Any, params: dict, caller: str) -> None:
    """Raise on every rank when the ranks start from different models (architecture or weights).

    Raises:
        ValueError: naming the ranks whose weights differ from rank 0's.
    """
    table = strategy.gather_slots(weights_checksum(params))
    reference = table[0]
    tolerance = 1e-6 * max(1.0, abs(reference[3]))  # MLX reduces in float32
    different = [r for r in range(table.shape[0])
                 if table[r, 0] != reference[0] or table[r, 1] != reference[1]
                 or abs(table[r, 2] - reference[2]) > tolerance or abs(table[r, 3] - reference[3]) > tolerance]
    if different:
        raise ValueError(f"{caller}: the model on rank(s) {different} differs from rank 0's (architecture or "
                         "initial weights; checksums [arrays, values, sum, sum of squares]: "
                         f"rank 0 {reference.tolist()}, rank {different[0]} {table[different[0]].tolist()}). "
                         "Build the model with the same seed on every rank, or load the same weights")
