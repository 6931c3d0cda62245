"""Elastic restarts: a rank killed mid-``fit`` under ``torchrun --max-restarts`` restarts the group, and
``BackupAndRestore`` resumes from the last backup to the weights of an uninterrupted run (issue 37).

The restarted group joins on its own part of torchrun's store (``ember/backends/_elastic.py``): on the
job's shared store the previous attempt's gloo addresses made the restart fail to connect.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest

from ember import backends
from tests.distribute import launch

ELASTIC_WORKER = pathlib.Path(__file__).with_name("elastic_worker.py")


def _torchrun() -> pathlib.Path:
    if not backends.is_installed("torch"):
        pytest.skip("torch (torch.distributed, torchrun) is not installed")
    torchrun = pathlib.Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not installed next to this Python")
    return torchrun


def _run(backend: str, out: pathlib.Path, kill_at: int, max_restarts: int, sharding: str = "none") -> tuple[int, str]:
    out.mkdir()
    command = [str(_torchrun()), "--nproc-per-node", "2", "--max-restarts", str(max_restarts),
               "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{launch.free_ports(1)[0]}",
               str(ELASTIC_WORKER), backend, str(out), str(kill_at), sharding]
    # torchrun in its own session (it signals its process group when it ends).
    process = subprocess.Popen(command, env=launch.base_env(20), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, cwd=out, start_new_session=True)
    (code, output), = launch.finish([process], wait_s=240.0)
    return code, output


def _weights(out: pathlib.Path) -> list[np.ndarray]:
    with np.load(out / "weights.npz") as saved:
        return [saved[f"arr_{i}"] for i in range(len(saved.files))]


@pytest.mark.parametrize(("backend", "sharding"), [("torch", "none"), ("numpy", "none"), ("numpy", "shard_optimizer"),
                                                   ("torch", "fully_shard")])
def test_a_rank_killed_mid_fit_restarts_and_resumes_to_the_uninterrupted_weights(backend, sharding, tmp_path):
    # 48 samples, global batches of 8: 6 steps per epoch; rank 1 dies at global batch 8 (epoch 1,
    # batch 1), after epoch 0's backup: the restart resumes at epoch 1. Sharded: each rank resumes
    # from its own shard of the backup.
    code, output = _run(backend, tmp_path / "killed", kill_at=8, max_restarts=1, sharding=sharding)
    assert code == 0, output[-4000:]
    attempts = sorted((tmp_path / "killed" / "attempts.txt").read_text().split("\n")[:-1])
    assert attempts == ["rank 0 attempt 0", "rank 0 attempt 1", "rank 1 attempt 0", "rank 1 attempt 1"], output[-3000:]
    code, output = _run(backend, tmp_path / "whole", kill_at=-1, max_restarts=0, sharding=sharding)
    assert code == 0, output[-4000:]
    # The resumed run restores the weights, the optimizer state and the epoch from the backup (float64
    # HDF5, exact) and then takes the uninterrupted run's steps on the same shards in the same order:
    # the same float64 operations, so the same bits.
    for resumed, whole in zip(_weights(tmp_path / "killed"), _weights(tmp_path / "whole")):
        np.testing.assert_array_equal(resumed, whole)


def _relaunched_mlx(out: pathlib.Path, kill_at: int) -> list[tuple[int, str]]:
    """mlx.launch has no restart option: the documented equivalent runs the launch again until it succeeds
    (``until mlx.launch -n 2 train.py; do sleep 1; done``); here, two attempts started as mlx.launch would."""
    out.mkdir()
    finished = []
    for attempt in range(2 if kill_at >= 0 else 1):
        envs = launch.rank_envs("mlx", 2, out, timeout=10)
        processes = [subprocess.Popen([sys.executable, str(ELASTIC_WORKER), "mlx", str(out), str(kill_at)],
                                      env={**env, "EMBER_BACKEND": "mlx", "EMBER_TEST_ATTEMPT": str(attempt)},
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=out)
                     for env in envs]
        finished.append(launch.finish(processes, wait_s=120.0))
    return finished


def test_mlx_relaunched_after_a_killed_rank_resumes_to_the_uninterrupted_weights(tmp_path):
    if not backends.is_installed("mlx"):
        pytest.skip("MLX is not installed")
    first, second = _relaunched_mlx(tmp_path / "killed", kill_at=8)
    assert first[1][0] == 3 and first[0][0] != 0, first  # rank 1 died; rank 0 saw it and stopped
    assert all(code == 0 for code, _ in second), second
    (whole,) = _relaunched_mlx(tmp_path / "whole", kill_at=-1)
    assert all(code == 0 for code, _ in whole), whole
    # The same float64 steps after an exact restore (see the torchrun test).
    for resumed, uninterrupted in zip(_weights(tmp_path / "killed"), _weights(tmp_path / "whole")):
        np.testing.assert_array_equal(resumed, uninterrupted)


class _RecordingDist:
    """The parts of torch.distributed that init_torchrun_group calls, recorded."""

    def __init__(self):
        self.calls = []

    def TCPStore(self, host, port, world_size, is_master, timeout):  # noqa: N802 - torch's name
        self.calls.append(("TCPStore", host, port, world_size, is_master))
        return "store"

    def PrefixStore(self, prefix, store):  # noqa: N802 - torch's name
        self.calls.append(("PrefixStore", prefix, store))
        return f"{prefix}:{store}"

    def init_process_group(self, **kwargs):
        self.calls.append(("init_process_group", kwargs.get("store"), kwargs.get("rank"), kwargs.get("world_size")))


def test_each_restart_attempt_joins_on_its_own_part_of_torchruns_store():
    """Deterministic side of the test above (the stale keys made a restart fail only sometimes: a race)."""
    import datetime

    from ember.backends._elastic import init_torchrun_group

    timeout = datetime.timedelta(seconds=5)
    env = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
           "TORCHELASTIC_RESTART_COUNT": "3", "TORCHELASTIC_USE_AGENT_STORE": "True"}
    dist = _RecordingDist()
    init_torchrun_group(dist, "gloo", timeout, env)
    assert dist.calls == [("TCPStore", "127.0.0.1", 29500, 2, False), ("PrefixStore", "ember/restart3", "store"),
                          ("init_process_group", "ember/restart3:store", 1, 2)]
    dist = _RecordingDist()  # rank 0 hosts the store when torchrun's agent does not
    init_torchrun_group(dist, "gloo", timeout, {**env, "RANK": "0", "TORCHELASTIC_USE_AGENT_STORE": "False"})
    assert dist.calls[0] == ("TCPStore", "127.0.0.1", 29500, 2, True)
    dist = _RecordingDist()  # outside torchelastic: torch's env:// initialization
    init_torchrun_group(dist, "gloo", timeout, {k: v for k, v in env.items() if not k.startswith("TORCHELASTIC")})
    assert dist.calls == [("init_process_group", None, None, None)]
