"""Dispatch overhead: ``ember.ops.add`` vs the native call, per installed backend.

Run: ``python benchmarks/dispatch.py``. Prints, per call, the best of repeated timing
runs on 4x4 float32 arrays (the minimum is the least noisy estimate of a micro-benchmark
on a shared machine, as ``timeit``'s docs advise), native and Ember interleaved in one
process; the target is at most +0.3 µs.
MLX's add is lazy, so both sides time graph construction only.
"""

from __future__ import annotations

import timeit

import numpy as np

import ember
from ember import backends, ops

NUMBER = 100_000
REPEAT = 7


def _time(fn) -> float:
    runs = timeit.repeat(fn, number=NUMBER, repeat=REPEAT)
    return min(runs) / NUMBER * 1e6


def native_add(name: str):
    if name == "numpy":
        return np.add
    if name == "torch":
        import torch

        return torch.add
    import mlx.core as mx

    return mx.add


def main() -> None:
    print(f"{'backend':8} {'native µs':>10} {'ember µs':>10} {'overhead µs':>12} {'ratio':>6}")
    for name in backends.available():
        ember.set_backend(name)
        x = ops.ones((4, 4), dtype="float32")
        native = native_add(name)
        t_native, t_ember = float("inf"), float("inf")
        for _ in range(3):  # interleave so both sides see the same machine load
            t_native = min(t_native, _time(lambda: native(x, x)))
            t_ember = min(t_ember, _time(lambda: ops.add(x, x)))
        print(f"{name:8} {t_native:10.3f} {t_ember:10.3f} {t_ember - t_native:12.3f} {t_ember / t_native:6.2f}")


if __name__ == "__main__":
    main()
