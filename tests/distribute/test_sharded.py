"""ZeRO-1/2 sharded optimizer state (``shard_optimizer=True``) and sharded checkpoints.

Two ranks start on 127.0.0.1 (tests/distribute/launch.py) and run tests/distribute/sharded_worker.py;
the one-process references are computed here, in this process, with the same code (the workers'
float64). Four launches in all: one per backend, and one that resumes a one-process checkpoint on
two sharded ranks.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import optree
import pytest

import ember
from ember import distribute, optimizers, saving
from ember.distribute import zero
from ember.training import zero_optimizer
from tests.distribute import launch, sharded_worker, worker

pytestmark = [pytest.mark.xdist_group("distribute"), pytest.mark.timeout(240)]

WORKER = pathlib.Path(__file__).with_name("sharded_worker.py")
# The bound of test_data_parallel.TOLERANCE, derived there for 2 ranks against one process (float64
# sums of <= 37 rows in another order, through <= 150 updates). Sharding changes two things only: each
# rank's update runs the optimizer's generic path where the unsharded step may run a fused kernel
# (tested equal to the generic path to 1 rounding, u = 1.1e-16, per update: <= 20 updates here move a
# weight of magnitude <= 1 by <= 20 * 1.1e-16 = 2.2e-15), and the gathered weights are sums of one value
# and zeros (exact). The same 1e-10 holds with a factor > 4e4 to spare; a variable updated by the
# wrong rank, or twice, or not gathered, moves a weight by lr * |g| > 1e-4 after one step.
TOLERANCE = {"rtol": 0.0, "atol": 1e-10}
SIZES = [8, 40, 3, 24]  # the 5-8-3 net's trainable variables in flat order: hidden bias, kernel, out bias, kernel


@pytest.fixture
def worker_floatx():
    previous = ember.dtypes.floatx()
    ember.dtypes.set_floatx(worker.FLOATX)
    yield
    ember.dtypes.set_floatx(previous)


def _requires(backend: str) -> None:
    if not ember.backends.is_installed(backend):
        pytest.skip(f"backend {backend!r} is not installed")
    if backend in ("numpy", "torch") and not ember.backends.is_installed("torch"):
        pytest.skip("the numpy engine needs torch.distributed here (mpi4py is not installed)")


def _launch(scenario: str, backend: str, directory: pathlib.Path) -> list[dict]:
    directory.mkdir(parents=True, exist_ok=True)
    processes = [subprocess.Popen([sys.executable, str(WORKER), scenario, backend, str(directory)],
                                  env={**env, "EMBER_BACKEND": backend}, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
                 for env in launch.rank_envs(backend, 2, directory, 60.0)]
    for code, output in launch.finish(processes):
        assert code == 0, f"a {backend} rank of {scenario!r} failed ({code}):\n{output[-4000:]}"
    return [dict(np.load(directory / f"rank{r}.npz")) for r in range(2)]


def _record(net: ember.Model, prefix: str = "ref") -> dict:
    out: dict = {}
    sharded_worker.record(out, prefix, net)
    return out


def _assert_sharded_equals_full(ranks: list[dict], prefix: str, full: dict) -> None:
    """The ranks' pieces of every slot, in rank order, are the full slot's elements: each element held
    by exactly one rank, equal to ``full``'s."""
    keys = sorted(k[len("ref_slot_"):] for k in full if k.startswith("ref_slot_") and k != "ref_slot_elements")
    assert keys
    for key in keys:
        held = np.concatenate([r[f"{prefix}_slot_{key}"].reshape(-1) for r in ranks])
        np.testing.assert_allclose(held, full[f"ref_slot_{key}"].reshape(-1), **TOLERANCE, err_msg=key)


def _assert_weights(result: dict, prefix: str, reference: dict, err: str) -> None:
    for i in range(len(SIZES)):
        np.testing.assert_allclose(result[f"{prefix}_weight_{i}"], reference[f"ref_weight_{i}"], **TOLERANCE,
                                   err_msg=f"{err}: weight {i}")


