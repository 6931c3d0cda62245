"""Data-parallel speed: samples/s of ``fit`` on 1 vs 2 processes, and the all-reduce's share.

Run: ``python benchmarks/distributed.py`` (every installed backend) or
``python benchmarks/distributed.py --backend torch``. For each backend the script starts the
ranks itself on 127.0.0.1 with a launcher's environment (torchrun's variables for torch and
NumPy, mlx.launch's ring hostfile for MLX), first 1 process, then 2, and prints a table.
Never part of the test suite.

Workload W1: MLP 784-256-256-10, Adam, sparse softmax cross-entropy on logits, global batch
256 (each of 2 ranks runs 128 rows per step), synthetic data. Each rank times ``fit`` over
``STEPS`` steps after a warm-up epoch (compilation on MLX), ``REPEAT`` times, and reports the
median. The all-reduce share is measured apart: the median time of one all-reduce of a
gradient-sized float32 buffer (269,322 values, what the step sums), divided by the median
step time (on MLX the all-reduce runs inside the compiled step, so it cannot be timed there).

On a 2-core machine 2 processes share the cores that 1 process already uses (with
``OMP_NUM_THREADS=1`` each rank has one core), so the speed-up is bounded by 2x at best and
by the all-reduce's cost; with CUDA the torch ranks use NCCL (one GPU per rank).

``python benchmarks/distributed.py --optimizer-memory``: the optimizer state each rank holds under
``ember.distribute.initialize(shard_optimizer=True)`` (ZeRO-1/2) for 1, 2 and 4 processes, on the
33.6M-parameter MLP 4096-4096-4096-10 (float32) with Adam. Deterministic: the bytes of the arrays
``ShardedOptimizer.init`` makes for each rank (the same code the ranks run; no process is started),
in the element layout (Adam) and the whole-variable layout (Adam with ``clipnorm``, whose norm
needs whole variables); the peak of a rank also holds the weights, gradients and activations,
which sharding the optimizer does not divide.

``python benchmarks/distributed.py --rank-memory``: measured, on torch. For each way of training the
same 33.6M-parameter MLP with Adam (global batch 64, 4 steps) on 1, 2 and 4 processes (plain data
parallelism, ``shard_optimizer=True``, ``fully_shard=True``: torch's FSDP2), each rank reports
its peak resident memory above what it held before building the model (``ru_maxrss``: weights,
gradients, optimizer state, activations and the collectives' buffers), and the bytes of the
optimizer state it keeps after ``fit``. Every configuration runs in fresh processes.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
GLOBAL_BATCH = 256
STEPS = {"numpy": 20, "torch": 40, "mlx": 10}
REPEAT = 5
PARAMS = 784 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _environments(backend: str, world: int, directory: pathlib.Path) -> list[dict]:
    base = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MLX_RANK", "MLX_HOSTFILE")}
    base["PYTHONPATH"] = str(ROOT) + os.pathsep + base.get("PYTHONPATH", "")
    base.setdefault("OMP_NUM_THREADS", "1")
    envs = []
    if world == 1:
        return [base]
    if backend == "mlx":
        hostfile = directory / "hosts.json"
        hostfile.write_text(json.dumps([[f"127.0.0.1:{p}"] for p in _free_ports(world)]))
        return [dict(base, MLX_RANK=str(r), MLX_HOSTFILE=str(hostfile)) for r in range(world)]
    port = str(_free_ports(1)[0])
    for r in range(world):
        envs.append(dict(base, RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                         MASTER_PORT=port))
    return envs


def run(backend: str, world: int) -> dict:
    """Start ``world`` ranks of this script in worker mode; rank 0's measurements."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = pathlib.Path(tmp)
        processes = [subprocess.Popen([sys.executable, __file__, "--worker", backend, str(directory)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                     for env in _environments(backend, world, directory)]
        outputs = [p.communicate(timeout=900)[0] for p in processes]
        if any(p.returncode for p in processes):
            raise RuntimeError(f"{backend} x{world} failed:\n" + "\n".join(o[-3000:] for o in outputs))
        return json.loads((directory / "rank0.json").read_text())


def worker(backend: str, directory: str) -> None:
    import ember
    from ember import distribute, layers, ops

    ember.set_backend(backend)
    launched = "RANK" in os.environ or "MLX_RANK" in os.environ
    if launched:
        distribute.initialize(timeout=300)
    steps = STEPS[backend]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(GLOBAL_BATCH * steps, 784)).astype("float32")
    y = rng.integers(0, 10, size=(GLOBAL_BATCH * steps,))
    x, y = ops.convert_to_tensor(x), ops.convert_to_tensor(y)
    model = ember.Sequential([ember.Input((784,)), layers.Dense(256, activation="relu"),
                              layers.Dense(256, activation="relu"), layers.Dense(10)], name="w1")
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(1e-3, epsilon=1e-7),
                  loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), seed=0)
    model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=1, verbose=0)  # warm-up (compiles on MLX)
    times = []
    for _ in range(REPEAT):
        distribute.barrier()
        start = time.perf_counter()
        model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=1, verbose=0)
        times.append(time.perf_counter() - start)
    step = statistics.median(times) / steps
    reduce_time = 0.0
    strategy = distribute.get_strategy()
    if strategy is not None:
        buffer = ops.ones((PARAMS,), dtype="float32")
        samples = []
        for _ in range(20):
            distribute.barrier()
            start = time.perf_counter()
            ops.to_numpy(strategy.all_sum(buffer)[:1])  # forces the (lazy, on MLX) collective
            samples.append(time.perf_counter() - start)
        reduce_time = statistics.median(samples)
    result = {"world": distribute.world_size(), "step_ms": step * 1e3, "samples_per_s": GLOBAL_BATCH / step,
              "allreduce_ms": reduce_time * 1e3, "allreduce_share": reduce_time / step,
              "device": str(ops.get_device(x))}
    if distribute.is_main_process():
        pathlib.Path(directory, "rank0.json").write_text(json.dumps(result))
    distribute.shutdown()


