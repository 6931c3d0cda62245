"""ember.distribute in one process: sharding, global-batch random draws, errors, main-rank-only writes."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import callbacks, distribute, layers, ops
from ember.distribute import batch_window
from ember.training.data import get_adapter
from ember.training.distributed import ShardedAdapter, StepSync


@settings(max_examples=60, deadline=None)
@given(total=st.integers(0, 200), world=st.integers(1, 9))
def test_shards_are_contiguous_cover_the_batch_and_differ_by_at_most_one(total, world):
    shards = [distribute.shard_rows(total, r, world) for r in range(world)]
    offset = 0
    for start, count in shards:
        assert start == offset
        offset += count
    assert offset == total
    counts = [count for _, count in shards]
    assert max(counts) - min(counts) <= 1 and counts == sorted(counts, reverse=True)
    assert distribute.shard_sizes(total, world) == counts
    np.testing.assert_array_equal(np.concatenate([np.arange(total)[s:s + c] for s, c in shards] or [[]]),
                                  np.arange(total))  # numpy.array_split's cut


@pytest.mark.parametrize(("total", "rank", "world"), [(4, 2, 2), (4, -1, 2), (4, 0, 0), (-1, 0, 1)])
def test_bad_shard_arguments(total, rank, world):
    with pytest.raises(ValueError, match="shard_rows"):
        distribute.shard_rows(total, rank, world)


RANDOM_LAYERS = [
    lambda: layers.Dropout(0.4),
    lambda: layers.Dropout(0.5, noise_shape=(None, 1)),
    lambda: layers.GaussianNoise(0.7),
    lambda: layers.GaussianDropout(0.3),
    lambda: layers.SpatialDropout1D(0.5),
]


@pytest.mark.parametrize("make_layer", RANDOM_LAYERS)
def test_random_layers_draw_for_the_global_batch(backend, make_layer):
    """Rows [offset, offset + n) under a window equal the same rows of the one-process draw, exactly."""
    layer = make_layer()
    shape = (7, 4, 3) if isinstance(layer, layers.SpatialDropout1D) else (7, 6)
    x = np.random.default_rng(0).normal(size=shape).astype("float32") + 2.0
    state = layer.build(shape, seed=0)
    full, _ = layer.apply(state, x, training=True, rng=11)
    full = ops.to_numpy(full)
    for offset, count in [(0, 4), (4, 3), (2, 1)]:
        with batch_window.global_batch(offset, 7):
            part, _ = layer.apply(state, x[offset:offset + count], training=True, rng=11)
        np.testing.assert_array_equal(ops.to_numpy(part), full[offset:offset + count])
    alone, _ = layer.apply(state, x[4:], training=True, rng=11)  # without a window: a fresh draw
    assert not np.array_equal(ops.to_numpy(alone), full[4:])


def test_one_process_helpers():
    assert distribute.get_strategy() is None
    assert (distribute.rank(), distribute.world_size(), distribute.is_main_process()) == (0, 1, True)
    distribute.barrier()
    tree = {"a": np.ones(3), "b": [2.0]}
    assert distribute.all_reduce(tree) is tree and distribute.all_reduce(tree, "mean") is tree
    with pytest.raises(ValueError, match=r"all_reduce: op must be one of \('sum', 'mean'\), received 'max'"):
        distribute.all_reduce(tree, "max")
    distribute.shutdown()  # no strategy: nothing to do
    with pytest.raises(TypeError, match="set_strategy: expected an ember.distribute.DataParallel or None"):
        distribute.set_strategy("ring")


@pytest.mark.parametrize("timeout", [0, -3.0, True, "60"])
def test_bad_timeout(timeout):
    with pytest.raises(ValueError, match="DataParallel: timeout must be a positive number of seconds"):
        distribute.DataParallel(timeout=timeout, environ={})


@pytest.mark.parametrize(("backend_name", "environ", "message"), [
    ("torch", {}, "launch with `torchrun --nproc-per-node N script.py`"),
    ("torch", {"MLX_RANK": "0", "MLX_HOSTFILE": "h.json"}, "started by mlx.launch .*launch with `torchrun"),
    ("numpy", {"MLX_RANK": "0", "MLX_HOSTFILE": "h.json"}, "started by mlx.launch; launch with `torchrun"),
    ("mlx", {}, "launch with `mlx.launch -n N script.py`"),
    ("mlx", {"RANK": "0", "WORLD_SIZE": "2"}, "started by torchrun; launch with `mlx.launch -n N"),
])
def test_a_launcher_that_does_not_fit_the_backend_is_named(backend_name, environ, message):
    if not ember.backends.is_installed(backend_name) or not ember.backends.is_installed("torch"):
        pytest.skip("needs the backend and torch")
    with ember.using_backend(backend_name), pytest.raises(RuntimeError, match=message):
        distribute.DataParallel(environ=environ)
    assert distribute.get_strategy() is None


def test_numpy_without_torch_and_mpi4py_names_the_extras(monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):  # simulate an environment without torch and mpi4py
        return None if name in ("torch", "mpi4py") else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    environ = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    with pytest.raises(ImportError, match=r'pip install "ember\[torch\]".*pip install "ember\[mpi\]"'):
        distribute.DataParallel(environ=environ)


class _FakeStrategy(distribute.DataParallel):
    """A rank of a 2-process group without a process group: for the parts that need no collective."""

    def __init__(self, rank: int) -> None:
        self.rank, self.world_size, self.closed, self.timeout = rank, 2, False, 1.0
        self.shard_optimizer = False


def test_generators_are_refused_under_a_strategy():
    def batches():
        yield np.zeros((2, 1)), np.zeros((2,))

    with pytest.raises(ValueError, match="fit: under ember.distribute.DataParallel the data must be arrays or an "
                                         "ember.data.Dataset"):
        ShardedAdapter(get_adapter(batches()), _FakeStrategy(0), "fit")


def test_sharded_adapter_gives_each_rank_its_rows_of_the_shuffled_global_batches():
    x = np.arange(11, dtype="float32").reshape(11, 1)
    adapter = get_adapter(x, np.arange(11), batch_size=4, shuffle=True, seed=5)
    full = [ops.to_numpy(b[0])[:, 0] for b in adapter.batches(epoch=1)]
    parts = [[(b.window, ops.to_numpy(b[0])[:, 0]) for b in ShardedAdapter(adapter, _FakeStrategy(r), "fit").batches(1)]
             for r in range(2)]
    for k, rows in enumerate(full):
        (w0, r0), (w1, r1) = parts[0][k], parts[1][k]
        np.testing.assert_array_equal(np.concatenate([r0, r1]), rows)
        assert w0 == (0, len(r0), len(rows)) and w1 == (len(r0), len(r1), len(rows))


def test_step_sync_packs_one_buffer_per_dtype(backend):
    calls = []

    def all_sum(flat, donate=False):
        calls.append(tuple(ops.shape(flat)))
        return ops.multiply(flat, 2)  # what a sum over 2 identical ranks gives

    sync = StepSync(all_sum, 2)
    leaves = [ops.ones((2, 3)), ops.zeros((4,), dtype="int32"), ops.full((1,), 3.0)]
    out = sync.sum_leaves(leaves)
    assert sorted(calls) == [(4,), (7,)]
    np.testing.assert_array_equal(ops.to_numpy(out[0]), np.full((2, 3), 2.0))
    np.testing.assert_array_equal(ops.to_numpy(out[2]), [6.0])
    assert tuple(ops.shape(out[1])) == (4,)


def test_file_writing_callbacks_write_on_the_main_rank_only(tmp_path):
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    model.build(seed=0)
    model.compile(optimizer="sgd", loss="mse")
    for rank, expected in ((1, []), (0, ["log.csv", "m.h5"])):
        directory = tmp_path / f"rank{rank}"
        directory.mkdir()
        checkpoint = callbacks.ModelCheckpoint(str(directory / "m.h5"))
        logger = callbacks.CSVLogger(str(directory / "log.csv"))
        distribute.set_strategy(_FakeStrategy(rank))
        try:
            for callback in (checkpoint, logger):
                callback.set_model(model)
                callback.on_train_begin()
                callback.on_epoch_end(0, {"loss": 1.0})
                callback.on_train_end()
        finally:
            distribute.set_strategy(None)
        assert sorted(p.name for p in directory.iterdir()) == expected


@pytest.mark.parametrize("method", ["fit", "evaluate", "predict"])
def test_overridden_steps_are_refused_under_a_strategy(method):
    """A custom train/test/predict step has no gradient all-reduce: refused by name, nothing trained."""

    class Custom(ember.Sequential):
        def train_step(self, data):
            raise AssertionError("never reached")

        def test_step(self, data):
            raise AssertionError("never reached")

        def predict_step(self, data):
            raise AssertionError("never reached")

    ember.set_backend("numpy")
    model = Custom([ember.Input((3,)), ember.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    before = model.get_weights()
    x, y = np.ones((8, 3), np.float32), np.ones((8, 1), np.float32)
    step = {"fit": "train_step", "evaluate": "test_step", "predict": "predict_step"}[method]
    distribute.set_strategy(_FakeStrategy(0))
    try:
        with pytest.raises(NotImplementedError, match=f"an overridden {step} does not run under ember.distribute"):
            if method == "predict":
                model.predict(x, batch_size=4, verbose=0)
            else:
                getattr(model, method)(x, y, batch_size=4, verbose=0)
    finally:
        distribute.set_strategy(None)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