@pytest.mark.parametrize("backend_name", ["numpy", "torch", "mlx"])
def test_sharded_matches_unsharded_and_one_process_and_reshards_to_one(backend_name, tmp_path, worker_floatx):
    """Adam and a loss-scaled Adam, sharded over 2 ranks: the weights of the unsharded run and of one
    process; each rank holds its shard of the slots only; the sharded checkpoint loads in one process
    (2 -> 1) with the one-process optimizer state, continues like it, and exports to one file; a fit
    interrupted after epoch 1 resumes from BackupAndRestore's sharded backup like one process."""
    _requires(backend_name)
    ember.set_backend(backend_name)
    pair = tmp_path / "pair"
    ranks = _launch("sharded", backend_name, pair)
    reference = _record(sharded_worker.trained("adam"))
    lso_reference = _record(sharded_worker.trained("lso"))
    clip_reference = _record(sharded_worker.trained("sgdclip"))
    backup_reference: dict = {}
    worker.backup_scenario(backup_reference, str(tmp_path / "one"))  # the same interruption, one process

    for rank, result in enumerate(ranks):
        _assert_weights(result, "zero", reference, f"rank {rank} sharded")
        _assert_weights(result, "dp", reference, f"rank {rank} unsharded")
        _assert_weights(result, "zerolso", lso_reference, f"rank {rank} sharded, loss-scaled")
        _assert_weights(result, "zerosgdclip", clip_reference, f"rank {rank} sharded by whole variables")
        assert int(result["zerolso_iterations"]) == int(lso_reference["ref_iterations"])
        assert "save_sharded" in str(result["save_error"]), result["save_error"]
        assert str(result["checkpoint_error"]).startswith("ModelCheckpoint: under ember.distribute with "
                                                          "shard_optimizer=True"), result["checkpoint_error"]
        assert "save_weights_only=True" in str(result["checkpoint_error"])
        # BackupAndRestore: interrupted after epoch 1, resumed from every rank's shard of the backup.
        np.testing.assert_array_equal(result["backup_epochs"], [2, 3])
        for key in [k for k in backup_reference if k.startswith("backup_")]:
            np.testing.assert_allclose(result[key], backup_reference[key], **TOLERANCE, err_msg=f"rank {rank} {key}")
    for i in range(len(SIZES)):  # the gathered weights: the same bits on every rank
        np.testing.assert_array_equal(ranks[1][f"zero_weight_{i}"], ranks[0][f"zero_weight_{i}"])
    _assert_sharded_equals_full(ranks, "zero", reference)
    _assert_sharded_equals_full(ranks, "zerosgdclip", clip_reference)

    # 1/N of the optimizer state per rank: Adam's 2 slots of each rank's 38 or 37 of the 75 elements
    # (element layout), where every unsharded rank holds all 2 * 75; SGD with clipnorm keeps its 1
    # slot by whole variables ([8 + 40, 3 + 24]: within one variable of 1/N).
    expected = [2 * zero.piece_elements(zero.element_pieces(SIZES, r, 2)) for r in range(2)]
    assert expected == [76, 74]
    assert [int(r["zero_slot_elements"]) for r in ranks] == expected
    assert [int(r["zerolso_slot_elements"]) for r in ranks] == expected
    assert [int(r["zerosgdclip_slot_elements"]) for r in ranks] == [48, 27]
    assert [int(r["dp_slot_elements"]) for r in ranks] == [2 * sum(SIZES)] * 2
    assert int(reference["ref_slot_elements"]) == 2 * sum(SIZES)

    # 2 -> 1: the sharded checkpoint in this one process.
    index = json.loads((pair / "ckpt" / "index.json").read_text())
    assert index["world_size"] == 2 and index["layout"] == "elements" and index["slots"] == ["momentum", "velocity"]
    loaded = saving.load_sharded(pair / "ckpt")
    here = _record(loaded, "loaded")
    for i in range(len(SIZES)):
        np.testing.assert_array_equal(here[f"loaded_weight_{i}"], ranks[0][f"zero_weight_{i}"])
    _assert_sharded_equals_full([here], "loaded", reference)
    assert int(here["loaded_iterations"]) == int(reference["ref_iterations"])
    # ... and continues like one process training 3 epochs in one fit (same shuffles, dropout, moments).
    x, y = worker.data()
    loaded.fit(x, y, batch_size=sharded_worker.BATCH, epochs=3, initial_epoch=2, shuffle=True, verbose=0)
    _assert_weights(_record(loaded), "ref", _record(sharded_worker.trained("adam", epochs=3)), "continued, 2 -> 1")

    # One file for load_model.
    single = tmp_path / "single.h5"
    saving.export_sharded(pair / "ckpt", single)
    exported = ember.load_model(single)
    _assert_sharded_equals_full([_record(exported, "exported")], "exported", reference)
    np.testing.assert_array_equal(exported.predict(x, verbose=0),
                                  saving.load_sharded(pair / "ckpt").predict(x, verbose=0))


