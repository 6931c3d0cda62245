"""Fully sharded parameters (``DataParallel(fully_shard=True)``): torch's FSDP2 under ``fit``.

Two torch ranks on 127.0.0.1 run tests/distribute/worker.py's ``fully_sharded`` scenario under
FSDP2 while one process runs the same code without a strategy (the reference), in float64. The
layout and refusal tests run in this process.
"""

from __future__ import annotations

import json
import re

import numpy as np
import optree
import pytest

import ember
from ember import distribute, optimizers, saving
from ember.distribute import zero
from ember.training import zero_optimizer
from tests.distribute import launch, worker
from tests.distribute.test_data_parallel import TOLERANCE

pytestmark = [pytest.mark.xdist_group("distribute"), pytest.mark.timeout(240)]

# The 5-8-3 net's trainable variables in flat order: hidden bias, kernel, out bias, kernel.
SHAPES = [(8,), (5, 8), (3,), (8, 3)]


def _slots(model: ember.Model) -> dict:
    state = model._training.opt_state
    return {f"{slot}_{i}": np.asarray(ember.ops.to_numpy(value))
            for slot in model._training.trainer.optimizer.slot_initializers()
            for i, value in enumerate(optree.tree_leaves(state[slot]))}


def test_two_fully_sharded_ranks_match_one_process(tmp_path):
    """SGD (momentum) and Adam with Dropout, shuffling, an uneven last batch, validation_split, evaluate
    and predict; an Adam subclass (no fused kernel); a Dataset whose last batch leaves rank 1 without rows,
    with EarlyStopping; a second fit whose weights a callback replaces mid-run (a new FSDP2 module); a fit
    interrupted after epoch 1 and resumed by BackupAndRestore from each rank's shard of its backup: every
    rank's weights, History and results equal one process's (TOLERANCE: the data-parallel bound, derived in
    test_data_parallel.py; FSDP2 changes only where the ranks' sums are added and scales the loss by
    N * count / total, powers of 2 and one rounding each). Each rank holds its FSDP2 rows of every param
    (DTensors), and the sharded checkpoint (layout "rows") loads in one process with the one-process
    optimizer state."""
    if not ember.backends.is_installed("torch"):
        pytest.skip("fully_shard=True is torch's FSDP2: torch is not installed")
    single, ranks, _ = launch.run_pair("fully_sharded", "torch", tmp_path)
    keys = sorted(k for k in single if k != "world_size" and not k.startswith("rankonly_"))
    for name in ("sgd", "adam"):
        assert {f"{name}_{k}" for k in ("history_loss", "history_val_accuracy", "evaluate", "predict",
                                         "weight_1")} <= set(keys)
    assert 1 < len(single["dataset_history_loss"]) < 30  # EarlyStopping stopped every rank at the same epoch
    assert "refit_weight_0" in keys  # a second fit, whose weights a callback replaces mid-run
    np.testing.assert_array_equal(single["backup_epochs"], [2, 3])  # BackupAndRestore resumed after epoch 1
    for rank, result in enumerate(ranks):
        assert int(result["world_size"]) == 2
        for key in keys:
            np.testing.assert_allclose(result[key], single[key], **TOLERANCE, err_msg=f"rank {rank}: {key}")

    # Each rank held chunk `rank` of each param's first axis, as DTensors (torch.chunk's cut).
    sizes = [int(np.prod(shape)) for shape in SHAPES]
    for rank, result in enumerate(ranks):
        assert list(result["rankonly_fsdp_types"]) == ["DTensor"] * 4
        assert list(result["rankonly_fsdp_global"]) == sizes
        assert list(result["rankonly_fsdp_local"]) == [hi - lo for lo, hi in zero.row_pieces(SHAPES, rank, 2)]
    assert [list(r["rankonly_fsdp_local"]) for r in ranks] == [[4, 24, 2, 12], [4, 16, 1, 12]]

    # What is refused names the alternative, on every rank, before any weight moves.
    for result in ranks:
        for name, message in (("clipnorm", r"Adam\(clipnorm=\.\.\.\) does not update element by element"),
                              ("lso", "a LossScaleOptimizer checks every gradient"),
                              ("jit", "jit_compile=True is not implemented with FSDP2's step")):
            text = str(result[f"rankonly_refusal_{name}"])
            assert text != "no error" and re.search(message, text), text
            assert "shard_optimizer=True" in text
            assert bool(result[f"rankonly_refusal_{name}_unchanged"])
        assert str(result["rankonly_refusal_checkpoint"]).startswith(
            "ModelCheckpoint: under ember.distribute with shard_optimizer=True (or fully_shard=True)")

    # The sharded checkpoint: rows layout, each rank's rows of Adam's slots; one process loads it whole.
    index = json.loads((tmp_path / "pair" / "ckpt" / "index.json").read_text())
    assert index["world_size"] == 2 and index["layout"] == "rows"
    ember.set_backend("torch")
    previous = ember.dtypes.floatx()
    ember.dtypes.set_floatx(worker.FLOATX)
    try:
        loaded = saving.load_sharded(tmp_path / "pair" / "ckpt")
        reference = saving.load_sharded(tmp_path / "single" / "ckpt")
        for got, want in zip(optree.tree_leaves(loaded.state["params"]), optree.tree_leaves(reference.state["params"])):
            np.testing.assert_allclose(ember.ops.to_numpy(got), ember.ops.to_numpy(want), **TOLERANCE)
        got_slots, want_slots = _slots(loaded), _slots(reference)
        assert sorted(got_slots) == sorted(want_slots) and len(got_slots) == 8
        for key, value in want_slots.items():
            assert got_slots[key].shape == value.shape
            np.testing.assert_allclose(got_slots[key], value, **TOLERANCE, err_msg=key)
    finally:
        ember.dtypes.set_floatx(previous)


