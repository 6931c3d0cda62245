"""``ember.remat`` and ``ember.RematScope``.

Reference: the same function without ``remat``, differentiated by the same backend, and the
gradient written out in NumPy float64 (``d/dW sum(tanh(x W) * c) = x^T ((1 - tanh^2) * c)``).
Proof that the backend's own mechanism runs: a spy on ``torch.utils.checkpoint.checkpoint`` /
``mx.checkpoint``; on NumPy the forward keeps no intermediate (one recorded node).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember
from ember import layers, ops
from tests.tolerances import FLOAT32, FLOAT32_PAIR

_SPIED = {"torch": ("torch.utils.checkpoint", "checkpoint"), "mlx": ("mlx.core", "checkpoint")}


def _block(params, x):
    """A two-layer block: ``tanh(x W1 + b) W2``."""
    return ops.matmul(ops.tanh(ops.add(ops.matmul(x, params["w1"]), params["b"])), params["w2"])


def _data():
    rng = np.random.default_rng(0)
    params = {"w1": rng.normal(size=(4, 5)) * 0.5, "b": rng.normal(size=(5,)), "w2": rng.normal(size=(5, 3)) * 0.5}
    return params, rng.normal(size=(6, 4)), rng.normal(size=(6, 3))


def _reference_grads(params, x, c):
    """The gradients of ``sum(_block(params, x) * c)`` in float64, written out."""
    hidden = np.tanh(x @ params["w1"] + params["b"])
    d_hidden = (c @ params["w2"].T) * (1 - hidden ** 2)
    return {"w1": x.T @ d_hidden, "b": d_hidden.sum(0), "w2": hidden.T @ c}, d_hidden @ params["w1"].T


def test_remat_gradients_equal_plain_and_reference(backend, monkeypatch):
    calls = []
    if backend in _SPIED:
        module = importlib.import_module(_SPIED[backend][0])
        original = getattr(module, _SPIED[backend][1])

        def spy(*args, **kwargs):
            calls.append(1)
            return original(*args, **kwargs)

        monkeypatch.setattr(module, _SPIED[backend][1], spy)
    params64, x64, c64 = _data()
    params = {k: ops.convert_to_tensor(v, dtype="float32") for k, v in params64.items()}
    x, c = ops.convert_to_tensor(x64, dtype="float32"), ops.convert_to_tensor(c64, dtype="float32")
    results = []
    for block in (_block, ember.remat(_block)):
        def loss(params, x, block=block):
            return ops.sum(ops.multiply(block(params, x), c))
        value, grads = ember.value_and_grad(loss, argnums=(0, 1))(params, x)
        results.append((value, grads))
    (plain_value, (plain_p, plain_x)), (remat_value, (remat_p, remat_x)) = results
    expected_p, expected_x = _reference_grads(params64, x64, c64)
    np.testing.assert_allclose(ops.to_numpy(remat_value), ops.to_numpy(plain_value), **FLOAT32_PAIR)
    for name in expected_p:
        np.testing.assert_allclose(ops.to_numpy(remat_p[name]), ops.to_numpy(plain_p[name]), **FLOAT32_PAIR)
        np.testing.assert_allclose(ops.to_numpy(remat_p[name]), expected_p[name], **FLOAT32)
    np.testing.assert_allclose(ops.to_numpy(remat_x), expected_x, **FLOAT32)
    if backend in _SPIED:
        assert calls, f"remat on {backend} did not call {'.'.join(_SPIED[backend])}"


def test_remat_under_a_tape_and_with_tuple_outputs(backend):
    params64, x64, _ = _data()
    w = ops.convert_to_tensor(params64["w1"], dtype="float32")
    x = ops.convert_to_tensor(x64, dtype="float32")

    @ember.remat
    def two(w, x):
        h = ops.matmul(x, w)
        return ops.tanh(h), ops.square(h)

    with ember.GradientTape() as tape:
        tape.watch(w)
        a, b = two(w, x)
        total = ops.add(ops.sum(a), ops.multiply(ops.sum(b), 0.5))
    grad = ops.to_numpy(tape.gradient(total, w))
    h = x64 @ params64["w1"]
    np.testing.assert_allclose(grad, x64.T @ ((1 - np.tanh(h) ** 2) + h), **FLOAT32)


def test_remat_of_a_layer_apply_in_a_training_step(backend):
    dense = layers.Dense(3, activation="tanh")
    state = dense.build((None, 4), seed=0)
    x = ops.convert_to_tensor(np.random.default_rng(1).normal(size=(5, 4)), dtype="float32")

    def loss(params, apply):
        return ops.sum(ops.square(apply(params, x)))

    def plain(params, x):
        return dense.apply({"params": params, "buffers": {}}, x)[0]

    _, expected = ember.value_and_grad(loss)(state["params"], plain)
    _, grads = ember.value_and_grad(loss)(state["params"], ember.remat(plain))
    for name in expected:
        np.testing.assert_allclose(ops.to_numpy(grads[name]), ops.to_numpy(expected[name]), **FLOAT32_PAIR)


def test_remat_scope_modes_and_errors():
    assert ember.get_current_remat_mode() is None
    with ember.RematScope(mode="list_of_layers", layer_names=["block_1"]) as outer:
        assert ember.get_current_remat_mode().layer_names == ["block_1"]
        with ember.RematScope(mode=None):
            assert ember.get_current_remat_mode().mode is None
        assert ember.get_current_remat_mode().mode == "list_of_layers"
        assert outer.output_size_threshold == 1024  # Keras's default
    assert ember.get_current_remat_mode() is None
    with pytest.raises(ValueError, match="mode must be one of .*received 'everything'"):
        ember.RematScope(mode="everything")
    with pytest.raises(ValueError, match="output_size_threshold"):
        ember.RematScope(mode="larger_than", output_size_threshold=-1)
    with pytest.raises(TypeError, match="remat: expected a function, received int"):
        ember.remat(3)


def test_remat_applies_follows_keras_rules():
    from ember.autodiff.remat import RematMode, remat_applies

    assert remat_applies(RematMode("full", 1024, []), "d", 1, False)
    assert not remat_applies(RematMode("larger_than", 1024, []), "d", 1024, False)
    assert remat_applies(RematMode("larger_than", 1024, []), "d", 1025, False)
    assert remat_applies(RematMode("list_of_layers", 1024, ["d"]), "d", 1, False)
    assert not remat_applies(RematMode("list_of_layers", 1024, ["e"]), "d", 1, False)
    assert remat_applies(RematMode("activations", 1024, []), "d", 1, True)
    assert not remat_applies(None, "d", 10 ** 6, True)


def _scoped_model(scope_kwargs):
    """Dense -> BatchNormalization -> Dense(relu) -> Dense, the first three made inside a RematScope."""
    ember.clear_session()
    inputs = ember.Input((4,))
    with ember.RematScope(**scope_kwargs):
        x = layers.Dense(8, name="first")(inputs)
        x = layers.BatchNormalization(name="norm")(x)
        x = layers.Dense(8, activation="relu", name="hidden")(x)
    outputs = layers.Dense(2, name="head")(x)
    return ember.Model(inputs, outputs)


@pytest.mark.parametrize("scope_kwargs, expected", [
    ({"mode": "full"}, ["first", "hidden"]),  # the BatchNormalization keeps buffers: it runs plainly
    ({"mode": "list_of_layers", "layer_names": ["hidden"]}, ["hidden"]),
    ({"mode": "larger_than", "output_size_threshold": 20}, ["first", "hidden"]),  # 5 x 8 = 40 > 20
    ({"mode": "larger_than", "output_size_threshold": 100}, []),
    ({"mode": "activations"}, ["hidden"]),
])
def test_layers_made_in_a_remat_scope_train_rematerialized_with_plain_weights(backend, monkeypatch, scope_kwargs,
                                                                                 expected):
    """``fit`` of a model whose layers were made in a RematScope: the layers the scope selects run
    through ember.remat (spied), and the trained weights equal the same model without the scope."""
    from ember.layers import rematerialization

    called = []
    plain_remat = rematerialization.remat

    def spy(f):
        rematerialized = plain_remat(f)

        def run(params, values):
            called.append(sorted(params))
            return rematerialized(params, values)

        return run

    monkeypatch.setattr(rematerialization, "remat", spy)
    x = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")
    y = np.random.default_rng(1).normal(size=(5, 2)).astype("float32")
    weights = []
    for kwargs in (scope_kwargs, {"mode": None}):
        model = _scoped_model(kwargs)
        model.build(seed=0)
        model.compile(optimizer=ember.optimizers.SGD(0.1), loss="mse", jit_compile=False)
        model.fit(x, y, epochs=2, batch_size=5, verbose=0, shuffle=False)
        weights.append(model.get_weights())
    remat_layers = [name for name in ("first", "hidden")
                    if model.get_layer(name).__dict__.get("_remat_mode") is not None]
    assert remat_layers == []  # mode=None: nothing kept
    assert len(called) == 2 * len(expected)  # one forward per step and rematerialized layer
    # Two SGD steps of a 4-8-8-2 model: rematerialization recomputes the same float32 operations,
    # so each side is a layer-sized float32 computation (FLOAT32) and the pair agrees within FLOAT32_PAIR.
    for value, reference in zip(*weights):
        np.testing.assert_allclose(value, reference, **FLOAT32_PAIR)


def test_remat_recomputes_the_same_dropout_mask(backend):
    """Dropout draws from the explicit seed of ``apply`` (never a backend's global generator), so the
    recomputation in the backward pass draws the same mask: the gradients equal the plain path's."""
    dense, dropout = layers.Dense(6), layers.Dropout(0.5)
    state = dense.build((None, 4), seed=0)
    x = ops.convert_to_tensor(np.random.default_rng(0).normal(size=(8, 4)).astype("float32"))

    def block(params, inputs):
        hidden = dense.apply({"params": params, "buffers": {}}, inputs)[0]
        return dropout.apply({"params": {}, "buffers": {}}, hidden, training=True, rng=11)[0]

    def loss(params, function):
        return ops.sum(ops.square(function(params, x)))

    plain_loss, expected = ember.value_and_grad(lambda p: loss(p, block))(state["params"])
    remat_loss, grads = ember.value_and_grad(lambda p: loss(p, ember.remat(block)))(state["params"])
    assert float(ops.to_numpy(plain_loss)) == float(ops.to_numpy(remat_loss))  # the same mask, the same sum
    for name in expected:  # the same float32 operations recomputed: the pair bound
        np.testing.assert_allclose(ops.to_numpy(grads[name]), ops.to_numpy(expected[name]), **FLOAT32_PAIR)
