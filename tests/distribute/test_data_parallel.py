"""Data-parallel training on 2 processes equals training on 1 (torch, NumPy, MLX engines).

Each test starts real ranks (tests/distribute/launch.py) on 127.0.0.1 and compares their
results with a single process on the same global batch. The reference is the one-process
run: the same code without a launcher's environment.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import optree
import pytest

import ember
from ember import backends
from tests.distribute import launch, worker
from tests.test_tutorials import load_tutorial

pytestmark = [pytest.mark.xdist_group("distribute"), pytest.mark.timeout(240)]

# The bound on "2 ranks equal 1 process", derived (the workers train in float64, worker.FLOATX):
# the two runs do the same arithmetic except the order of additions: each rank sums its rows of a
# batch's gradient (and of the metric totals), then the ranks' sums are added, where one process sums
# all rows at once. A sum of n float64 terms in any order lies within gamma_n = n*u/(1 - n*u) of the
# exact sum, relative to the sum of the terms' magnitudes (u = 2**-53 = 1.1e-16); the longest sums
# here have n <= 37 rows (evaluate and the metrics), so gamma_37 = 4.1e-15 per step. That difference
# reaches the weights through each update, whose sensitivity to its gradient is <= lr/(1 - momentum)
# = 1 for SGD(0.1, momentum=0.9) and <= 7.3*lr for Adam (Cauchy-Schwarz on m/sqrt(v) with beta_1 =
# 0.9, beta_2 = 0.999: sqrt((1-beta_1)**2/(1-beta_2) / (1 - beta_1**2/beta_2)) = 7.3), and adds up
# over <= 150 steps (the Dataset scenario: 30 epochs of 5 batches): 150 * 1 * 4.1e-15 = 6.2e-13 on
# weights, activations and losses of magnitude <= 1 (tanh, logits of a 5-8-3 net). The bound keeps a
# factor 160 above that first-order figure for the growth it ignores, and stays 1e6 below any real
# fault: a rank's rows lost or counted twice moves a weight by lr * |g| / 8 > 1e-4 in one step.
TOLERANCE = {"rtol": 0.0, "atol": 1e-10}


@pytest.fixture
def worker_floatx():
    """This process computes references in the workers' float type (restored after the test)."""
    previous = ember.dtypes.floatx()
    ember.dtypes.set_floatx(worker.FLOATX)
    yield
    ember.dtypes.set_floatx(previous)


def _requires(backend: str) -> None:
    if not backends.is_installed(backend):
        pytest.skip(f"backend {backend!r} is not installed")
    if backend in ("numpy", "torch") and not backends.is_installed("torch"):
        pytest.skip("the numpy engine needs torch.distributed here (mpi4py is not installed)")


@pytest.mark.parametrize("backend_name", ["numpy", "torch", "mlx"])
def test_two_processes_match_one(backend_name, tmp_path):
    """SGD (momentum), Adam and Adam under dynamic loss scaling; uneven last batch, shuffle, Dropout,
    validation_split, evaluate and predict; an ember.data.Dataset whose last batch leaves rank 1
    without rows, with EarlyStopping; a fit interrupted and resumed by BackupAndRestore: every
    rank's weights, History and results equal one process's."""
    _requires(backend_name)
    single, ranks, _ = launch.run_pair("fit", backend_name, tmp_path)
    assert [int(r["world_size"]) for r in ranks] == [2, 2] and int(single["world_size"]) == 1
    keys = sorted(k for k in single if k != "world_size" and not k.startswith("rankonly_"))
    assert 1 < len(single["dataset_history_loss"]) < 30  # EarlyStopping stopped every rank at the same epoch
    np.testing.assert_array_equal(single["backup_epochs"], [2, 3])  # BackupAndRestore resumed after epoch 1
    assert not (tmp_path / "pair" / "backup").exists()  # the main rank deleted its backup at the end
    for optimizer in ("sgd", "adam", "lso"):
        assert {f"{optimizer}_{k}" for k in ("history_loss", "history_accuracy", "history_val_loss",
                                              "history_val_accuracy", "evaluate", "predict", "weight_0")} <= set(keys)
    for rank, result in enumerate(ranks):
        for key in keys:
            np.testing.assert_allclose(result[key], single[key], **TOLERANCE, err_msg=f"rank {rank}: {key}")
    assert not np.allclose(single["adam_weight_1"], single["sgd_weight_1"])  # two different trainings
    assert float(single["lso_dynamic_scale"]) == 2.0 ** 14  # 12 finite steps: the scale doubled 4 times
    # Loss scaling multiplies and divides by powers of 2, exact in floating point while nothing
    # overflows: the loss-scaled Adam takes Adam's steps (same bound: the scaled sums' order differs).
    np.testing.assert_allclose(single["lso_weight_1"], single["adam_weight_1"], **TOLERANCE)
    # BatchNormalization: batch statistics per rank (not one process's), the same weights and moving
    # statistics on both ranks (averaged after every step).
    bn_keys = sorted(k for k in single if k.startswith("rankonly_bn_"))
    assert len(bn_keys) == 8  # gamma, beta, moving mean and variance, two Dense layers
    for key in bn_keys:
        np.testing.assert_array_equal(ranks[1][key], ranks[0][key], err_msg=key)


