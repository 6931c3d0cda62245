"""Checkpoint speed: save and load a ~100M-parameter float32 model (about 400 MB) per backend.

Run: ``python benchmarks/checkpoint.py [--backends numpy,torch,mlx] [--repeat 3] [--dir PATH]``.
Side by side in one process, timed in alternation (median of ``--repeat`` runs), it prints MB/s
and the ratio to the plain h5py baseline, of the medians and of the best runs (the best runs are
the steadier measure on a busy machine), and the process CPU time of the best run (all threads:
what the work costs, whatever else the machine is doing); never part of the test suite:

* write: a plain ``h5py`` write of the same NumPy arrays (one ``create_dataset`` each), the same
  plus ``os.fsync`` (the durability Ember's save has), vs ``model.save_weights`` and ``model.save``
  (atomic temp file + fsync + rename, per-block XXH3-64 checksums,
  conversion from the backend's arrays included). Target: >= 0.8x the plain write.
* read: a plain ``h5py`` read of every dataset into NumPy vs ``model.load_weights`` (all data read
  and its checksums verified, then converted to the backend's arrays) and ``ember.load_model``
  (rebuilding the model from its config too; no random initialization). Target: >= 0.8x.

Before each timed case the page cache's dirty pages are written back (``os.sync``, untimed), so a
case never pays for the previous case's write-back.

The model is ``Sequential(Input(4096), 6 x Dense(4096))``: 100.7M float32 parameters in 12
arrays. The files go to ``--dir`` (default: the system temporary directory), whose disk and
page cache set the absolute numbers; reads come from the page cache after the writes.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time

import h5py
import numpy as np
import optree

import ember
from ember import backends, initializers, layers, ops

WIDTH, DEPTH = 4096, 6


def _model():
    model = ember.Sequential([ember.Input((WIDTH,))] + [layers.Dense(WIDTH, name=f"dense_{i}") for i in range(DEPTH)],
                             name="big")
    with initializers.shapes_only():
        state = model.build()
    rng = np.random.default_rng(0)
    model.state = optree.tree_map(
        lambda a: ops.convert_to_tensor(rng.standard_normal(ops.shape(a), dtype=np.float32)), state)
    return model


def _plain_write(arrays, path, sync):
    with h5py.File(path, "w") as file:
        for name, array in arrays.items():
            file.create_dataset(name, data=array)
    if sync:
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)


def _plain_read(arrays, path):
    with h5py.File(path, "r") as file:
        out = {}
        for name, array in arrays.items():
            buffer = np.empty(array.shape, array.dtype)
            file[name].read_direct(buffer)
            out[name] = buffer
    return out


def _sync(model):
    """Wait for lazy backends (MLX) to finish materializing a loaded state."""
    if ember.get_backend() == "mlx":
        import mlx.core as mx

        mx.eval(optree.tree_leaves(model.state))


def run(backend, directory, repeat):
    ember.set_backend(backend)
    model = _model()
    arrays = {path: np.asarray(ops.to_numpy(leaf)) for path, leaf in
              zip(["/".join(p) for p in optree.tree_paths(model.state)], optree.tree_leaves(model.state))}
    megabytes = sum(a.nbytes for a in arrays.values()) / 1e6
    plain = os.path.join(directory, "plain.h5")
    ours = os.path.join(directory, "ember.weights.h5")
    full = os.path.join(directory, "ember.h5")
    target = _model()
    cases = {
        "write: plain h5py": lambda: _plain_write(arrays, plain, sync=False),
        "write: plain h5py + fsync": lambda: _plain_write(arrays, plain, sync=True),
        "write: model.save_weights": lambda: model.save_weights(ours),
        "write: model.save": lambda: model.save(full),
        "read:  plain h5py": lambda: _plain_read(arrays, plain),
        "read:  model.load_weights": lambda: (target.load_weights(ours), _sync(target)),
        "read:  ember.load_model": lambda: _sync(ember.load_model(full)),
    }
    times = {name: [] for name in cases}
    cpu = {name: [] for name in cases}
    for fn in cases.values():  # warm-up (and files for the reads)
        fn()
    for _ in range(repeat):
        for name, fn in cases.items():
            gc.collect()  # models hold reference cycles: free the previous run's 400 MB before timing
            if hasattr(os, "sync"):
                os.sync()  # write back the previous case's dirty pages now, not during this case's fsync
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    print(f"\n{backend}: {sum(a.size for a in arrays.values()) / 1e6:.1f}M float32 parameters, {megabytes:.0f} MB "
          f"in {len(arrays)} arrays, files in {directory}")
    print(f"{'case':30} {'median s':>9} {'best s':>8} {'MB/s':>8} {'vs plain':>9} {'(best)':>7} {'cpu s':>7}")
    plain_runs = {"write": times["write: plain h5py"], "read": times["read:  plain h5py"]}
    for name, values in times.items():
        median = statistics.median(values)
        base = plain_runs[name.split(":")[0]]
        ratio, ratio_best = statistics.median(base) / median, min(base) / min(values)
        print(f"{name:30} {median:9.3f} {min(values):8.3f} {megabytes / median:8.0f} {ratio:8.2f}x {ratio_best:6.2f}x "
              f"{min(cpu[name]):7.3f}")
    for path in (plain, ours, full):
        os.remove(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default=",".join(backends.available()))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        for backend in args.backends.split(","):
            run(backend, directory, args.repeat)


if __name__ == "__main__":
    main()