def test_one_process_checkpoint_resumes_on_two_sharded_ranks(tmp_path, worker_floatx):
    """1 -> 2 -> 1: a one-process sharded checkpoint loads on 2 sharded ranks (each reads its shard),
    which train a third epoch like one process and save 2 shards that load back in one process."""
    _requires("torch")
    ember.set_backend("torch")
    net = sharded_worker.trained("adam")
    saving.save_sharded(net, tmp_path / "one")
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == ["index.json", "model.h5",
                                                                     "optimizer-00000-of-00001.h5"]
    ranks = _launch("resume", "torch", tmp_path)
    before = _record(net)
    _assert_sharded_equals_full(ranks, "loaded", before)
    after = _record(sharded_worker.trained("adam", epochs=3))  # what the ranks' third epoch continues
    for rank, result in enumerate(ranks):
        _assert_weights(result, "resumed", after, f"rank {rank} resumed")
        assert int(result["resumed_iterations"]) == int(after["ref_iterations"]) == 15  # 3 epochs of 5 batches
    _assert_sharded_equals_full(ranks, "resumed", after)
    assert [int(r["loaded_slot_elements"]) for r in ranks] == [76, 74]
    back = _record(saving.load_sharded(tmp_path / "ckpt"), "back")
    _assert_sharded_equals_full([back], "back", after)


# --------------------------------------------------------------------- in one process, no launch
def test_layouts_are_contiguous_balanced_and_complete():
    sizes = [5, 100, 7, 64, 64, 3, 0, 250, 9]
    total = sum(sizes)
    for world in (1, 2, 3, 4, 7, 16):
        owners = zero.partition(sizes, world)
        assert owners == sorted(owners) and all(0 <= o < world for o in owners)  # contiguous runs
        whole = [zero.variable_pieces(sizes, r, world) for r in range(world)]
        counts = [zero.piece_elements(p) for p in whole]
        assert sum(counts) == total and max(counts) <= total / world + max(sizes)  # within one variable of 1/N
        elements = [zero.element_pieces(sizes, r, world) for r in range(world)]
        assert [zero.piece_elements(p) for p in elements] == array_split_sizes(total, world)
        for i, size in enumerate(sizes):  # each variable's elements: covered once, in rank order
            covered = [e[i] for e in elements if e[i][1] > e[i][0]]
            assert sum(hi - lo for lo, hi in covered) == size
            assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))
    assert zero.partition([], 3) == [] and zero.partition([0, 0], 2) == [0, 0]
    with pytest.raises(ValueError, match="world_size must be an int >= 1, received 0"):
        zero.partition([1], 0)
    with pytest.raises(ValueError, match="sizes must be >= 0"):
        zero.element_pieces([1, -2], 0, 2)