@pytest.mark.parametrize("backend_name", ["torch", "mlx"])
def test_checkpoint_from_two_processes_resumes_in_one_and_back(backend_name, tmp_path, worker_floatx):
    """A checkpoint written by 2 ranks (the main rank only) loads in 1 process and continues exactly;
    one written by 1 process continues exactly on 2 ranks."""
    _requires(backend_name)
    ember.set_backend(backend_name)
    x, y = worker.data()
    _, ranks, _ = launch.run_pair("checkpoint", backend_name, tmp_path, reference=False)
    pair_dir = tmp_path / "pair"
    written = sorted(p.name for p in pair_dir.iterdir() if p.suffix in (".h5", ".csv") or p.name.startswith("."))
    assert written == ["ckpt-1.h5", "ckpt-2.h5", "log.csv"]
    rows = (pair_dir / "log.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[0].startswith("epoch"), rows  # one header, one row per epoch: one writer
    np.testing.assert_allclose(ranks[1]["predict"], ranks[0]["predict"], **TOLERANCE)

    loaded = ember.load_model(pair_dir / "ckpt-2.h5")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), ranks[0]["predict"], **TOLERANCE)

    # Reference: 3 epochs in one fit, one process. Resumed: 2 epochs on 2 ranks + 1 here.
    reference = worker.compiled_model()
    reference.fit(x, y, batch_size=6, epochs=3, verbose=0)
    loaded.fit(x, y, batch_size=6, epochs=3, initial_epoch=2, verbose=0)
    _assert_same_weights(loaded, reference)

    # The other way: 2 epochs here, saved; the third epoch on 2 ranks.
    back_dir = tmp_path / "back"
    back_dir.mkdir()
    here = worker.compiled_model()
    here.fit(x, y, batch_size=6, epochs=2, verbose=0)
    here.save(back_dir / "ckpt-2.h5")
    processes = launch.start("resume", backend_name, back_dir, launch.rank_envs(backend_name, 2, back_dir, 60.0))
    for code, output in launch.finish(processes):
        assert code == 0, output[-4000:]
    for rank in range(2):
        result = np.load(back_dir / f"rank{rank}.npz")
        expected = [np.asarray(ember.ops.to_numpy(w)) for w in _leaves(reference)]
        for i, w in enumerate(expected):
            np.testing.assert_allclose(result[f"weight_{i}"], w, **TOLERANCE, err_msg=f"rank {rank}: weight {i}")


def _leaves(model):
    return optree.tree_leaves(model.state["params"])


def _assert_same_weights(a, b):
    for wa, wb in zip(_leaves(a), _leaves(b)):
        np.testing.assert_allclose(ember.ops.to_numpy(wa), ember.ops.to_numpy(wb), **TOLERANCE)


