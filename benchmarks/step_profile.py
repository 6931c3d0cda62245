"""Where a torch training step's time goes: Ember's ``fit`` vs the hand-written loop, per step.

Run: ``python benchmarks/step_profile.py [--device cuda] [--workload W1]``. For each side it
reports the aten operators dispatched per step (a ``TorchDispatchMode`` count: on a GPU each is
about one kernel launch, the cost that dominates small models there), the wall time per step, and
where a GPU is present the CUDA kernels per step and ``torch.profiler``'s host time by operator;
then the Python functions that take the most time in Ember's ``fit`` (``cProfile``). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import os
import pstats
import sys
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


class _CountOps(TorchDispatchMode):
    """Counts every aten operator dispatched while it is active."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def _synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--workload", default="W1", choices=("W1", "W3", "W4", "W5", "W5V"))
    parser.add_argument("--host-table", action="store_true",
                        help="also print torch.profiler's host time by operator on the CPU")
    parser.add_argument("--top", type=int, default=25, help="rows of the operator and cProfile tables")
    args = parser.parse_args()
    os.environ["EMBER_BENCH_DEVICE"] = args.device
    import training as bench  # benchmarks/training.py: the same models, data and loops

    import ember

    ember.set_backend("torch")
    ember.backends.set_default_device(args.device)
    x, y, batch = bench.make_data(args.workload, "torch")
    x, y = bench.native_data("torch", x, y)
    steps = bench.steps_of(args.workload, "torch")
    sides = {"raw": bench.torch_runner(args.workload, x, y, batch),
             "ember": bench.ember_runner(args.workload, "torch", x, y, batch)}
    for run in sides.values():
        run(1)
    print(f"{args.workload} on {args.device}, batch {batch}, {steps} steps per epoch")
    tables: list[str] = []
    for name, run in sides.items():
        counter = _CountOps()
        with counter:
            run(1)
        _synchronize()
        start = time.perf_counter()
        run(2)
        _synchronize()
        wall = (time.perf_counter() - start) / (2 * steps) * 1e3
        line = f"{name:6} {sum(counter.ops.values()) / steps:6.1f} aten ops/step, {wall:.3f} ms/step"
        if args.host_table and not args.device.startswith("cuda"):
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
                run(1)
            tables.append(f"\n{name}: host time by operator (one epoch)\n"
                          + profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))
        if torch.cuda.is_available() and args.device.startswith("cuda"):
            activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            with torch.profiler.profile(activities=activities) as profile:
                run(1)
                _synchronize()
            kernels = [e for e in profile.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            line += f", {len(kernels) / steps:.1f} CUDA kernels/step"
            tables.append(f"\n{name}: host time by operator (one epoch)\n"
                          + profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))
        print(line)
        for op, count in counter.ops.most_common(args.top):
            print(f"        {count / steps:6.2f} {op}")
    for table in tables:
        print(table)
    profiler = cProfile.Profile()
    profiler.enable()
    sides["ember"](1)
    _synchronize()
    profiler.disable()
    print("\nEmber fit, one epoch: the Python functions with the most own time")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
