"""Bidirectional, TimeDistributed, Masking, and masks travelling through models.

References: ``torch.nn.LSTM/GRU(bidirectional=True)`` with both directions' weights
copied from Keras's layout (tests/layers/rnn_reference.py), NumPy float64 loops, and
explicit ``mask=`` calls of the same layers (for mask propagation in models).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import layers, ops
from tests.helpers import assert_close_recurrent
from tests.layers import rnn_reference as ref
from tests.layers.layer_test import run_layer_test
from tests.tolerances import FLOAT32_PAIR

torch = pytest.importorskip("torch")  # the reference implementation, not the code under test


def _numpy(tree):
    return {k: np.asarray(ops.to_numpy(v), dtype=np.float64) for k, v in tree.items()}


# ------------------------------------------------------------------- Bidirectional


def test_bidirectional_conformance():
    def reference(p, x):
        f = ref.run(ref.gru_step, p["forward_gru"], x, [np.zeros((2, 2))])[0]
        b = ref.run(ref.gru_step, p["backward_gru"], x, [np.zeros((2, 2))], go_backwards=True)[0]
        return np.concatenate([f, b[:, ::-1]], axis=-1)

    run_layer_test(
        lambda: layers.Bidirectional(layers.GRU(2, return_sequences=True, bias_initializer="random_normal",
                                                name="gru"), name="bi"),
        (2, 3, 3), reference=reference, supports_masking=True, expected_output_shape=(2, 3, 4),
    )


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_bidirectional_matches_torch(backend, kind):
    cls = layers.LSTM if kind == "lstm" else layers.GRU
    bi = layers.Bidirectional(cls(5, return_sequences=True, return_state=True, bias_initializer="random_normal",
                                  name=kind))
    state = bi.build((None, 6, 4), seed=0)
    x = np.random.default_rng(0).normal(size=(3, 6, 4)).astype(np.float32)
    seq, *states = bi.apply(state, ops.convert_to_tensor(x))[0]
    module = ref.torch_module(kind, _numpy(state["params"][f"forward_{kind}"]), 4, 5,
                              bidirectional_params=_numpy(state["params"][f"backward_{kind}"]))
    t_seq, t_states = module(torch.from_numpy(x.astype(np.float64)))
    assert_close_recurrent(seq, t_seq.detach().cpu().numpy())  # torch also concatenates [forward, backward]
    t_states = list(t_states) if kind == "lstm" else [t_states]
    # Keras order: forward states, then backward; torch stacks directions on axis 0.
    expected = [s.detach().cpu().numpy()[0] for s in t_states] + [s.detach().cpu().numpy()[1] for s in t_states]
    assert len(states) == len(expected)
    for got, want in zip(states, expected):
        assert_close_recurrent(got, want)


@pytest.mark.parametrize("merge_mode", ["sum", "mul", "ave", None])
def test_bidirectional_merge_modes_and_states(backend, merge_mode):
    x = np.random.default_rng(1).normal(size=(2, 4, 3)).astype(np.float32)
    h0 = np.random.default_rng(2).normal(size=(4, 2, 3)).astype(np.float32)
    bi = layers.Bidirectional(layers.SimpleRNN(3, return_state=True, name="rnn"), merge_mode=merge_mode)
    state = bi.build((None, 4, 3), seed=1)
    outputs = bi.apply(state, ops.convert_to_tensor(x), initial_state=[ops.convert_to_tensor(h) for h in h0[:2]])[0]
    p = state["params"]
    _, f_last, f_states = ref.run(ref.simple_rnn_step, _numpy(p["forward_rnn"]), x.astype(np.float64), [h0[0]])
    _, b_last, b_states = ref.run(ref.simple_rnn_step, _numpy(p["backward_rnn"]), x.astype(np.float64), [h0[1]],
                                  go_backwards=True)
    merged = {"sum": f_last + b_last, "mul": f_last * b_last, "ave": (f_last + b_last) / 2}
    expected = [f_last, b_last] if merge_mode is None else [merged[merge_mode]]
    expected += f_states + b_states
    assert bi.compute_output_shape((None, 4, 3)) == [(None, 3)] * len(expected)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert_close_recurrent(got, want)


def test_bidirectional_mask_zeroes_masked_outputs(backend):
    x = np.random.default_rng(3).normal(size=(2, 5, 3)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], dtype=bool)
    bi = layers.Bidirectional(layers.LSTM(2, return_sequences=True, name="lstm"), merge_mode=None)
    state = bi.build((None, 5, 3), seed=2)
    forward, backward = bi.apply(state, ops.convert_to_tensor(x), mask=ops.convert_to_tensor(mask))[0]
    p = state["params"]
    zeros = [np.zeros((2, 2))] * 2
    f = ref.run(ref.lstm_step, _numpy(p["forward_lstm"]), x.astype(np.float64), zeros, mask=mask, zero_output=True)[0]
    b = ref.run(ref.lstm_step, _numpy(p["backward_lstm"]), x.astype(np.float64), zeros, mask=mask,
                go_backwards=True, zero_output=True)[0]
    assert_close_recurrent(forward, f)
    assert_close_recurrent(backward, b[:, ::-1])
    assert np.all(ops.to_numpy(forward)[~mask] == 0)
    assert bi.compute_mask(None, ops.convert_to_tensor(mask))[0] is not None


def test_bidirectional_config_and_backward_layer(backend):
    bi = layers.Bidirectional(layers.LSTM(3, return_sequences=True, name="enc"),
                              backward_layer=layers.GRU(2, return_sequences=True, go_backwards=True, name="back"))
    assert bi.forward_layer.name == "forward_enc" and bi.backward_layer.name == "back"
    assert bi.compute_output_shape((None, 4, 3)) == (None, 4, 5)
    rebuilt = layers.Bidirectional.from_config(bi.get_config())
    assert rebuilt.get_config() == bi.get_config()
    state = bi.build((None, 4, 3), seed=0)
    assert sorted(state["params"]) == ["back", "forward_enc"]
    assert ops.shape(bi.apply(state, ops.ones((2, 4, 3)))[0]) == (2, 4, 5)
    with pytest.raises(ValueError, match="bi_bad: merge_mode must be one of"):
        layers.Bidirectional(layers.LSTM(2), merge_mode="max", name="bi_bad")
    with pytest.raises(TypeError, match="bi_bad: layer must be a recurrent layer"):
        layers.Bidirectional(layers.Dense(2), name="bi_bad")
    with pytest.raises(ValueError, match="bi_bad: backward_layer must have the opposite go_backwards"):
        layers.Bidirectional(layers.LSTM(2), backward_layer=layers.LSTM(2), name="bi_bad")
    with pytest.raises(ValueError, match="bi_bad: layer and backward_layer must have the same return_sequences"):
        layers.Bidirectional(layers.LSTM(2), backward_layer=layers.LSTM(2, go_backwards=True, return_sequences=True),
                             name="bi_bad")


# ----------------------------------------------------------------- TimeDistributed


def test_time_distributed_dense():
    run_layer_test(
        lambda: layers.TimeDistributed(layers.Dense(3, activation="tanh", bias_initializer="random_normal",
                                                    name="dense"), name="td"),
        (2, 4, 5), supports_masking=True, expected_output_shape=(2, 4, 3),
        reference=lambda p, x: np.tanh((x.reshape(8, 5) @ p["kernel"] + p["bias"]).reshape(2, 4, 3)),
        expected_param_shapes={"kernel": (5, 3), "bias": (3,)},
    )


def test_time_distributed_rank4_and_masks(backend):
    td = layers.TimeDistributed(layers.Flatten())
    assert td.compute_output_shape((None, 3, 2, 4)) == (None, 3, 8)
    y = td.apply(td.build((None, 3, 2, 4)), ops.ones((2, 3, 2, 4)))[0]
    assert ops.shape(y) == (2, 3, 8)
    # A wrapped recurrent layer gets the (batch * time, inner time) mask.
    inner = layers.LSTM(2, name="inner")
    td = layers.TimeDistributed(inner)
    x = np.random.default_rng(4).normal(size=(2, 3, 4, 2)).astype(np.float32)
    mask = np.random.default_rng(5).random((2, 3, 4)) < 0.6
    state = td.build((None, 3, 4, 2), seed=0)
    got = td.apply(state, ops.convert_to_tensor(x), mask=ops.convert_to_tensor(mask))[0]
    flat = inner.apply(state, ops.convert_to_tensor(x.reshape(6, 4, 2)),
                       mask=ops.convert_to_tensor(mask.reshape(6, 4)))[0]
    assert_close_recurrent(got, ops.to_numpy(flat).reshape(2, 3, 2))
    with pytest.raises(ValueError, match="td_bad.*rank >= 3"):
        layers.TimeDistributed(layers.Dense(2), name="td_bad")(ember.Input((4,)))
    with pytest.raises(TypeError, match="td_bad: layer must be a Layer"):
        layers.TimeDistributed("dense", name="td_bad")


# ------------------------------------------------------------------------- Masking


def test_masking_conformance():
    x = np.random.default_rng(6).uniform(-1, 1, size=(2, 4, 3)).astype(np.float32)
    x[0, 1] = 0.0
    x[1, 3] = 0.0
    x[1, 2, 0] = 0.0  # one zero feature does not mask the step
    run_layer_test(lambda: layers.Masking(name="masking"), (2, 4, 3), input_data=x, supports_masking=True,
                   reference=lambda p, v: v * np.any(v != 0, axis=-1, keepdims=True))


def test_masking_mask_value_and_compute_mask(backend):
    x = np.array([[[1.0, 1.0], [-1.0, -1.0], [2.0, -1.0]]], np.float32)
    masking = layers.Masking(mask_value=-1.0)
    mask = masking.compute_mask(ops.convert_to_tensor(x))
    np.testing.assert_array_equal(ops.to_numpy(mask), [[True, False, True]])
    y = masking.apply(masking.build((None, 3, 2)), ops.convert_to_tensor(x))[0]
    assert_close_recurrent(y, [[[1.0, 1.0], [0.0, 0.0], [2.0, -1.0]]])
    with pytest.raises(TypeError, match="masking_bad: mask_value must be a number"):
        layers.Masking("0", name="masking_bad")


# --------------------------------------------------------------- masks in models


def _padded_batch():
    x = np.random.default_rng(7).normal(size=(3, 5, 4)).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=bool)
    return x * mask[..., None], mask


def test_sequential_masking_reaches_lstm(backend):
    x, mask = _padded_batch()
    lstm = layers.LSTM(3, return_sequences=True, name="lstm")
    model = ember.Sequential([ember.Input((5, 4)), layers.Masking(), lstm, layers.GRU(2, name="gru")])
    state = model.build(seed=0)
    got = model.apply(state, x)[0]
    m = ops.convert_to_tensor(mask)
    seq = lstm.apply({"params": state["params"]["lstm"], "buffers": {}}, ops.convert_to_tensor(x), mask=m)[0]
    gru = model.get_layer("gru")
    expected = gru.apply({"params": state["params"]["gru"], "buffers": {}}, seq, mask=m)[0]
    assert_close_recurrent(got, ops.to_numpy(expected))
    unmasked = gru.apply({"params": state["params"]["gru"], "buffers": {}}, seq)[0]
    assert not np.allclose(ops.to_numpy(got), ops.to_numpy(unmasked))


def test_functional_embedding_mask_reaches_bidirectional(backend):
    tokens = np.array([[3, 1, 4, 0, 0], [2, 0, 0, 0, 0], [5, 9, 2, 6, 5]], np.int32)
    inputs = ember.Input((5,), dtype="int32")
    embedded = layers.Embedding(10, 4, mask_zero=True, name="embed")(inputs)
    encoded = layers.Bidirectional(layers.LSTM(3, return_sequences=True, name="lstm"), name="bi")(embedded)
    pooled = layers.LSTM(2, name="top")(encoded)
    model = ember.Model(inputs, pooled)
    state = model.build(seed=0)
    got = model.apply(state, tokens)[0]
    p = state["params"]
    mask = ops.convert_to_tensor(tokens != 0)
    vectors = ops.take(p["embed"]["embeddings"], ops.convert_to_tensor(tokens), axis=0)
    bi, top = model.get_layer("bi"), model.get_layer("top")
    seq = bi.apply({"params": p["bi"], "buffers": {}}, vectors, mask=mask)[0]
    expected = top.apply({"params": p["top"], "buffers": {}}, seq, mask=mask)[0]
    assert_close_recurrent(got, ops.to_numpy(expected))
    # Without the mask the padded rows would come out differently.
    unmasked_seq = bi.apply({"params": p["bi"], "buffers": {}}, vectors)[0]
    unmasked = top.apply({"params": p["top"], "buffers": {}}, unmasked_seq)[0]
    assert not np.allclose(ops.to_numpy(got)[:2], ops.to_numpy(unmasked)[:2])
    assert_close_recurrent(ops.getitem(got, 2), ops.to_numpy(unmasked)[2])  # the unpadded row agrees


def test_model_mask_stops_at_non_sequence_output(backend):
    x, _ = _padded_batch()
    inputs = ember.Input((5, 4))
    masked = layers.Masking()(inputs)
    last = layers.LSTM(3, name="lstm")(masked)  # not a sequence: the mask ends here
    out = layers.Dense(2, name="dense")(last)
    model = ember.Model(inputs, out)
    state = model.build(seed=0)
    assert ops.shape(model.apply(state, x)[0]) == (3, 2)
    assert layers.LSTM(3).compute_mask(None, ops.ones((3, 5), dtype="bool")) is None


@pytest.mark.parametrize("wrap", ["bidirectional", "time_distributed"])
def test_wrappers_pass_the_inner_constraints_to_fit(backend, wrap):
    """A constraint on the wrapped layer holds after fit (Keras applies it after every update)."""
    ember.set_backend(backend)
    ember.clear_session()
    if wrap == "bidirectional":
        inner = layers.LSTM(3, kernel_constraint="non_neg", recurrent_constraint="non_neg")
        wrapper = layers.Bidirectional(inner)
    else:
        inner = layers.Dense(3, kernel_constraint="non_neg")
        wrapper = layers.TimeDistributed(inner)
    model = ember.Sequential([ember.Input((4, 2)), wrapper, layers.Flatten(), layers.Dense(1)])
    model.build(seed=0)
    constrained = model.constraints()[wrapper.name]
    if wrap == "bidirectional":
        assert sorted(constrained) == sorted([wrapper.layer.name, wrapper.backward_layer.name])
        assert all(sorted(c) == ["kernel", "recurrent_kernel"] for c in constrained.values())
    else:
        assert sorted(constrained) == ["kernel"]
    model.compile(optimizer=ember.optimizers.SGD(0.5), loss="mse", seed=0)
    x = np.random.default_rng(0).normal(size=(16, 4, 2)).astype("float32")
    model.fit(x, -np.ones((16, 1), "float32"), epochs=2, verbose=0)
    kernels = [w.numpy() for w in wrapper.weights if w.path.endswith("kernel")]
    assert kernels and all(k.min() >= 0 for k in kernels)
    assert any(k.max() > 0 for k in kernels)


def test_wrappers_pass_the_inner_penalties(backend):
    """Weight penalties of both directions (and of a TimeDistributed layer, once) reach the model;
    each direction's activity regularizer penalises its own output, as Keras's inner layers do."""
    from ember import regularizers
    from ember.layers.loss_collection import collect_losses

    ember.clear_session()
    bi = layers.Bidirectional(layers.LSTM(2, return_sequences=True, bias_initializer="random_normal",
                                          kernel_regularizer=regularizers.L2(0.1),
                                          bias_regularizer=regularizers.L1(0.2),
                                          activity_regularizer=regularizers.L2(0.5), name="lstm"), name="bi")
    td = layers.TimeDistributed(layers.Dense(2, kernel_regularizer=regularizers.L2(0.3), name="dense"), name="td")
    model = ember.Sequential([ember.Input((4, 3)), bi, td])
    state = model.build(seed=0)
    params = state["params"]
    forward, backward = _numpy(params["bi"]["forward_lstm"]), _numpy(params["bi"]["backward_lstm"])
    expected = [0.1 * np.sum(forward["kernel"] ** 2), 0.2 * np.sum(np.abs(forward["bias"])),
                0.1 * np.sum(backward["kernel"] ** 2), 0.2 * np.sum(np.abs(backward["bias"])),
                0.3 * np.sum(ops.to_numpy(params["td"]["kernel"]).astype(np.float64) ** 2)]
    losses = model.regularization_losses(params)
    assert len(losses) == len(expected)
    for got, want in zip(losses, expected):
        assert_close_recurrent(got, want)
    assert bi.replace(trainable=False).regularization_losses(params["bi"]) == []
    assert td.replace(trainable=False).regularization_losses(params["td"]) == []

    x = np.random.default_rng(2).normal(size=(3, 4, 3))
    with collect_losses() as activity:
        model.apply(state, ops.convert_to_tensor(x.astype(np.float32)))
    zeros = [np.zeros((3, 2))] * 2
    f_seq = ref.run(ref.lstm_step, forward, x, zeros)[0]
    b_seq = ref.run(ref.lstm_step, backward, x, zeros, go_backwards=True)[0]
    assert len(activity) == 2
    assert_close_recurrent(activity[0], 0.5 * np.sum(f_seq ** 2))
    assert_close_recurrent(activity[1], 0.5 * np.sum(b_seq ** 2))


# ------------------------------------------------------------------ ConvLSTM (issue 19)
@pytest.mark.parametrize("cls_name, kwargs, shape", [
    ("ConvLSTM1D", {"filters": 3, "kernel_size": 2}, (2, 4, 6, 2)),
    ("ConvLSTM2D", {"filters": 2, "kernel_size": 3, "padding": "same", "return_sequences": True}, (2, 3, 5, 4, 2)),
    ("ConvLSTM2D", {"filters": 2, "kernel_size": (2, 3), "strides": 2, "go_backwards": True, "return_state": True},
     (1, 3, 6, 7, 1)),
    ("ConvLSTM3D", {"filters": 2, "kernel_size": 2}, (1, 2, 3, 3, 3, 1)),
])
def test_conv_lstm_matches_keras_with_the_same_weights(backend, cls_name, kwargs, shape):
    import os

    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    from ember import layers as ember_layers

    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    theirs = getattr(keras.layers, cls_name)(**kwargs, bias_initializer="random_normal")
    expected = theirs(keras.ops.convert_to_tensor(x))
    expected = [keras.ops.convert_to_numpy(e)
                for e in (expected if isinstance(expected, (list, tuple)) else [expected])]
    layer = getattr(ember_layers, cls_name)(**kwargs)
    state = layer.build((None,) + shape[1:], seed=0)
    for variable in theirs.weights:
        key = variable.path.split("/")[-1]
        assert ops.shape(state["params"][key]) == tuple(variable.shape), key
        state["params"][key] = ops.convert_to_tensor(keras.ops.convert_to_numpy(variable))
    actual, _ = layer.apply(state, ops.convert_to_tensor(x))
    actual = actual if isinstance(actual, list) else [actual]
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(ops.to_numpy(a), e, rtol=1e-4, atol=1e-5)  # float32 over several steps
    shapes = layer.compute_output_shape((None,) + shape[1:])
    shapes = shapes if isinstance(shapes, list) else [shapes]
    assert [s[1:] for s in shapes] == [e.shape[1:] for e in expected]


def test_stacked_rnn_cells_equal_stacked_rnn_layers(backend):
    x = ops.convert_to_tensor(np.random.default_rng(1).normal(size=(2, 5, 3)).astype(np.float32))
    stacked = layers.RNN(layers.StackedRNNCells([layers.LSTMCell(4, name="first"), layers.GRUCell(3, name="second")]),
                         return_sequences=True, return_state=True)
    state = stacked.build((None, 5, 3), seed=0)
    first, second = layers.LSTM(4, return_sequences=True), layers.GRU(3, return_sequences=True, return_state=True)
    hidden, _ = first.apply({"params": state["params"]["first"], "buffers": {}}, x)
    expected = second.apply({"params": state["params"]["second"], "buffers": {}}, hidden)[0]
    actual, _ = stacked.apply(state, x)
    assert len(actual) == 1 + 3  # outputs, then the LSTM's h and c and the GRU's h
    for a, e in zip([actual[0], actual[3]], expected):
        np.testing.assert_allclose(ops.to_numpy(a), ops.to_numpy(e), **FLOAT32_PAIR)
    rebuilt = layers.deserialize(layers.serialize(stacked))
    # exact: the same layer configuration on the same state runs the same ops
    np.testing.assert_array_equal(ops.to_numpy(rebuilt.apply(state, x)[0][0]), ops.to_numpy(actual[0]))
    with pytest.raises(ValueError, match="cells"):
        layers.StackedRNNCells([])
