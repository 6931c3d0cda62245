"""Autodiff speed: Ember's NumPy engine vs hand-written NumPy, and the tape's per-op cost.

Run: ``python benchmarks/autodiff.py``. Side by side in one process, prints medians
and ratios (never part of the test suite):

1. the gradient of an MLP 784-256-256-10 softmax cross-entropy loss at batch 128 in
   float32 on NumPy: an Ember ``GradientTape`` vs a hand-written forward/backward in
   NumPy, vs HIPS ``autograd`` when it is importable. Target: Ember <= 1.2x hand-written.
2. the tape's overhead per recorded op: a chain of 1000 tiny ops (``x * 1.0001 + 0.5``
   alternating on a 4-element float32 array) with and without a recording tape, and the
   gradient of that chain, for each installed backend (torch: autograd's own overhead;
   MLX: lazy graph construction, so the forward timing excludes evaluation).

Both sides of each comparison are timed in alternation; the table shows the median and
the minimum (the steadier statistic when other processes share the CPU). On a busy
2-core machine a multi-threaded BLAS thrashes: compare with ``OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import ember
from ember import backends, ops
from ember.autodiff import GradientTape

BATCH, SIZES = 128, (784, 256, 256, 10)
REPEAT = 40
CHAIN = 1000


def _interleaved(fns, repeat=REPEAT, warmup=3) -> list[list[float]]:
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


def _interleaved_ms(fns, repeat=REPEAT, warmup=3) -> list[float]:
    """Median ms per call of each function (see :func:`_interleaved`)."""
    return [statistics.median(times) * 1e3 for times in _interleaved(fns, repeat, warmup)]


def _mlp_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)
    labels = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], size=BATCH)]
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        params.append((rng.normal(size=(fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32))
        params.append(np.zeros(fan_out, dtype=np.float32))
    return x, labels, params


def ember_grad(x, labels, params):
    with GradientTape() as tape:
        tape.watch(params)
        w1, b1, w2, b2, w3, b3 = params
        h = ops.nn.relu(ops.add(ops.matmul(x, w1), b1))
        h = ops.nn.relu(ops.add(ops.matmul(h, w2), b2))
        logits = ops.add(ops.matmul(h, w3), b3)
        loss = ops.negative(ops.mean(ops.sum(ops.multiply(ops.nn.log_softmax(logits), labels), axis=-1)))
    return loss, tape.gradient(loss, params)


def handwritten_grad(x, labels, params):
    w1, b1, w2, b2, w3, b3 = params
    z1 = x @ w1 + b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ w2 + b2
    h2 = np.maximum(z2, 0)
    logits = h2 @ w3 + b3
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -np.mean(np.sum(log_p * labels, axis=1))
    d_logits = (np.exp(log_p) - labels) / x.shape[0]
    dw3, db3 = h2.T @ d_logits, d_logits.sum(axis=0)
    dz2 = (d_logits @ w3.T) * (z2 > 0)
    dw2, db2 = h1.T @ dz2, dz2.sum(axis=0)
    dz1 = (dz2 @ w2.T) * (z1 > 0)
    dw1, db1 = x.T @ dz1, dz1.sum(axis=0)
    return loss, [dw1, db1, dw2, db2, dw3, db3]


def autograd_grad_fn():
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return None

    def loss(params, x, labels):
        w1, b1, w2, b2, w3, b3 = params
        h = anp.maximum(anp.dot(x, w1) + b1, 0)
        h = anp.maximum(anp.dot(h, w2) + b2, 0)
        logits = anp.dot(h, w3) + b3
        shifted = logits - anp.max(logits, axis=1, keepdims=True)
        log_p = shifted - anp.log(anp.sum(anp.exp(shifted), axis=1, keepdims=True))
        return -anp.mean(anp.sum(log_p * labels, axis=1))

    grad = autograd.value_and_grad(loss)
    return lambda x, labels, params: grad(params, x, labels)


def mlp_table() -> None:
    ember.set_backend("numpy")
    x, labels, params = _mlp_data()
    loss_e, grads_e = ember_grad(x, labels, params)
    loss_h, grads_h = handwritten_grad(x, labels, params)
    for a, b in zip(grads_e, grads_h):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=1e-6)  # float32, different summation order
    names = ["hand-written NumPy", "Ember GradientTape"]
    fns = [lambda: handwritten_grad(x, labels, params), lambda: ember_grad(x, labels, params)]
    hips = autograd_grad_fn()
    if hips is not None:
        names.append("HIPS autograd")
        fns.append(lambda: hips(x, labels, list(params)))
    runs = _interleaved(fns)
    medians = [statistics.median(t) * 1e3 for t in runs]
    minima = [min(t) * 1e3 for t in runs]
    print(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, float32, NumPy: loss + gradient ({REPEAT} runs)")
    print(f"  {'':22} {'median ms':>10} {'ratio':>7} {'min ms':>9} {'ratio':>7}")
    for name, med, low in zip(names, medians, minima):
        print(f"  {name:22} {med:10.3f} {med / medians[0]:6.2f}x {low:9.3f} {low / minima[0]:6.2f}x")
    print("  (ratios are vs hand-written; the min is the steadier statistic on a loaded machine)")
    if hips is None:
        print("  (HIPS autograd not installed: pip install autograd)")


def _chain(x):
    for i in range(CHAIN // 2):
        x = ops.add(ops.multiply(x, 1.0001), 0.5)
    return x


def chain_table() -> None:
    print(f"\nTape overhead: a chain of {CHAIN} tiny ops (float32, 4 elements)")
    print(f"  {'backend':8} {'no tape µs/op':>14} {'recording µs/op':>16} {'overhead µs/op':>15} "
          f"{'gradient µs/op':>15}")
    for name in backends.available():
        ember.set_backend(name)
        x = ops.ones((4,), dtype="float32")

        def plain():
            out = _chain(x)
            if name == "mlx":
                import mlx.core as mx

                mx.eval(out)

        def recorded():
            with GradientTape() as tape:
                tape.watch(x)
                out = _chain(x)
            return tape, out

        def forward_only():
            tape, out = recorded()
            if name == "mlx":
                import mlx.core as mx

                mx.eval(out)

        def with_gradient():
            tape, out = recorded()
            grad = tape.gradient(out, x)
            ops.to_numpy(grad)

        times = _interleaved_ms([plain, forward_only, with_gradient], repeat=9, warmup=1)
        t_plain, t_tape, t_grad = (t * 1e3 / CHAIN for t in times)
        print(f"  {name:8} {t_plain:14.2f} {t_tape:16.2f} {t_tape - t_plain:15.2f} {t_grad - t_tape:15.2f}")


def main() -> None:
    mlp_table()
    chain_table()


if __name__ == "__main__":
    main()
