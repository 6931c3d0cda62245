"""Randomness in training: seeded, reproducible, and array seeds (no retracing under mx.compile)."""

from __future__ import annotations

import zlib

import hypothesis
import numpy as np
import pytest

import ember
from ember import layers, ops, seeds
from ember.backends._steps import advance_rng, initial_rng
from ember.initializers import derive_seed, is_seed_array
from ember.models.model import _child_rng


def _dropout_model():
    model = ember.Sequential([ember.Input((6,)), layers.Dense(16, activation="relu", name="h"),
                              layers.Dropout(0.5, name="drop"), layers.Dense(1, name="out")])
    model.build(seed=0)
    return model


def _xy():
    x = np.random.default_rng(0).normal(size=(32, 6)).astype(np.float32)
    return x, x[:, :1] * 2.0


def _fit(seed):
    model = _dropout_model()
    model.compile(ember.optimizers.SGD(0.05), "mse", seed=seed)
    x, y = _xy()
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    return history.history["loss"], ops.to_numpy(model.state["params"]["out"]["kernel"])


def test_fit_with_dropout_is_reproducible_for_a_seed(backend):
    losses_a, kernel_a = _fit(seed=11)
    losses_b, kernel_b = _fit(seed=11)
    losses_c, kernel_c = _fit(seed=12)
    assert losses_a == losses_b
    np.testing.assert_array_equal(kernel_a, kernel_b)
    assert losses_a != losses_c


def test_global_seed_makes_fit_reproducible(backend):
    def run():
        ember.random.set_seed(5)
        model = _dropout_model()
        model.compile("sgd", "mse")  # no compile seed: drawn from the backend's global stream
        x, y = _xy()
        return model.fit(x, y, batch_size=8, epochs=1, verbose=0).history["loss"]

    assert run() == run()


def test_dropout_masks_change_from_step_to_step(backend):
    model = _dropout_model()
    trainer = ember.Trainer(model, optimizer=ember.optimizers.SGD(0.0), loss="mse")  # weights never change
    x, y = _xy()
    state = trainer.init_state(seed=3)
    losses = []
    for _ in range(3):
        state = trainer.reset_metrics(state)
        state, logs = trainer.train_step(state, (x, y))
        losses.append(float(ops.to_numpy(logs["loss"])))
    assert len(set(losses)) == 3
    again = trainer.init_state(seed=3)
    _, logs = trainer.train_step(again, (x, y))
    assert float(ops.to_numpy(logs["loss"])) == losses[0]


def test_mlx_traces_the_step_once(mlx_backend):
    model = _dropout_model()
    model.compile("adam", "mse", seed=0)
    trainer = model._training.trainer
    calls = []
    forward = trainer.core.forward
    trainer.core.forward = lambda *args: calls.append(1) or forward(*args)
    x, y = _xy()
    model.fit(x, y, batch_size=8, epochs=3, verbose=0)  # 12 steps with a new seed each
    assert len(calls) == 2  # the eager check of the first batch, and one trace


def test_step_seeds_advance_alike_as_ints_and_arrays(backend):
    seed = initial_rng(123)
    array = ops.convert_to_tensor(seed, dtype="int64")
    for _ in range(5):
        seed, array = advance_rng(seed), advance_rng(array)
        assert int(ops.to_numpy(array)) == seed
        assert 0 < seed < 2**31 - 1


def test_child_seeds_from_arrays(backend):
    seed = ops.convert_to_tensor(987654, dtype="int64")
    assert is_seed_array(seed) and not is_seed_array(5) and not is_seed_array(ops.ones(()))
    child = _child_rng(seed, "dense")
    expected = (987654 * 1000003 + (zlib.crc32(b"dense") & 0x7FFFFFFF)) % 2**31
    assert int(ops.to_numpy(child)) == expected
    assert _child_rng(7, "dense") == derive_seed(7, "dense")
    with pytest.raises(TypeError, match="rng must be"):
        _child_rng(1.5, "dense")


def test_dropout_takes_an_array_seed(backend):
    layer = layers.Dropout(0.5, name="drop")
    x = ops.ones((4, 8))
    seed = ops.convert_to_tensor(42, dtype="int64")
    y_array, _ = layer.apply({"params": {}, "buffers": {}}, x, training=True, rng=seed)
    y_int, _ = layer.apply({"params": {}, "buffers": {}}, x, training=True, rng=42)
    # The array seed gives the mask of the same int seed on every backend.
    np.testing.assert_array_equal(ops.to_numpy(y_array), ops.to_numpy(y_int))


def test_mlx_key_from_an_array_seed(mlx_backend):
    import mlx.core as mx

    from ember.backends.mlx.random import _key

    for value in (0, 5, 2**31 - 1, 2**40 + 3):
        assert _key(mx.array(value, dtype=mx.int64), "test").tolist() == mx.random.key(value).tolist()


@hypothesis.given(hypothesis.strategies.text(alphabet=hypothesis.strategies.characters(blacklist_categories=("Cs",))))
def test_the_traceable_crc32_equals_zlib_on_any_name(name):
    """Seeds derived from layer names (any Unicode) are the ones zlib's CRC-32 gives: checkpoints and
    runs keep their random streams (the pure-Python CRC exists so torch.compile can trace it)."""
    assert seeds._crc32(name) == zlib.crc32(name.encode())