def array_split_sizes(total: int, world: int) -> list[int]:
    """1/N of the elements: what numpy.array_split gives each of ``world`` parts."""
    return [len(part) for part in np.array_split(np.arange(total), world)]


def test_gather_puts_every_ranks_pieces_together(backend):
    """Two ranks simulated in one process: rank 1's buffer is captured, then added to rank 0's (the
    engines' all-sum); every variable comes back whole, bit for bit, in its shape and dtype."""
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=s) for s in [(2, 3), (5,), (0,), (4, 1)]]
    leaves = [ember.ops.convert_to_tensor(a, dtype="float32") for a in arrays]
    sizes = [a.size for a in arrays]
    buffers: list = []

    def rank_values(rank: int) -> tuple[list, list]:
        pieces = zero.element_pieces(sizes, rank, 2)
        return [zero.piece_of(leaf, piece) for leaf, piece in zip(leaves, pieces)], pieces

    zero.gather_owned(lambda b, donate: buffers.append(ember.ops.copy(b)) or b, leaves, *rank_values(1))
    out = zero.gather_owned(lambda b, donate: ember.ops.add(b, buffers[0]), leaves, *rank_values(0))
    assert [zero.piece_elements(zero.element_pieces(sizes, r, 2)) for r in range(2)] == [8, 7]
    for got, want in zip(out, arrays):
        assert tuple(ember.ops.shape(got)) == want.shape and str(ember.ops.dtype(got)) == "float32"
        np.testing.assert_array_equal(ember.ops.to_numpy(got), want.astype("float32"))


@pytest.mark.parametrize("layout", ["elements", "variables", "rows"])
def test_gather_builds_one_new_buffer_per_dtype_for_the_engine_to_sum_in_place(backend, layout):
    """Each rank's buffer holds its pieces and zeros elsewhere (one run padded, or pieces apart in the row
    layout); it is new, so the engine is told it may sum it in place (donate=True), except where the
    rank's one piece is a whole variable filling the group (that array is the caller's)."""
    rng = np.random.default_rng(1)
    shapes = [(3, 2), (5,), (4, 3), (2,)]
    arrays = [rng.normal(size=s) for s in shapes]
    leaves = [ember.ops.convert_to_tensor(a, dtype="float32") for a in arrays]
    world = 3
    flats = []
    for rank in range(world):
        if layout == "rows":
            pieces = zero.row_pieces(shapes, rank, world)
        else:
            make = zero.element_pieces if layout == "elements" else zero.variable_pieces
            pieces = make([a.size for a in arrays], rank, world)
        values = [zero.piece_of(leaf, piece) for leaf, piece in zip(leaves, pieces)]
        donated = []

        def record(buffer, donate, donated=donated):
            donated.append(donate)
            flats.append(ember.ops.to_numpy(buffer))
            return buffer

        zero.gather_owned(record, leaves, values, pieces)
        assert donated == [True]
    whole = np.concatenate([a.reshape(-1) for a in arrays]).astype("float32")
    np.testing.assert_array_equal(sum(flats), whole)  # every element from exactly one rank, zeros elsewhere
    assert all((np.count_nonzero(f) <= whole.size) for f in flats)
    whole_leaf = [ember.ops.ones((4,))]
    calls = []
    zero.gather_owned(lambda b, donate: calls.append(donate) or b, whole_leaf, whole_leaf, [(0, 4)])
    assert calls == [False]


def test_only_the_sharded_optimizer_updates_without_writing_what_it_is_given():
    """torch's copy path clones the params and slots only for an optimizer that may write them."""
    sharded = zero_optimizer.ShardedOptimizer(optimizers.Adam(), 0, 2, lambda a, donate=False: a)
    assert optimizers.Adam().writes_given_arrays and not sharded.writes_given_arrays
    assert not optimizers.LossScaleOptimizer(sharded).writes_given_arrays
    assert optimizers.LossScaleOptimizer(optimizers.SGD()).writes_given_arrays