RANK_MEMORY_WIDTH = 4096
RANK_MEMORY_BATCH = 64
RANK_MEMORY_STEPS = 4


def memory_worker(mode: str, directory: str) -> None:
    """One rank of ``--rank-memory``: fit the 33.6M MLP under ``mode`` and report its memory."""
    import resource

    import optree

    import ember
    from ember import distribute, layers, ops
    from ember.distribute.zero import SHARD_KEY

    ember.set_backend("torch")
    if "RANK" in os.environ:
        distribute.initialize(timeout=300, shard_optimizer=mode == "shard_optimizer", fully_shard=mode == "fully_shard")
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    width, rows = RANK_MEMORY_WIDTH, RANK_MEMORY_BATCH * RANK_MEMORY_STEPS
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, width)).astype("float32")
    y = rng.integers(0, 10, size=(rows,))
    model = ember.Sequential([ember.Input((width,)), layers.Dense(width, activation="relu"),
                              layers.Dense(width, activation="relu"), layers.Dense(10)], name="big")
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(1e-4), loss=ember.losses.SparseCategoricalCrossentropy(
        from_logits=True), seed=0)
    model.fit(x, y, batch_size=RANK_MEMORY_BATCH, epochs=1, verbose=0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    opt_state = model._training.opt_state
    opt_bytes = sum(int(np.prod(ops.shape(v))) * 4 for key, value in opt_state.items() if key != SHARD_KEY
                    for v in optree.tree_leaves(value) if str(ops.dtype(v)) == "float32")
    result = {"rank": distribute.rank(), "peak_above_start": peak - baseline - x.nbytes, "optimizer_bytes": opt_bytes}
    pathlib.Path(directory, f"memory{distribute.rank()}.json").write_text(json.dumps(result))
    distribute.shutdown()


def rank_memory(mode: str, world: int) -> list[dict]:
    """Start ``world`` ranks of ``memory_worker``; every rank's report."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = pathlib.Path(tmp)
        processes = [subprocess.Popen([sys.executable, __file__, "--memory-worker", mode, str(directory)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                     for env in _environments("torch", world, directory)]
        outputs = [p.communicate(timeout=900)[0] for p in processes]
        if any(p.returncode for p in processes):
            raise RuntimeError(f"{mode} x{world} failed:\n" + "\n".join(o[-3000:] for o in outputs))
        return [json.loads((directory / f"memory{r}.json").read_text()) for r in range(world)]


def print_rank_memory() -> None:
    mib = 2 ** 20
    print(f"torch, MLP {RANK_MEMORY_WIDTH}-{RANK_MEMORY_WIDTH}-{RANK_MEMORY_WIDTH}-10 (33.6M float32 params), Adam, "
          f"global batch {RANK_MEMORY_BATCH}, {RANK_MEMORY_STEPS} steps; the largest rank's figures")
    print(f"{'mode':16} {'procs':>5} {'peak MiB above start':>21} {'optimizer MiB':>14}")
    one = rank_memory("data_parallel", 1)[0]
    print(f"{'one process':16} {1:5d} {one['peak_above_start'] / mib:21.0f} {one['optimizer_bytes'] / mib:14.1f}")
    for mode in ("data_parallel", "shard_optimizer", "fully_shard"):
        for world in (2, 4):
            ranks = rank_memory(mode, world)
            peak = max(r["peak_above_start"] for r in ranks)
            opt = max(r["optimizer_bytes"] for r in ranks)
            print(f"{mode:16} {world:5d} {peak / mib:21.0f} {opt / mib:14.1f}")


def optimizer_memory(worlds: tuple[int, ...] = (1, 2, 4), width: int = 4096) -> list[dict]:
    """Per-rank optimizer-state bytes under shard_optimizer=True (see the module docstring)."""
    import optree

    import ember
    from ember import layers, ops, optimizers
    from ember.training.zero_optimizer import SHARD_KEY, ShardedOptimizer

    ember.set_backend("numpy")
    model = ember.Sequential([ember.Input((width,)), layers.Dense(width), layers.Dense(width), layers.Dense(10)])
    params = model.build(seed=0)["params"]

    def state_bytes(state: dict) -> int:
        return sum(int(np.prod(ops.shape(v))) * np.dtype(str(ops.dtype(v))).itemsize
                   for key, value in state.items() if key != SHARD_KEY for v in optree.tree_leaves(value))

    full = state_bytes(optimizers.Adam().init(params))
    rows = []
    layouts = (("element", lambda: optimizers.Adam()), ("whole-variable", lambda: optimizers.Adam(clipnorm=1.0)))
    for layout, make in layouts:
        for world in worlds:
            per_rank = [state_bytes(ShardedOptimizer(make(), rank, world, lambda a: a).init(params))
                        for rank in range(world)]
            rows.append({"layout": layout, "world": world, "per_rank": per_rank, "full": full,
                         "params": sum(int(np.prod(ops.shape(v))) for v in optree.tree_leaves(params))})
    return rows


def print_optimizer_memory() -> None:
    rows = optimizer_memory()
    print(f"Adam state per rank, MLP 4096-4096-4096-10 ({rows[0]['params'] / 1e6:.1f}M float32 params), "
          f"shard_optimizer=True; one process holds {rows[0]['full'] / 2**20:.1f} MiB")
    print(f"{'layout':15} {'procs':>5} {'max MiB/rank':>13} {'max / (full/N)':>15}  per-rank MiB")
    for row in rows:
        largest = max(row["per_rank"])
        ratio = largest / (row["full"] / row["world"])
        print(f"{row['layout']:15} {row['world']:5d} {largest / 2**20:13.1f} {ratio:15.3f}"
              f"  {', '.join(f'{b / 2**20:.1f}' for b in row['per_rank'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("numpy", "torch", "mlx"), action="append")
    parser.add_argument("--worker", nargs=2, metavar=("BACKEND", "DIR"), help=argparse.SUPPRESS)
    parser.add_argument("--optimizer-memory", action="store_true",
                        help="per-rank optimizer-state bytes under shard_optimizer=True (no processes)")
    parser.add_argument("--rank-memory", action="store_true",
                        help="torch: each rank's measured peak memory, data parallel vs sharded (1, 2, 4 processes)")
    parser.add_argument("--memory-worker", nargs=2, metavar=("MODE", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    if args.memory_worker:
        memory_worker(*args.memory_worker)
        return
    if args.rank_memory:
        print_rank_memory()
        return
    if args.optimizer_memory:
        print_optimizer_memory()
        return
    import ember

    names = args.backend or [b for b in ("numpy", "torch", "mlx") if ember.backends.is_installed(b)]
    print(f"W1 MLP 784-256-256-10, Adam, global batch {GLOBAL_BATCH}, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', 'unset')}, {os.cpu_count()} CPUs")
    print(f"{'backend':8} {'device':8} {'1 proc samples/s':>17} {'2 procs samples/s':>18} {'speed-up':>9} "
          f"{'all-reduce ms':>14} {'share of step':>14}")
    for name in names:
        one, two = run(name, 1), run(name, 2)
        print(f"{name:8} {one['device']:8} {one['samples_per_s']:17.0f} {two['samples_per_s']:18.0f} "
              f"{two['samples_per_s'] / one['samples_per_s']:8.2f}x {two['allreduce_ms']:14.2f} "
              f"{two['allreduce_share']:13.0%}")


if __name__ == "__main__":
    main()
