"""Optimizer step speed: one Adam update of an MLP 784-256-256-10's parameters (6 arrays, 269k floats).

Run: ``python benchmarks/optimizers.py``. Side by side in one process, timed in
alternation, prints medians (and minimums) and ratios (never part of the test suite):

* torch: Ember's generic pure path (``apply_gradients``: ~15 ``ember.ops`` calls per
  parameter) vs Ember's torch fast path (``apply_gradients_inplace``: ``torch._foreach_*``
  kernels, in place) vs ``torch.optim.Adam(foreach=True)``. Target: fast path <= 1.05x torch.
* MLX: Ember's generic path under ``mx.compile`` vs a hand-written MLX Adam under
  ``mx.compile`` (both evaluated with ``mx.eval`` each step).

The gradients are fixed arrays (the benchmark times the optimizer only). On a busy
2-core machine pin BLAS threads (``OMP_NUM_THREADS=1``) for steadier numbers.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import ember
from ember import backends, ops, optimizers

SIZES = (784, 256, 256, 10)
REPEAT = 200
LR, B1, B2, EPS = 1e-3, 0.9, 0.999, 1e-7


def _interleaved(fns, repeat=REPEAT, warmup=10) -> list[list[float]]:
    """Seconds per call of each function, timed in alternation so load drifts hit all alike."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    runs: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, times in zip(fns, runs):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return runs


def _mlp_arrays(seed=0):
    rng = np.random.default_rng(seed)
    params, grads = {}, {}
    for i, (fan_in, fan_out) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        params[f"dense_{i}"] = {"kernel": (rng.normal(size=(fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32),
                                "bias": np.zeros(fan_out, np.float32)}
        grads[f"dense_{i}"] = {"kernel": rng.normal(size=(fan_in, fan_out)).astype(np.float32) * 1e-2,
                               "bias": rng.normal(size=fan_out).astype(np.float32) * 1e-2}
    return params, grads


def _tree(tree):
    import optree

    return optree.tree_map(lambda x: ops.convert_to_tensor(np.array(x)), tree)


def _report(title, names, runs, baseline):
    print(f"\n{title}")
    print(f"  {'variant':<50} {'median ms':>10} {'min ms':>9} {'ratio':>7}")
    base = statistics.median(runs[baseline])
    for name, times in zip(names, runs):
        med = statistics.median(times)
        print(f"  {name:<50} {med * 1e3:>10.4f} {min(times) * 1e3:>9.4f} {med / base:>7.2f}x")


def bench_torch():
    import torch

    ember.set_backend("torch")
    params_np, grads_np = _mlp_arrays()
    opt = optimizers.Adam(LR, epsilon=EPS)

    generic = {"params": _tree(params_np), "grads": _tree(grads_np)}
    generic["state"] = opt.init(generic["params"])

    def ember_generic():
        generic["params"], generic["state"] = opt.apply_gradients(generic["grads"], generic["state"],
                                                                  generic["params"])

    fast = {"params": _tree(params_np), "grads": _tree(grads_np)}
    fast["state"] = opt.init(fast["params"])

    def ember_fast():
        fast["params"], fast["state"] = opt.apply_gradients_inplace(fast["grads"], fast["state"], fast["params"])

    import optree

    tensors = [torch.tensor(p) for p in optree.tree_leaves(params_np)]
    for t, g in zip(tensors, optree.tree_leaves(grads_np)):
        t.grad = torch.tensor(g)
    reference = torch.optim.Adam(tensors, lr=LR, eps=EPS, foreach=True)

    def torch_adam():
        reference.step()

    names = ["Ember generic (apply_gradients)", "Ember torch fast path (apply_gradients_inplace)",
             "torch.optim.Adam(foreach=True)"]
    runs = _interleaved([ember_generic, ember_fast, torch_adam])
    _report(f"torch {torch.__version__} (CPU threads: {torch.get_num_threads()}): Adam step, MLP "
            f"{'-'.join(map(str, SIZES))}", names, runs, baseline=2)
    after = [ops.to_numpy(p) for p in optree.tree_leaves(fast["params"])]
    drift = max(float(np.max(np.abs(a - ops.to_numpy(b)))) for a, b in
                zip(after, optree.tree_leaves(generic["params"])))
    print(f"  (fast vs generic after {REPEAT + 10} identical steps: max |difference| = {drift:.2e})")


def bench_mlx():
    import mlx.core as mx
    import optree

    ember.set_backend("mlx")
    params_np, grads_np = _mlp_arrays()
    opt = optimizers.Adam(LR, epsilon=EPS)

    compiled_ember = mx.compile(lambda g, s, p: opt.apply_gradients(g, s, p))
    ember_side = {"params": _tree(params_np), "grads": _tree(grads_np)}
    ember_side["state"] = opt.init(ember_side["params"])

    def ember_compiled():
        ember_side["params"], ember_side["state"] = compiled_ember(ember_side["grads"], ember_side["state"],
                                                                   ember_side["params"])
        mx.eval(ember_side["params"], ember_side["state"])

    def adam(grads, m, v, params, t):
        t = t + 1
        tf = t.astype(mx.float32)
        alpha = LR * mx.sqrt(1 - B2**tf) / (1 - B1**tf)
        new_m = [B1 * mi + (1 - B1) * g for mi, g in zip(m, grads)]
        new_v = [B2 * vi + (1 - B2) * g * g for vi, g in zip(v, grads)]
        new_p = [p - alpha * mi / (mx.sqrt(vi) + EPS) for p, mi, vi in zip(params, new_m, new_v)]
        return new_p, new_m, new_v, t

    compiled_raw = mx.compile(adam)
    raw = {"params": [mx.array(p) for p in optree.tree_leaves(params_np)],
           "grads": [mx.array(g) for g in optree.tree_leaves(grads_np)]}
    raw["m"] = [mx.zeros_like(p) for p in raw["params"]]
    raw["v"] = [mx.zeros_like(p) for p in raw["params"]]
    raw["t"] = mx.array(0, dtype=mx.int32)

    def raw_compiled():
        raw["params"], raw["m"], raw["v"], raw["t"] = compiled_raw(raw["grads"], raw["m"], raw["v"],
                                                                   raw["params"], raw["t"])
        mx.eval(raw["params"], raw["m"], raw["v"], raw["t"])

    names = ["Ember generic under mx.compile", "hand-written MLX Adam under mx.compile"]
    runs = _interleaved([ember_compiled, raw_compiled])
    _report(f"MLX {mx.__version__} ({mx.default_device()}): Adam step, MLP {'-'.join(map(str, SIZES))}",
            names, runs, baseline=1)


def main() -> int:
    available = backends.available()
    if "torch" in available:
        bench_torch()
    else:
        print("torch not installed: skipping the torch comparison")
    if "mlx" in available:
        bench_mlx()
    else:
        print("mlx not installed: skipping the MLX comparison")
    return 0


if __name__ == "__main__":
    sys.exit(main())
