"""Functional models: graphs of layers over ``ember.Input``s.

Every model is built with seed 0 on each backend; its state must equal the NumPy
backend's exactly (initializers are backend-independent), and its outputs must match a
float64 NumPy forward pass written out here from that state.
"""

from __future__ import annotations

import json

import numpy as np
import optree
import pytest

import ember
from ember import layers, ops
from ember.autodiff import value_and_grad
from tests.helpers import WeaklyRecorded, assert_close

RNG = np.random.default_rng(7)
XA = RNG.uniform(-1, 1, size=(3, 4)).astype(np.float32)
XB = RNG.uniform(-1, 1, size=(3, 5)).astype(np.float32)
XC = RNG.uniform(-1, 1, size=(3, 4)).astype(np.float32)


def to_np(tree):
    return optree.tree_map(lambda a: np.asarray(ops.to_numpy(a)), tree, none_is_leaf=False)


def f64(tree):
    return optree.tree_map(lambda a: np.asarray(a, dtype=np.float64), tree, none_is_leaf=False)


def relu(v):
    return np.maximum(v, 0.0)


def softmax(v):
    e = np.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def dense(p, x, fn=lambda v: v):
    return fn(x @ p["kernel"] + p["bias"])


def numpy_state(make_model, seed=0):
    """The state NumPy builds for the same architecture and seed."""
    with ember.using_backend("numpy"):
        return to_np(make_model().build(seed=seed))


