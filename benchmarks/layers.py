"""Layer speed: Ember layers vs the same computation written directly in each backend.

Run: ``python benchmarks/layers.py`` (all workloads) or by name: ``python benchmarks/layers.py conv2d lstm``.
Side by side in one process, never part of the test suite. For every workload and
installed backend it times Ember's layer against hand-written/native equivalents in
the SAME backend (interleaved, so load drifts hit all alike) and prints the median and
minimum ms per call and their ratio to the backend's baseline (the first native row).

Adding a workload: write a function returning a list of :class:`Case` and decorate it
with ``@workload(name, description)``; each case names its backend, a label, and a
zero-argument function that runs one forward+backward (and forces evaluation on MLX).
Every case of one backend is timed in the same interleaved loop.

MLX's Linux CPU wheel links a reference BLAS (see DESIGN.md): compare MLX rows only
with each other. On a busy 2-core machine pin BLAS threads (``OMP_NUM_THREADS=1``)
for steadier numbers.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from ember import backends, ops
from ember.autodiff import value_and_grad


@dataclasses.dataclass
class Case:
    """One timed implementation: ``fn()`` runs a forward + backward pass."""

    backend: str
    label: str
    fn: Callable[[], Any]
    baseline: bool = False  # ratios in this backend are relative to this case


@dataclasses.dataclass
class Workload:
    name: str
    description: str
    make_cases: Callable[[], list[Case]]
    repeat: int | None = None  # timed runs per case (None: run_workload's default)


WORKLOADS: list[Workload] = []


def workload(name: str, description: str, repeat: int | None = None) -> Callable:
    """Register a function returning the :class:`Case` list of a workload."""

    def register(make_cases: Callable[[], list[Case]]) -> Callable[[], list[Case]]:
        WORKLOADS.append(Workload(name, description, make_cases, repeat))
        return make_cases

    return register


def interleaved(fns: list[Callable[[], Any]], repeat: int, warmup: int = 2) -> list[list[float]]:
    """Seconds per call of each function, timed in alternation."""
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


def _mlx_eval(*trees: Any) -> None:
    import mlx.core as mx

    mx.eval(*trees)


def ember_case(backend: str, label: str, layer: Any, input_shape: tuple, x_np: np.ndarray,
               seed: int = 0) -> Case:
    """Ember: ``value_and_grad`` of ``sum(layer(x) ** 2)`` w.r.t. the params, on ``backend``."""
    with ember.using_backend(backend):
        state = layer.build(input_shape, seed=seed)
        x = ops.convert_to_tensor(x_np)
        buffers = state["buffers"]

        def loss(params: Any) -> Any:
            return ops.sum(ops.square(layer.apply({"params": params, "buffers": buffers}, x)[0]))

        grad_fn = value_and_grad(loss)

    def run() -> Any:
        with ember.using_backend(backend):
            value, grads = grad_fn(state["params"])
            if backend == "mlx":
                _mlx_eval(value, grads)
            return value

    return Case(backend, label, run)


# ---------------------------------------------------------------------------- Conv2D

CONV_BATCH, CONV_SIZE, CONV_IN, CONV_OUT, CONV_K = 64, 28, 32, 64, 3


def _conv_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The NHWC input and the weights Ember's Conv2D builds with seed 0 (kernel ``(k, k, in, out)``)."""
    x = np.random.default_rng(0).normal(size=(CONV_BATCH, CONV_SIZE, CONV_SIZE, CONV_IN)).astype(np.float32)
    with ember.using_backend("numpy"):
        state = _conv_layer().build((None, CONV_SIZE, CONV_SIZE, CONV_IN), seed=0)
    kernel, bias = (np.asarray(ops.to_numpy(state["params"][k])) for k in ("kernel", "bias"))
    return x, kernel, bias


def _conv_layer() -> Any:
    from ember import layers

    return layers.Conv2D(CONV_OUT, CONV_K, padding="same", bias_initializer="random_normal", name="conv")


def numpy_conv_grad(x: np.ndarray, kernel: np.ndarray, bias: np.ndarray) -> tuple[float, list]:
    """Hand-written "same" convolution, loss ``0.5 * sum(y ** 2)``: im2col + one matmul
    forward, two matmuls backward, the input gradient scattered back with one add per tap.
    Returns the loss and the gradients of (kernel, bias, x)."""
    from numpy.lib.stride_tricks import sliding_window_view

    k, pad = kernel.shape[0], kernel.shape[0] // 2
    batch, height, width, channels = x.shape
    w2 = kernel.reshape(k * k * channels, -1)  # rows ordered (i, j, c), as the columns below
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    windows = sliding_window_view(xp, (k, k), axis=(1, 2))  # (B, H, W, C, k, k)
    cols = np.ascontiguousarray(windows.transpose(0, 1, 2, 4, 5, 3)).reshape(-1, k * k * channels)
    y = cols @ w2 + bias  # (B*H*W, out); d loss / d y = y
    grad_kernel = (cols.T @ y).reshape(kernel.shape)
    grad_cols = (y @ w2.T).reshape(batch, height, width, k, k, channels)
    grad_xp = np.zeros_like(xp)
    for i in range(k):
        for j in range(k):
            grad_xp[:, i:i + height, j:j + width, :] += grad_cols[:, :, :, i, j, :]
    return 0.5 * float(np.sum(y * y)), [grad_kernel, y.sum(axis=0), grad_xp[:, pad:pad + height, pad:pad + width]]


