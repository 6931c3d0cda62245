"""``Sequential``: add/pop, building from an ``Input`` or ``build(input_shape)``,
summaries, configs and bad input. Outputs are checked against a float64 NumPy forward
pass written here from the model's own state."""

from __future__ import annotations

import json

import numpy as np
import optree
import pytest

import ember
from ember import layers, ops
from tests.helpers import assert_close

X = np.random.default_rng(3).uniform(-1, 1, size=(3, 4)).astype(np.float32)


def to_np(tree):
    return optree.tree_map(lambda a: np.asarray(ops.to_numpy(a)), tree, none_is_leaf=False)


def make(with_input=True):
    stack = [layers.Dense(5, activation="relu", name="hidden"), layers.Dropout(0.5, name="drop"),
             layers.Dense(2, name="out")]
    return ember.Sequential(([ember.Input((4,), name="features")] if with_input else []) + stack, name="stack")


def reference(state, x):
    p = optree.tree_map(lambda a: np.asarray(ops.to_numpy(a), dtype=np.float64), state["params"])
    h = np.maximum(x @ p["hidden"]["kernel"] + p["hidden"]["bias"], 0.0)
    return h @ p["out"]["kernel"] + p["out"]["bias"]


def test_build_from_input(backend):
    model = make()
    state = model.build(seed=0)
    assert model.state is state
    assert sorted(state["params"]) == ["hidden", "out"]  # Dropout has no variables
    with ember.using_backend("numpy"):
        expected_state = to_np(make().build(seed=0))
    for a, b in zip(optree.tree_leaves(to_np(state)), optree.tree_leaves(expected_state)):
        np.testing.assert_array_equal(a, b)
    assert_close(model(ops.convert_to_tensor(X)), reference(state, X.astype(np.float64)))
    # training=True uses the dropout layer; a fixed rng makes it reproducible.
    a = ops.to_numpy(model.apply(state, ops.convert_to_tensor(X), training=True, rng=4)[0])
    b = ops.to_numpy(model.apply(state, ops.convert_to_tensor(X), training=True, rng=4)[0])
    np.testing.assert_array_equal(a, b)


def test_build_with_input_shape(backend):
    model = make(with_input=False)
    with pytest.raises(ValueError, match=r"Sequential 'stack' has no input shape.*build\(\(None, 784\)\)"):
        model.build()
    state = model.build((None, 4), seed=0)
    assert_close(model(ops.convert_to_tensor(X)), reference(state, X.astype(np.float64)))
    assert model.compute_output_shape() == (None, 2)
    assert model.compute_output_shape((7, 4)) == (7, 2)


def test_lazy_build_on_first_call(backend):
    model = make(with_input=False)
    y = model(ops.convert_to_tensor(X))
    assert model.state is not None
    assert_close(y, reference(model.state, X.astype(np.float64)))


def test_add_and_pop():
    model = ember.Sequential(name="grow")
    model.add(ember.Input((4,)))
    model.add(layers.Dense(3, name="first"))
    model.add(layers.Dense(2, name="second"))
    assert [layer.name for layer in model.layers] == ["first", "second"]
    model.build(seed=0)
    first = model.get_layer("first").get_weights()
    popped = model.pop()
    assert popped.name == "second"
    # Keras: each layer keeps its weights; the model's state is what its layers have
    assert sorted(model.state["params"]) == ["first"]
    assert [layer.name for layer in model.layers] == ["first"]
    model.add(layers.Dense(6, name="third"))
    assert model.compute_output_shape() == (None, 6)
    assert model.state is None  # "third" has no weights yet
    assert sorted(model.build(seed=1)["params"]) == ["first", "third"]
    for kept, now in zip(first, model.get_layer("first").get_weights()):
        np.testing.assert_array_equal(kept, now)  # building again never re-initialises a layer
    model.pop()
    model.pop()
    with pytest.raises(ValueError, match="'grow': pop\\(\\) on a model with no layers"):
        model.pop()


def test_apply_follows_add_and_pop_after_a_call():
    """The per-layer plan ``apply`` keeps between calls is redone when ``add``/``pop`` change the stack."""
    model = ember.Sequential([ember.Input((4,)), layers.Dense(3, name="first")])
    x = ops.ones((2, 4))
    assert ops.shape(model.apply(model.build(seed=0), x)[0]) == (2, 3)
    model.add(layers.Dense(6, name="second"))
    state = model.build(seed=0)
    y, _ = model.apply(state, x)
    first, second = state["params"]["first"], state["params"]["second"]
    hidden = ops.to_numpy(x) @ ops.to_numpy(first["kernel"]) + ops.to_numpy(first["bias"])
    assert_close(y, hidden @ ops.to_numpy(second["kernel"]) + ops.to_numpy(second["bias"]))
    model.pop()
    assert ops.shape(model.apply(model.build(seed=0), x)[0]) == (2, 3)


def test_summary():
    lines = []
    make().summary(print_fn=lines.append)
    assert lines[0] == 'Model: "stack"'
    rows = {line.split(" (")[0]: line for line in lines if " (" in line and not line.startswith("Layer")}
    assert "(None, 5)" in rows["hidden"] and rows["hidden"].rstrip().endswith("25")
    assert "(None, 5)" in rows["drop"] and rows["drop"].rstrip().endswith("0")
    assert "(None, 2)" in rows["out"] and rows["out"].rstrip().endswith("12")
    assert "Total params: 37" in lines and "Trainable params: 37" in lines and "Non-trainable params: 0" in lines


