"""Memory and fixed costs: Ember vs the hand-written equivalent, each case in a fresh process.

Run: ``python benchmarks/memory.py`` (every installed backend, every case) or
``python benchmarks/memory.py --backend torch --case train``. Never part of the test suite.

Method (Linux): every measurement runs in its own ``python`` process, so no case inherits another's
allocator caches or freed-but-kept pages. The child imports what the case uses, makes its data,
then resets the kernel's peak-RSS counter (writing ``5`` to ``/proc/self/clear_refs`` sets
``VmHWM`` to the current ``VmRSS``) and records the baseline ``VmRSS``. After the case,
``VmHWM - baseline`` is its peak above that level and ``VmRSS - baseline`` what it retains, read
*before* any ``gc.collect()`` (memory kept alive by a reference cycle counts as retained; the
column after ``gc.collect()`` shows what a collection would give back). MLX keeps freed buffers
in a cache of its own: the retained columns are read after ``mx.clear_cache()``.

Cases:

* ``train``: the 33.6M-parameter MLP 4096-4096-4096-10 (134 MB of float32 weights), batch 256,
  Adam, ``STEPS`` steps, from building the model to the end of training: Ember ``fit`` vs a raw
  loop (torch: ``torch.nn`` + ``torch.optim.Adam``; MLX: ``mlx.nn`` with the step under
  ``mx.compile`` and Adam written out; NumPy: forward, backward and Adam written out in place),
  and Keras 3 (torch backend) ``fit`` as a reference column on torch. Target: Ember <= 1.05x raw.
* ``build``: ``model.build(seed=0)`` of that MLP: peak above the baseline / the weights' bytes
  (a build that holds no second copy peaks at about 1.0x).
* ``load_model`` / ``load_weights``: the MLP saved with ``model.save`` (file written by a separate
  process), loaded into a fresh process: peak / the bytes loaded (the file's arrays), and the
  memory retained after return beyond the loaded state, before and after ``gc.collect()``.
  ``load_weights`` loads into a built model (its old weights are freed as the new ones arrive).
  Target: peak <= 1.1x, nothing retained.
* ``step``: per-step time of a one-layer model (``Dense(10)`` on 32 features, batch 32) and a
  16-layer one (``Dense(32)`` x 16), Ember ``fit`` vs the raw loop (torch: ``torch.optim.Adam``;
  MLX: ``mlx.optimizers.Adam(bias_correction=True)``, Keras's Adam, with the step under
  ``mx.compile``; NumPy has no raw loop here), in one process, interleaved (the order reversed
  each round): the marginal cost of a step, from the minimum CPU times (``process_time``, one
  thread) of ``REPEAT`` calls of one and of ``STEP_BATCHES`` steps. Target one layer <= 1.1x. The
  same calls give each side's fixed cost per call (a one-step call minus one step: for ``fit``
  its argument checks, data adapter, callbacks and state ownership; for the raw loop its own
  batching and bookkeeping).
* ``fixed``: ``fit()``'s fixed cost on W1's MLP 784-256-256-10 (batch 128) and on the 33.6M MLP
  (batch 256), Adam, one process per backend, variants interleaved (their order rotating): a call
  of one step, timed from the call to the start of its step ("to step") and from the end of its
  step to the return ("after"): their sum is the whole call minus its step. Ember ``fit`` next to
  the raw loop above (NumPy's written out for these sizes) and to ``fit`` with the first batch
  checked by a whole eager forward pass (what ``fit`` did before ``ember.training.first_batch``:
  ``Trainer.check_batch`` in place of ``check_first_batch``), minimum over the calls.

Run with ``OMP_NUM_THREADS=1`` when other processes share the cores.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

WIDTH, CLASSES, BATCH = 4096, 10, 256
STEPS = {"torch": 3, "numpy": 3, "mlx": 2}  # MLX's Linux CPU wheel uses a reference BLAS: keep it short
CASES = ("train", "build", "load_model", "load_weights", "step", "fixed")
REPEAT = 40
STEP_BATCHES = 20
FIXED_MODELS = {"W1": ((784, 256, 256, 10), 128), "MLP33M": ((WIDTH, WIDTH, WIDTH, CLASSES), BATCH)}
FIXED_REPEAT = {"W1": 30, "MLP33M": {"torch": 5, "numpy": 4, "mlx": 2}}  # MLX's reference BLAS: ~20 s a step
MIB = 1024.0 * 1024.0


# ----------------------------------------------------------------------------- measuring
def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field} (the memory cases need Linux)")


class Meter:
    """Peak and retained resident memory (MiB) above the level at construction (see the module docstring)."""

    def __init__(self) -> None:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # VmHWM := VmRSS
        self.base = _status_kib("VmRSS")

    def peak(self) -> float:
        return (_status_kib("VmHWM") - self.base) / 1024.0

    def retained(self) -> float:
        return (_status_kib("VmRSS") - self.base) / 1024.0


def _clear_backend_cache(backend: str) -> None:
    if backend == "mlx":
        import mlx.core as mx

        mx.clear_cache()


# ----------------------------------------------------------------------------- the model
def _data(backend: str) -> tuple:
    rng = np.random.default_rng(0)
    n = BATCH * STEPS[backend]
    x = rng.normal(size=(n, WIDTH)).astype(np.float32)
    return _native(backend, x, rng.integers(0, CLASSES, size=n).astype(np.int64))


def _native(backend: str, x: np.ndarray, y: np.ndarray) -> tuple:
    """``x`` and ``y`` as the backend's arrays (MLX's evaluated), made before any measurement."""
    if backend == "torch":
        import torch

        return torch.from_numpy(x), torch.from_numpy(y)
    if backend == "mlx":
        import mlx.core as mx

        x, y = mx.array(x), mx.array(y)
        mx.eval(x, y)
    return x, y


def _ember_mlp(build: bool = True):
    import ember
    from ember import layers

    model = ember.Sequential([ember.Input((WIDTH,)), layers.Dense(WIDTH, activation="relu"),
                              layers.Dense(WIDTH, activation="relu"), layers.Dense(CLASSES)])
    if build:
        model.build(seed=0)
    return model


def _compile(model) -> None:
    import ember

    model.compile(optimizer=ember.optimizers.Adam(1e-3, epsilon=1e-7),
                  loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), seed=0)


def _warm_imports(backend: str) -> None:
    """Import (and run once on a tiny model) what the variants use, before the baseline."""
    import ember
    from ember import layers

    ember.set_backend(backend)
    tiny = ember.Sequential([ember.Input((4,)), layers.Dense(4, activation="relu"), layers.Dense(2)])
    tiny.build(seed=0)
    _compile(tiny)
    tiny.fit(np.zeros((8, 4), "float32"), np.zeros(8, "int64"), batch_size=4, verbose=0)
    with tempfile.TemporaryDirectory() as folder:  # h5py and HDF5's own first-use allocations
        tiny.save(os.path.join(folder, "tiny.h5"))
        ember.load_model(os.path.join(folder, "tiny.h5")).load_weights(os.path.join(folder, "tiny.h5"))
    if backend == "torch":
        import torch

        warm = torch.nn.Parameter(torch.zeros(1))
        warm.grad = torch.zeros(1)
        torch.optim.Adam([warm]).step()
    if backend == "mlx":
        import mlx.nn  # noqa: F401


def _train_ember(backend: str, x, y) -> float:
    """Build, compile and fit; returns the ms from calling ``fit`` to the start of its first step."""
    import ember

    class FirstStep(ember.callbacks.Callback):
        at = None

        def on_train_batch_begin(self, batch, logs=None):
            if FirstStep.at is None:
                FirstStep.at = time.perf_counter()

    model = _ember_mlp()
    _compile(model)
    start = time.perf_counter()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False, callbacks=[FirstStep()])
    return (FirstStep.at - start) * 1e3


def _train_torch(x, y) -> None:
    import torch

    nn = torch.nn
    model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH), nn.ReLU(),
                          nn.Linear(WIDTH, CLASSES))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    for start in range(0, x.shape[0], BATCH):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[start:start + BATCH]), y[start:start + BATCH])
        loss.backward()
        optimizer.step()


def _train_mlx(x, y) -> None:
    import mlx.core as mx
    import mlx.nn as mnn
    from mlx.utils import tree_map

    model = mnn.Sequential(mnn.Linear(WIDTH, WIDTH), mnn.ReLU(), mnn.Linear(WIDTH, WIDTH), mnn.ReLU(),
                           mnn.Linear(WIDTH, CLASSES))

    def loss_of(params, xb, yb):
        model.update(params)
        return mnn.losses.cross_entropy(model(xb), yb, reduction="mean")

    grad_fn = mx.value_and_grad(loss_of)
    b1, b2, eps, lr = 0.9, 0.999, 1e-7, 1e-3

    def step(state, xb, yb):
        params, m, v, t = state["params"], state["m"], state["v"], state["t"] + 1
        loss, grads = grad_fn(params, xb, yb)
        alpha = lr * mx.sqrt(1 - b2 ** t.astype(mx.float32)) / (1 - b1 ** t.astype(mx.float32))
        m = tree_map(lambda mi, g: mi + (g - mi) * (1 - b1), m, grads)
        v = tree_map(lambda vi, g: vi + (g * g - vi) * (1 - b2), v, grads)
        params = tree_map(lambda p, mi, vi: p - alpha * mi / (mx.sqrt(vi) + eps), params, m, v)
        return {"params": params, "m": m, "v": v, "t": t}, loss

    params = model.parameters()
    state = {"params": params, "m": tree_map(mx.zeros_like, params), "v": tree_map(mx.zeros_like, params),
             "t": mx.array(0, dtype=mx.int32)}
    del params
    compiled = mx.compile(step)
    for start in range(0, x.shape[0], BATCH):
        state, loss = compiled(state, x[start:start + BATCH], y[start:start + BATCH])
        mx.eval(state, loss)


def _train_numpy(x, y) -> None:
    """Forward, backward and Adam written out, updates in place (what a careful NumPy user writes)."""
    rng = np.random.default_rng(0)
    sizes = (WIDTH, WIDTH, WIDTH, CLASSES)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params += [rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32), np.zeros(fan_out, np.float32)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    b1, b2, eps, lr = 0.9, 0.999, 1e-7, 1e-3
    for t, start in enumerate(range(0, x.shape[0], BATCH), start=1):
        xb, yb = x[start:start + BATCH], y[start:start + BATCH]
        w1, c1, w2, c2, w3, c3 = params
        z1 = xb @ w1 + c1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ w2 + c2
        h2 = np.maximum(z2, 0)
        logits = h2 @ w3 + c3
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        rows = np.arange(len(yb))
        d = np.exp(log_p)
        d[rows, yb] -= 1.0
        d /= len(yb)
        grads = [None] * 6
        grads[4], grads[5] = h2.T @ d, d.sum(axis=0)
        dz2 = (d @ w3.T) * (z2 > 0)
        grads[2], grads[3] = h1.T @ dz2, dz2.sum(axis=0)
        dz1 = (dz2 @ w2.T) * (z1 > 0)
        grads[0], grads[1] = xb.T @ dz1, dz1.sum(axis=0)
        del z1, h1, z2, h2, dz1, dz2
        alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        for i in range(6):
            g = grads[i]
            grads[i] = None
            m[i] += (g - m[i]) * (1 - b1)
            v[i] += (g * g - v[i]) * (1 - b2)
            params[i] -= (alpha * m[i] / (np.sqrt(v[i]) + eps)).astype(np.float32)
            del g


def _train_keras(x, y) -> None:
    import keras

    model = keras.Sequential([keras.Input((WIDTH,)), keras.layers.Dense(WIDTH, activation="relu"),
                              keras.layers.Dense(WIDTH, activation="relu"), keras.layers.Dense(CLASSES)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3, epsilon=1e-7),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x.numpy(), y.numpy(), batch_size=BATCH, epochs=1, verbose=0, shuffle=False)


def train_child(backend: str, variant: str) -> dict:
    if variant == "keras":
        os.environ["KERAS_BACKEND"] = "torch"
        import keras  # noqa: F401  (imported before the baseline)
    _warm_imports(backend)
    x, y = _data(backend)
    meter = Meter()
    to_first_step = None
    if variant == "ember":
        to_first_step = _train_ember(backend, x, y)
    elif variant == "keras":
        _train_keras(x, y)
    else:
        {"torch": _train_torch, "mlx": _train_mlx, "numpy": _train_numpy}[backend](x, y)
    return {"peak": meter.peak(), "to_first_step": to_first_step}


# ------------------------------------------------------------------- build and loading
def _state_mib(model) -> float:
    import optree

    from ember import ops

    return sum(int(np.prod(ops.shape(a))) * 4 for a in optree.tree_leaves(model.state)) / MIB


def build_child(backend: str) -> dict:
    _warm_imports(backend)
    model = _ember_mlp(build=False)
    meter = Meter()
    model.build(seed=0)
    peak, retained = meter.peak(), meter.retained()
    return {"peak": peak, "retained": retained, "loaded": _state_mib(model)}


def save_child(path: str) -> dict:
    import ember

    ember.set_backend("numpy")
    model = _ember_mlp()
    _compile(model)
    model.save(path, include_optimizer=False)
    return {"file": os.path.getsize(path) / MIB}


def load_child(backend: str, kind: str, path: str) -> dict:
    import ember

    _warm_imports(backend)
    model = None
    if kind == "load_weights":
        model = _ember_mlp()
        _clear_backend_cache(backend)
    meter = Meter()
    if kind == "load_model":
        model = ember.load_model(path, compile=False)
    else:
        model.load_weights(path)
    peak = meter.peak()
    _clear_backend_cache(backend)
    loaded = _state_mib(model)
    retained = meter.retained() - (loaded if kind == "load_model" else 0.0)
    gc.collect()
    _clear_backend_cache(backend)
    after_gc = meter.retained() - (loaded if kind == "load_model" else 0.0)
    return {"peak": peak, "loaded": loaded, "retained": retained, "retained_after_gc": after_gc}


# ----------------------------------------------------------------------- fixed costs
def _small_data(backend: str, features: int, n: int) -> tuple:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, features)).astype(np.float32)
    y = rng.integers(0, 10, size=n).astype(np.int64)
    if backend == "torch":
        import torch

        return torch.from_numpy(x), torch.from_numpy(y)
    if backend == "mlx":
        import mlx.core as mx

        return mx.array(x), mx.array(y)
    return x, y


def _small_ember(depth: int):
    import ember
    from ember import layers

    stack = [ember.Input((32,))] + [layers.Dense(32, activation="relu") for _ in range(depth - 1)]
    model = ember.Sequential(stack + [layers.Dense(10)])
    model.build(seed=0)
    _compile(model)
    return model


def _small_raw(backend: str, depth: int):
    """``run(x, y, batch)``: one epoch of the raw loop over the data (its own call overhead included)."""
    if backend == "torch":
        import torch

        nn = torch.nn
        mods = [m for _ in range(depth - 1) for m in (nn.Linear(32, 32), nn.ReLU())] + [nn.Linear(32, 10)]
        model = nn.Sequential(*mods)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
        loss_fn = nn.CrossEntropyLoss()

        def run(x, y, batch):
            total = torch.zeros(())
            for start in range(0, x.shape[0], batch):
                optimizer.zero_grad(set_to_none=True)
                loss = loss_fn(model(x[start:start + batch]), y[start:start + batch])
                loss.backward()
                optimizer.step()
                total += loss.detach()
            return float(total)

        return run
    if backend == "mlx":
        import mlx.core as mx
        import mlx.nn as mnn

        mods = [m for _ in range(depth - 1) for m in (mnn.Linear(32, 32), mnn.ReLU())] + [mnn.Linear(32, 10)]
        step, state = _mlx_compiled_step(mnn.Sequential(*mods))

        def run(x, y, batch):
            total = mx.array(0.0)
            for start in range(0, x.shape[0], batch):
                total = total + step(x[start:start + batch], y[start:start + batch])
                mx.eval(state, total)
            return total.item()

        return run
    return None  # NumPy: no hand-written loop for these shapes (the train case has NumPy's)


def step_child(backend: str) -> dict:
    """Per step and per call, Ember fit vs the raw loop, from calls of 1 and of ``STEP_BATCHES`` steps.

    The marginal cost of a step is ``(T(N) - T(1)) / (N - 1)``, what a call costs beyond its steps
    is ``T(1)`` minus one step: the two are separated, not averaged into each other.
    """
    _warm_imports(backend)
    out: dict = {}
    for depth in (1, 16):
        out.update(_step_costs(backend, depth))
    return out


def _step_costs(backend: str, depth: int) -> dict:
    x, y = _small_data(backend, 32, 32 * STEP_BATCHES)
    model = _small_ember(depth)
    raw = _small_raw(backend, depth)
    one = (x[:32], y[:32])
    fns = {
        "ember_n": lambda: model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False),
        "ember_1": lambda: model.fit(one[0], one[1], batch_size=32, epochs=1, verbose=0, shuffle=False),
    }
    if raw is not None:
        fns["raw_n"] = lambda: raw(x, y, 32)
        fns["raw_1"] = lambda: raw(one[0], one[1], 32)
    for fn in fns.values():
        fn()
    times: dict = {name: [] for name in fns}
    order = list(fns.items())
    for _ in range(REPEAT):
        order.reverse()  # each side runs first and last in turn: no side always follows the other
        for name, fn in order:
            start = time.process_time()
            fn()
            times[name].append(time.process_time() - start)
    # CPU time (one thread: OMP_NUM_THREADS=1), minimum over the calls: the steadiest measure on a
    # machine other processes share (wall time there counts the time the process waits).
    best = {name: min(row) * 1e3 for name, row in times.items()}
    out = {}
    for side in ("ember", "raw"):
        if f"{side}_n" in best:
            step = (best[f"{side}_n"] - best[f"{side}_1"]) / (STEP_BATCHES - 1)
            out[f"{side}_{depth}"] = step
            out[f"{side}_{depth}_call"] = best[f"{side}_1"] - step
    return out


def _mlx_compiled_step(model):
    """The raw MLX loop's step for ``model`` and the state it updates (to ``mx.eval``): the mean
    cross-entropy's ``value_and_grad``, then Adam, under ``mx.compile`` with the model and optimizer
    state as its inputs and outputs."""
    import mlx.core as mx
    import mlx.nn as mnn
    import mlx.optimizers as mopt

    # bias_correction=True: Adam as Keras, torch and Ember compute it (MLX's default leaves it out)
    optimizer = mopt.Adam(1e-3, eps=1e-7, bias_correction=True)
    grad_fn = mnn.value_and_grad(model, lambda m, xb, yb: mnn.losses.cross_entropy(m(xb), yb, reduction="mean"))
    state = [model.state, optimizer.state]

    def step(xb, yb):
        loss, grads = grad_fn(model, xb, yb)
        optimizer.update(model, grads)
        return loss

    return mx.compile(step, inputs=state, outputs=state), state


# ------------------------------------------------------------------- fit()'s fixed cost
def _fixed_data(backend: str, features: int, batch: int) -> tuple:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(batch, features)).astype(np.float32)
    return _native(backend, x, rng.integers(0, 10, size=batch).astype(np.int64))


def _fixed_ember(backend: str, sizes: tuple, eager_check: bool):
    """``run(x, y, batch, marks)``: one Ember ``fit`` call; ``marks`` gets the start of its first step
    and the end of its last. ``eager_check``: the first batch checked by a whole forward (as before)."""
    import ember
    from ember import layers

    stack = [ember.Input((sizes[0],))] + [layers.Dense(n, activation="relu") for n in sizes[1:-1]]
    model = ember.Sequential(stack + [layers.Dense(sizes[-1])])
    model.build(seed=0)
    _compile(model)
    if eager_check:
        trainer = model._training.trainer
        trainer.check_first_batch = trainer.check_batch

    class Marks(ember.callbacks.Callback):
        marks: dict = {}

        def on_train_batch_begin(self, batch, logs=None):
            self.marks.setdefault("begin", time.perf_counter())

        def on_train_batch_end(self, batch, logs=None):
            self.marks["end"] = time.perf_counter()

    callback = Marks()

    def run(x, y, batch, marks):
        callback.marks = marks
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False, callbacks=[callback])

    return run


def _numpy_mlp(sizes: tuple):
    """NumPy's raw loop for an MLP of ``sizes``: forward, backward and Adam written out, in place."""
    rng = np.random.default_rng(0)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params += [rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32), np.zeros(fan_out, np.float32)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    b1, b2, eps, lr = 0.9, 0.999, 1e-7, 1e-3
    t = [0]

    def step(xb, yb):
        t[0] += 1
        inputs, pre = [xb], []
        for i in range(0, len(params), 2):
            z = inputs[-1] @ params[i] + params[i + 1]
            pre.append(z)
            inputs.append(np.maximum(z, 0) if i + 2 < len(params) else z)
        logits = inputs.pop()
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss = -log_p[np.arange(len(yb)), yb].mean()
        d = np.exp(log_p)
        d[np.arange(len(yb)), yb] -= 1.0
        d /= len(yb)
        alpha = lr * np.sqrt(1 - b2 ** t[0]) / (1 - b1 ** t[0])
        for i in range(len(params) - 2, -1, -2):
            layer_in = inputs[i // 2]
            grads = {i: layer_in.T @ d, i + 1: d.sum(axis=0)}
            if i:
                d = (d @ params[i].T) * (pre[i // 2 - 1] > 0)
            for j, g in grads.items():
                m[j] += (g - m[j]) * (1 - b1)
                v[j] += (g * g - v[j]) * (1 - b2)
                params[j] -= (alpha * m[j] / (np.sqrt(v[j]) + eps)).astype(np.float32)
        return loss

    def run(x, y, batch, marks):
        total = 0.0
        for start in range(0, x.shape[0], batch):
            marks.setdefault("begin", time.perf_counter())
            total += step(x[start:start + batch], y[start:start + batch])
            marks["end"] = time.perf_counter()
        return float(total)

    return run


def _fixed_raw(backend: str, sizes: tuple):
    """``run(x, y, batch, marks)``: the hand-written loop for an MLP of ``sizes`` (see ``_small_raw``)."""
    if backend == "numpy":
        return _numpy_mlp(sizes)
    pairs = list(zip(sizes[:-1], sizes[1:]))
    if backend == "torch":
        import torch

        nn = torch.nn
        mods = [m for a, b in pairs[:-1] for m in (nn.Linear(a, b), nn.ReLU())] + [nn.Linear(*pairs[-1])]
        model = nn.Sequential(*mods)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
        loss_fn = nn.CrossEntropyLoss()

        def run(x, y, batch, marks):
            total = torch.zeros(())
            for start in range(0, x.shape[0], batch):
                marks.setdefault("begin", time.perf_counter())
                optimizer.zero_grad(set_to_none=True)
                loss = loss_fn(model(x[start:start + batch]), y[start:start + batch])
                loss.backward()
                optimizer.step()
                total += loss.detach()
                marks["end"] = time.perf_counter()
            return float(total)

        return run
    import mlx.core as mx
    import mlx.nn as mnn

    mods = [m for a, b in pairs[:-1] for m in (mnn.Linear(a, b), mnn.ReLU())] + [mnn.Linear(*pairs[-1])]
    step, state = _mlx_compiled_step(mnn.Sequential(*mods))

    def run(x, y, batch, marks):
        total = mx.array(0.0)
        for start in range(0, x.shape[0], batch):
            marks.setdefault("begin", time.perf_counter())
            total = total + step(x[start:start + batch], y[start:start + batch])
            mx.eval(state, total)
            marks["end"] = time.perf_counter()
        return total.item()

    return run


def fixed_child(backend: str) -> dict:
    """Per model and variant: the minimum ms from the call to its step, and from the step's end to the
    return, over interleaved one-step calls (see the module docstring)."""
    _warm_imports(backend)
    out: dict = {}
    for name, (sizes, batch) in FIXED_MODELS.items():
        x, y = _fixed_data(backend, sizes[0], batch)
        variants = {"raw": _fixed_raw(backend, sizes), "ember": _fixed_ember(backend, sizes, eager_check=False),
                    "eager_check": _fixed_ember(backend, sizes, eager_check=True)}
        for run in variants.values():  # first calls: tracing, compiling, first-use allocations
            run(x, y, batch, {})
        repeat = FIXED_REPEAT[name]
        repeat = repeat[backend] if isinstance(repeat, dict) else repeat
        rows: dict = {key: {"to_step": [], "after": [], "step": []} for key in variants}
        order = list(variants)
        for turn in range(repeat):
            for key in order[turn % len(order):] + order[:turn % len(order)]:  # each variant in each place
                run = variants[key]
                marks: dict = {}
                start = time.perf_counter()
                run(x, y, batch, marks)
                stop = time.perf_counter()
                rows[key]["to_step"].append(marks["begin"] - start)
                rows[key]["after"].append(stop - marks["end"])
                rows[key]["step"].append(marks["end"] - marks["begin"])
        out[name] = {key: {part: min(values) * 1e3 for part, values in row.items()} for key, row in rows.items()}
        del variants
        gc.collect()
    return out


# ------------------------------------------------------------------------------- harness
def _child(args: list[str]) -> dict:
    result = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                            env=dict(os.environ))
    if result.returncode != 0:
        raise RuntimeError(f"{args}: {result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _run_child(args: list[str]) -> None:
    kind = args[0]
    if kind == "train":
        out = train_child(args[1], args[2])
    elif kind == "build":
        out = build_child(args[1])
    elif kind == "save":
        out = save_child(args[1])
    elif kind in ("load_model", "load_weights"):
        out = load_child(args[1], kind, args[2])
    elif kind == "fixed":
        out = fixed_child(args[1])
    else:
        out = step_child(args[1])
    print(json.dumps(out))


def _ratio(a: float, b: float) -> str:
    return f"{a / b:5.2f}x" if b > 0 else "   - "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", action="append", help="backend(s) to run (default: every installed one)")
    parser.add_argument("--case", action="append", choices=CASES, help="case(s) (default: all)")
    parser.add_argument("--no-keras", action="store_true", help="skip the Keras 3 reference column")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _run_child(args.child)
        return
    import ember

    names = args.backend or ember.backends.available()
    cases = args.case or list(CASES)
    if "train" in cases:
        print(f"train: MLP {WIDTH}-{WIDTH}-{WIDTH}-{CLASSES} (33.6M params), batch {BATCH}, Adam; peak MiB above "
              "the level before the model is built (fresh process each)")
        print(f"{'backend':7} {'steps':>5} {'raw':>8} {'ember':>8} {'ratio':>6} {'fit->1st':>8} {'keras':>8} "
              f"{'ratio':>6}  target 1.05x; fit->1st: ms from calling fit to its first step")
        for backend in names:
            raw = _child(["train", backend, "raw"])["peak"]
            ember_row = _child(["train", backend, "ember"])
            ember_peak = ember_row["peak"]
            line = (f"{backend:7} {STEPS[backend]:5d} {raw:8.1f} {ember_peak:8.1f} {_ratio(ember_peak, raw)} "
                    f"{ember_row['to_first_step']:8.1f}")
            if backend == "torch" and not args.no_keras:
                keras_peak = _child(["train", backend, "keras"])["peak"]
                line += f" {keras_peak:8.1f} {_ratio(keras_peak, raw)}"
            print(line, flush=True)
    if "build" in cases:
        print("\nbuild: model.build(seed=0) of that MLP; peak and retained MiB above the level before, / the weights")
        print(f"{'backend':7} {'weights':>8} {'peak':>8} {'ratio':>6} {'retained':>8}")
        for backend in names:
            row = _child(["build", backend])
            print(f"{backend:7} {row['loaded']:8.1f} {row['peak']:8.1f} {_ratio(row['peak'], row['loaded'])} "
                  f"{row['retained']:8.1f}", flush=True)
    loads = [c for c in cases if c.startswith("load_")]
    if loads:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "mlp.h5")
            size = _child(["save", path])["file"]
            print(f"\nloading: the MLP saved by model.save ({size:.1f} MiB file); peak MiB above the level before / "
                  "the weights loaded; retained beyond the loaded state, before and after gc.collect()")
            print(f"{'backend':7} {'case':12} {'loaded':>8} {'peak':>8} {'ratio':>6} {'retained':>8} {'after gc':>8}"
                  "  target 1.1x, 0")
            for backend in names:
                for kind in loads:
                    row = _child([kind, backend, path])
                    print(f"{backend:7} {kind:12} {row['loaded']:8.1f} {row['peak']:8.1f} "
                          f"{_ratio(row['peak'], row['loaded'])} {row['retained']:8.1f} "
                          f"{row['retained_after_gc']:8.1f}", flush=True)
    if "step" in cases:
        print(f"\nstep: ms per step of fit vs the raw loop (Dense(32) stacks, batch 32; the marginal cost of a step "
              f"from calls of 1 and {STEP_BATCHES} steps, minimum CPU time of {REPEAT} interleaved calls), "
              "and ms per call "
              "beyond its steps (fit()'s fixed cost: checks, data adapter, callbacks, state ownership)")
        print(f"{'backend':7} {'layers':>6} {'raw ms':>8} {'ember ms':>8} {'ratio':>6} {'raw call':>8} {'fit call':>8}"
              "  target 1.1x (1 layer)")
        for backend in names:
            row = _child(["step", backend])
            for depth in (1, 16):
                raw = row.get(f"raw_{depth}")
                raw_call = row.get(f"raw_{depth}_call")
                print(f"{backend:7} {depth:6d} {raw if raw is not None else float('nan'):8.3f} "
                      f"{row[f'ember_{depth}']:8.3f} {_ratio(row[f'ember_{depth}'], raw) if raw else '   - '} "
                      f"{raw_call if raw_call is not None else float('nan'):8.3f} {row[f'ember_{depth}_call']:8.3f}",
                      flush=True)
    if "fixed" in cases:
        _print_fixed(names)


def _print_fixed(names: list[str]) -> None:
    print("\nfixed: fit()'s fixed cost, ms (one-step calls, minimum of interleaved calls): from the call to its "
          "step + from the step's end to the return = the call minus its step; raw = the hand-written loop, "
          "eager check = fit with its first batch checked by a whole forward pass (as before); ember-raw in ms "
          "(a raw loop has next to no fixed cost: a ratio to it says little)")
    print(f"{'backend':7} {'model':7} {'step':>9} {'raw':>7} {'ember':>7} {'(to step':>9} {'after)':>7} "
          f"{'eager chk':>9} {'(to step':>9} {'after)':>7} {'ember-raw':>9} {'before/now':>10}")
    for backend in names:
        result = _child(["fixed", backend])
        for model, row in result.items():
            fixed = {key: part["to_step"] + part["after"] for key, part in row.items()}
            print(f"{backend:7} {model:7} {row['ember']['step']:9.2f} {fixed['raw']:7.2f} {fixed['ember']:7.2f} "
                  f"{row['ember']['to_step']:9.2f} {row['ember']['after']:7.2f} {fixed['eager_check']:9.2f} "
                  f"{row['eager_check']['to_step']:9.2f} {row['eager_check']['after']:7.2f} "
                  f"{fixed['ember'] - fixed['raw']:9.2f} {_ratio(fixed['eager_check'], fixed['ember']):>10}",
                  flush=True)


if __name__ == "__main__":
    main()