def _ember_conv(backend: str, x_np: np.ndarray) -> tuple[Case, Callable[[], list]]:
    """Ember's Conv2D: ``value_and_grad`` w.r.t. the params AND the input (what a layer
    inside a network needs), plus a function returning those gradients as NumPy arrays."""
    layer = _conv_layer()
    with ember.using_backend(backend):
        state = layer.build((None,) + x_np.shape[1:], seed=0)
        x = ops.convert_to_tensor(x_np)

        def loss(params: Any, inputs: Any) -> Any:
            y = layer.apply({"params": params, "buffers": {}}, inputs)[0]
            return ops.multiply(ops.sum(ops.square(y)), 0.5)

        grad_fn = value_and_grad(loss, argnums=(0, 1))

    def run() -> Any:
        with ember.using_backend(backend):
            value, grads = grad_fn(state["params"], x)
            if backend == "mlx":
                _mlx_eval(value, grads)
            return value, grads

    def grads() -> list:
        _, (g_params, g_x) = run()
        with ember.using_backend(backend):
            return [np.asarray(ops.to_numpy(g)) for g in (g_params["kernel"], g_params["bias"], g_x)]

    return Case(backend, "ember layers.Conv2D", run), grads


def _torch_conv(x_np: np.ndarray, kernel: np.ndarray, bias: np.ndarray) -> Case:
    import torch
    import torch.nn.functional as F

    # torch's own layout: input NCHW, weight (out, in, kh, kw) from Keras's (kh, kw, in, out).
    x = torch.from_numpy(np.ascontiguousarray(x_np.transpose(0, 3, 1, 2))).requires_grad_(True)
    w = torch.from_numpy(np.ascontiguousarray(kernel.transpose(3, 2, 0, 1))).requires_grad_(True)
    b = torch.from_numpy(bias.copy()).requires_grad_(True)

    def native() -> Any:
        y = F.conv2d(x, w, b, padding=CONV_K // 2)
        loss = 0.5 * (y * y).sum()
        return loss, torch.autograd.grad(loss, (w, b, x))

    return Case("torch", "F.conv2d (NCHW) + autograd", native, baseline=True)


def _mlx_conv(x_np: np.ndarray, kernel: np.ndarray, bias: np.ndarray) -> Case:
    import mlx.core as mx

    # MLX's own layout: input NHWC, weight (out, kh, kw, in).
    x, w, b = mx.array(x_np), mx.array(np.ascontiguousarray(kernel.transpose(3, 0, 1, 2))), mx.array(bias)

    def loss(w: Any, b: Any, x: Any) -> Any:
        y = mx.conv2d(x, w, padding=CONV_K // 2) + b
        return 0.5 * mx.sum(y * y)

    grad_fn = mx.value_and_grad(loss, argnums=(0, 1, 2))

    def native() -> Any:
        value, grads = grad_fn(w, b, x)
        mx.eval(value, grads)
        return value

    return Case("mlx", "mx.conv2d + mx.value_and_grad", native, baseline=True)


@workload("conv2d", f"Conv2D batch {CONV_BATCH}, {CONV_SIZE}x{CONV_SIZE}x{CONV_IN} -> {CONV_OUT} filters, "
                    f"{CONV_K}x{CONV_K}, same, float32: loss 0.5*sum(y**2) + gradients of kernel, bias and input",
          repeat=7)
def conv2d_cases() -> list[Case]:
    x, kernel, bias = _conv_data()
    _, expected = numpy_conv_grad(x, kernel, bias)
    cases = [Case("numpy", "hand-written NumPy im2col", lambda: numpy_conv_grad(x, kernel, bias), baseline=True)]
    for name in backends.available():
        if name == "torch":
            cases.append(_torch_conv(x, kernel, bias))
        elif name == "mlx":
            cases.append(_mlx_conv(x, kernel, bias))
        case, grads = _ember_conv(name, x)
        for got, want, what in zip(grads(), expected, ("kernel", "bias", "input")):
            # float32 sums of ~50k products in different orders: compare relative to the largest entry.
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max(),
                                       err_msg=f"conv2d [{name}]: Ember's {what} gradient")
        cases.append(case)
    return cases


# ------------------------------------------------------------------------------ LSTM

LSTM_BATCH, LSTM_TIME, LSTM_FEATURES, LSTM_UNITS = 64, 32, 16, 128


def _lstm_weights(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    f, u = LSTM_FEATURES, LSTM_UNITS
    return {"kernel": (rng.normal(size=(f, 4 * u)) / np.sqrt(f)).astype(np.float32),
            "recurrent_kernel": (rng.normal(size=(u, 4 * u)) / np.sqrt(u)).astype(np.float32),
            "bias": np.zeros(4 * u, np.float32)}


def numpy_lstm_grad(w: dict, x: np.ndarray) -> tuple[float, dict]:
    """Hand-written LSTM forward + backpropagation through time in NumPy (Keras layout,
    loss ``sum(h_T ** 2)``): per step only the recurrent matmuls, the input projection
    and the kernel gradients as single matmuls over all steps."""
    batch, steps, _ = x.shape
    units = w["recurrent_kernel"].shape[0]
    xt = np.ascontiguousarray(x.transpose(1, 0, 2))  # (T, B, F)
    projected = xt @ w["kernel"] + w["bias"]
    h = np.zeros((batch, units), np.float32)
    c = np.zeros_like(h)
    gates = np.empty((steps, batch, 4 * units), np.float32)
    cells = np.empty((steps + 1, batch, units), np.float32)
    hiddens = np.empty((steps + 1, batch, units), np.float32)
    cells[0], hiddens[0] = c, h
    for t in range(steps):
        z = projected[t] + h @ w["recurrent_kernel"]
        g = gates[t]
        g[:, :2 * units] = 1.0 / (1.0 + np.exp(-z[:, :2 * units]))
        g[:, 2 * units:3 * units] = np.tanh(z[:, 2 * units:3 * units])
        g[:, 3 * units:] = 1.0 / (1.0 + np.exp(-z[:, 3 * units:]))
        i, f, gg, o = g[:, :units], g[:, units:2 * units], g[:, 2 * units:3 * units], g[:, 3 * units:]
        c = f * c + i * gg
        h = o * np.tanh(c)
        cells[t + 1], hiddens[t + 1] = c, h
    loss = float(np.sum(h * h))
    dz_all = np.empty_like(gates)
    dh = 2.0 * h
    dc = np.zeros_like(c)
    for t in range(steps - 1, -1, -1):
        g = gates[t]
        i, f, gg, o = g[:, :units], g[:, units:2 * units], g[:, 2 * units:3 * units], g[:, 3 * units:]
        tanh_c = np.tanh(cells[t + 1])
        dc = dc + dh * o * (1.0 - tanh_c * tanh_c)
        dz = dz_all[t]
        dz[:, :units] = dc * gg * i * (1.0 - i)
        dz[:, units:2 * units] = dc * cells[t] * f * (1.0 - f)
        dz[:, 2 * units:3 * units] = dc * i * (1.0 - gg * gg)
        dz[:, 3 * units:] = dh * tanh_c * o * (1.0 - o)
        dc = dc * f
        dh = dz @ w["recurrent_kernel"].T
    flat_dz = dz_all.reshape(steps * batch, 4 * units)
    grads = {"kernel": xt.reshape(steps * batch, -1).T @ flat_dz,
             "recurrent_kernel": hiddens[:-1].reshape(steps * batch, units).T @ flat_dz,
             "bias": flat_dz.sum(axis=0)}
    return loss, grads


def _torch_cases(w: dict, x_np: np.ndarray) -> list[Case]:
    import torch

    u = LSTM_UNITS
    module = torch.nn.LSTM(LSTM_FEATURES, u, batch_first=True)
    with torch.no_grad():  # Keras layout -> torch (gate order i, f, g, o is the same)
        module.weight_ih_l0.copy_(torch.from_numpy(w["kernel"].T.copy()))
        module.weight_hh_l0.copy_(torch.from_numpy(w["recurrent_kernel"].T.copy()))
        module.bias_ih_l0.copy_(torch.from_numpy(w["bias"]))
        module.bias_hh_l0.zero_()
    x = torch.from_numpy(x_np)

    def native() -> Any:
        module.zero_grad(set_to_none=True)
        _, (h, _) = module(x)
        loss = (h[0] ** 2).sum()
        loss.backward()
        return loss

    params = [torch.from_numpy(w[k]).clone().requires_grad_(True) for k in ("kernel", "recurrent_kernel", "bias")]

    def loop() -> Any:
        kernel, recurrent, bias = params
        for p in params:
            p.grad = None
        projected = torch.matmul(x.transpose(0, 1), kernel) + bias
        h = torch.zeros(x.shape[0], u)
        c = torch.zeros_like(h)
        for t in range(x.shape[1]):
            i, f, g, o = torch.split(projected[t] + h @ recurrent, u, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        loss = (h ** 2).sum()
        loss.backward()
        return loss

    return [Case("torch", "torch.nn.LSTM + autograd", native, baseline=True),
            Case("torch", "hand-written torch loop + autograd", loop)]


def _mlx_cases(w: dict, x_np: np.ndarray) -> list[Case]:
    import mlx.core as mx
    import mlx.nn as nn

    module = nn.LSTM(LSTM_FEATURES, LSTM_UNITS)
    module.update({"Wx": mx.array(w["kernel"].T), "Wh": mx.array(w["recurrent_kernel"].T),
                   "bias": mx.array(w["bias"])})
    x = mx.array(x_np)

    def loss_fn(model: Any, inputs: Any) -> Any:
        hidden, _ = model(inputs)
        return mx.sum(hidden[:, -1] ** 2)

    grad_fn = nn.value_and_grad(module, loss_fn)

    def native() -> Any:
        loss, grads = grad_fn(module, x)
        mx.eval(loss, grads)
        return loss

    return [Case("mlx", "mlx.nn.LSTM + mx.value_and_grad", native, baseline=True)]


@workload("lstm", f"LSTM batch {LSTM_BATCH}, T={LSTM_TIME}, input {LSTM_FEATURES}, hidden {LSTM_UNITS}, "
                  "float32: loss sum(h_T**2) + gradients of the weights")
def lstm_cases() -> list[Case]:
    from ember import layers

    w = _lstm_weights()
    x_np = np.random.default_rng(1).normal(size=(LSTM_BATCH, LSTM_TIME, LSTM_FEATURES)).astype(np.float32)
    layer = layers.LSTM(LSTM_UNITS, name="lstm")
    shape = (None, LSTM_TIME, LSTM_FEATURES)
    cases = [Case("numpy", "hand-written NumPy BPTT", lambda: numpy_lstm_grad(w, x_np), baseline=True)]
    for name in backends.available():
        if name == "torch":
            cases += _torch_cases(w, x_np)
        elif name == "mlx":
            cases += _mlx_cases(w, x_np)
        cases.append(ember_case(name, "ember layers.LSTM", layer, shape, x_np))
    _check_lstm_agrees(w, x_np, layer, shape)
    return cases


def _check_lstm_agrees(w: dict, x_np: np.ndarray, layer: Any, shape: tuple) -> None:
    """The timed implementations compute the same gradients (Ember with the same weights)."""
    loss, grads = numpy_lstm_grad(w, x_np)
    with ember.using_backend("numpy"):
        params = {k: ops.convert_to_tensor(v) for k, v in w.items()}
        value, ember_grads = value_and_grad(
            lambda p: ops.sum(ops.square(layer.apply({"params": p, "buffers": {}}, ops.convert_to_tensor(x_np))[0])))(
            params)
    np.testing.assert_allclose(float(value), loss, rtol=1e-4)
    for key in grads:  # float32 sums over 64 x 32 terms in different orders
        np.testing.assert_allclose(ember_grads[key], grads[key], rtol=2e-3, atol=2e-3 * np.abs(grads[key]).max())


# ------------------------------------------------------------------------------ report


def run_workload(item: Workload, repeat: int = 15) -> None:
    print(f"\n{item.name}: {item.description}")
    cases = item.make_cases()
    print(f"  {'backend':8} {'implementation':40} {'median ms':>10} {'ratio':>7} {'min ms':>9} {'ratio':>7}")
    for backend in dict.fromkeys(case.backend for case in cases):
        group = [case for case in cases if case.backend == backend]
        runs = interleaved([case.fn for case in group], repeat=item.repeat or repeat)
        medians = [statistics.median(t) * 1e3 for t in runs]
        minima = [min(t) * 1e3 for t in runs]
        base = next((i for i, case in enumerate(group) if case.baseline), 0)
        for case, med, low in zip(group, medians, minima):
            print(f"  {backend:8} {case.label:40} {med:10.2f} {med / medians[base]:6.2f}x "
                  f"{low:9.2f} {low / minima[base]:6.2f}x")


def main(argv: list[str]) -> None:
    chosen = [w for w in WORKLOADS if not argv or w.name in argv]
    if not chosen:
        raise SystemExit(f"unknown workload(s) {argv}; known: {[w.name for w in WORKLOADS]}")
    for item in chosen:
        run_workload(item)
    print("\n(ratios are vs the first native row of the same backend; the min is steadier on a loaded machine)")


if __name__ == "__main__":
    main(sys.argv[1:])
