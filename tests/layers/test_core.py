"""Core layers: Dense, Activation, Dropout, Flatten, Reshape, Permute, RepeatVector,
Identity, Lambda, Embedding.

Each layer goes through :func:`tests.layers.layer_test.run_layer_test` (every backend,
compared with each other and with a NumPy float64 reference written here); the
layer-specific behaviour and bad input are tested per backend with the ``backend``
fixture.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.saving import register_serializable
from tests.helpers import assert_close
from tests.layers.layer_test import run_layer_test
from tests.tolerances import FLOAT32

# --------------------------------------------------------------------- functions


@register_serializable(package="tests")
def square_and_concat(x):
    """``[x, x**2]`` along the last axis."""
    return ops.concatenate([x, ops.square(x)], axis=-1)


@register_serializable(package="tests")
def halve_last_dim(input_shape):
    return tuple(input_shape[:-1]) + (input_shape[-1] // 2,)


@register_serializable(package="tests")
def first_half(x):
    return ops.getitem(x, (Ellipsis, slice(0, ops.shape(x)[-1] // 2)))


@register_serializable(package="tests")
def scaled_tanh(x, scale=1.0):
    return ops.multiply(ops.tanh(x), scale)


@register_serializable(package="tests")
def sum_pair(xs):
    return ops.add(xs[0], xs[1])


@register_serializable(package="tests")
def cube(x):
    return ops.multiply(ops.square(x), x)


# ------------------------------------------------------------------------- Dense


@pytest.mark.parametrize("activation, np_fn", [("tanh", np.tanh), (None, lambda v: v)])
def test_dense(activation, np_fn):
    run_layer_test(
        lambda: layers.Dense(3, activation=activation, bias_initializer="random_normal", name="dense"),
        (2, 4),
        reference=lambda p, x: np_fn(x @ p["kernel"] + p["bias"]),
        expected_output_shape=(2, 3),
        expected_param_shapes={"bias": (3,), "kernel": (4, 3)},
        supports_masking=True,  # as in Keras 3, Dense passes a mask on
    )


def test_dense_rank3_no_bias():
    run_layer_test(
        lambda: layers.Dense(2, use_bias=False, name="dense"),
        (2, 3, 4),
        reference=lambda p, x: x @ p["kernel"],
        expected_output_shape=(2, 3, 2),
        expected_param_shapes={"kernel": (4, 2)},
        supports_masking=True,
    )


def test_dense_registered_custom_activation_round_trips():
    run_layer_test(lambda: layers.Dense(2, activation=cube, name="dense"), (2, 3),
                   reference=lambda p, x: (x @ p["kernel"] + p["bias"]) ** 3, supports_masking=True)
    assert layers.Dense(2, activation=cube).get_config()["activation"] == {"class_name": "tests>cube", "config": None}


def test_dense_bad_input(backend):
    dense = layers.Dense(3, name="dense_bad")
    with pytest.raises(ValueError, match=r"dense_bad.*rank >= 2.*\(None,\)"):
        dense(ember.Input(()))
    with pytest.raises(ValueError, match=r"dense_bad.*known last dimension.*\(None, None\)"):
        dense(ember.Input((None,)))
    state = dense.build((None, 4), seed=0)
    with pytest.raises(ValueError, match=r"dense_bad.*last dimension of 4.*\(2, 5\)"):
        dense.apply(state, ops.ones((2, 5)))
    with pytest.raises(ValueError, match="units"):
        layers.Dense(0)
    with pytest.raises(ValueError, match=r"dense_bad.*last dimension of 4"):
        dense(ops.ones((2, 4)))  # eager call: builds for last dimension 4 on first use ...
        dense(ops.ones((2, 5)))  # ... and then refuses another one


# -------------------------------------------------------------------- Activation


@pytest.mark.parametrize("name, np_fn", [
    ("relu", lambda v: np.maximum(v, 0.0)),
    ("sigmoid", lambda v: 1.0 / (1.0 + np.exp(-v))),
    ("softmax", lambda v: np.exp(v) / np.exp(v).sum(-1, keepdims=True)),
])
def test_activation(name, np_fn):
    run_layer_test(lambda: layers.Activation(name, name="act"), (2, 5), reference=lambda p, x: np_fn(x),
                   supports_masking=True)


def test_activation_registered_function():
    run_layer_test(lambda: layers.Activation(cube, name="act"), (2, 3), reference=lambda p, x: x ** 3,
                   supports_masking=True)


def test_activation_bad_input():
    with pytest.raises(ValueError, match="act_bad: activation: unknown activation 'nope'"):
        layers.Activation("nope", name="act_bad")
    with pytest.raises(TypeError, match="cannot serialize function .*register_serializable"):
        layers.Activation(lambda v: v, name="anon").get_config()


# ----------------------------------------------------------------------- Dropout


def test_dropout():
    run_layer_test(lambda: layers.Dropout(0.5, seed=3, name="drop"), (4, 6), reference=lambda p, x: x,
                   supports_masking=True, training_changes_output=True)


def test_dropout_noise_shape():
    run_layer_test(lambda: layers.Dropout(0.5, noise_shape=(None, 1, 5), name="drop"), (3, 4, 5),
                   reference=lambda p, x: x, supports_masking=True, training_changes_output=True)


def test_dropout_training_semantics(backend):
    rate = 0.25
    x = np.random.default_rng(0).uniform(1.0, 2.0, size=(64, 32)).astype(np.float32)
    layer = layers.Dropout(rate, name="drop")
    state = layer.build((None, 32))
    y = ops.to_numpy(layer.apply(state, ops.convert_to_tensor(x), training=True, rng=11)[0])
    kept = y != 0
    # Kept entries are scaled by 1 / (1 - rate); about `rate` of them are dropped.
    np.testing.assert_allclose(y[kept], x[kept] / (1 - rate), rtol=1e-6)
    assert 0.15 < 1 - kept.mean() < 0.35
    # The rng given to apply decides the mask: same rng, same mask; another rng, another mask.
    y_same = ops.to_numpy(layer.apply(state, ops.convert_to_tensor(x), training=True, rng=11)[0])
    y_other = ops.to_numpy(layer.apply(state, ops.convert_to_tensor(x), training=True, rng=12)[0])
    np.testing.assert_array_equal(y, y_same)
    assert not np.array_equal(y, y_other)
    # Without an rng the layer's own seed decides, reproducibly.
    seeded = layers.Dropout(rate, seed=5, name="drop_seeded")
    a = ops.to_numpy(seeded.apply(state, ops.convert_to_tensor(x), training=True)[0])
    b = ops.to_numpy(seeded.apply(state, ops.convert_to_tensor(x), training=True)[0])
    np.testing.assert_array_equal(a, b)
    # ... and an explicit rng wins over the seed.
    c = ops.to_numpy(seeded.apply(state, ops.convert_to_tensor(x), training=True, rng=11)[0])
    np.testing.assert_array_equal(c, y)
    # Inference returns the input itself.
    assert_close(layer.apply(state, ops.convert_to_tensor(x))[0], x)


def test_dropout_noise_shape_shares_the_mask(backend):
    x = np.ones((2, 6, 4), np.float32)
    layer = layers.Dropout(0.5, noise_shape=(None, 1, None), name="drop")
    y = ops.to_numpy(layer.apply(layer.build((None, 6, 4)), ops.convert_to_tensor(x), training=True, rng=0)[0])
    np.testing.assert_array_equal(y, np.broadcast_to(y[:, :1, :], y.shape))


def test_dropout_bad_input(backend):
    for rate in (1.0, -0.1, "0.5", True):
        with pytest.raises(ValueError, match=r"drop_bad: rate must be a number in \[0, 1\)"):
            layers.Dropout(rate, name="drop_bad")
    layer = layers.Dropout(0.5, noise_shape=(None, 3), name="drop_bad")
    with pytest.raises(ValueError, match=r"drop_bad.*noise_shape \(None, 3\).*\(None, 4\)"):
        layer(ember.Input((4,)))
    with pytest.raises(ValueError, match=r"drop_bad.*noise_shape.*\(2, 4\)"):
        layer.apply(layer.build((None, 3)), ops.ones((2, 4)), training=True, rng=0)
    with pytest.raises(TypeError, match="drop_bad.*rng"):
        layers.Dropout(0.5, name="drop_bad").apply({"params": {}, "buffers": {}}, ops.ones((2, 2)),
                                                     training=True, rng="seed")


# ----------------------------------------------------------------------- Flatten


def test_flatten():
    run_layer_test(lambda: layers.Flatten(name="flat"), (2, 3, 4), reference=lambda p, x: x.reshape(2, 12),
                   expected_output_shape=(2, 12))


def test_flatten_channels_first_and_rank1():
    run_layer_test(lambda: layers.Flatten(data_format="channels_first", name="flat"), (2, 3, 2, 2),
                   reference=lambda p, x: np.moveaxis(x, 1, -1).reshape(2, 12))
    run_layer_test(lambda: layers.Flatten(name="flat"), (3,), reference=lambda p, x: x.reshape(3, 1),
                   expected_output_shape=(3, 1))


def test_flatten_unknown_dims():
    assert layers.Flatten().compute_output_shape((None, None, 3)) == (None, None)
    assert layers.Flatten().compute_output_shape((5, 2, 3)) == (5, 6)
    with pytest.raises(ValueError, match="data_format"):
        layers.Flatten(data_format="channels_middle")


# ----------------------------------------------------------------------- Reshape


@pytest.mark.parametrize("target, expected", [((4, -1), (2, 4, 3)), ((12,), (2, 12)), ((2, 3, 2), (2, 2, 3, 2))])
def test_reshape(target, expected):
    run_layer_test(lambda: layers.Reshape(target, name="reshape"), (2, 3, 4),
                   reference=lambda p, x: x.reshape(expected), expected_output_shape=expected)


def test_reshape_shapes_and_bad_input(backend):
    assert layers.Reshape((-1, 2)).compute_output_shape((None, None, 4)) == (None, None, 2)
    assert layers.Reshape([3, 2]).target_shape == (3, 2)  # JSON lists come back as tuples
    layer = layers.Reshape((5, -1), name="reshape_bad")
    with pytest.raises(ValueError, match=r"reshape_bad.*\(3, 4\).*12 elements.*\(5, -1\)"):
        layer(ember.Input((3, 4)))
    with pytest.raises(ValueError, match=r"reshape_bad.*\(3, 4\).*\(5, -1\)"):
        layer.apply(layer.build((None, None, 4)), ops.ones((2, 3, 4)))
    with pytest.raises(ValueError, match=r"reshape_bad.*\(3, 4\).*\(2, 2\)"):
        layers.Reshape((2, 2), name="reshape_bad").compute_output_shape((None, 3, 4))
    with pytest.raises(ValueError, match="at most one -1"):
        layers.Reshape((-1, -1))
    with pytest.raises(ValueError, match="positive ints"):
        layers.Reshape((0, 3))


# ----------------------------------------------------------------------- Permute


@pytest.mark.parametrize("dims, shape", [((2, 1), (2, 3, 4)), ((3, 1, 2), (2, 3, 4, 2))])
def test_permute(dims, shape):
    run_layer_test(lambda: layers.Permute(dims, name="permute"), shape, supports_masking=True,
                   reference=lambda p, x: np.transpose(x, (0,) + dims))


def test_permute_bad_input(backend):
    with pytest.raises(ValueError, match="permutation of 1..2"):
        layers.Permute((0, 1))
    layer = layers.Permute((2, 1), name="permute_bad")
    with pytest.raises(ValueError, match=r"permute_bad.*rank 3.*\(None, 4\)"):
        layer(ember.Input((4,)))
    with pytest.raises(ValueError, match=r"permute_bad.*rank 3.*\(2, 3, 4, 5\)"):
        layer.apply(layer.build((None, 3, 4)), ops.ones((2, 3, 4, 5)))


# ------------------------------------------------------------------ RepeatVector


def test_repeat_vector():
    run_layer_test(lambda: layers.RepeatVector(3, name="repeat"), (2, 4), expected_output_shape=(2, 3, 4),
                   reference=lambda p, x: np.repeat(x[:, None, :], 3, axis=1))


def test_repeat_vector_bad_input(backend):
    with pytest.raises(ValueError, match="n must be a positive int"):
        layers.RepeatVector(0)
    layer = layers.RepeatVector(2, name="repeat_bad")
    with pytest.raises(ValueError, match=r"repeat_bad.*rank 2.*\(None, 3, 4\)"):
        layer(ember.Input((3, 4)))


# ---------------------------------------------------------------------- Identity


def test_identity():
    run_layer_test(lambda: layers.Identity(name="identity"), (2, 3), reference=lambda p, x: x, supports_masking=True)


# ------------------------------------------------------------------------ Lambda


def test_lambda_inferred_output_shape():
    run_layer_test(lambda: layers.Lambda(square_and_concat, name="lam"), (2, 3),
                   reference=lambda p, x: np.concatenate([x, x ** 2], axis=-1), expected_output_shape=(2, 6))
    layer = layers.Lambda(square_and_concat)
    assert layer.compute_output_shape((None, 3)) == (None, 6)
    assert layer.compute_output_shape((None, None, 3)) == (None, None, 6)


def test_lambda_output_shape_tuple_callable_and_arguments():
    run_layer_test(lambda: layers.Lambda(first_half, output_shape=(2,), name="lam"), (2, 4),
                   reference=lambda p, x: x[:, :2])
    run_layer_test(lambda: layers.Lambda(first_half, output_shape=halve_last_dim, name="lam"), (2, 3, 4),
                   reference=lambda p, x: x[..., :2])
    run_layer_test(lambda: layers.Lambda(scaled_tanh, arguments={"scale": 3.0}, name="lam"), (2, 3),
                   reference=lambda p, x: 3.0 * np.tanh(x))


def test_lambda_on_a_list_of_inputs():
    run_layer_test(lambda: layers.Lambda(sum_pair, name="lam"), [(2, 3), (2, 3)],
                   reference=lambda p, xs: xs[0] + xs[1], expected_output_shape=(2, 3))


def test_register_serializable_lambda_needs_a_name():
    with pytest.raises(ValueError, match="give a name"):
        register_serializable("tests")(lambda x: x)
    fn = register_serializable("tests", "named_lambda")(lambda x: x)
    assert layers.Lambda(fn).get_config()["function"] == {"class_name": "tests>named_lambda", "config": None}


def test_lambda_config_needs_a_registered_function(backend):
    layer = layers.Lambda(lambda x: ops.multiply(x, 2.0), name="lam_anon")
    state = layer.build((None, 2))
    assert_close(layer.apply(state, ops.ones((1, 2)))[0], np.full((1, 2), 2.0))
    with pytest.raises(TypeError, match=r"Lambda 'lam_anon'.*function.*register_serializable"):
        layer.get_config()
    with pytest.raises(TypeError, match=r"Lambda 'lam_shape'.*output_shape.*register_serializable"):
        layers.Lambda(first_half, output_shape=lambda s: s, name="lam_shape").get_config()
    config = json.loads(json.dumps(layers.Lambda(first_half, name="lam").get_config()))
    assert layers.Lambda.from_config(config).function is first_half


def test_lambda_shape_inference_failure_is_clear():
    def needs_rank3(x):
        return ops.transpose(x, (0, 2, 1))

    with pytest.raises(ValueError, match=r"lam_fail.*could not infer.*needs_rank3.*output_shape"):
        layers.Lambda(needs_rank3, name="lam_fail")(ember.Input((3,)))
    with pytest.raises(TypeError, match="function must be a function"):
        layers.Lambda(3)


def test_lambda_infers_on_numpy_whatever_the_backend(backend):
    y = layers.Lambda(square_and_concat, name="lam")(ember.Input((2, 3)))
    assert y.shape == (None, 2, 6)
    assert ember.get_backend() == backend


# --------------------------------------------------------------------- Embedding


def test_embedding():
    ids = np.array([[0, 3, 9, 3], [1, 2, 0, 8]], dtype=np.int32)
    run_layer_test(lambda: layers.Embedding(10, 3, name="emb"), ids.shape, input_data=ids, input_dtype="int32",
                   reference=lambda p, x: p["embeddings"][x], expected_output_shape=(2, 4, 3),
                   expected_param_shapes={"embeddings": (10, 3)})


def test_embedding_int64_and_mask_zero():
    ids = np.array([[0, 1], [2, 0]], dtype=np.int64)
    run_layer_test(lambda: layers.Embedding(3, 2, mask_zero=True, embeddings_initializer="random_normal", name="emb"),
                   ids.shape, input_data=ids, input_dtype="int64", supports_masking=True,
                   reference=lambda p, x: p["embeddings"][x])


def test_embedding_default_initializer_is_keras_uniform(backend):
    layer = layers.Embedding(50, 40)
    table = ops.to_numpy(layer.build((None, 2), seed=0)["params"]["embeddings"])
    assert table.min() >= -0.05 and table.max() < 0.05 and table.std() > 0.02
    assert layer.get_config()["embeddings_initializer"]["config"]["minval"] == -0.05


def test_embedding_mask(backend):
    layer = layers.Embedding(5, 2, mask_zero=True)
    mask = layer.compute_mask(ops.convert_to_tensor(np.array([[0, 1, 2]], np.int32)))
    np.testing.assert_array_equal(ops.to_numpy(mask), [[False, True, True]])
    assert layers.Embedding(5, 2).compute_mask(ops.ones((1, 2), dtype="int32")) is None


def test_embedding_bad_input(backend):
    layer = layers.Embedding(4, 2, name="emb_bad")
    state = layer.build((None, 3), seed=0)
    for bad in ([[0, 1, 4]], [[0, -1, 2]]):
        with pytest.raises(ValueError, match=r"emb_bad.*\[0, 4\).*shape \(1, 3\)"):
            layer.apply(state, ops.convert_to_tensor(np.array(bad, np.int32)))
    with pytest.raises(ValueError, match="input_dim must be a positive int"):
        layers.Embedding(0, 2)
    # Float indices are cast, as in Keras.
    y, _ = layer.apply(state, ops.convert_to_tensor(np.array([[1.0, 3.0]], np.float32)))
    assert_close(y, ops.to_numpy(state["params"]["embeddings"])[[[1, 3]]])


# ----------------------------------------------------------------- common rules


def test_auto_names_and_clear_session():
    ember.clear_session()
    assert layers.Flatten().name == "flatten"
    assert layers.Flatten().name == "flatten_1"
    assert layers.RepeatVector(2).name == "repeat_vector"
    ember.clear_session()
    assert layers.Flatten().name == "flatten"


def test_unbuilt_layer_called_eagerly_builds_on_first_use(backend):
    # Keras semantics: layer(x) on arrays builds the layer's own weights from x's shape.
    assert ops.shape(layers.Reshape((2,), name="reshape_eager")(ops.ones((1, 2)))) == (1, 2)
    dense = layers.Dense(3, name="dense_eager")
    y = dense(ops.ones((2, 4)))
    kernel, bias = dense.get_weights()
    np.testing.assert_allclose(np.asarray(ops.to_numpy(y)), np.ones((2, 4)) @ kernel + bias, **FLOAT32)


def test_public_names():
    for name in ["Activation", "Add", "Average", "Concatenate", "Dense", "Dot", "Dropout", "Embedding", "Flatten",
                 "Identity", "Input", "InputLayer", "Lambda", "Layer", "Maximum", "Minimum", "Multiply", "Permute",
                 "RepeatVector", "Reshape", "Subtract", "clear_session"]:
        assert name in layers.__all__ and hasattr(layers, name), name
    for name in ["layers", "initializers", "activations", "Input", "Model", "Sequential", "clear_session"]:
        assert name in ember.__all__ and hasattr(ember, name), name