def test_bad_shard_optimizer_argument(backend):
    with pytest.raises(TypeError, match="shard_optimizer must be a bool, received 'yes'"):
        distribute.DataParallel(shard_optimizer="yes")
    assert distribute.get_strategy() is None


def test_sharded_state_refusals(backend):
    """A global norm cannot be clipped on a shard; a sharded state is refused by an unsharded fit and by
    another sharding; the wrapper keeps the inner optimizer's learning rate."""
    with pytest.raises(NotImplementedError, match=r"Adam\(global_clipnorm=1.0\).*use clipnorm"):
        zero_optimizer.ShardedOptimizer(optimizers.Adam(global_clipnorm=1.0), 0, 2, lambda a: a)
    params = {"a": ember.ops.ones((3,)), "b": ember.ops.ones((5,))}
    rank1 = zero_optimizer.ShardedOptimizer(optimizers.Adam(0.5), rank=1, world_size=2, all_sum=lambda a: a)
    assert rank1.learning_rate == 0.5 and rank1.pieces(optree.tree_leaves(params)) == [(0, 0), (1, 5)]
    state = rank1.init(params)
    assert [tuple(ember.ops.shape(v)) for v in optree.tree_leaves(state["velocity"])] == [(0,), (4,)]
    with pytest.raises(ValueError, match="sharded over the processes.*load_sharded"):
        zero_optimizer.opt_state_for(optimizers.Adam(), params, state)
    rank0 = zero_optimizer.ShardedOptimizer(optimizers.Adam(), rank=0, world_size=2, all_sum=lambda a: a)
    with pytest.raises(ValueError, match="rank 1's shard of 2 processes, not rank 0's of 2.*load_sharded"):
        rank0.adopt(state, params)
    full = optimizers.Adam().init(params)  # a full state is cut to the rank's elements [0, 4)
    adopted = rank0.adopt(full, params)
    assert [zero.size_of(v) for v in optree.tree_leaves(adopted["momentum"])] == [3, 1]
    # clipnorm takes a variable's norm: whole variables (a, 3 elements, is rank 0's; b rank 1's)
    clipped = zero_optimizer.ShardedOptimizer(optimizers.Adam(clipnorm=1.0), rank=0, world_size=2, all_sum=lambda a: a)
    assert not clipped.split
    assert [zero.size_of(v) for v in optree.tree_leaves(clipped.init(params)["momentum"])] == [3, 0]


def test_load_sharded_bad_inputs(tmp_path):
    ember.set_backend("numpy")
    with pytest.raises(FileNotFoundError, match="not a sharded checkpoint"):
        saving.load_sharded(tmp_path / "nothing")
    net = ember.Sequential([ember.Input((2,)), ember.layers.Dense(1, name="d")], name="tiny")
    net.compile(optimizer="adam", loss="mse", seed=0)
    net.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=0)
    saving.save_sharded(net, tmp_path / "ckpt")
    index_path = tmp_path / "ckpt" / "index.json"
    index = json.loads(index_path.read_text())
    bad = dict(index, world_size=3)
    index_path.write_text(json.dumps(bad))
    with pytest.raises(saving.CheckpointError, match="world size and the shard files disagree"):
        saving.load_sharded(tmp_path / "ckpt")
    bad = dict(index, variables=[dict(v, shape=[9]) for v in index["variables"]])
    index_path.write_text(json.dumps(bad))
    with pytest.raises(saving.CheckpointError, match="do not match the model's"):
        saving.load_sharded(tmp_path / "ckpt")
    index_path.write_text(json.dumps(dict(index, shard_files=["../elsewhere.h5"])))
    with pytest.raises(saving.CheckpointError, match="not a file name inside the checkpoint directory"):
        saving.load_sharded(tmp_path / "ckpt")
    with pytest.raises(ValueError, match="must be compiled and built"):
        saving.save_sharded(ember.Sequential([ember.Input((2,)), ember.layers.Dense(1)]), tmp_path / "x")