def test_four_fully_sharded_ranks_match_one_process(tmp_path):
    """4 ranks: batches of 8 rows split 2-2-2-2 (the uneven last one 2-1-1-1), the Dataset's one-row last
    batch leaves 3 ranks without rows, and the 3-element bias has no row on rank 3: the same weights,
    History and results as one process (TOLERANCE as above: sums of at most 37 rows in another order)."""
    if not ember.backends.is_installed("torch"):
        pytest.skip("fully_shard=True is torch's FSDP2: torch is not installed")
    single_dir, group_dir = tmp_path / "single", tmp_path / "group"
    group_dir.mkdir(parents=True)
    processes = launch.start("fully_sharded", "torch", group_dir, launch.rank_envs("torch", 4, group_dir, 60.0))
    processes += launch.start("fully_sharded", "torch", single_dir, [launch.base_env(60.0)])
    for code, output in launch.finish(processes):
        assert code == 0, f"a worker failed ({code}):\n{output[-4000:]}"
    single = dict(np.load(single_dir / "rank0.npz"))
    ranks = [dict(np.load(group_dir / f"rank{r}.npz")) for r in range(4)]
    keys = sorted(k for k in single if k != "world_size" and not k.startswith("rankonly_"))
    for rank, result in enumerate(ranks):
        assert int(result["world_size"]) == 4
        assert list(result["rankonly_fsdp_local"]) == [hi - lo for lo, hi in zero.row_pieces(SHAPES, rank, 4)]
        for key in keys:
            np.testing.assert_allclose(result[key], single[key], **TOLERANCE, err_msg=f"rank {rank}: {key}")
    assert [int(r["rankonly_fsdp_local"][2]) for r in ranks] == [1, 1, 1, 0]


# --------------------------------------------------------------------- in one process, no launch
@pytest.mark.parametrize("world", [1, 2, 3, 4, 7])
def test_row_pieces_are_torch_chunks_of_the_first_axis(world):
    """The optimizer's row layout cuts each variable as torch.chunk (FSDP2's Shard(0)) does, in order."""
    torch = pytest.importorskip("torch")
    shapes = [(8,), (5, 8), (3,), (1, 7), (0, 4), (), (13, 2, 3)]
    pieces = [zero.row_pieces(shapes, rank, world) for rank in range(world)]
    for i, shape in enumerate(shapes):
        flat = torch.arange(int(np.prod(shape))).reshape(shape or (1,))
        chunks = list(torch.chunk(flat, world, dim=0)) if flat.numel() else []
        for rank in range(world):
            lo, hi = pieces[rank][i]
            want = chunks[rank].reshape(-1).tolist() if rank < len(chunks) else []
            assert list(range(lo, hi)) == want, (shape, rank)


def test_row_pieces_bad_arguments():
    with pytest.raises(ValueError, match="rank must be in \\[0, world_size\\), received rank=2"):
        zero.row_pieces([(4,)], 2, 2)
    with pytest.raises(ValueError, match="world_size must be an int >= 1"):
        zero.row_pieces([(4,)], 0, 0)
    with pytest.raises(ValueError, match="sizes must be >= 0"):
        zero.row_pieces([(4, -1)], 0, 2)


