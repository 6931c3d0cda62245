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
3. vectorized Jacobians: ``batch_jacobian`` and ``jacobian`` of ``tanh(x @ w)`` for
   ``x`` (64, 32) -> (64, 128), against the per-row loop the tape used before
   (``_vjp_rows`` without the engine's batched VJP) and against the backend's own
   vectorized transform: ``torch.func.vmap(torch.func.jacrev(f))`` on torch, ``mx.vmap``
   of ``mx.vjp`` on MLX. Target on torch: batch_jacobian within 2x of torch.func.

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
    for _ in range(CHAIN // 2):
        x = ops.add(ops.multiply(x, 1.0001), 0.5)
    return x


def _chain_row(name: str) -> tuple[float, float, float]:
    """µs per op of the chain on backend ``name``: no tape, recording, recording plus gradient."""
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
    return t_plain, t_tape, t_grad


def chain_table() -> None:
    print(f"\nTape overhead: a chain of {CHAIN} tiny ops (float32, 4 elements)")
    print(f"  {'backend':8} {'no tape µs/op':>14} {'recording µs/op':>16} {'overhead µs/op':>15} "
          f"{'gradient µs/op':>15}")
    for name in backends.available():
        ember.set_backend(name)
        t_plain, t_tape, t_grad = _chain_row(name)
        print(f"  {name:8} {t_plain:14.2f} {t_tape:16.2f} {t_tape - t_plain:15.2f} {t_grad - t_tape:15.2f}")


JAC_BATCH, JAC_IN, JAC_OUT = 64, 32, 128
FULL_BATCH = 8  # the full Jacobian has batch * 128 rows: 1024 here


def _jacobian_inputs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(JAC_BATCH, JAC_IN)).astype(np.float32)
    w = (rng.normal(size=(JAC_IN, JAC_OUT)) / np.sqrt(JAC_IN)).astype(np.float32)
    return x, w


def _ember_jacobian(x, w, kind: str, vectorized: bool):
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ops.tanh(ops.matmul(x, w))
    engine = tape._engine
    saved = getattr(type(engine), "batched_vjp", None)
    if not vectorized and saved is not None:
        engine.batched_vjp = lambda *args, **kwargs: NotImplemented  # the per-row loop
    result = tape.batch_jacobian(y, x) if kind == "batch" else tape.jacobian(y, x)
    ops.to_numpy(result)
    return result


def _native_jacobian(name: str, kind: str):
    """The backend's own vectorized Jacobian of the same function, or None."""
    if name == "torch":
        import torch

        def f_single(xi, w):
            return torch.tanh(xi @ w)

        if kind == "batch":
            jac = torch.func.vmap(torch.func.jacrev(f_single), in_dims=(0, None))
            return lambda x, w: jac(x, w)
        return lambda x, w: torch.func.jacrev(lambda x: torch.tanh(x @ w))(x)
    if name == "mlx":
        import mlx.core as mx

        def rows(x, w, seeds):
            return mx.vmap(lambda ct: mx.vjp(lambda x: mx.tanh(x @ w), [x], [ct])[1][0])(seeds)

        if kind == "batch":
            seeds = mx.broadcast_to(mx.eye(JAC_OUT)[:, None, :], (JAC_OUT, JAC_BATCH, JAC_OUT))

            def run(x, w):
                out = mx.transpose(rows(x, w, seeds), (1, 0, 2))
                mx.eval(out)
                return out
            return run
        seeds = mx.eye(FULL_BATCH * JAC_OUT).reshape(FULL_BATCH * JAC_OUT, FULL_BATCH, JAC_OUT)

        def run_full(x, w):
            out = rows(x, w, seeds)
            mx.eval(out)
            return out
        return run_full
    return None


def jacobian_table() -> None:
    print(f"\nJacobians of tanh(x @ w), float32: batch_jacobian for x ({JAC_BATCH}, {JAC_IN}) -> "
          f"({JAC_BATCH}, {JAC_OUT}), jacobian for x ({FULL_BATCH}, {JAC_IN}) -> ({FULL_BATCH}, {JAC_OUT})\n"
          "  (median ms; ratios vs the backend's own vectorized transform where it has one)")
    print(f"  {'backend':8} {'kind':15} {'per-row loop':>13} {'Ember':>9} {'native':>9} {'Ember/native':>13} "
          f"{'loop/Ember':>11}")
    x_np, w_np = _jacobian_inputs()
    for name in backends.available():
        ember.set_backend(name)
        for kind in ("batch", "full"):
            x = ops.convert_to_tensor(x_np if kind == "batch" else x_np[:FULL_BATCH])
            w = ops.convert_to_tensor(w_np)
            label = "batch_jacobian" if kind == "batch" else "jacobian"
            expected = ops.to_numpy(_ember_jacobian(x, w, kind, vectorized=False))
            np.testing.assert_allclose(ops.to_numpy(_ember_jacobian(x, w, kind, vectorized=True)), expected,
                                       rtol=1e-5, atol=1e-6)
            fns = [lambda x=x, w=w, kind=kind: _ember_jacobian(x, w, kind, False),
                   lambda x=x, w=w, kind=kind: _ember_jacobian(x, w, kind, True)]
            native = _native_jacobian(name, kind)
            if native is not None:
                got = np.asarray(native(x, w))
                np.testing.assert_allclose(got.reshape(expected.shape), expected, rtol=1e-5, atol=1e-6)
                fns.append(lambda native=native, x=x, w=w: native(x, w))
            repeat = 5 if name == "numpy" else 15
            times = _interleaved_ms(fns, repeat=repeat, warmup=1)
            loop, vec = times[0], times[1]
            nat = times[2] if native is not None else float("nan")
            print(f"  {name:8} {label:15} {loop:13.2f} {vec:9.2f} {nat:9.2f} {vec / nat:12.2f}x {loop / vec:10.2f}x")


def main() -> None:
    mlp_table()
    chain_table()
    jacobian_table()


if __name__ == "__main__":
    main()
