"""Dispatch overhead: ``ember.ops.add`` vs the native call, per installed backend.

Run: ``python benchmarks/dispatch.py``. Prints, per call, the best of repeated timing
runs on 4x4 float32 arrays (the minimum is the least noisy estimate of a micro-benchmark
on a shared machine, as ``timeit``'s docs advise), native and Ember interleaved in one
process; the target is at most +0.3 µs.
MLX's add is lazy, so both sides time graph construction only.

A second table times the same add inside a ``GradientTape`` on the backends whose tapes
record op calls (NumPy, MLX), on arrays the tape does not track: ``ops.add`` is then the
recorder (``ember.recorded.calls.recorder``), and on MLX ``x + x`` is the patched
``mx.array`` operator, which calls ``ember.ops.add`` through the recorder. Each call runs
the backend's add and is offered to the tape, which keeps nothing (no input is tracked),
so the record does not grow while timing.
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


def _add_times(name: str) -> tuple[float, float]:
    """Best µs per call of the native add and of ``ops.add`` on backend ``name`` (active)."""
    x = ops.ones((4, 4), dtype="float32")
    native = native_add(name)
    t_native, t_ember = float("inf"), float("inf")
    for _ in range(3):  # interleave so both sides see the same machine load
        t_native = min(t_native, _time(lambda: native(x, x)))
        t_ember = min(t_ember, _time(lambda: ops.add(x, x)))
    return t_native, t_ember


def _recorded_add_times(name: str, operator: bool) -> tuple[float, float]:
    """Best µs per call of the native add and, inside a tape tracking nothing, of ``ops.add``
    (or of ``x + x`` with ``operator``) on backend ``name`` (active)."""
    x = ops.ones((4, 4), dtype="float32")
    native = native_add(name)
    call = (lambda: x + x) if operator else (lambda: ops.add(x, x))
    t_native, t_ember = float("inf"), float("inf")
    for _ in range(3):
        t_native = min(t_native, _time(lambda: native(x, x)))
        with ember.GradientTape():
            t_ember = min(t_ember, _time(call))
    return t_native, t_ember


def main() -> None:
    print(f"{'backend':8} {'native µs':>10} {'ember µs':>10} {'overhead µs':>12} {'ratio':>6}")
    for name in backends.available():
        ember.set_backend(name)
        t_native, t_ember = _add_times(name)
        print(f"{name:8} {t_native:10.3f} {t_ember:10.3f} {t_ember - t_native:12.3f} {t_ember / t_native:6.2f}")
    print(f"\ninside a GradientTape (nothing tracked)\n{'backend':8} {'call':14} {'native µs':>10} {'ember µs':>10} "
          f"{'overhead µs':>12} {'ratio':>6}")
    for name in (n for n in backends.available() if n in ("numpy", "mlx")):
        ember.set_backend(name)
        for label, operator in [("ops.add(x, x)", False)] + ([("x + x", True)] if name == "mlx" else []):
            t_native, t_ember = _recorded_add_times(name, operator)
            print(f"{name:8} {label:14} {t_native:10.3f} {t_ember:10.3f} {t_ember - t_native:12.3f} "
                  f"{t_ember / t_native:6.2f}")


if __name__ == "__main__":
    main()
