"""Step time of ``fit``'s two update paths: in place under held signals, and into new arrays.

NumPy's and torch's ``fit`` write an ``SGD``/``Adam``/``AdamW`` update into their own arrays under
held signals; a model with constraints, another optimizer, and clipping on NumPy go into new
arrays. This times ``fit`` on an MLP 784-512-512-10 (0.67M float32 params, batch 128) for:

* ``adam``: the in-place write;
* ``adam_constraint``: the same with ``kernel_constraint="max_norm"`` on every layer (the copy path);
* ``rmsprop``: RMSprop (the copy path; torch runs its fused multi-tensor kernels on the copies).

Each case runs in its own process (``--child``), warmed up by one fit, then ``REPEAT`` fits of
``STEPS`` steps; printed: the median and minimum ms per step. Run with ``OMP_NUM_THREADS=1`` when
other processes share the cores. Never part of the test suite.

Example:
    ``python benchmarks/update_paths.py --backend torch --backend numpy``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

CASES = ("adam", "adam_constraint", "rmsprop")
STEPS, REPEAT, BATCH = 20, 5, 128


def _model(case: str):
    import ember
    from ember import layers

    constraint = "max_norm" if case == "adam_constraint" else None
    model = ember.Sequential([ember.Input((784,))] + [
        layers.Dense(units, activation=activation, kernel_constraint=constraint)
        for units, activation in ((512, "relu"), (512, "relu"), (10, None))])
    model.build(seed=0)
    optimizer = ember.optimizers.RMSprop(1e-3) if case == "rmsprop" else ember.optimizers.Adam(1e-3)
    model.compile(optimizer=optimizer, loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def child(backend: str, case: str) -> dict:
    """``{"median_ms", "min_ms"}`` per step of ``case`` on ``backend`` (this process)."""
    import ember

    ember.set_backend(backend)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(STEPS * BATCH, 784)).astype(np.float32)
    y = rng.integers(0, 10, STEPS * BATCH)
    model = _model(case)
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)  # warm-up
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
        times.append((time.perf_counter() - start) / STEPS * 1e3)
    return {"median_ms": statistics.median(times), "min_ms": min(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", action="append", help="numpy and/or torch (default: both)")
    parser.add_argument("--case", action="append", choices=CASES, help="default: all")
    parser.add_argument("--child", nargs=2, metavar=("BACKEND", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    for backend in args.backend or ["numpy", "torch"]:
        for case in args.case or CASES:
            out = subprocess.run([sys.executable, __file__, "--child", backend, case], capture_output=True,
                                 text=True, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{backend:6s} {case:16s} median {result['median_ms']:8.2f} ms/step   "
                  f"min {result['min_ms']:8.2f}")


if __name__ == "__main__":
    main()