@pytest.mark.parametrize("backend_name", ["torch", "mlx"])  # numpy runs on torch's engine (gloo)
def test_a_killed_rank_makes_the_survivor_raise(backend_name, tmp_path):
    _requires(backend_name)
    timeout = 20.0
    _, ranks, finished = launch.run_pair_allow_death("die", backend_name, tmp_path, timeout)
    assert finished[1][0] == 3  # rank 1 exited on purpose
    error = str(ranks[0]["error"])
    assert error.startswith("RankFailureError: ember.distribute: rank 0 of 2"), error
    # A dead peer closes its sockets: the survivor learns it at its next collective (milliseconds), far
    # inside the 20 s timeout even on a machine slowed down 4 times; reaching the timeout would mean
    # the death went unnoticed.
    assert float(ranks[0]["seconds"]) < timeout


def test_a_hanging_rank_times_out_on_torch(tmp_path):
    _requires("torch")
    timeout = 3.0
    _, ranks, _ = launch.run_pair_allow_death("hang", "torch", tmp_path, timeout, stop_rank1=True)
    error = str(ranks[0]["error"])
    assert error.startswith("RankFailureError:") and "timeout 3 s" in error, error
    # Rank 0 cannot give up before its timeout, and ended by it: without the timeout it would wait for
    # the hanging rank (worker.HANG_S = 120 s). The margin, 60 s - 3 s, covers a fit's start and the
    # error path (under 1 s here) slowed down far more than 4 times on a loaded machine.
    assert timeout <= float(ranks[0]["seconds"]) < worker.HANG_S / 2


def test_a_hanging_rank_ends_an_mlx_rank_by_the_watchdog(tmp_path):
    """MLX collectives cannot be interrupted: the watchdog ends the waiting rank with a message."""
    _requires("mlx")
    pair_dir = tmp_path / "pair"
    pair_dir.mkdir()
    processes = launch.start("hang", "mlx", pair_dir, launch.rank_envs("mlx", 2, pair_dir, 3.0))
    # Rank 1 hangs for worker.HANG_S (120 s): rank 0 must end long before, by the watchdog; then the
    # test stops rank 1.
    (code0, output0), = launch.finish(processes[:1], wait_s=worker.HANG_S / 2)
    processes[1].kill()
    launch.finish(processes[1:])
    assert code0 == 70 and "waited more than 3 s for the other ranks" in output0, output0


def test_different_initial_weights_are_refused_naming_the_rank(tmp_path):
    _requires("numpy")
    _, ranks, _ = launch.run_pair("mismatch", "numpy", tmp_path, reference=False)
    for result in ranks:
        error = str(result["error"])
        assert "the model on rank(s) [1] differs from rank 0's" in error, error


def test_tutorial_under_torchrun_prints_the_one_process_numbers(tmp_path):
    """tutorials/08 run by torchrun on 2 ranks gives the numbers of one process (run here, in this one)."""
    _requires("torch")
    root = pathlib.Path(__file__).resolve().parents[2]
    script = root / "tutorials" / "08_data_parallel.py"
    torchrun = pathlib.Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not installed next to this Python")
    command = [str(torchrun), "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
               "--master-port", str(launch.free_ports(1)[0]), str(script), "--backend", "torch", "--fast"]
    # torchrun in its own session (it signals its process group when it ends); one process meanwhile here.
    pair = subprocess.Popen(command, env=launch.base_env(60), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=tmp_path, start_new_session=True)
    one = load_tutorial("08_data_parallel.py").main(["--backend", "torch", "--fast"])
    (pair_code, pair_out), = launch.finish([pair])
    assert pair_code == 0, pair_out[-4000:]

    lines = dict(line.split(None, 1) for line in pair_out.splitlines() if line.startswith(
        ("processes", "final_loss", "test_accuracy", "reloaded_same_predictions")))
    two = {k: v.strip() for k, v in lines.items()}
    assert one["processes"] == 1 and two["processes"] == "2", pair_out
    # The tutorial trains in float32 and prints 4 significant digits ("%.4g"): the printed value is within
    # half a unit of its 4th digit, at most 5e-4 of the value, of what the ranks computed; the ranks differ
    # from one process by float32 summation order only (far below 1e-4 relative). So rel=1e-3.
    for key in ("test_accuracy", "final_loss"):
        assert float(two[key]) == pytest.approx(float(one[key]), rel=1e-3), (key, one[key], two[key])  # see above
    assert two["reloaded_same_predictions"] == "True"
    assert pair_out.count("== 08 data parallel") == 1  # only the main process prints
