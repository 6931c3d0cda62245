"""Training speed and memory: Ember's ``model.fit`` vs a hand-written loop in the same backend.

Run: ``python benchmarks/training.py`` (every installed backend) or
``python benchmarks/training.py --backend torch --workload W1``. Each backend runs in its
own process; inside it, Ember and the hand-written loop train the same model on the same
data side by side, timed in alternation (so load drifts hit both alike). Never part of the
test suite.

Workloads (Adam, learning rate 1e-3, epsilon 1e-7, shuffled batches, sparse softmax
cross-entropy on logits):

* W1: MLP 784-256-256-10, batch 128;
* W2: LSTM(128) over 32 steps of 16 features, then Dense(10) on the last output, batch 64
  (``ember.layers.LSTM``);
* W3: CNN Conv2D(32, 3, relu) - MaxPooling2D(2) - Conv2D(64, 3, relu) - GlobalAveragePooling2D -
  Dense(10) on 28x28x1, batch 64, channels_last (``ember.layers.Conv2D``);
* S1: W1's MLP written as a Keras-style subclassed model (``class MLP(ember.Model)`` with
  ``__init__``/``call``); here the "raw" column is the same MLP as a functional ``Sequential``,
  so the ratio is the cost of the Keras object model in ``fit`` (target <= 1.1x);
* W4 GPT-mini, W5 ResNet-18-style, W5V ViT-tiny: see ``benchmarks/big_workloads.py`` (sizes,
  and the smaller MLX/NumPy sizes). Their raw torch loop is ``nn.Module`` code with
  ``F.scaled_dot_product_attention``, their raw MLX loop ``mlx.nn`` with ``mx.fast`` attention
  under ``mx.compile``; on torch they also run Keras 3 (torch backend) ``fit`` in the same rotation
  (a "Keras" table), and W4 runs Ember with every decoder block under ``ember.remat`` (a "remat"
  table: step time and peak RSS against plain Ember). ``EMBER_BENCH_BIG_STEPS`` (torch steps per
  epoch, default 3) and ``EMBER_BENCH_BIG_REPEAT`` (timed calls, default 3) size them for a CPU;
  ``python benchmarks/big_workloads.py [W4 W5 W5V]`` prints the activation memory (bytes autograd
  saves for the backward pass) for raw torch, Ember and, on W4, Ember with remat;
* C1: W1's MLP as a model class overriding ``train_step`` with the standard step of the Keras
  guide (``GradientTape`` over ``self(x, training=True)``, ``compute_loss``,
  ``optimizer.apply``, the loss tracker); the "raw" column is the built-in ``fit`` of the
  same MLP, so the ratio is the overhead of running a user's eager step instead of the fused
  pure one (reported, no target: an override trades speed for control, as in Keras).

On torch, W1-W3 also run Ember's ``fit`` with ``compile(jit_compile=True)`` (the whole step
under ``torch.compile``, :mod:`ember.backends.torch.compiled_step`) and the hand-written loop
compiled the way PyTorch's tutorials do it (``torch.compile`` of the forward pass and loss, whose
backward AOTAutograd compiles too, and of ``optimizer.step``), in the same rotation; a third
table gives their times and ratios, and the compile (warm-up) time of each apart: the first
``fit``/epoch's wall time minus a steady epoch's. Targets: compiled Ember beats the raw eager
loop on W1 and W3 and is <= 1.05x the raw compiled loop.

On a GPU (``--device cuda``, torch only) both sides get their data already on the device, the
hand-written loop's model lives there, and Ember's ``fit`` runs with torch's default device set to
it; W1 and W3 also run ``compile(cuda_graphs=True)`` (``graphs`` in the mixed-precision table;
``bf16g``: with ``mixed_bfloat16`` too).
``--batch N`` replaces every workload's batch size (a tiny batch measures kernel launches on a GPU,
not arithmetic). A variant that raises is reported with its error instead of a time.

A workload whose Ember layers do not exist yet is listed as "n/a". Hand-written loops:

* torch: ``torch.nn`` modules, ``torch.optim.Adam(eps=1e-7)``, ``loss.backward()``;
* MLX: the step (forward, ``mx.value_and_grad``, Adam written out) under ``mx.compile``;
* NumPy: forward and backward written out by hand, Adam written out (W1 only).

W1 and W3 also run Ember's ``fit`` under ``mixed_bfloat16`` (variables float32, computation
bfloat16, the backend's own step) and ``mixed_float16`` (with the ``LossScaleOptimizer``
``compile`` adds, trained on the backend's own step with the scale as one of its inputs), in the
same rotation; a second table gives their ratios to Ember in float32. On a CPU 16-bit matmuls
are not faster (NumPy and MLX accumulate them in float32 and round), so these columns measure
the cost of the casts and of the loss scaling; the speed-up is a GPU's.

Both sides get the same native arrays (no conversion inside the timed region) and run
``EPOCHS`` epochs per timed call; Ember's time includes everything ``fit`` does (batching,
shuffling, building its state, callbacks). Targets: torch <= 1.05x, MLX <= 1.05x, NumPy
<= 1.2x (W1). The table gives the minimum wall time per step and three ratios: of the
median wall times, of the minimum wall times, and of the median CPU times (``process_time``:
the steadiest when other processes share the cores). Peak memory: each variant runs once
more in a fresh process that records its peak resident memory above the level after loading
the data and importing what both sides use (Linux ``VmHWM``; on a GPU, the device memory
torch's allocator handed out, ``torch.cuda.max_memory_allocated``); target Ember <= 1.2x the
hand-written loop. Run with ``OMP_NUM_THREADS=1`` when other processes share the cores: a
multi-threaded BLAS spinning on tiny matrices makes wall times meaningless.

W2: ``ember.layers.LSTM`` runs the whole sequence as one ``ops.nn.lstm`` call. On torch that
is ``torch.lstm``, the fused kernel ``nn.LSTM`` calls (oneDNN on the CPU), so both sides run
the same kernel and the ratio measures ``fit``'s overhead. On MLX the op is a composite of
ops (a time loop, as ``mlx.nn.LSTM``); on NumPy a NumPy loop with its own VJP rule (NumPy
has no hand-written W2 loop here; ``benchmarks/layers.py lstm`` compares the layer with a
hand-written NumPy BPTT).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time

import big_workloads as big
import numpy as np

EPOCHS = 2
REPEAT = 9
# Steps per epoch by backend (MLX's Linux CPU wheel uses a reference BLAS: keep it short).
STEPS = {"torch": 30, "numpy": 30, "mlx": 6}
WORKLOADS = ("W1", "W2", "W3", "S1", "C1") + big.BIG
# W4/W5/W5V (benchmarks/big_workloads.py) take seconds per step on a CPU: fewer steps and calls.
BIG_STEPS = {"torch": int(os.environ.get("EMBER_BENCH_BIG_STEPS", "3")), "numpy": 2, "mlx": 3}
BIG_REPEAT = int(os.environ.get("EMBER_BENCH_BIG_REPEAT", "3"))
VS_BUILT_IN = ("S1", "C1")  # workloads whose "raw" column is Ember's built-in W1 fit
# torch workloads also timed with jit_compile=True and against a torch.compile'd hand-written loop.
COMPILED_WORKLOADS = ("W1", "W2", "W3") + big.BIG
# Workloads also timed under mixed_bfloat16 (the backend's own step) and mixed_float16 (a
# LossScaleOptimizer, which compile adds: see ember.training.loss_scaling).
# Where torch trains (--device; children read it from the environment) and a batch-size override.
DEVICE = os.environ.get("EMBER_BENCH_DEVICE", "cpu")
# On a GPU the transformer and vision workloads too (bfloat16 is what they train in there; on a
# CPU it is emulated and only slower).
MIXED_WORKLOADS = ("W1", "W3") + (big.BIG if DEVICE.startswith("cuda") else ())
BATCH = int(os.environ.get("EMBER_BENCH_BATCH", "0"))
NO_COMPILE = bool(os.environ.get("EMBER_BENCH_NO_COMPILE"))
# The variants timed beside raw and Ember (bf16 f16 graphs bf16g remat keras jit rawc); empty: all.
VARIANTS = tuple(filter(None, os.environ.get("EMBER_BENCH_VARIANTS", "").split(",")))


# ------------------------------------------------------------------------------------ data
def steps_of(workload: str, backend: str) -> int:
    return BIG_STEPS[backend] if workload in big.BIG else STEPS[backend]


def make_data(workload: str, backend: str) -> tuple:
    if workload in big.BIG:
        return big.make_data(workload, backend, steps_of(workload, backend))
    rng = np.random.default_rng(0)
    steps = STEPS[backend]
    if workload in ("W1",) + VS_BUILT_IN:
        batch = 128
        x = rng.normal(size=(batch * steps, 784)).astype(np.float32)
    elif workload == "W2":
        batch = 64
        x = rng.normal(size=(batch * steps, 32, 16)).astype(np.float32)
    else:
        batch = 64
        x = rng.normal(size=(batch * steps, 28, 28, 1)).astype(np.float32)
    if BATCH:
        x = np.resize(x, (BATCH * steps,) + x.shape[1:])
        batch = BATCH
    y = rng.integers(0, 10, size=len(x)).astype(np.int64)
    return x, y, batch


def ember_optimizer():
    import ember

    return ember.optimizers.Adam(1e-3, epsilon=1e-7)


def ember_loss():
    import ember

    return ember.losses.SparseCategoricalCrossentropy(from_logits=True)


def ember_model(workload: str, policy: str | None = None, jit_compile: object = "auto", cuda_graphs: bool = False,
                remat: bool = False):
    import ember

    ember.mixed_precision.set_global_policy(policy)  # None: float32 (the layers record the policy)
    try:
        return _ember_model(workload, jit_compile, cuda_graphs, remat)
    finally:
        ember.mixed_precision.set_global_policy(None)


def _ember_model(workload: str, jit_compile: object = "auto", cuda_graphs: bool = False, remat: bool = False):
    import ember
    from ember import layers

    if workload == "S1":
        class MLP(ember.Model):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.hidden = [layers.Dense(256, activation="relu"), layers.Dense(256, activation="relu")]
                self.head = layers.Dense(10)

            def call(self, inputs):
                for layer in self.hidden:
                    inputs = layer(inputs)
                return self.head(inputs)

        model = MLP()
        model.build((None, 784), seed=0)
        model.compile(optimizer=ember_optimizer(), loss=ember_loss(), seed=0)
        return model
    if workload == "C1":
        class StandardStep(ember.Model):
            def train_step(self, data):
                x, y = data
                with ember.GradientTape() as tape:
                    y_pred = self(x, training=True)
                    loss = self.compute_loss(x=x, y=y, y_pred=y_pred)
                variables = self.trainable_variables
                self.optimizer.apply(tape.gradient(loss, variables), variables)
                self.metrics[0].update_state(loss)
                return {"loss": self.metrics[0].result()}

        inputs = ember.Input((784,))
        hidden = layers.Dense(256, activation="relu")(layers.Dense(256, activation="relu")(inputs))
        model = StandardStep(inputs, layers.Dense(10)(hidden))
        model.build(seed=0)
        model.compile(optimizer=ember_optimizer(), loss=ember_loss(), seed=0)
        return model
    if workload in big.BIG:
        model = big.ember_model(workload, ember.backends.current().name, remat=remat)
        model.build(seed=0)
        model.compile(optimizer=ember_optimizer(), loss=ember_loss(), seed=0, jit_compile=jit_compile)
        return model
    if workload == "W1":
        stack = [ember.Input((784,)), layers.Dense(256, activation="relu"), layers.Dense(256, activation="relu"),
                 layers.Dense(10)]
    elif workload == "W2":
        if not hasattr(layers, "LSTM"):
            return None
        stack = [ember.Input((32, 16)), layers.LSTM(128), layers.Dense(10)]
    else:
        if not (hasattr(layers, "Conv2D") and hasattr(layers, "MaxPooling2D")):
            return None
        stack = [ember.Input((28, 28, 1)), layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(2),
                 layers.Conv2D(64, 3, activation="relu"), layers.GlobalAveragePooling2D(), layers.Dense(10)]
    model = ember.Sequential(stack)
    model.build(seed=0)
    extra = {"cuda_graphs": True} if cuda_graphs else {}
    model.compile(optimizer=ember_optimizer(), loss=ember_loss(), seed=0, jit_compile=jit_compile, **extra)
    return model


def ember_runner(workload: str, backend: str, x, y, batch: int, policy: str | None = None,
                 jit_compile: object = "auto", cuda_graphs: bool = False, remat: bool = False):
    model = ember_model(workload, policy, jit_compile, cuda_graphs, remat)
    if model is None:
        return None

    def run(epochs: int = EPOCHS) -> float:
        history = model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, shuffle=True)
        return history.history["loss"][-1]

    run.model = model  # type: ignore[attr-defined]
    return run


# --------------------------------------------------------------------------- raw: torch
def torch_runner(workload: str, x, y, batch: int, compiled: bool = False):
    import torch

    torch.manual_seed(0)
    nn = torch.nn
    labels = None
    if workload in big.BIG:  # nn.Module models with F.scaled_dot_product_attention
        model, forward, labels = big.torch_model(workload)
    elif workload == "W1":
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
        forward = model
    elif workload == "W2":
        lstm, head = nn.LSTM(16, 128, batch_first=True), nn.Linear(128, 10)
        model = nn.ModuleList([lstm, head])

        def forward(xb):
            out, _ = lstm(xb)
            return head(out[:, -1])
    else:
        model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))

        def forward(xb):  # the data is channels_last like Ember's; torch convolves channels_first
            return model(xb.permute(0, 3, 1, 2))
    model.to(DEVICE)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(0)
    n = x.shape[0]

    def forward_loss(xb, yb):
        return loss_fn(forward(xb), yb if labels is None else labels(yb))

    update = optimizer.step
    if compiled:  # PyTorch's recipe: the forward pass and loss (AOTAutograd compiles their backward), the step
        forward_loss = torch.compile(forward_loss)
        update = torch.compile(optimizer.step)

    def run(epochs: int = EPOCHS) -> float:
        for _ in range(epochs):
            order = torch.randperm(n, generator=generator).to(DEVICE)
            total = torch.zeros((), device=DEVICE)
            for start in range(0, n, batch):
                index = order[start:start + batch]
                xb, yb = x[index], y[index]
                optimizer.zero_grad(set_to_none=True)
                loss = forward_loss(xb, yb)
                loss.backward()
                update()
                total += loss.detach() * len(index)
        return float(total / n)

    return run


# ----------------------------------------------------------------------------- raw: MLX
def mlx_runner(workload: str, x, y, batch: int):
    import mlx.core as mx
    import mlx.nn as mnn

    mx.random.seed(0)
    labels = None
    if workload in big.BIG:  # mlx.nn models with mx.fast.scaled_dot_product_attention
        model, forward, labels = big.mlx_model(workload)
    elif workload == "W1":
        model = mnn.Sequential(mnn.Linear(784, 256), mnn.ReLU(), mnn.Linear(256, 256), mnn.ReLU(),
                               mnn.Linear(256, 10))
        forward = model
    elif workload == "W2":
        lstm, head = mnn.LSTM(16, 128), mnn.Linear(128, 10)
        model = mnn.Sequential(lstm, head)

        def forward(xb):
            hidden, _ = lstm(xb)
            return head(hidden[:, -1])
    else:
        conv = mnn.Sequential(mnn.Conv2d(1, 32, 3), mnn.ReLU(), mnn.MaxPool2d(2), mnn.Conv2d(32, 64, 3),
                              mnn.ReLU())
        head = mnn.Linear(64, 10)
        model = mnn.Sequential(conv, head)

        def forward(xb):  # NHWC, like Ember; global average pooling over H and W
            return head(mx.mean(conv(xb), axis=(1, 2)))

    def loss_of(params, xb, yb):
        model.update(params)
        logits = forward(xb)
        return mnn.losses.cross_entropy(logits, yb if labels is None else labels(yb), reduction="mean")

    from mlx.utils import tree_map

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

    params = model.trainable_parameters()
    state = {"params": params, "m": tree_map(mx.zeros_like, params), "v": tree_map(mx.zeros_like, params),
             "t": mx.array(0, dtype=mx.int32)}
    compiled = mx.compile(step)
    rng = np.random.default_rng(0)
    n = x.shape[0]
    holder = [state]

    def run(epochs: int = EPOCHS) -> float:
        total = mx.array(0.0)
        for _ in range(epochs):
            order = mx.array(rng.permutation(n).astype(np.int32))
            total = mx.array(0.0)
            for start in range(0, n, batch):
                index = order[start:start + batch]
                holder[0], loss = compiled(holder[0], mx.take(x, index, axis=0), mx.take(y, index, axis=0))
                total = total + loss * index.shape[0]
                mx.eval(holder[0], total)
        return float(total.item() / n)

    return run


# --------------------------------------------------------------------------- raw: NumPy
def numpy_runner(workload: str, x, y, batch: int):
    if workload != "W1":
        return None
    rng = np.random.default_rng(0)
    sizes = (784, 256, 256, 10)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params += [rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32), np.zeros(fan_out, np.float32)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    t = [0]
    b1, b2, eps, lr = 0.9, 0.999, 1e-7, 1e-3
    n = x.shape[0]
    order_rng = np.random.default_rng(1)

    def step(xb, yb):
        w1, c1, w2, c2, w3, c3 = params
        z1 = xb @ w1 + c1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ w2 + c2
        h2 = np.maximum(z2, 0)
        logits = h2 @ w3 + c3
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        rows = np.arange(len(yb))
        loss = -log_p[rows, yb].mean()
        d = np.exp(log_p)
        d[rows, yb] -= 1.0
        d /= len(yb)
        grads = [None] * 6
        grads[4], grads[5] = h2.T @ d, d.sum(axis=0)
        dz2 = (d @ w3.T) * (z2 > 0)
        grads[2], grads[3] = h1.T @ dz2, dz2.sum(axis=0)
        dz1 = (dz2 @ w2.T) * (z1 > 0)
        grads[0], grads[1] = xb.T @ dz1, dz1.sum(axis=0)
        t[0] += 1
        alpha = lr * np.sqrt(1 - b2 ** t[0]) / (1 - b1 ** t[0])
        for i, g in enumerate(grads):
            m[i] += (g - m[i]) * (1 - b1)
            v[i] += (g * g - v[i]) * (1 - b2)
            params[i] -= (alpha * m[i] / (np.sqrt(v[i]) + eps)).astype(np.float32)
        return loss

    def run(epochs: int = EPOCHS) -> float:
        total = 0.0
        for _ in range(epochs):
            order = order_rng.permutation(n)
            total = 0.0
            for start in range(0, n, batch):
                index = order[start:start + batch]
                total += step(x[index], y[index]) * len(index)
        return total / n

    return run


# ------------------------------------------------------------------------------ Keras 3
def keras_runner(workload: str, x, y, batch: int):
    """Keras 3 ``fit`` (torch backend) on the same data (as NumPy arrays, Keras's usual input)."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras

    keras.utils.set_random_seed(0)
    model = big.keras_model(workload)
    xn, yn = (a.cpu().numpy() if hasattr(a, "cpu") else np.asarray(a) for a in (x, y))

    def run(epochs: int = EPOCHS) -> float:
        return model.fit(xn, yn, batch_size=batch, epochs=epochs, verbose=0, shuffle=True).history["loss"][-1]

    return run


# ------------------------------------------------------------------------------- harness
def native_data(backend: str, x, y):
    if backend == "torch":
        import torch

        return torch.from_numpy(x).to(DEVICE), torch.from_numpy(y).to(DEVICE)
    if backend == "mlx":
        import mlx.core as mx

        return mx.array(x), mx.array(y)
    return x, y


def runners(backend: str, workload: str):
    import ember

    ember.set_backend(backend)
    if backend == "torch":
        ember.backends.set_default_device(DEVICE)
    x, y, batch = make_data(workload, backend)
    x, y = native_data(backend, x, y)
    if workload in VS_BUILT_IN:  # subclassed / overridden step vs the built-in fit, both Ember
        return ember_runner(workload, backend, x, y, batch), ember_runner("W1", backend, x, y, batch)
    raw = {"torch": torch_runner, "mlx": mlx_runner, "numpy": numpy_runner}[backend](workload, x, y, batch)
    return ember_runner(workload, backend, x, y, batch), raw


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def memory_child(backend: str, workload: str, variant: str) -> None:
    """Peak memory above the post-data level for one variant (fresh process).

    Resident memory on a CPU; on a GPU the device memory torch's allocator handed out.
    """
    import ember

    ember.set_backend(backend)
    if backend == "torch":
        ember.backends.set_default_device(DEVICE)
    x, y, batch = make_data(workload, backend)
    x, y = native_data(backend, x, y)
    # Import what either variant uses before the baseline, so neither pays for imports.
    if backend == "torch":  # torch.optim's first step imports more of torch: do it before the baseline
        import torch

        warm = torch.nn.Parameter(torch.zeros(1))
        warm.grad = torch.zeros(1)
        torch.optim.Adam([warm]).step()
    if backend == "mlx":
        import mlx.core as mx
        import mlx.nn  # noqa: F401

        mx.eval(x, y)
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # reset the peak (VmHWM) to the current resident size
    except OSError:
        pass
    base = _rss_kib("VmRSS")
    on_gpu = backend == "torch" and DEVICE.startswith("cuda")
    if on_gpu:  # on a GPU the peak that matters is the device's: bytes the caching allocator handed out
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated() // 1024
    if variant == "ember":
        run = ember_runner(workload, backend, x, y, batch)
    elif variant == "remat":  # W4 with every decoder block under ember.remat
        run = ember_runner(workload, backend, x, y, batch, remat=True)
    elif workload in VS_BUILT_IN:
        run = ember_runner("W1", backend, x, y, batch)
    else:
        run = {"torch": torch_runner, "mlx": mlx_runner, "numpy": numpy_runner}[backend](workload, x, y, batch)
    run(1)
    peak = torch.cuda.max_memory_allocated() // 1024 if on_gpu else _rss_kib("VmHWM")
    print(json.dumps({"peak_mib": (peak - base) / 1024}))


def timing_child(backend: str, workloads: list[str]) -> None:
    rows = []
    for workload in workloads:
        ember_run, raw_run = runners(backend, workload)
        if ember_run is None:
            rows.append({"workload": workload, "status": "n/a (layer missing)"})
            continue
        fns = [raw_run, ember_run] if raw_run is not None else [ember_run]
        names = ["raw", "ember"] if raw_run is not None else ["ember"]
        x, y, batch = make_data(workload, backend)
        x, y = native_data(backend, x, y)
        extra = []  # (name, factory): variants in the same rotation; one that raises is reported, not timed
        if workload in MIXED_WORKLOADS:  # the same model under the mixed policies
            for policy, name in (("mixed_bfloat16", "bf16"), ("mixed_float16", "f16")):
                extra.append((name, functools.partial(ember_runner, workload, backend, x, y, batch, policy)))
            if backend == "torch" and DEVICE.startswith("cuda"):
                extra.append(("graphs", functools.partial(ember_runner, workload, backend, x, y, batch,
                                                          cuda_graphs=True)))
                extra.append(("bf16g", functools.partial(ember_runner, workload, backend, x, y, batch,
                                                         "mixed_bfloat16", cuda_graphs=True)))
        if workload == "W4":  # every decoder block under ember.remat
            extra.append(("remat", functools.partial(ember_runner, workload, backend, x, y, batch, remat=True)))
        if backend == "torch" and workload in big.BIG:  # Keras 3 (torch backend) fit: the anchor
            extra.append(("keras", functools.partial(keras_runner, workload, x, y, batch)))
        if backend == "torch" and workload in COMPILED_WORKLOADS and not NO_COMPILE:
            # torch.compile: Ember's whole step, the raw recipe
            extra.append(("jit", functools.partial(ember_runner, workload, backend, x, y, batch, jit_compile=True)))
            extra.append(("rawc", functools.partial(torch_runner, workload, x, y, batch, compiled=True)))
        if VARIANTS:  # --variants: only these beside raw and Ember
            extra = [(name, factory) for name, factory in extra if name in VARIANTS]
        errors = {}
        for name, factory in extra:
            try:
                fns.append(factory())
                names.append(name)
            except Exception as error:  # noqa: BLE001 - a benchmark reports what failed and goes on
                errors[name] = f"{type(error).__name__}: {error}"[:300]
        warm_up = []
        for name, fn in list(zip(names, fns)):  # warm-up: traces, compiles, caches
            start = time.perf_counter()
            try:
                fn(1)
            except Exception as error:  # noqa: BLE001
                errors[name] = f"{type(error).__name__}: {error}"[:300]
                index = names.index(name)
                del names[index], fns[index]
                continue
            warm_up.append(time.perf_counter() - start)
        wall: list[list[float]] = [[] for _ in fns]
        cpu: list[list[float]] = [[] for _ in fns]
        for _ in range(BIG_REPEAT if workload in big.BIG else REPEAT):
            for fn, w, c in zip(fns, wall, cpu):
                start, start_cpu = time.perf_counter(), time.process_time()
                fn()
                w.append(time.perf_counter() - start)
                c.append(time.process_time() - start_cpu)
        steps = steps_of(workload, backend) * EPOCHS
        row = {"workload": workload, "steps": steps, "errors": errors}
        if "jit" in names:  # a compile that failed trains eagerly (ember.backends.torch.compiled_step): say so
            reason = getattr(fns[names.index("jit")].model._training.trainer.steps, "fallback_reason", None)
            row["jit_fallback"] = reason
        for name, w, c, first in zip(names, wall, cpu, warm_up):
            row[f"{name}_med"] = statistics.median(w) / steps * 1e3
            row[f"{name}_min"] = min(w) / steps * 1e3
            row[f"{name}_cpu"] = statistics.median(c) / steps * 1e3
            row[f"{name}_warm_s"] = first - statistics.median(w) / EPOCHS  # the first epoch's extra time
        rows.append(row)
    print(json.dumps(rows))


def _compiled_line(row: dict) -> str:
    """One row of the torch.compile table ("-" for a variant not timed)."""
    def ratio(top: str, bottom: str, stat: str = "med") -> str:
        if f"{top}_{stat}" not in row or f"{bottom}_{stat}" not in row:
            return "-"
        return f"{row[f'{top}_{stat}'] / row[f'{bottom}_{stat}']:.2f}x"

    def value(key: str, digits: int = 2) -> str:
        return f"{row[key]:.{digits}f}" if key in row else "-"

    line = (f"{row['workload']:4} {value('raw_min'):>8} {value('rawc_min'):>8} {value('ember_min'):>8} "
            f"{value('jit_min'):>8} {ratio('jit', 'raw'):>9} {ratio('jit', 'raw', 'min'):>7} "
            f"{ratio('jit', 'rawc'):>9} {ratio('jit', 'rawc', 'min'):>7} {ratio('jit', 'rawc', 'cpu'):>7} "
            f"{value('jit_warm_s', 1):>7} {value('rawc_warm_s', 1):>7}")
    if row.get("jit_fallback"):
        line += f"  (eager: {row['jit_fallback'][:600]})"
    return line


def _child(args: list[str]) -> str:
    env = dict(os.environ)
    result = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-3000:])
    return result.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", action="append", help="backend(s) to run (default: every installed one)")
    parser.add_argument("--workload", action="append", choices=WORKLOADS, help="workload(s) (default: all)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
    parser.add_argument("--device", help="torch's device, e.g. cuda (default: cpu); sets EMBER_BENCH_DEVICE")
    parser.add_argument("--batch", type=int, help="every workload's batch size (sets EMBER_BENCH_BATCH)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile variants")
    parser.add_argument("--variants", help="comma-separated variants to time beside raw and Ember (default: all): "
                        "bf16,f16,graphs,bf16g,remat,keras,jit,rawc; sets EMBER_BENCH_VARIANTS")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for name, value in (("EMBER_BENCH_DEVICE", args.device), ("EMBER_BENCH_BATCH", args.batch),
                        ("EMBER_BENCH_NO_COMPILE", args.no_compile or None),
                        ("EMBER_BENCH_VARIANTS", args.variants)):
        if value:
            os.environ[name] = str(value)
    if args.child:
        if args.child[0] == "memory":
            memory_child(*args.child[1:])
        else:
            timing_child(args.child[1], args.child[2:])
        return
    import ember

    names = args.backend or ember.backends.available()
    workloads = args.workload or list(WORKLOADS)
    targets = {"torch": 1.05, "mlx": 1.05, "numpy": 1.2}
    print(f"Ember fit vs a hand-written loop on {args.device or 'cpu'}, Adam, {EPOCHS} epochs per timed call, "
          f"{REPEAT} calls; ms per step "
          "(min wall time); ratios Ember/raw of the median wall time, the min wall time and the median CPU time")
    print(f"{'backend':7} {'work':4} {'steps':>5} {'raw ms':>8} {'ember ms':>8} {'med':>6} {'min':>6} {'cpu':>6} "
          f"{'target':>6} {'raw MiB':>8} {'ember MiB':>9} {'ratio':>6}")
    mixed: list[str] = []
    compiled: list[str] = []
    keras_lines: list[str] = []
    remat_lines: list[str] = []
    for backend in names:
        rows = json.loads(_child(["timing", backend, *workloads]))
        for row in rows:
            if "status" in row:
                print(f"{backend:7} {row['workload']:4} {row['status']}")
                continue
            line = f"{backend:7} {row['workload']:4} {row['steps']:5d} "
            if "raw_med" in row:
                line += (f"{row['raw_min']:8.2f} {row['ember_min']:8.2f} {row['ember_med'] / row['raw_med']:5.2f}x "
                         f"{row['ember_min'] / row['raw_min']:5.2f}x {row['ember_cpu'] / row['raw_cpu']:5.2f}x "
                         + (f"{'-':>6}" if row["workload"] == "C1" else
                            f"{1.1 if row['workload'] == 'S1' else targets[backend]:5.2f}x"))
            else:
                line += f"{'-':>8} {row['ember_min']:8.2f} {'-':>6} {'-':>6} {'-':>6} {'-':>6}"
            if not args.no_memory:
                ember_mem = json.loads(_child(["memory", backend, row["workload"], "ember"]))["peak_mib"]
                if "raw_med" in row:
                    raw_mem = json.loads(_child(["memory", backend, row["workload"], "raw"]))["peak_mib"]
                    line += f" {raw_mem:8.1f} {ember_mem:9.1f} {ember_mem / max(raw_mem, 1e-9):5.2f}x"
                else:
                    line += f" {'-':>8} {ember_mem:9.1f}"
            print(line, flush=True)
            if "jit_med" in row or "rawc_med" in row:  # --variants may time one of the two
                compiled.append(_compiled_line(row))
            if any(name + "_med" in row for name in ("bf16", "f16", "graphs", "bf16g")):  # the child's choice
                mixed.append(f"{backend:7} {row['workload']:4} {row['ember_min']:8.2f}"
                             + "".join(f" {row[name + '_min']:8.2f} {row[name + '_med'] / row['ember_med']:7.2f}x"
                                       if name + "_med" in row else f" {'-':>8} {'-':>8}"
                                       for name in ("bf16", "f16", "graphs", "bf16g")))
            if "remat_med" in row:
                remat_line = (f"{backend:7} {row['workload']:4} {row['ember_min']:8.2f} {row['remat_min']:8.2f} "
                              f"{row['remat_med'] / row['ember_med']:7.2f}x "
                              f"{row['remat_cpu'] / row['ember_cpu']:7.2f}x")
                if not args.no_memory:
                    remat_mem = json.loads(_child(["memory", backend, row["workload"], "remat"]))["peak_mib"]
                    remat_line += f" {ember_mem:9.1f} {remat_mem:9.1f} {1 - remat_mem / max(ember_mem, 1e-9):7.1%}"
                remat_lines.append(remat_line)
            if "keras_med" in row:
                keras_lines.append(f"{row['workload']:4} {row['raw_min']:8.2f} {row['keras_min']:8.2f} "
                                   f"{row['ember_min']:8.2f} {row['keras_med'] / row['raw_med']:8.2f}x "
                                   f"{row['keras_cpu'] / row['raw_cpu']:8.2f}x "
                                   f"{row['ember_med'] / row['keras_med']:8.2f}x "
                                   f"{row['ember_cpu'] / row['keras_cpu']:8.2f}x")
            for name, error in row.get("errors", {}).items():
                print(f"        {row['workload']:4} {name}: failed: {error}", flush=True)
    if compiled:
        print("\ntorch.compile (same process, same rotation): ms per step (min wall time); ratios of Ember "
              "jit_compile=True to the raw eager loop (target < 1 on W1, W3) and to the raw torch.compile'd loop "
              "(target <= 1.05x), of median wall / min wall (/ median CPU) times; warm-up: the first epoch's extra "
              "seconds (compiling)")
        print(f"{'work':4} {'raw ms':>8} {'rawc ms':>8} {'ember ms':>8} {'jit ms':>8} {'jit/raw':>9} {'min':>7} "
              f"{'jit/rawc':>9} {'min':>7} {'cpu':>7} {'jit s':>7} {'rawc s':>7}")
        for line in compiled:
            print(line)
    if remat_lines:
        print("\nember.remat on every W4 decoder block (same process, same rotation): ms per step (min wall time), "
              "ratios to plain Ember of the median wall and median CPU times; peak RSS above the data (fresh process)")
        print(f"{'backend':7} {'work':4} {'ember ms':>8} {'remat ms':>8} {'wall':>8} {'cpu':>8} {'ember MiB':>9} "
              f"{'remat MiB':>9} {'saving':>7}")
        for line in remat_lines:
            print(line)
    if keras_lines:
        print("\nKeras 3 (torch backend) fit, same process, same rotation: ms per step (min wall time); ratios of "
              "median wall times and of median CPU times")
        print(f"{'work':4} {'raw ms':>8} {'keras ms':>8} {'ember ms':>8} {'keras/raw':>9} {'cpu':>9} "
              f"{'ember/keras':>9} {'cpu':>9}")
        for line in keras_lines:
            print(line)
    if mixed:
        print("\nMixed precision (same process, same rotation): Ember fit ms per step (min wall time) and the ratio "
              "of median wall times to Ember float32; mixed_float16 with the LossScaleOptimizer compile adds")
        print(f"{'backend':7} {'work':4} {'f32 ms':>8} {'bf16 ms':>8} {'bf16/f32':>8} {'f16 ms':>8} {'f16/f32':>8} "
              f"{'graph ms':>8} {'grph/f32':>8} {'bf16g ms':>8} {'/f32':>8}")
        for line in mixed:
            print(line)


if __name__ == "__main__":
    main()