@pytest.mark.parametrize("with_input", [True, False])
def test_config_round_trip(backend, with_input):
    model = make(with_input)
    state = model.build(None if with_input else (None, 4), seed=0)
    config = json.loads(json.dumps(model.get_config()))
    rebuilt = ember.Sequential.from_config(config)
    assert json.loads(json.dumps(rebuilt.get_config())) == config
    assert [(type(layer).__name__, layer.name) for layer in rebuilt.layers] == [
        (type(layer).__name__, layer.name) for layer in model.layers]
    assert rebuilt.compute_output_shape() == (None, 2)
    np.testing.assert_array_equal(ops.to_numpy(rebuilt.apply(state, ops.convert_to_tensor(X))[0]),
                                  ops.to_numpy(model.apply(state, ops.convert_to_tensor(X))[0]))


def test_sequential_inside_a_functional_model(backend):
    inner = make()
    x = ember.Input((4,), name="x")
    outer = ember.Model(x, layers.Dense(1, name="head")(inner(x)), name="outer")
    state = outer.build(seed=0)
    assert sorted(state["params"]) == ["head", "stack"]
    p = optree.tree_map(lambda a: np.asarray(ops.to_numpy(a), dtype=np.float64), state["params"])
    expected = reference({"params": state["params"]["stack"]}, X.astype(np.float64)) @ p["head"]["kernel"] \
        + p["head"]["bias"]
    assert_close(outer(ops.convert_to_tensor(X)), expected)
    config = json.loads(json.dumps(outer.get_config()))
    rebuilt = ember.Model.from_config(config)
    np.testing.assert_array_equal(ops.to_numpy(rebuilt.apply(state, ops.convert_to_tensor(X))[0]),
                                  ops.to_numpy(outer.apply(state, ops.convert_to_tensor(X))[0]))
    with pytest.raises(ValueError, match=r"'stack'.*input 'features' expects shape \(None, 4\), received \(None, 3\)"):
        inner(ember.Input((3,)))


# ---------------------------------------------------------------- bad input


def test_add_bad_input():
    model = ember.Sequential([ember.Input((4,))], name="seq_bad")
    with pytest.raises(TypeError, match="'seq_bad': add\\(\\) takes a Layer, received int"):
        model.add(3)
    with pytest.raises(ValueError, match="'seq_bad': an Input can only be the first entry"):
        model.add(ember.Input((4,)))
    model.add(layers.Dense(3, name="dup"))
    with pytest.raises(ValueError, match="'seq_bad': a layer named 'dup' is already in the model"):
        model.add(layers.Dense(3, name="dup"))
    with pytest.raises(ValueError, match=r"layer 'rv' expects inputs of rank 2, received shape \(None, 3, 1\)"):
        model.add(layers.Reshape((3, 1)))
        model.add(layers.RepeatVector(2, name="rv"))
    assert [layer.name for layer in model.layers][-1] != "rv"  # a rejected layer is not added


def test_wrong_input_shape_eager(backend):
    model = make()
    model.build(seed=0)
    with pytest.raises(ValueError, match=r"'stack'.*input 'features' expects shape \(None, 4\), received \(3, 5\)"):
        model(ops.ones((3, 5)))
    with pytest.raises(ValueError, match=r"'stack'.*expects shape \(None, 4\), received \(3,\)"):
        model(ops.ones((3,)))
    built = make(with_input=False)
    built.build((None, 4), seed=0)
    with pytest.raises(ValueError, match=r"'stack'.*expects shape \(None, 4\), received \(2, 6\)"):
        built(ops.ones((2, 6)))


def test_failed_call_leaves_the_state_untouched(backend):
    model = make(with_input=False)
    with pytest.raises(ValueError, match=r"layer 'hidden'.*rank >= 2.*\(None,\)"):
        model(ops.ones((3,)))
    assert model.state is None
    assert model.get_config()["build_input_shape"] is None  # not built by the failed call
    state = model.build((None, 4), seed=0)
    before = to_np(state)
    with pytest.raises(ValueError, match="'stack'"):
        model(ops.ones((3, 5)))
    with pytest.raises(ValueError, match=r"layer 'hidden'.*last dimension"):
        model.build((None, None))
    assert model.state is state
    for a, b in zip(optree.tree_leaves(to_np(model.state)), optree.tree_leaves(before)):
        np.testing.assert_array_equal(a, b)


def test_summary_and_count_params_leave_an_unbuilt_model_unbuilt(backend):
    """summary() needs only shapes: it must not draw weights, or a later seeded fit would start
    from those random weights instead of its seed's."""
    ember.set_backend(backend)

    def seeded_fit(show_summary):
        ember.clear_session()
        model = ember.Sequential([ember.Input((4,)), layers.Dense(3), layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse", seed=7)
        if show_summary:
            model.summary(print_fn=lambda *args, **kwargs: None)
            assert model.count_params() == 4 * 3 + 3 + 3 * 2 + 2
            assert model.state is None
        model.fit(np.ones((8, 4), "float32"), np.ones((8, 2), "float32"), epochs=1, verbose=0)
        return ops.to_numpy(model.state["params"]["dense"]["kernel"])

    np.testing.assert_array_equal(seeded_fit(True), seeded_fit(False))
