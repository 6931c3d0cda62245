"""``LSTM``/``GRU``'s whole-sequence path (``ops.nn.lstm``/``gru``) against their step loop, on every backend.

The fused path runs when the configuration fits the op (tanh/sigmoid, GRU reset_after,
no mask, no recurrent dropout while training); otherwise the RNN loops over steps. Both
must compute the same function: forward values and gradients are compared with each
other (the loop path is forced by stubbing ``fused_sequence``) and with
``torch.nn.LSTM``/``GRU`` in float64 with their autograd (weights copied with the layout
conversions of tests/layers/rnn_reference.py; ``go_backwards`` is torch on the
time-reversed input).
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.autodiff import value_and_grad
from ember.layers.rnn.cell import dropout_mask
from ember.layers.rnn.gru import GRUCell
from ember.layers.rnn.lstm import LSTMCell
from tests.helpers import assert_close_recurrent, recurrence_tolerance
from tests.layers import rnn_reference as ref
from tests.layers.layer_test import GRAD_ATOL, GRAD_RTOL

torch = pytest.importorskip("torch")  # the reference implementation, not the code under test

B, T, F, H = 3, 5, 4, 3
LAYERS = {"lstm": layers.LSTM, "gru": layers.GRU}
N_STATES = {"lstm": 2, "gru": 1}
KINDS = ["lstm", "gru"]


@contextlib.contextmanager
def _path(monkeypatch, fused):
    """Run the block on the fused path (``fused=True``) or the step loop; yields the list of
    ``fused_sequence`` outcomes (True: the fused op ran)."""
    taken: list = []
    with monkeypatch.context() as patch:
        for cls in (LSTMCell, GRUCell):
            original = cls.fused_sequence

            def spy(self, *args, _original=original, **kwargs):
                out = _original(self, *args, **kwargs) if fused else None
                taken.append(out is not None)
                return out

            patch.setattr(cls, "fused_sequence", spy)
        yield taken


def _numpy(tree):
    return {k: np.asarray(ops.to_numpy(v), dtype=np.float64) for k, v in tree.items()}


def _outputs(result):
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _value_and_grads(layer, state, x, initial, weights, training=False, rng=None):
    """Outputs and the gradients (params, inputs[, initial states]) of ``sum_k sum(out_k * w_k)``."""

    def loss(params, inputs, states):
        outs = _outputs(layer.apply({"params": params, "buffers": {}}, inputs, training=training, rng=rng,
                                    initial_state=states)[0])
        total = ops.sum(ops.multiply(outs[0], weights[0]))
        for out, w in zip(outs[1:], weights[1:]):
            total = ops.add(total, ops.sum(ops.multiply(out, w)))
        return total, outs

    argnums = (0, 1, 2) if initial is not None else (0, 1)
    (_, outs), grads = value_and_grad(loss, argnums=argnums, has_aux=True)(state["params"], x, initial)
    return outs, grads


def _torch_reference(kind, params, x, initial, weights, go_backwards, return_sequences, return_state):
    """Outputs and gradients (Keras layout) of the same loss with float64 torch.nn.LSTM/GRU."""
    zero_bias = np.zeros((4 * H,) if kind == "lstm" else (2, 3 * H))
    module = ref.torch_module(kind, {"bias": zero_bias, **params}, F, H)  # use_bias=False: zero biases
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    states = [np.zeros((B, H))] * N_STATES[kind] if initial is None else initial
    ts = [torch.tensor(s, dtype=torch.float64, requires_grad=True) for s in states]
    hx = (ts[0][None], ts[1][None]) if kind == "lstm" else ts[0][None]
    seq, final = module(torch.flip(tx, (1,)) if go_backwards else tx, hx)
    finals = [f[0] for f in final] if kind == "lstm" else [final[0]]
    outs = [seq if return_sequences else finals[0]] + (finals if return_state else [])
    total = sum((out * torch.from_numpy(np.asarray(w, np.float64))).sum() for out, w in zip(outs, weights))
    total.backward()
    grads = ref.torch_grads_in_keras_layout(kind, module, H)
    if "bias" not in params:
        grads.pop("bias")
    return [o.detach().cpu().numpy() for o in outs], grads, tx.grad.numpy(), [t.grad.numpy() for t in ts]


CONFIGS = {
    "last": {},
    "sequences": {"return_sequences": True},
    "sequences+state": {"return_sequences": True, "return_state": True},
    "backwards+state": {"return_sequences": True, "return_state": True, "go_backwards": True},
    "backwards_last": {"go_backwards": True},
    "time_major": {"return_sequences": True, "return_state": True, "time_major": True},
    "no_bias": {"return_sequences": True, "use_bias": False},
}


@pytest.mark.parametrize("with_initial_state", [False, True])
@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("kind", KINDS)
def test_fused_and_loop_agree_with_torch(backend, monkeypatch, kind, config, with_initial_state):
    kwargs = CONFIGS[config]
    time_major = kwargs.get("time_major", False)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(B, T, F)).astype(np.float32)
    initial = ([rng.normal(size=(B, H)).astype(np.float32) for _ in range(N_STATES[kind])]
               if with_initial_state else None)
    layer = LAYERS[kind](H, bias_initializer="random_normal", **kwargs)
    state = layer.build((None, T, F), seed=1)
    rs, rst = kwargs.get("return_sequences", False), kwargs.get("return_state", False)
    shapes = [((T, B, H) if time_major else (B, T, H)) if rs else (B, H)] + [(B, H)] * (N_STATES[kind] * rst)
    weights = [rng.normal(size=s).astype(np.float32) for s in shapes]
    x_in = ops.convert_to_tensor(np.ascontiguousarray(np.swapaxes(x, 0, 1)) if time_major else x)
    initial_in = None if initial is None else [ops.convert_to_tensor(s) for s in initial]
    weights_in = [ops.convert_to_tensor(w) for w in weights]

    with _path(monkeypatch, fused=True) as taken:
        fused_outs, fused_grads = _value_and_grads(layer, state, x_in, initial_in, weights_in)
    assert taken == [True]
    with _path(monkeypatch, fused=False):
        loop_outs, loop_grads = _value_and_grads(layer, state, x_in, initial_in, weights_in)

    batch_major_weights = [np.swapaxes(w, 0, 1) if time_major and w.ndim == 3 else w for w in weights]
    e_outs, e_params, e_x, e_states = _torch_reference(kind, _numpy(state["params"]), x, initial,
                                                       batch_major_weights, kwargs.get("go_backwards", False), rs, rst)
    if time_major and rs:
        e_outs[0] = np.swapaxes(e_outs[0], 0, 1)
    e_x = np.swapaxes(e_x, 0, 1) if time_major else e_x
    assert len(fused_outs) == len(e_outs)
    for i, (fused, loop, expected) in enumerate(zip(fused_outs, loop_outs, e_outs)):
        assert_close_recurrent(fused, ops.to_numpy(loop), err_msg=f"output {i}: fused vs loop")
        assert_close_recurrent(fused, expected, err_msg=f"output {i}: fused vs torch")
    for path, grads in (("fused", fused_grads), ("loop", loop_grads)):
        for name, expected in e_params.items():
            assert_close_recurrent(grads[0][name], expected, rtol=GRAD_RTOL, atol=GRAD_ATOL, err_msg=f"{path} {name}")
        assert_close_recurrent(grads[1], e_x, rtol=GRAD_RTOL, atol=GRAD_ATOL, err_msg=f"{path} inputs")
        if initial is not None:
            for got, expected in zip(grads[2], e_states):
                assert_close_recurrent(got, expected, rtol=GRAD_RTOL, atol=GRAD_ATOL, err_msg=f"{path} initial_state")


@pytest.mark.parametrize("kind", KINDS)
def test_bidirectional_fused_and_loop_agree_with_torch(backend, monkeypatch, kind):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(B, T, F)).astype(np.float32)
    bi = layers.Bidirectional(LAYERS[kind](H, bias_initializer="random_normal", return_sequences=True, name="rnn"))
    state = bi.build((None, T, F), seed=2)
    w = rng.normal(size=(B, T, 2 * H)).astype(np.float32)

    def run():
        def loss(params, inputs):
            out = bi.apply({"params": params, "buffers": {}}, inputs)[0]
            return ops.sum(ops.multiply(out, w)), out

        (_, out), grads = value_and_grad(loss, argnums=(0, 1), has_aux=True)(state["params"],
                                                                              ops.convert_to_tensor(x))
        return out, grads

    with _path(monkeypatch, fused=True) as taken:
        fused_out, fused_grads = run()
    assert taken == [True, True]
    with _path(monkeypatch, fused=False):
        loop_out, loop_grads = run()
    forward, backward = _numpy(state["params"]["forward_rnn"]), _numpy(state["params"]["backward_rnn"])
    module = ref.torch_module(kind, forward, F, H, bidirectional_params=backward)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    t_out = module(tx)[0]
    (t_out * torch.from_numpy(w.astype(np.float64))).sum().backward()
    e_forward = ref.torch_grads_in_keras_layout(kind, module, H)
    for suffix in ("ih", "hh"):  # the reverse direction's gradients, read through the same conversion
        for kind_ in ("weight", "bias"):
            getattr(module, f"{kind_}_{suffix}_l0").grad = getattr(module, f"{kind_}_{suffix}_l0_reverse").grad
    e_backward = ref.torch_grads_in_keras_layout(kind, module, H)
    assert_close_recurrent(fused_out, ops.to_numpy(loop_out))
    assert_close_recurrent(fused_out, t_out.detach().cpu().numpy())
    for params, inputs in (fused_grads, loop_grads):
        for direction, expected in (("forward_rnn", e_forward), ("backward_rnn", e_backward)):
            for name, value in expected.items():
                assert_close_recurrent(params[direction][name], value, rtol=GRAD_RTOL, atol=GRAD_ATOL,
                             err_msg=f"{direction} {name}")
        assert_close_recurrent(inputs, tx.grad.numpy(), rtol=GRAD_RTOL, atol=GRAD_ATOL)


def _step_with_dropout(kind, input_mask, recurrent_mask):
    """A float64 step with Keras's dropout: the input mask on ``x``; the recurrent mask on ``h``
    where it enters the recurrent matmul (LSTM: everywhere ``h`` is used; GRU: not in the blend)."""

    def step(p, x, states):
        x = x * input_mask
        if kind == "lstm":
            h, c = states
            return ref.lstm_step(p, x, [h * recurrent_mask, c])
        h = states[0]
        x_z, x_r, x_h = np.split(x @ p["kernel"] + p["bias"][0], 3, axis=-1)
        r_z, r_r, r_h = np.split((h * recurrent_mask) @ p["recurrent_kernel"] + p["bias"][1], 3, axis=-1)
        z, r = ref.sigmoid(x_z + r_z), ref.sigmoid(x_r + r_r)
        h = z * h + (1 - z) * np.tanh(x_h + r * r_h)
        return h, [h]

    return step


@pytest.mark.parametrize("kind", KINDS)
def test_mask_and_recurrent_dropout_use_the_loop(backend, monkeypatch, kind):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(B, T, F)).astype(np.float32)
    x64 = x.astype(np.float64)
    zeros = [np.zeros((B, H))] * N_STATES[kind]
    mask = np.array([[1, 1, 0, 1, 1], [1, 0, 0, 1, 0], [1, 1, 1, 1, 1]], dtype=bool)
    layer = LAYERS[kind](H, bias_initializer="random_normal", return_sequences=True, name="rnn")
    state = layer.build((None, T, F), seed=3)
    params = _numpy(state["params"])
    step = ref.lstm_step if kind == "lstm" else ref.gru_step
    with _path(monkeypatch, fused=True) as taken:
        got = layer.apply(state, ops.convert_to_tensor(x), mask=ops.convert_to_tensor(mask))[0]
    assert taken == []  # a mask never reaches the fused path
    assert_close_recurrent(got, ref.run(step, params, x64, zeros, mask=mask)[0])

    dropped = LAYERS[kind](H, bias_initializer="random_normal", return_sequences=True, dropout=0.3,
                           recurrent_dropout=0.4, name="rnn")
    with _path(monkeypatch, fused=True) as taken:
        got = dropped.apply(state, ops.convert_to_tensor(x), training=True, rng=7)[0]
        inference = dropped.apply(state, ops.convert_to_tensor(x))[0]
    assert taken == [False, True]  # training with recurrent dropout loops; inference is fused
    cell = dropped.cell
    input_mask = ops.to_numpy(dropout_mask(cell, (B, F), 0.3, 7, "dropout", "float32")).astype(np.float64)
    recurrent_mask = ops.to_numpy(dropout_mask(cell, (B, H), 0.4, 7, "recurrent_dropout", "float32")).astype(np.float64)
    assert_close_recurrent(got, ref.run(_step_with_dropout(kind, input_mask, recurrent_mask), params, x64, zeros)[0])
    assert_close_recurrent(inference, ref.run(step, params, x64, zeros)[0])


@pytest.mark.parametrize("kind", KINDS)
def test_input_dropout_runs_fused_with_the_loop_mask(backend, monkeypatch, kind):
    rng = np.random.default_rng(3)
    x = ops.convert_to_tensor(rng.normal(size=(B, T, F)).astype(np.float32))
    layer = LAYERS[kind](H, dropout=0.5, return_sequences=True)
    state = layer.build((None, T, F), seed=4)
    w = [ops.convert_to_tensor(rng.normal(size=(B, T, H)).astype(np.float32))]
    with _path(monkeypatch, fused=True) as taken:
        fused_outs, fused_grads = _value_and_grads(layer, state, x, None, w, training=True, rng=11)
    assert taken == [True]
    with _path(monkeypatch, fused=False):
        loop_outs, loop_grads = _value_and_grads(layer, state, x, None, w, training=True, rng=11)
    assert_close_recurrent(fused_outs[0], ops.to_numpy(loop_outs[0]))
    for name in ("kernel", "recurrent_kernel", "bias"):
        assert_close_recurrent(fused_grads[0][name], ops.to_numpy(loop_grads[0][name]), rtol=GRAD_RTOL, atol=GRAD_ATOL)
    assert_close_recurrent(fused_grads[1], ops.to_numpy(loop_grads[1]), rtol=GRAD_RTOL, atol=GRAD_ATOL)


def test_other_configurations_use_the_loop(backend, monkeypatch):
    x = ops.ones((2, 3, 2))
    for layer in (layers.LSTM(2, activation="relu"), layers.LSTM(2, recurrent_activation="hard_sigmoid"),
                  layers.LSTM(2, dtype="float16"), layers.GRU(2, reset_after=False), layers.GRU(2, activation="relu")):
        state = layer.build((None, 3, 2), seed=0)
        with _path(monkeypatch, fused=True) as taken:
            layer.apply(state, ops.cast(x, layer.variable_dtype))
        assert taken == [False], layer


@pytest.mark.parametrize("kind", KINDS)
def test_fit_fused_matches_loop(backend, monkeypatch, kind):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(8, 4, 3)).astype(np.float32)
    y = rng.integers(0, 2, size=(8,))

    def losses():
        model = ember.Sequential([ember.Input((4, 3)), LAYERS[kind](4, name="rnn"), layers.Dense(2, name="head")])
        model.build(seed=0)
        model.compile(optimizer="adam", loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), seed=0)
        return model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0).history["loss"]

    with _path(monkeypatch, fused=True) as taken:
        fused = losses()
    assert taken and all(taken)
    with _path(monkeypatch, fused=False):
        loop = losses()
    # Six Adam steps on float32: the two paths round differently, so compare at 1e-5 relative.
    np.testing.assert_allclose(fused, loop, **recurrence_tolerance(1e-5, 0.0))