def test_row_sharded_optimizer_keeps_its_rows_and_refuses_whole_variable_math(backend):
    params = {"a": ember.ops.ones((5, 2)), "b": ember.ops.ones((3,))}
    rank1 = zero_optimizer.ShardedOptimizer(optimizers.Adam(0.1), rank=1, world_size=2, all_sum=lambda a: a,
                                            rows=True)
    assert rank1.layout == "rows" and rank1.pieces(optree.tree_leaves(params)) == [(6, 10), (2, 3)]
    state = rank1.init(params)
    assert [tuple(ember.ops.shape(v)) for v in optree.tree_leaves(state["momentum"])] == [(4,), (1,)]
    # The update of rank 1's pieces equals the same rows of the unsharded update (element-wise Adam).
    grads = {"a": ember.ops.convert_to_tensor(np.arange(10.0).reshape(5, 2), dtype="float32"),
             "b": ember.ops.convert_to_tensor([1.0, -2.0, 3.0], dtype="float32")}
    full, _ = optimizers.Adam(0.1).apply_gradients(grads, optimizers.Adam(0.1).init(params), params)
    leaves, treedef = optree.tree_flatten(params)
    pieces = rank1.pieces(leaves)
    mine = [zero.piece_of(leaf, piece) for leaf, piece in zip(leaves, pieces)]
    sub_grads = [zero.piece_of(g, piece) for g, piece in zip(treedef.flatten_up_to(grads), pieces)]
    values, new_state = rank1.update_pieces(treedef, sub_grads, state, mine)
    for value, want, (lo, hi) in zip(values, treedef.flatten_up_to(full), pieces):
        np.testing.assert_array_equal(ember.ops.to_numpy(value), ember.ops.to_numpy(want).reshape(-1)[lo:hi])
    assert int(ember.ops.to_numpy(new_state["iterations"])) == 1
    with pytest.raises(NotImplementedError, match=r"fully_shard=True\): Adam\(clipnorm=\.\.\.\).*shard_optimizer=True"):
        zero_optimizer.ShardedOptimizer(optimizers.Adam(clipnorm=1.0), 0, 2, lambda a: a, rows=True)
    with pytest.raises(NotImplementedError, match=r"Adafactor does not update element by element"):
        zero_optimizer.ShardedOptimizer(optimizers.Adafactor(), 0, 2, lambda a: a, rows=True)


def test_fully_shard_is_refused_on_numpy_and_mlx_naming_the_alternative(backend):
    if backend == "torch":  # constructing one needs a launcher; the launched test above runs it
        with pytest.raises(RuntimeError, match="torchrun"):
            distribute.DataParallel(fully_shard=True, environ={})
    else:
        with pytest.raises(NotImplementedError, match=f"not implemented on the {backend} backend.*"
                                                      "shard_optimizer=True.*or the torch backend"):
            distribute.DataParallel(fully_shard=True)
    with pytest.raises(TypeError, match="fully_shard must be a bool, received 1"):
        distribute.DataParallel(fully_shard=1)
    assert distribute.get_strategy() is None


def test_fully_sharded_steps_refuse_what_rows_cannot_do_naming_the_alternative(torch_backend):
    """Constraints, a LossScaleOptimizer and jit_compile=True are refused when fit's FSDP2 steps are made
    (before any state is touched); the launched test sees the last two from a real fit."""
    from ember.backends.torch import fsdp  # the torch backend's module: this test runs on torch only

    def core_of(optimizer, constraint=None):
        model = ember.Sequential([ember.Input((3,)), ember.layers.Dense(2, kernel_constraint=constraint)])
        model.build(seed=0)
        model.compile(optimizer=optimizer, loss="mse", seed=0)
        return model._training.trainer.core

    with pytest.raises(NotImplementedError, match="constraints act on whole variables.*shard_optimizer=True"):
        fsdp.make_steps(core_of(optimizers.Adam(), "max_norm"))
    with pytest.raises(NotImplementedError, match="a LossScaleOptimizer checks every gradient.*shard_optimizer=True"):
        fsdp.make_steps(core_of(optimizers.LossScaleOptimizer(optimizers.Adam())))
    with pytest.raises(NotImplementedError, match="jit_compile=True is not implemented.*shard_optimizer=True"):
        fsdp.make_steps(core_of(optimizers.Adam()), jit=True)
    assert type(fsdp.make_steps(core_of(optimizers.Adam()))).__name__ == "FullyShardedSteps"
