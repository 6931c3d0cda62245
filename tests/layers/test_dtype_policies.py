"""Dtype policies: Keras's names and attributes, per-layer and global policies, what is cast where."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import optree
import pytest

import ember
from ember import dtype_policies, layers, mixed_precision, ops
from tests.tolerances import FLOAT32

BF16_EPS = 2.0 ** -8  # bfloat16 keeps 8 significant bits: one rounding is within 2**-8, relative


@pytest.fixture(autouse=True)
def _reset_policy():
    yield
    mixed_precision.set_global_policy(None)


def _bf16(x):
    """``x`` rounded to bfloat16, as float64 (the operands a bfloat16 computation sees)."""
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)


@pytest.mark.parametrize("name, compute, variable", [
    ("mixed_float16", "float16", "float32"), ("mixed_bfloat16", "bfloat16", "float32"),
    ("float32", "float32", "float32"), ("float64", "float64", "float64"), ("bfloat16", "bfloat16", "bfloat16")])
def test_policy_attributes_match_keras(name, compute, variable):
    policy = mixed_precision.DTypePolicy(name)
    assert (policy.name, policy.compute_dtype, policy.variable_dtype) == (name, compute, variable)
    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    reference = keras.mixed_precision.DTypePolicy(name)
    assert (reference.name, reference.compute_dtype, reference.variable_dtype) == (name, compute, variable)
    assert mixed_precision.Policy is mixed_precision.DTypePolicy
    assert dtype_policies.deserialize(dtype_policies.serialize(policy)) == policy


def test_bad_policies_are_named():
    with pytest.raises(ValueError, match="unknown policy 'mixed_int8'"):
        mixed_precision.DTypePolicy("mixed_int8")
    with pytest.raises(TypeError, match="name must be a string"):
        mixed_precision.DTypePolicy(16)
    with pytest.raises(ValueError, match="set_dtype_policy: policy"):
        mixed_precision.set_global_policy("mixed_half")
    assert mixed_precision.global_policy().name == "float32"  # a failed call changes nothing
    with pytest.raises(ValueError, match="dense_bad: dtype"):
        layers.Dense(2, dtype="mixed_float64", name="dense_bad")


def test_global_policy_is_recorded_by_layers_constructed_under_it():
    mixed_precision.set_global_policy("mixed_bfloat16")
    assert mixed_precision.global_policy() == mixed_precision.DTypePolicy("mixed_bfloat16")
    dense = layers.Dense(3)
    explicit = layers.Dense(3, dtype="float32")
    inputs = ember.Input((2,))
    mixed_precision.set_global_policy("float32")
    later = layers.Dense(3)
    assert dense.dtype_policy.name == "mixed_bfloat16" and dense.get_config()["dtype"] == "mixed_bfloat16"
    assert (dense.compute_dtype, dense.variable_dtype) == ("bfloat16", "float32")
    assert explicit.compute_dtype == "float32" and later.compute_dtype == "float32"
    assert inputs.dtype == "float32"  # an Input's dtype is its data's, not a policy
    rebuilt = layers.Dense.from_config(dense.get_config())
    assert rebuilt.dtype_policy == dense.dtype_policy
    by_object = layers.Dense(3, dtype=mixed_precision.DTypePolicy("mixed_float16"))
    assert by_object.dtype == "mixed_float16"


def test_dense_computes_in_bfloat16_on_float32_weights(backend):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 7)).astype(np.float32)
    model = ember.Sequential([ember.Input((7,)), layers.Dense(4, activation="tanh", dtype="mixed_bfloat16")])
    state = model.build(seed=0)
    assert {ops.dtype(v) for v in optree.tree_leaves(state)} == {"float32"}
    y, _ = model.apply(state, x)
    assert ops.dtype(y) == "bfloat16"
    kernel, bias = (ops.to_numpy(state["params"]["dense"][k]) for k in ("kernel", "bias"))
    pre = _bf16(x) @ _bf16(kernel) + _bf16(bias)
    expected = np.tanh(pre)
    got = np.asarray(ops.to_numpy(ops.cast(y, "float32")), np.float64)
    # The pre-activation is rounded to bfloat16 once (relative BF16_EPS / 2 of the sum of |terms|), tanh's
    # slope is <= 1, and its output is rounded once more: two roundings of the magnitudes involved.
    magnitude = np.abs(_bf16(x)) @ np.abs(_bf16(kernel)) + np.abs(_bf16(bias))
    np.testing.assert_array_less(np.abs(got - expected), BF16_EPS * (magnitude + np.abs(expected)) + 1e-30)


def test_gradients_reach_the_float32_weights(backend):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(2, dtype="mixed_bfloat16")])
    state = model.build(seed=0)
    x = np.ones((4, 3), np.float32)

    def loss(params):
        y, _ = model.apply({"params": params, "buffers": state["buffers"]}, x)
        return ops.sum(ops.cast(y, "float32"))

    grads = ember.grad(loss)(state["params"])
    kernel_grad = ops.to_numpy(grads["dense"]["kernel"])
    assert ops.dtype(grads["dense"]["kernel"]) == "float32"
    np.testing.assert_allclose(kernel_grad, np.full((3, 2), 4.0), rtol=0)  # d sum(xW)/dW = sum of the ones rows


def test_batch_normalization_statistics_in_float32(backend):
    rng = np.random.default_rng(1)
    # An offset of 256 with unit spread: bfloat16 cannot hold x - mean (its spacing at 256 is 2),
    # float32 statistics recover the unit-variance output.
    x = (256.0 + rng.normal(size=(16, 3))).astype(np.float32)
    bn = layers.BatchNormalization(dtype="mixed_bfloat16", momentum=0.5, name="bn")
    model = ember.Sequential([ember.Input((3,)), bn])
    state = model.build(seed=0)
    y, new_state = model.apply(state, x, training=True)
    assert ops.dtype(y) == "bfloat16"
    moving = new_state["buffers"][bn.name]
    assert {ops.dtype(v) for v in moving.values()} == {"float32"}
    x64 = x.astype(np.float64)
    expected = (x64 - x64.mean(0)) / np.sqrt(x64.var(0) + bn.epsilon)
    got = np.asarray(ops.to_numpy(ops.cast(y, "float32")), np.float64)
    # Inputs reach the layer as float32; only the output is rounded to bfloat16 (|y| <= ~3).
    np.testing.assert_allclose(got, expected, atol=BF16_EPS * 4, rtol=0)
    np.testing.assert_allclose(ops.to_numpy(moving["moving_mean"]), 0.5 * x64.mean(0), **FLOAT32)


def test_softmax_of_bfloat16_is_computed_in_float32(backend):
    logits = np.array([[10.0, 10.0 - 2.0 ** -4, -3.0]], np.float32)
    out = ember.activations.softmax(ops.cast(ops.convert_to_tensor(logits), "bfloat16"))
    assert ops.dtype(out) == "bfloat16"
    z = _bf16(logits)
    expected = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    np.testing.assert_allclose(np.asarray(ops.to_numpy(ops.cast(out, "float32")), np.float64), expected,
                               rtol=BF16_EPS)  # one rounding of the float32 result


def test_embedding_and_integer_inputs_are_not_cast(backend):
    embedding = layers.Embedding(10, 4, dtype="mixed_bfloat16", name="emb")
    model = ember.Sequential([ember.Input((3,), dtype="int32"), embedding])
    state = model.build(seed=0)
    y, _ = model.apply(state, np.array([[1, 2, 9]], np.int32))
    assert ops.dtype(y) == "bfloat16"
    table = ops.to_numpy(state["params"]["emb"]["embeddings"])
    np.testing.assert_array_equal(np.asarray(ops.to_numpy(ops.cast(y, "float32")))[0], _bf16(table[[1, 2, 9]]))


def test_mixed_bfloat16_dense_and_conv_match_keras(backend):
    """The same weights under Keras 3's mixed_bfloat16 (torch backend) give the same outputs."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 8, 8, 3)).astype(np.float32)

    def build(lib, inputs):
        y = lib.layers.Conv2D(4, 3, activation="relu", dtype="mixed_bfloat16")(inputs)
        y = lib.layers.Flatten(dtype="mixed_bfloat16")(y)
        y = lib.layers.Dense(5, activation="softmax", dtype="mixed_bfloat16")(y)
        return lib.Model(inputs, y)

    reference = build(keras, keras.Input((8, 8, 3)))
    ours = build(ember, ember.Input((8, 8, 3)))
    ours.build(seed=0)
    ours.set_weights(reference.get_weights())
    assert {w.dtype for w in ours.get_weights()} == {np.dtype("float32")}
    expected = np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(reference(x), "float32")), np.float64)
    got = np.asarray(ops.to_numpy(ops.cast(ours(x)._native if hasattr(ours(x), "_native") else ours(x), "float32")),
                     np.float64)
    assert str(reference(x).dtype).endswith("bfloat16")
    # Both round the same bfloat16 operands; they may differ in accumulation order and in which
    # intermediate results (conv output, logits) round to a neighbouring bfloat16 value: a few units
    # of BF16_EPS relative to the probabilities (<= 1) after the softmax.
    np.testing.assert_allclose(got, expected, atol=4 * BF16_EPS, rtol=0)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=4 * BF16_EPS)
