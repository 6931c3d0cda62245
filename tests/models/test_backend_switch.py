"""A model used after ``ember.set_backend``: every entry point refuses a state that lives on another
backend (a TypeError naming both backends and the fixes), and ``Model.to_backend`` moves the state and
the training state bit-exactly so that ``fit`` continues where it stopped.

References: the bits of the arrays before the move (host NumPy, viewed as unsigned integers), the
model's predictions on the backend it came from, and an uninterrupted ``fit`` on the target backend.
"""

from __future__ import annotations

import numpy as np
import optree
import pytest

import ember
from ember import backends, layers, ops
from ember.saving import _arrays
from tests.tolerances import FLOAT32_PAIR

PAIRS = [(a, b) for a in backends.BACKENDS for b in backends.BACKENDS if a != b]

rng = np.random.default_rng(0)
X = rng.normal(size=(64, 4)).astype("float32")
Y = (X @ np.array([[1.0], [-2.0], [0.5], [0.3]], "float32") + 0.1).astype("float32")


@pytest.fixture(params=PAIRS, ids=lambda p: f"{p[0]}-to-{p[1]}")
def pair(request):
    """``(source, target)`` backends, both installed (the test switches between them itself)."""
    for name in request.param:
        if not backends.is_installed(name):
            pytest.skip(f"backend {name!r} is not installed (pip install \"ember[{name}]\")")
    yield request.param
    ember.set_backend("numpy")


def _model(dtype: str | None = None, batch_norm: bool = False) -> ember.Sequential:
    stack = [ember.Input((4,)), layers.Dense(8, activation="tanh", dtype=dtype, name="hidden")]
    if batch_norm:
        stack.append(layers.BatchNormalization(name="norm"))  # buffers (moving mean/variance) too
    stack.append(layers.Dense(1, dtype=dtype, name="out"))
    model = ember.Sequential(stack, name="net")
    model.build(seed=0)
    return model


def _compiled() -> ember.Sequential:
    model = _model()
    model.compile(optimizer=ember.optimizers.Adam(0.01), loss="mse", metrics=["mae"], seed=0)
    return model


def _host_leaves(tree) -> list[np.ndarray]:
    return [_arrays.to_host(leaf)[0].copy() for leaf in optree.tree_leaves(tree)]


def _bits(array: np.ndarray) -> np.ndarray:
    return array.view(f"uint{8 * array.dtype.itemsize}")


def _assert_on(tree, backend: str) -> None:
    for leaf in optree.tree_leaves(tree):
        assert _arrays.backend_of(leaf)[0] == backend, type(leaf)


def _entry_points(model):
    """Every entry point that runs the model, called on one small batch."""
    x, y = X[:8], Y[:8]
    return {
        "fit": lambda: model.fit(x, y, epochs=1, verbose=0),
        "evaluate": lambda: model.evaluate(x, y, verbose=0),
        "predict": lambda: model.predict(x, verbose=0),
        "predict_on_batch": lambda: model.predict_on_batch(x),
        "train_on_batch": lambda: model.train_on_batch(x, y),
        "test_on_batch": lambda: model.test_on_batch(x, y),
        "model(x)": lambda: model(x),
    }


def test_every_entry_point_refuses_a_state_of_another_backend(pair):
    source, target = pair
    ember.set_backend(source)
    model = _compiled()
    model.train_on_batch(X[:8], Y[:8])  # optimizer state, running metrics and step RNG on `source`
    model.test_on_batch(X[:8], Y[:8])
    state, training = model.state, model._training.copy()
    fits, weights = model._training.trainer._fits, _host_leaves(model.state)
    ember.set_backend(target)
    for caller, call in _entry_points(model).items():
        with pytest.raises(TypeError) as info:
            call()
        message = str(info.value)
        assert message.startswith(f"{caller}: model 'net' holds its state as {source} arrays"), message
        assert f"the active backend is {target!r}" in message, message
        assert f"ember.set_backend({source!r})" in message and "model.to_backend()" in message, message
        # A failing call changes nothing: the same state and training caches, the same seed counter.
        assert model.state is state and model._training == training, caller
        assert model._training.trainer._fits == fits, caller
    for before, after in zip(weights, _host_leaves(model.state)):
        np.testing.assert_array_equal(_bits(after), _bits(before))
    # Moved, the training caches come along: train_on_batch and test_on_batch continue their runs.
    model.to_backend()
    _assert_on([model.state, model._training.opt_state, model._training.train_metrics,
                model._training.test_metrics], target)
    logs = model.train_on_batch(X[8:16], Y[8:16], return_dict=True)
    assert int(ops.to_numpy(model._training.opt_state["iterations"])) == 2
    assert float(ops.to_numpy(model._training.train_metrics["loss"]["count"])) == 16.0
    assert np.isfinite(logs["loss"])
    model.test_on_batch(X[8:16], Y[8:16])
    assert float(ops.to_numpy(model._training.test_metrics["loss"]["count"])) == 16.0


