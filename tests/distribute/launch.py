"""Start ranks of ``tests/distribute/worker.py`` on 127.0.0.1 with a launcher's environment variables only.

torch and NumPy ranks get torchrun's variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``, ``MASTER_PORT``); MLX ranks get mlx.launch's (``MLX_RANK``, ``MLX_HOSTFILE``
naming a ring hostfile). Ports are picked free at run time, so parallel test workers do not clash.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKER = pathlib.Path(__file__).with_name("worker.py")
_LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                       "MLX_RANK", "MLX_HOSTFILE", "EMBER_BACKEND")


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def base_env(timeout: float) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARIABLES}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    env["EMBER_TEST_TIMEOUT"] = str(timeout)
    return env


def rank_envs(backend: str, world: int, directory: pathlib.Path, timeout: float) -> list[dict]:
    envs = []
    if backend == "mlx":
        hostfile = directory / "hosts.json"
        hostfile.write_text(json.dumps([[f"127.0.0.1:{port}"] for port in free_ports(world)]))
        for rank in range(world):
            env = base_env(timeout)
            env.update(MLX_RANK=str(rank), MLX_HOSTFILE=str(hostfile))
            envs.append(env)
        return envs
    port = free_ports(1)[0]
    for rank in range(world):
        env = base_env(timeout)
        env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        envs.append(env)
    return envs


def start(scenario: str, backend: str, directory: pathlib.Path, envs: list[dict]) -> list[subprocess.Popen]:
    directory.mkdir(parents=True, exist_ok=True)
    # EMBER_BACKEND: `import ember` loads that backend only (auto-detection would import torch in an MLX
    # rank too: a second of CPU per process).
    return [subprocess.Popen([sys.executable, str(WORKER), scenario, backend, str(directory)],
                             env={**env, "EMBER_BACKEND": backend},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for env in envs]


def finish(processes: list[subprocess.Popen], wait_s: float = 150.0) -> list[tuple[int, str]]:
    results = []
    for process in processes:
        try:
            output, _ = process.communicate(timeout=wait_s)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
            output += "\n[killed by the test: no exit within the wait]"
        results.append((process.returncode, output))
    return results


def run_pair(scenario: str, backend: str, directory: pathlib.Path, timeout: float = 60.0,
             reference: bool = True) -> tuple[dict | None, list[dict], list[tuple[int, str]]]:
    """Run ``scenario`` in one process (``directory/single``) and on 2 ranks (``directory/pair``) at once.

    Returns ``(single-process results or None, [results of rank 0, rank 1], [(returncode, output)])``.
    """
    single_dir, pair_dir = directory / "single", directory / "pair"
    pair_dir.mkdir(parents=True, exist_ok=True)
    processes = start(scenario, backend, pair_dir, rank_envs(backend, 2, pair_dir, timeout))
    if reference:
        processes += start(scenario, backend, single_dir, [base_env(timeout)])
    finished = finish(processes)
    for code, output in finished:
        assert code == 0, f"a {backend} worker of {scenario!r} failed ({code}):\n{output[-4000:]}"
    single = dict(np.load(single_dir / "rank0.npz")) if reference else None
    ranks = [dict(np.load(pair_dir / f"rank{r}.npz")) for r in range(2)]
    return single, ranks, finished


def run_pair_allow_death(scenario: str, backend: str, directory: pathlib.Path, timeout: float,
                         stop_rank1: bool = False) -> tuple[None, list[dict], list[tuple[int, str]]]:
    """2 ranks where rank 1 dies or hangs on purpose: rank 0's results and both exit codes.

    ``stop_rank1``: rank 1 hangs on purpose; it is killed once rank 0 has finished (exit code -9).
    """
    pair_dir = directory / "pair"
    pair_dir.mkdir(parents=True, exist_ok=True)
    processes = start(scenario, backend, pair_dir, rank_envs(backend, 2, pair_dir, timeout))
    finished = finish(processes[:1])
    if stop_rank1:
        processes[1].kill()
    finished += finish(processes[1:])
    assert finished[0][0] == 0, f"rank 0 of {scenario!r} failed ({finished[0][0]}):\n{finished[0][1][-4000:]}"
    return None, [dict(np.load(pair_dir / "rank0.npz"))], finished
