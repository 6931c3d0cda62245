"""``ops.nn.lstm`` / ``ops.nn.gru``: whole recurrent sequences in one op (torch's fused kernels;
composites on NumPy and MLX).

References: the recurrences written out here in NumPy float64 (forward), and
``torch.nn.LSTM``/``torch.nn.GRU`` in float64 with their autograd (gradients of every
argument). Layout conversions Keras -> torch (single layer, ``u`` = units):

* LSTM: ``weight_ih_l0 = kernel.T``, ``weight_hh_l0 = recurrent_kernel.T``,
  ``bias_ih_l0 = bias``, ``bias_hh_l0 = 0``; gate order i, f, c, o = torch's i, f, g, o.
* GRU (reset_after=True is torch's formulation): Keras's gate blocks z, r, h become
  torch's r, z, n, ``rzn(w) = [w[..., u:2u], w[..., :u], w[..., 2u:]]``;
  ``weight_ih_l0 = rzn(kernel).T``, ``weight_hh_l0 = rzn(recurrent_kernel).T``,
  ``bias_ih_l0 = rzn(bias[0])``, ``bias_hh_l0 = rzn(bias[1])``.

``go_backwards`` is torch on the time-reversed input (outputs in processing order).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import ops
from ember.ops.extra import composites
from tests.helpers import assert_close_recurrent, float64_device

torch = pytest.importorskip("torch")  # the gradient reference, not the code under test

B, T, F, H = 3, 5, 4, 6
GATES = {"lstm": 4, "gru": 3}
N_STATES = {"lstm": 2, "gru": 1}
GRAD_RTOL, GRAD_ATOL = 1e-4, 1e-5  # float32 gradients accumulated over 5 steps


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _lstm_step(x, states, kernel, recurrent, bias):
    h, c = states
    z = x @ kernel + h @ recurrent + (0.0 if bias is None else bias)
    i, f, g, o = np.split(z, 4, axis=-1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return [_sigmoid(o) * np.tanh(c), c]


def _gru_step(x, states, kernel, recurrent, bias):
    (h,) = states
    x_z, x_r, x_h = np.split(x @ kernel + (0.0 if bias is None else bias[0]), 3, axis=-1)
    r_z, r_r, r_h = np.split(h @ recurrent + (0.0 if bias is None else bias[1]), 3, axis=-1)
    z, r = _sigmoid(x_z + r_z), _sigmoid(x_r + r_r)
    candidate = np.tanh(x_h + r * r_h)
    return [z * h + (1 - z) * candidate]


def reference(kind, x, states, kernel, recurrent, bias, go_backwards=False):
    """Batch-major float64 loop: ``(sequence_outputs, *final_states)``."""
    step = _lstm_step if kind == "lstm" else _gru_step
    outputs = []
    for t in (range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])):
        states = step(x[:, t], states, kernel, recurrent, bias)
        outputs.append(states[0])
    return [np.stack(outputs, axis=1), *states]


def _operands(kind, seed=0, use_bias=True):
    """``(x, [states], kernel, recurrent_kernel, bias)`` in float64."""
    rng = np.random.default_rng(seed)
    g = GATES[kind]
    bias_shape = (4 * H,) if kind == "lstm" else (2, 3 * H)
    return (rng.normal(size=(B, T, F)), [rng.normal(size=(B, H)) for _ in range(N_STATES[kind])],
            rng.normal(size=(F, g * H)) * 0.5, rng.normal(size=(H, g * H)) * 0.5,
            rng.normal(size=bias_shape) if use_bias else None)


def _native(value, dtype=np.float32):
    return None if value is None else ops.convert_to_tensor(np.asarray(value, dtype))


def _call(kind, x, states, kernel, recurrent, bias, **kwargs):
    return list(getattr(ops.nn, kind)(x, *states, kernel, recurrent, bias, **kwargs))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("use_bias", [True, False])
def test_matches_reference(backend, kind, go_backwards, time_major, use_bias):
    x, states, kernel, recurrent, bias = _operands(kind, 1, use_bias)
    x_in = np.swapaxes(x, 0, 1) if time_major else x
    got = _call(kind, _native(x_in), [_native(s) for s in states], _native(kernel), _native(recurrent),
                _native(bias), go_backwards=go_backwards, time_major=time_major)
    expected = reference(kind, x, states, kernel, recurrent, bias, go_backwards=go_backwards)
    expected[0] = np.swapaxes(expected[0], 0, 1) if time_major else expected[0]
    assert len(got) == 1 + N_STATES[kind]
    for i, (g, e) in enumerate(zip(got, expected)):
        assert_close_recurrent(g, e, err_msg=f"output {i}")


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_float64(backend, kind):
    x, states, kernel, recurrent, bias = _operands(kind, 2)
    with float64_device(backend):
        n = lambda v: _native(v, np.float64)  # noqa: E731
        got = _call(kind, n(x), [n(s) for s in states], n(kernel), n(recurrent), n(bias))
        for g, e in zip(got, reference(kind, x, states, kernel, recurrent, bias)):
            assert_close_recurrent(g, e, rtol=1e-10, atol=1e-12, dtype="float64")


def _rzn(w):
    return np.concatenate([w[..., H:2 * H], w[..., :H], w[..., 2 * H:]], axis=-1)


def _torch_grads(kind, operands, weights, go_backwards):
    """Gradients of ``sum_k sum(output_k * w_k)`` by torch autograd, in Keras layout."""
    x, states, kernel, recurrent, bias = operands
    tx, tk, tr, tb = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (x, kernel, recurrent, bias))
    ts = [torch.tensor(s, dtype=torch.float64, requires_grad=True) for s in states]
    if kind == "lstm":
        module = torch.nn.LSTM(F, H, batch_first=True).double()
        params = {"weight_ih_l0": tk.T, "weight_hh_l0": tr.T, "bias_ih_l0": tb,
                  "bias_hh_l0": torch.zeros(4 * H, dtype=torch.float64)}
        hx = (ts[0][None], ts[1][None])
    else:
        module = torch.nn.GRU(F, H, batch_first=True).double()
        rzn = lambda w: torch.cat([w[..., H:2 * H], w[..., :H], w[..., 2 * H:]], -1)  # noqa: E731
        params = {"weight_ih_l0": rzn(tk).T, "weight_hh_l0": rzn(tr).T, "bias_ih_l0": rzn(tb[0]),
                  "bias_hh_l0": rzn(tb[1])}
        hx = ts[0][None]
    seq, final = torch.func.functional_call(module, params, (torch.flip(tx, (1,)) if go_backwards else tx, hx))
    finals = list(final) if kind == "lstm" else [final]
    outputs = [seq] + [f[0] for f in finals]
    sum((o * torch.tensor(w)).sum() for o, w in zip(outputs, weights)).backward()
    return [tx.grad.numpy(), *[s.grad.numpy() for s in ts], tk.grad.numpy(), tr.grad.numpy(), tb.grad.numpy()]


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_gradients_match_torch_autograd(backend, kind, go_backwards):
    operands = _operands(kind, 3)
    x, states, kernel, recurrent, bias = operands
    rng = np.random.default_rng(4)
    weights = [rng.normal(size=(B, T, H))] + [rng.normal(size=(B, H)) for _ in states]
    arrays = [_native(x), *[_native(s) for s in states], _native(kernel), _native(recurrent), _native(bias)]
    n = len(states)
    with ember.GradientTape() as tape:
        tape.watch(arrays)
        outputs = _call(kind, arrays[0], arrays[1:1 + n], *arrays[1 + n:], go_backwards=go_backwards)
        loss = ops.sum(ops.multiply(outputs[0], _native(weights[0])))
        for out, w in zip(outputs[1:], weights[1:]):
            loss = ops.add(loss, ops.sum(ops.multiply(out, _native(w))))
    grads = tape.gradient(loss, arrays)
    names = ["inputs", *[f"state {i}" for i in range(n)], "kernel", "recurrent_kernel", "bias"]
    for name, got, expected in zip(names, grads, _torch_grads(kind, operands, weights, go_backwards)):
        assert_close_recurrent(got, expected, rtol=GRAD_RTOL, atol=GRAD_ATOL, err_msg=f"{kind} {name}")


# Where each op is native: torch has fused kernels for both, NumPy a native LSTM (with its
# own VJP rule), everything else is the composite of ember.ops.extra.composites.
NATIVE = {("torch", "lstm"), ("torch", "gru"), ("numpy", "lstm")}


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_native_or_composite(backend, kind):
    op = getattr(ops.nn, kind)
    native = (backend, kind) in NATIVE
    assert composites.is_composite(op) != native
    x, states, kernel, recurrent, bias = _operands(kind, 5)
    kernel = _native(kernel)
    with ember.GradientTape() as tape:
        tape.watch(kernel)
        _call(kind, _native(x), [_native(s) for s in states], kernel, _native(recurrent), _native(bias))
    names = [node.op for node in tape.graph]
    if backend == "numpy" and native:  # one recorded node, differentiated by its own rule
        assert names == [f"nn.{kind}"]
    elif backend != "torch":  # a recording tape sees the composite's inner ops, not one node
        assert "matmul" in names and "nn.sigmoid" in names and f"nn.{kind}" not in names


@pytest.mark.parametrize("go_backwards", [False, True])
def test_numpy_lstm_rule_second_order_matches_composite(go_backwards):
    """Nested tapes differentiate the native NumPy rule again (it is written with ops):
    a Hessian-vector product equals the one through the composite, recorded op by op."""
    x, states, kernel, recurrent, bias = _operands("lstm", 7)
    rng = np.random.default_rng(8)
    w, v = rng.normal(size=(B, T, H)), rng.normal(size=kernel.shape)
    arrays = [_native(a, np.float64) for a in (x, *states, kernel, recurrent, bias)]

    def hvp(op):
        watched = arrays[3]
        with ember.GradientTape() as outer:
            outer.watch(watched)
            with ember.GradientTape() as inner:
                inner.watch(watched)
                seq, h, c = op(*arrays[:3], watched, *arrays[4:], go_backwards=go_backwards)
                loss = ops.add(ops.sum(ops.multiply(seq, w)), ops.sum(ops.square(c)))
            grad = inner.gradient(loss, watched)
            projected = ops.sum(ops.multiply(grad, v))
        return grad, outer.gradient(projected, watched)

    native_grad, native_hvp = hvp(lambda *a, **k: ops.nn.lstm(*a, **k))  # looked up inside the tapes
    composite_grad, composite_hvp = hvp(composites.lstm)
    assert_close_recurrent(native_grad, ops.to_numpy(composite_grad), rtol=1e-10, atol=1e-12, dtype="float64")
    assert_close_recurrent(native_hvp, ops.to_numpy(composite_hvp), rtol=1e-9, atol=1e-11, dtype="float64")


def test_bad_input(backend):
    x, states, kernel, recurrent, bias = _operands("lstm", 6)
    x, kernel, recurrent, bias = _native(x), _native(kernel), _native(recurrent), _native(bias)
    h0, c0 = (_native(s) for s in states)
    with pytest.raises(ValueError, match=r"nn.lstm: inputs must be \(batch, time, features\)"):
        ops.nn.lstm(ops.ones((B, F)), h0, c0, kernel, recurrent, bias)
    with pytest.raises(ValueError, match=r"nn.lstm: inputs must be \(time, batch, features\)"):
        ops.nn.lstm(ops.ones((B, F)), h0, c0, kernel, recurrent, bias, time_major=True)
    with pytest.raises(ValueError, match=r"nn.lstm: kernel must have shape \(features, 4 \* units\) with features=4"):
        ops.nn.lstm(x, h0, c0, ops.ones((F + 1, 4 * H)), recurrent, bias)
    with pytest.raises(ValueError, match=r"nn.lstm: recurrent_kernel must have shape \(6, 24\)"):
        ops.nn.lstm(x, h0, c0, kernel, ops.ones((H, H)), bias)
    with pytest.raises(ValueError, match=r"nn.lstm: bias must have shape \(24,\)"):
        ops.nn.lstm(x, h0, c0, kernel, recurrent, ops.ones((H,)))
    with pytest.raises(ValueError, match=r"nn.lstm: initial_c must have shape \(batch, units\) = \(3, 6\)"):
        ops.nn.lstm(x, h0, ops.ones((B + 1, H)), kernel, recurrent, bias)
    with pytest.raises(ValueError, match="nn.lstm: inputs need at least one time step"):
        ops.nn.lstm(ops.ones((B, 0, F)), h0, c0, kernel, recurrent, bias)
    with pytest.raises(TypeError, match="nn.lstm: every array must have the same floating dtype.*kernel=float16"):
        ops.nn.lstm(x, h0, c0, ops.cast(kernel, "float16"), recurrent, bias)
    with pytest.raises(TypeError, match="nn.lstm: every array must have the same floating dtype.*inputs=int32"):
        ops.nn.lstm(ops.ones((B, T, F), dtype="int32"), h0, c0, kernel, recurrent, bias)
    gru_kernel, gru_recurrent = ops.ones((F, 3 * H)), ops.ones((H, 3 * H))
    with pytest.raises(ValueError, match=r"nn.gru: bias must have shape \(2, 18\), received \(18,\)"):
        ops.nn.gru(x, h0, gru_kernel, gru_recurrent, ops.ones((3 * H,)))
    with pytest.raises(ValueError, match=r"nn.gru: kernel must have shape \(features, 3 \* units\)"):
        ops.nn.gru(x, h0, ops.ones((F + 1, 3 * H)), gru_recurrent)
    with pytest.raises(ValueError, match=r"nn.gru: initial_h must have shape \(batch, units\) = \(3, 6\)"):
        ops.nn.gru(x, ops.ones((B, H + 1)), gru_kernel, gru_recurrent)
    with pytest.raises(TypeError, match="nn.gru: every array must have the same floating dtype.*initial_h=float16"):
        ops.nn.gru(x, ops.cast(h0, "float16"), gru_kernel, gru_recurrent)