def assert_same_state(state, expected):
    got = to_np(state)
    assert optree.tree_structure(got) == optree.tree_structure(expected)
    for a, b in zip(optree.tree_leaves(got), optree.tree_leaves(expected)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def summary_lines(model):
    lines = []
    model.summary(print_fn=lines.append)
    return lines


def row(lines, name):
    matches = [line for line in lines if line.startswith(name + " ")]
    assert len(matches) == 1, f"no single row for {name!r} in:\n" + "\n".join(lines)
    return matches[0]


def cells(lines, name):
    """The Output Shape, Param # and Connected to cells of a layer's row (columns are 2+ spaces apart)."""
    import re

    return re.split(r"\s{2,}", row(lines, name)[len(name):].strip())


# ------------------------------------------------------------------- models


def make_mlp():
    x = ember.Input((4,), name="x")
    h = layers.Dense(8, activation="relu", name="hidden")(x)
    y = layers.Dense(3, name="logits")(h)
    return ember.Model(x, y, name="mlp")


def mlp_reference(p, x):
    return dense(p["logits"], dense(p["hidden"], x, relu))


def make_two_in_two_out():
    a = ember.Input((4,), name="a")
    b = ember.Input((5,), name="b")
    ha = layers.Dense(3, activation="tanh", name="branch_a")(a)
    hb = layers.Dense(3, activation="tanh", name="branch_b")(b)
    merged = layers.Concatenate(name="merge")([ha, hb])
    score = layers.Dense(1, name="score")(merged)
    probs = layers.Dense(2, activation="softmax", name="probs")(merged)
    return ember.Model([a, b], [score, probs], name="two_heads")


def two_reference(p, xa, xb):
    merged = np.concatenate([dense(p["branch_a"], xa, np.tanh), dense(p["branch_b"], xb, np.tanh)], axis=-1)
    return [dense(p["score"], merged), dense(p["probs"], merged, softmax)]


def make_siamese():
    a = ember.Input((4,), name="left")
    b = ember.Input((4,), name="right")
    shared = layers.Dense(3, activation="tanh", name="shared")
    diff = layers.Subtract(name="diff")([shared(a), shared(b)])
    return ember.Model([a, b], layers.Dense(1, name="out")(diff), name="siamese")


def siamese_reference(p, xa, xb):
    return dense(p["out"], dense(p["shared"], xa, np.tanh) - dense(p["shared"], xb, np.tanh))


def make_nested():
    inner = make_mlp()
    z = ember.Input((4,), name="z")
    features = inner(z)
    skip = layers.Dense(3, name="skip")(z)
    out = layers.Add(name="add")([features, skip])
    return ember.Model(z, out, name="outer")


def nested_reference(p, x):
    return mlp_reference(p["mlp"], x) + dense(p["skip"], x)


def make_dict_model():
    a = ember.Input((4,), name="a")
    b = ember.Input((5,), name="b")
    merged = layers.Concatenate(name="merge")([a, b])
    hidden = layers.Dense(3, activation="relu", name="hidden")(merged)
    return ember.Model({"first": a, "second": b},
                       {"value": layers.Dense(1, name="value")(hidden), "hidden": hidden}, name="dicts")


def dict_reference(p, xa, xb):
    hidden = dense(p["hidden"], np.concatenate([xa, xb], axis=-1), relu)
    return {"value": dense(p["value"], hidden), "hidden": hidden}


# ------------------------------------------------------------- forward pass


def test_mlp_on_every_backend(backend):
    model = make_mlp()
    state = model.build(seed=0)
    assert model.state is state
    assert sorted(state["params"]) == ["hidden", "logits"]
    assert state["buffers"] == {}
    assert_same_state(state, numpy_state(make_mlp))
    expected = mlp_reference(f64(to_np(state["params"])), XA.astype(np.float64))
    assert_close(model(ops.convert_to_tensor(XA)), expected)
    y, new_state = model.apply(state, ops.convert_to_tensor(XA))
    assert_close(y, expected)
    assert new_state["params"] is state["params"]


def test_mlp_summary():
    lines = summary_lines(make_mlp())
    assert lines[0] == 'Model: "mlp"'
    assert lines[2].split() == ["Layer", "(type)", "Output", "Shape", "Param", "#", "Connected", "to"]
    assert cells(lines, "x (InputLayer)") == ["(None, 4)", "0", "-"]
    assert cells(lines, "hidden (Dense)") == ["(None, 8)", "40", "x"]
    assert cells(lines, "logits (Dense)") == ["(None, 3)", "27", "hidden"]
    assert "Total params: 67" in lines
    assert "Trainable params: 67" in lines
    assert "Non-trainable params: 0" in lines


def test_two_inputs_two_outputs(backend):
    model = make_two_in_two_out()
    state = model.build(seed=0)
    assert_same_state(state, numpy_state(make_two_in_two_out))
    outputs = model([ops.convert_to_tensor(XA), ops.convert_to_tensor(XB)])
    assert isinstance(outputs, list) and len(outputs) == 2
    expected = two_reference(f64(to_np(state["params"])), XA.astype(np.float64), XB.astype(np.float64))
    for got, want in zip(outputs, expected):
        assert_close(got, want)
    # Inputs may also be given by name.
    by_name = model({"b": ops.convert_to_tensor(XB), "a": ops.convert_to_tensor(XA)})
    for got, want in zip(by_name, expected):
        assert_close(got, want)


def test_two_inputs_two_outputs_summary():
    lines = summary_lines(make_two_in_two_out())
    for name, shape, count, inbound in [
            ("a (InputLayer)", "(None, 4)", "0", "-"), ("b (InputLayer)", "(None, 5)", "0", "-"),
            ("branch_a (Dense)", "(None, 3)", "15", "a"), ("branch_b (Dense)", "(None, 3)", "18", "b"),
            ("merge (Concatenate)", "(None, 6)", "0", "branch_a, branch_b"),
            ("score (Dense)", "(None, 1)", "7", "merge"), ("probs (Dense)", "(None, 2)", "14", "merge")]:
        assert cells(lines, name) == [shape, count, inbound]
    assert "Total params: 54" in lines and "Trainable params: 54" in lines


def test_shared_layer_has_one_state_entry(backend):
    model = make_siamese()
    state = model.build(seed=0)
    assert sorted(state["params"]) == ["out", "shared"]
    assert [layer.name for layer in model.layers].count("shared") == 1
    assert_same_state(state, numpy_state(make_siamese))
    y = model([ops.convert_to_tensor(XA), ops.convert_to_tensor(XC)])
    expected = siamese_reference(f64(to_np(state["params"])), XA.astype(np.float64), XC.astype(np.float64))
    assert_close(y, expected)
    # One entry, so its gradient sums both uses.
    x = [ops.convert_to_tensor(XA), ops.convert_to_tensor(XC)]
    _, grads = value_and_grad(lambda p: ops.sum(ops.square(model.apply({"params": p, "buffers": {}}, x)[0])))(
        state["params"])
    assert sorted(grads) == ["out", "shared"]
    assert all(np.any(ops.to_numpy(g) != 0) for g in optree.tree_leaves(grads))
    lines = summary_lines(model)
    assert cells(lines, "shared (Dense)") == ["(None, 3)", "15", "left, right"]  # one row for both calls
    assert "Total params: 19" in lines


def test_nested_model_as_a_layer(backend):
    model = make_nested()
    state = model.build(seed=0)
    assert sorted(state["params"]) == ["mlp", "skip"]
    assert sorted(state["params"]["mlp"]) == ["hidden", "logits"]
    assert_same_state(state, numpy_state(make_nested))
    expected = nested_reference(f64(to_np(state["params"])), XA.astype(np.float64))
    assert_close(model(ops.convert_to_tensor(XA)), expected)
    _, grads = value_and_grad(
        lambda p: ops.sum(ops.square(model.apply({"params": p, "buffers": {}}, ops.convert_to_tensor(XA))[0])))(
        state["params"])
    for path, g in zip(optree.tree_paths(grads), optree.tree_leaves(grads)):
        g = ops.to_numpy(g)
        assert np.all(np.isfinite(g)) and np.any(g != 0), path
    lines = summary_lines(model)
    assert cells(lines, "mlp (Model)") == ["(None, 3)", "67", "z"]
    assert "Total params: 82" in lines


def test_dict_inputs_and_outputs(backend):
    model = make_dict_model()
    state = model.build(seed=0)
    assert_same_state(state, numpy_state(make_dict_model))
    outputs = model({"first": ops.convert_to_tensor(XA), "second": ops.convert_to_tensor(XB)})
    assert sorted(outputs) == ["hidden", "value"]
    expected = dict_reference(f64(to_np(state["params"])), XA.astype(np.float64), XB.astype(np.float64))
    for key in expected:
        assert_close(outputs[key], expected[key])
    with pytest.raises(ValueError, match=r"'dicts'.*missing inputs \['second'\]"):
        model({"first": ops.convert_to_tensor(XA)})
    with pytest.raises(TypeError, match=r"'dicts'.*dict of inputs"):
        model([ops.convert_to_tensor(XA), ops.convert_to_tensor(XB)])


def test_training_flag_and_rng_reach_the_layers(backend):
    x = ember.Input((6,), name="x")
    model = ember.Model(x, layers.Dropout(0.5, name="drop")(layers.Dense(6, name="d")(x)), name="with_dropout")
    state = model.build(seed=0)
    xs = ops.convert_to_tensor(np.ones((4, 6), np.float32))
    inference = ops.to_numpy(model.apply(state, xs)[0])
    train_a = ops.to_numpy(model.apply(state, xs, training=True, rng=1)[0])
    train_b = ops.to_numpy(model.apply(state, xs, training=True, rng=1)[0])
    np.testing.assert_array_equal(train_a, train_b)
    assert not np.array_equal(train_a, inference)
    assert np.all((train_a == 0) | (train_a == 2 * inference))  # exact: kept values are scaled by 1 / 0.5


def test_embedding_model_with_integer_inputs(backend):
    ids = ember.Input((3,), dtype="int32", name="ids")
    vectors = layers.Embedding(6, 2, name="emb")(ids)
    assert (vectors.shape, vectors.dtype) == ((None, 3, 2), "float32")
    model = ember.Model(ids, layers.Dense(1, name="score")(layers.Flatten(name="flat")(vectors)), name="bag")
    state = model.build(seed=0)
    tokens = np.array([[0, 5, 2], [3, 3, 1]], np.int32)
    p = f64(to_np(state["params"]))
    expected = dense(p["score"], p["emb"]["embeddings"][tokens].reshape(2, 6))
    assert_close(model(tokens), expected)  # a NumPy array is converted with the input's dtype
    with pytest.raises(ValueError, match=r"'emb'.*\[0, 6\)"):
        model(np.array([[0, 6, 1]], np.int32))


# ------------------------------------------------------------------ configs


@pytest.mark.parametrize("make, n_inputs", [(make_two_in_two_out, 2), (make_siamese, 2), (make_nested, 1),
                                            (make_dict_model, 2)])
def test_config_round_trip(backend, make, n_inputs):
    model = make()
    state = model.build(seed=0)
    config = json.loads(json.dumps(model.get_config()))
    rebuilt = ember.Model.from_config(config)
    assert json.loads(json.dumps(rebuilt.get_config())) == config
    assert [(type(layer).__name__, layer.name) for layer in rebuilt.layers] == [
        (type(layer).__name__, layer.name) for layer in model.layers]
    assert [len(n.input_tensors()) for n in rebuilt._nodes] == [len(n.input_tensors()) for n in model._nodes]
    inputs = [ops.convert_to_tensor(XA), ops.convert_to_tensor(XB if make is not make_siamese else XC)]
    if make is make_dict_model:
        inputs = {"first": inputs[0], "second": inputs[1]}
    elif n_inputs == 1:
        inputs = inputs[0]
    expected, _ = model.apply(state, inputs)
    got, _ = rebuilt.apply(state, inputs)
    for a, b in zip(optree.tree_leaves(to_np(got)), optree.tree_leaves(to_np(expected))):
        np.testing.assert_array_equal(a, b)


def test_get_layer():
    model = make_two_in_two_out()
    assert model.get_layer("merge").name == "merge"
    assert model.get_layer(index=0).name == "a"
    assert model.get_layer(index=-1).name == "probs"
    with pytest.raises(ValueError, match=r"no layer named 'nope'.*'branch_a'"):
        model.get_layer("nope")
    with pytest.raises(ValueError, match="index 7 out of range for 7 layers"):
        model.get_layer(index=7)
    with pytest.raises(ValueError, match="exactly one of name or index"):
        model.get_layer()


# ---------------------------------------------------------------- bad input


def test_wrong_input_shape_eager(backend):
    model = make_mlp()
    model.build(seed=0)
    with pytest.raises(ValueError, match=r"'mlp'.*input 'x' expects shape \(None, 4\), received \(2, 5\)"):
        model(ops.ones((2, 5)))
    with pytest.raises(ValueError, match=r"'mlp'.*input 'x' expects shape \(None, 4\), received \(2, 4, 1\)"):
        model(ops.ones((2, 4, 1)))
    with pytest.raises(ValueError, match=r"'two_heads'.*expected 2 inputs, received 1"):
        make_two_in_two_out()(ops.ones((2, 4)))


def test_wrong_input_shape_symbolic():
    with pytest.raises(ValueError, match=r"'mlp'.*input 'x' expects shape \(None, 4\), received \(None, 5\)"):
        make_mlp()(ember.Input((5,)))
    with pytest.raises(ValueError, match=r"'mlp'.*input 'x' expects shape \(None, 4\), received \(None, 2, 4\)"):
        make_mlp()(ember.Input((2, 4)))
    with pytest.raises(ValueError, match=r"layer 'rv_bad' expects inputs of rank 2, received shape \(None, 3, 2\)"):
        layers.RepeatVector(2, name="rv_bad")(ember.Input((3, 2)))
    with pytest.raises(ValueError, match=r"layer 'dense_bad' needs a known last dimension.*\(None, None\)"):
        layers.Dense(2, name="dense_bad")(ember.Input((None,)))


def test_duplicate_layer_names():
    x = ember.Input((4,), name="x")
    y = layers.Dense(2, name="twin")(layers.Dense(3, name="twin")(x))
    with pytest.raises(ValueError, match=r"two different layers are named 'twin' \(Dense and Dense\)"):
        ember.Model(x, y)
    with pytest.raises(ValueError, match=r"two different layers are named 'x'"):
        ember.Model(x, layers.Dense(2, name="x")(x))


def test_disconnected_graph_and_unreachable_outputs():
    a = ember.Input((4,), name="a")
    b = ember.Input((4,), name="b")
    merged = layers.Add(name="sum")([layers.Dense(2, name="da")(a), layers.Dense(2, name="db")(b)])
    with pytest.raises(ValueError,
                       match=r"graph disconnected: layer 'db' needs input 'b' \(shape \(None, 4\)\).*\['a'\]"):
        ember.Model(a, merged)
    only_b = layers.Dense(2, name="from_b")(b)
    with pytest.raises(ValueError, match=r"graph disconnected: layer 'from_b' needs input 'b'"):
        ember.Model(a, [layers.Dense(2, name="from_a")(a), only_b])
    with pytest.raises(ValueError, match=r"input 'b'.*not among the model's inputs \['a'\]"):
        ember.Model(a, b)
    with pytest.raises(TypeError, match="outputs must be symbolic tensors"):
        ember.Model(a, ops.ones((1, 2)))


def test_unbuilt_layer_called_eagerly_builds_its_own_weights(backend):
    lonely = layers.Dense(2, name="lonely")
    assert not lonely.built
    assert ops.shape(lonely(ops.ones((1, 3)))) == (1, 2)
    assert lonely.built and [w.shape for w in lonely.weights] == [(3, 2), (2,)]


def test_failed_call_leaves_the_state_untouched(backend):
    model = make_mlp()
    with pytest.raises(ValueError, match=r"'mlp'.*expects shape \(None, 4\)"):
        model(ops.ones((2, 5)))
    assert model.state is None  # an unbuilt model stays unbuilt
    state = model.build(seed=0)
    before = to_np(state)
    with pytest.raises(ValueError, match=r"'mlp'"):
        model(ops.ones((2, 5)))
    with pytest.raises(ValueError, match=r"'mlp'"):
        model.build(input_shape=(None, 7))
    assert model.state is state
    assert_same_state(model.state, before)
    with pytest.raises(AttributeError, match="immutable"):
        model.name = "other"


def test_unregistered_subclass_is_not_saved_as_its_parent():
    from ember.serialization import deserialize, serialize

    class MyDense(ember.layers.Dense):
        pass

    data = serialize(MyDense(2, name="mine"))
    assert data["class_name"] == "Custom>MyDense"
    with pytest.raises(ValueError, match="register"):
        deserialize(data)


class _AliveCheck(layers.Layer):
    """Passes its input on, noting which of the recorded outputs are still alive when it runs."""

    alive: list = []

    def call(self, inputs):
        type(self).alive.append([ref() is not None for ref in WeaklyRecorded.refs])
        return inputs


def test_a_forward_pass_drops_each_value_after_the_node_that_reads_it_last(backend, monkeypatch):
    """A value is held only while a later node (or the output) still reads it: in a -> b -> (c, skip from a)
    -> add, a's output lives until the add, b's is gone by then; outputs are never dropped."""
    inputs = ember.Input((4,))
    a = WeaklyRecorded(name="a")(inputs)
    b = WeaklyRecorded(name="b")(a)
    c = _AliveCheck(name="check_after_b")(b)          # a's output still read by the add below; b's read here
    d = _AliveCheck(name="check_before_add")(layers.Dense(4, name="dense")(c))
    total = layers.Add(name="add")([d, a])
    model = ember.Model(inputs, [total, b])           # b is also an output: never dropped
    state = model.build(seed=0)
    plain = ember.Model(inputs, total)               # b is not an output: gone once check_after_b has run
    plain_state = plain.build(seed=0)
    monkeypatch.setattr(WeaklyRecorded, "refs", [])      # what the calls while building recorded, forgotten
    monkeypatch.setattr(_AliveCheck, "alive", [])
    outputs, _ = model.apply(state, ops.convert_to_tensor(XA))
    assert _AliveCheck.alive == [[True, True], [True, True]]  # a (the add reads it), b (an output)
    monkeypatch.setattr(WeaklyRecorded, "refs", [])
    monkeypatch.setattr(_AliveCheck, "alive", [])
    plain.apply(plain_state, ops.convert_to_tensor(XA))
    assert _AliveCheck.alive == [[True, True], [True, False]]
    np.testing.assert_array_equal(to_np(outputs[0]), to_np(plain.apply(state, ops.convert_to_tensor(XA))[0]))
