"""LoRA (Keras's ``layer.enable_lora(rank)``) on Dense and Embedding, on every backend: the kernel
frozen, only the factors (and, as in Keras, the bias) trained, the merged kernel in Keras files."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import layers, ops
from tests.tolerances import FLOAT32

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")

RNG = np.random.default_rng(1)
X = RNG.normal(size=(32, 16)).astype("float32")
Y = (X[:, :4] @ RNG.normal(size=(4, 4))).astype("float32")


def _model(use_bias=True):
    model = ember.Sequential([ember.Input((16,)), layers.Dense(64, activation="relu", use_bias=use_bias),
                              layers.Dense(4, use_bias=use_bias)])
    model.build(seed=0)
    return model


def test_dense_lora_computes_kernel_plus_scaled_product(backend):
    layer = layers.Dense(3)
    layer(X)
    kernel, bias = layer.get_weights()
    layer.enable_lora(2, lora_alpha=4, b_initializer="ones")
    assert [(w.path, w.trainable) for w in layer.weights] == [
        ("bias", True), ("lora_kernel_a", True), ("lora_kernel_b", True), ("kernel", False)]
    a = layer.get_weights()[1].astype("float64")
    expected = X @ (kernel + 4 / 2 * a @ np.ones((2, 3))) + bias  # Keras: W + (alpha / rank) a @ b
    np.testing.assert_allclose(ops.to_numpy(layer(X)), expected, **FLOAT32)


def test_lora_fit_trains_only_the_factors(backend):
    model = _model(use_bias=False)
    model.compile("adam", "mse")
    model.fit(X, Y, epochs=2, verbose=0)  # "pretrained"
    frozen = [layer.get_weights()[0] for layer in model.layers]
    for layer in model.layers:
        layer.enable_lora(2)
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert trainable < 0.05 * model.count_params() * 4  # rank-2 factors: 5 % of the frozen kernels' size
    assert {w.path.rpartition("/")[2] for w in model.trainable_weights} == {"lora_kernel_a", "lora_kernel_b"}
    model.compile(ember.optimizers.Adam(1e-2), "mse")
    before = model.evaluate(X, Y, verbose=0)
    model.fit(X, Y, epochs=5, verbose=0)
    assert model.evaluate(X, Y, verbose=0) < before
    slots = model._training.opt_state
    leaves = {path for path in _paths(slots) if "lora" in path or "kernel" in path}
    assert leaves and all("lora_kernel" in path for path in leaves)  # no optimizer slot for a frozen kernel
    for layer, kernel in zip(model.layers, frozen):
        assert np.array_equal(ops.to_numpy(layer._read_state()["buffers"]["kernel"]), kernel)  # bit-unchanged


def _paths(tree, prefix=""):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _paths(value, f"{prefix}/{key}")
    elif isinstance(tree, (list, tuple)):
        for i, value in enumerate(tree):
            yield from _paths(value, f"{prefix}/{i}")
    else:
        yield prefix


def test_lora_keras_file_holds_the_merged_kernel(backend, tmp_path):
    model = _model()
    model.layers[0].enable_lora(2, b_initializer="ones")
    expected = model.predict(X, verbose=0)
    path = str(tmp_path / "m.keras")
    model.save(path)
    theirs = keras.saving.load_model(path)
    assert theirs.layers[0].lora_enabled
    assert not np.any(keras.ops.convert_to_numpy(theirs.layers[0].lora_kernel_a))  # Keras zeroes the factors on load
    np.testing.assert_allclose(np.asarray(theirs.predict(X, verbose=0)), expected, **FLOAT32)
    ours = ember.saving.load_model(path)
    np.testing.assert_allclose(ours.predict(X, verbose=0), expected, **FLOAT32)
    np.testing.assert_allclose(ops.to_numpy(ours.layers[0]._read_state()["buffers"]["kernel"]),
                               keras.ops.convert_to_numpy(theirs.layers[0]._kernel), **FLOAT32)


def test_lora_ember_checkpoint_keeps_the_factors(backend, tmp_path):
    # Ember's .h5 is a full, resumable checkpoint (optimizer slots included), so it keeps the factors
    # unmerged; the Keras formats merge them, as Keras does.
    model = _model()
    model.layers[0].enable_lora(2, b_initializer="ones")
    path = str(tmp_path / "m.h5")
    model.save(path)
    loaded = ember.saving.load_model(path)
    for ours, theirs in zip(model.layers[0].get_weights(), loaded.layers[0].get_weights()):
        np.testing.assert_array_equal(ours, theirs)


@pytest.fixture(scope="module")
def keras_lora_file(tmp_path_factory):
    """A Keras model with LoRA (non-zero factors), saved once, and its predictions."""
    reference = keras.Sequential([keras.Input((16,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(4)])
    reference.layers[0].enable_lora(2)
    reference.layers[0].lora_kernel_b.assign(np.ones((2, 8), "float32"))
    path = str(tmp_path_factory.mktemp("keras") / "k.keras")
    reference.save(path)
    return path, np.asarray(reference.predict(X, verbose=0))


def test_ember_loads_a_keras_lora_model(backend, keras_lora_file):
    path, expected = keras_lora_file
    loaded = ember.saving.load_model(path)
    assert loaded.layers[0].lora_rank == 2 and loaded.layers[0].lora_alpha == 2
    np.testing.assert_allclose(loaded.predict(X, verbose=0), expected, **FLOAT32)


def test_embedding_lora_and_int8_lora(backend):
    table = layers.Embedding(10, 4)
    indices = np.array([[1, 2, 9]])
    table(indices)
    (embeddings,) = table.get_weights()
    table.enable_lora(2, b_initializer="ones")
    assert [w.path for w in table.weights] == ["lora_embeddings_a", "lora_embeddings_b", "embeddings"]
    a = table.get_weights()[0].astype("float64")
    np.testing.assert_allclose(ops.to_numpy(table(indices)), (embeddings + a @ np.ones((2, 4)))[indices], **FLOAT32)
    einsum = layers.EinsumDense("abc,cde->abde", (3, 2, 5), bias_axes="de")
    x = X[:6].reshape(2, 3, 16)
    einsum(x)
    (kernel, bias) = einsum.get_weights()
    einsum.enable_lora(2, b_initializer="ones")
    assert [(w.path, w.shape) for w in einsum.weights] == [
        ("bias", (2, 5)), ("lora_kernel_a", (16, 2, 2)), ("lora_kernel_b", (2, 5)), ("kernel", (16, 2, 5))]
    a = einsum.get_weights()[1].astype("float64")
    merged = kernel + a @ np.ones((2, 5))  # Keras: kernel + (alpha / rank) matmul(a, b), a of rank 3
    np.testing.assert_allclose(ops.to_numpy(einsum(x)), np.einsum("abc,cde->abde", x, merged) + bias, **FLOAT32)
    dense = layers.Dense(3)
    dense(X)
    dense.quantize("int8")
    dense.enable_lora(1)  # QLoRA: the int8 kernel stays, the factors train in float32
    assert [w.path for w in dense.trainable_weights] == ["bias", "lora_kernel_a", "lora_kernel_b"]


def test_lora_errors(backend):
    with pytest.raises(ValueError, match="isn't built yet"):
        layers.Dense(2, name="unbuilt").enable_lora(2)
    layer = layers.Dense(2)
    layer(X)
    layer.enable_lora(2)
    with pytest.raises(ValueError, match="already enabled"):
        layer.enable_lora(2)
    constrained = layers.Dense(2, kernel_constraint="non_neg")
    constrained(X)
    with pytest.raises(ValueError, match="incompatible with kernel_constraint"):
        constrained.enable_lora(2)
    fresh = layers.Dense(2)
    fresh(X)
    with pytest.raises(ValueError, match="rank"):
        fresh.enable_lora(0)
    assert fresh.lora_rank is None and [w.path for w in fresh.weights] == ["kernel", "bias"]