def test_unbuilt_and_weightless_models_have_no_backend_yet(backend):
    ember.set_backend("numpy")
    unbuilt = ember.Sequential([ember.Input((4,)), layers.Dense(1)])
    unbuilt.compile(optimizer="sgd", loss="mse", seed=0)  # the trainer is made under numpy
    weightless = ember.Sequential([ember.Input((2, 2)), layers.Flatten()])
    weightless.build(seed=0)
    assert weightless.state == {"params": {}, "buffers": {}}
    ember.set_backend(backend)
    unbuilt.to_backend()  # nothing to move
    assert unbuilt.state is None
    unbuilt.fit(X, Y, epochs=1, verbose=0)  # builds on the active backend
    _assert_on(unbuilt.state, backend)
    out = weightless.predict_on_batch(np.arange(8, dtype="float32").reshape(2, 2, 2))
    np.testing.assert_array_equal(ops.to_numpy(out), np.arange(8, dtype="float32").reshape(2, 4))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_to_backend_round_trip_is_bit_exact(pair, dtype):
    source, target = pair
    ember.set_backend(source)
    model = _model(dtype=dtype, batch_norm=dtype == "float32")
    before = _host_leaves(model.state)
    expected = np.asarray(model.predict(X[:8], verbose=0), "float32")
    ember.set_backend(target)
    model.to_backend()
    _assert_on(model.state, target)
    moved = _host_leaves(model.state)
    for a, b in zip(before, moved):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(_bits(b), _bits(a))
    # Both dtypes compute in float32: the "bfloat16" policy is not mixed, so the float32 inputs promote the
    # matmuls with its bfloat16 weights (exact in float32); the backends differ by float32 rounding only.
    np.testing.assert_allclose(np.asarray(model.predict(X[:8], verbose=0), "float32"), expected, **FLOAT32_PAIR)
    model.to_backend(source)  # to a backend that is not the active one
    _assert_on(model.state, source)
    with pytest.raises(TypeError, match=f"holds its state as {source} arrays"):
        model.predict(X[:8], verbose=0)
    ember.set_backend(source)
    for a, b in zip(before, _host_leaves(model.state)):
        np.testing.assert_array_equal(_bits(b), _bits(a))
    np.testing.assert_array_equal(np.asarray(model.predict(X[:8], verbose=0), "float32"), expected)


def _fit(model, epochs: int):
    return model.fit(X, Y, batch_size=16, epochs=epochs, shuffle=False, verbose=0).history["loss"]


def test_fit_continues_on_the_new_backend_with_its_optimizer_state(pair):
    source, target = pair
    ember.set_backend(source)
    model = _compiled()
    first = _fit(model, 2)
    ember.set_backend(target)
    with pytest.raises(TypeError, match="model.to_backend"):
        model.fit(X, Y, verbose=0)
    model.to_backend()  # the trainer was made under `source`: fit must still work
    second = _fit(model, 2)
    opt_state = model._training.opt_state
    assert int(ops.to_numpy(opt_state["iterations"])) == 16  # 4 epochs of 4 steps: the counter went on
    assert ops.dtype(opt_state["iterations"]) == ("int32" if target == "mlx" else "int64")
    assert first[0] > first[1] > second[0] > second[1]
    # Reference: 4 uninterrupted epochs on `target` from the same initial weights. The first 8 of the 16 Adam
    # steps see gradients from another backend (FLOAT32_PAIR apart); Adam's update lr m/(sqrt(v) + eps) is
    # invariant to the gradients' scale and ~lr in size, so it moves by <= lr * 2e-5 a step: 16 * 0.01 * 2e-5
    # = 3.2e-6 absolute; the parameters' own rounding (16 u |p|) is within FLOAT32_PAIR's rtol.
    reference = _compiled()
    _fit(reference, 4)
    drift = 16 * 0.01 * FLOAT32_PAIR["rtol"]
    for a, b in zip(_host_leaves(model.state), _host_leaves(reference.state)):
        np.testing.assert_allclose(a, b, rtol=FLOAT32_PAIR["rtol"], atol=FLOAT32_PAIR["atol"] + drift)


def test_load_weights_after_a_switch_brings_the_optimizer_state_along(pair, tmp_path):
    source, target = pair
    ember.set_backend(source)
    model = _compiled()
    _fit(model, 1)
    path = tmp_path / "net.weights.h5"
    model.save_weights(path)
    ember.set_backend(target)
    model.load_weights(path)  # the state is on `target` now, the optimizer state still on `source`
    _assert_on(model.state, target)
    _fit(model, 1)
    _assert_on(model._training.opt_state, target)
    assert int(ops.to_numpy(model._training.opt_state["iterations"])) == 8


def test_to_backend_rejects_unknown_names_and_changes_nothing():
    model = _compiled()
    state = model.state
    for bad in ("jax", 3):
        with pytest.raises(ValueError) as info:
            model.to_backend(bad)
        message = str(info.value)
        assert "'net'" in message and repr(bad) in message, message
        assert "['numpy', 'torch', 'mlx']" in message, message
    assert model.state is state


def test_to_backend_during_fit_is_refused():
    model = _compiled()

    class Move(ember.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.to_backend("numpy")

    with pytest.raises(RuntimeError, match="while fit is running"):
        model.fit(X, Y, epochs=1, verbose=0, callbacks=[Move()])
