"""Keras's activation layers, adaptive pooling, AlphaDropout, merge helpers and layers.(de)serialize.

Each layer goes through ``run_layer_test`` with a NumPy float64 reference; the activation
layers and adaptive pooling are also compared with Keras 3 (torch backend) on the same input.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import initializers, layers, ops
from tests.layers.layer_test import run_layer_test
from tests.tolerances import FLOAT32, FLOAT32_PAIR

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")

X = np.random.default_rng(3).normal(scale=2.0, size=(2, 4, 5, 3)).astype(np.float32)


def _relu_reference(max_value=None, negative_slope=0.0, threshold=0.0):
    def reference(params, x):
        out = np.where(x >= threshold, x, negative_slope * (x - threshold))
        return out if max_value is None else np.minimum(out, max_value)
    return reference


@pytest.mark.parametrize("kwargs", [{}, {"max_value": 1.5}, {"negative_slope": 0.1, "threshold": 0.3}])
def test_relu(kwargs):
    run_layer_test(lambda: layers.ReLU(**kwargs), (2, 5), reference=_relu_reference(**kwargs), supports_masking=True)


def test_leaky_relu_elu_softmax():
    run_layer_test(lambda: layers.LeakyReLU(negative_slope=0.2), (2, 5),
                   reference=lambda p, x: np.where(x >= 0, x, 0.2 * x), supports_masking=True)
    run_layer_test(lambda: layers.ELU(alpha=0.5), (2, 5),
                   reference=lambda p, x: np.where(x > 0, x, 0.5 * np.expm1(x)), supports_masking=True)

    def softmax(x, axis):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    run_layer_test(lambda: layers.Softmax(), (2, 5), reference=lambda p, x: softmax(x, -1), supports_masking=True)
    run_layer_test(lambda: layers.Softmax(axis=(1, 2)), (2, 3, 4), reference=lambda p, x: softmax(x, (1, 2)),
                   supports_masking=True)


def test_prelu():
    run_layer_test(lambda: layers.PReLU(alpha_initializer=initializers.RandomUniform(0.1, 0.5)), (2, 3, 4),
                   reference=lambda p, x: np.where(x >= 0, x, p["alpha"] * x), expected_param_shapes={"alpha": (3, 4)},
                   supports_masking=True)
    run_layer_test(lambda: layers.PReLU(alpha_initializer="ones", shared_axes=[1]), (2, 3, 4),
                   reference=lambda p, x: np.where(x >= 0, x, p["alpha"] * x), expected_param_shapes={"alpha": (1, 4)},
                   supports_masking=True, random_init=False)


@pytest.mark.parametrize("name, ours, theirs", [
    ("relu", lambda: layers.ReLU(max_value=2.0, negative_slope=0.1, threshold=0.5),
     lambda: keras.layers.ReLU(max_value=2.0, negative_slope=0.1, threshold=0.5)),
    ("leaky", lambda: layers.LeakyReLU(), lambda: keras.layers.LeakyReLU()),
    ("elu", lambda: layers.ELU(alpha=0.7), lambda: keras.layers.ELU(alpha=0.7)),
    ("softmax", lambda: layers.Softmax(axis=1), lambda: keras.layers.Softmax(axis=1)),
    ("adaptive_avg2d", lambda: layers.AdaptiveAveragePooling2D((3, 2)),
     lambda: keras.layers.AdaptiveAveragePooling2D((3, 2))),
    ("adaptive_max2d", lambda: layers.AdaptiveMaxPooling2D(3), lambda: keras.layers.AdaptiveMaxPooling2D(3)),
])
def test_layers_match_keras(backend, name, ours, theirs):
    expected = keras.ops.convert_to_numpy(theirs()(keras.ops.convert_to_tensor(X)))
    layer = ours()
    actual, _ = layer.apply(layer.build(X.shape), ops.convert_to_tensor(X))
    np.testing.assert_allclose(ops.to_numpy(actual), expected, **FLOAT32_PAIR)


def test_prelu_matches_keras_with_the_same_weights(backend):
    theirs = keras.layers.PReLU(alpha_initializer="random_uniform", shared_axes=[1, 2])
    expected = keras.ops.convert_to_numpy(theirs(keras.ops.convert_to_tensor(X)))
    alpha = keras.ops.convert_to_numpy(theirs.weights[0])
    layer = layers.PReLU(shared_axes=[1, 2])
    state = layer.build(X.shape)
    state["params"]["alpha"] = ops.convert_to_tensor(alpha)
    actual, _ = layer.apply(state, ops.convert_to_tensor(X))
    np.testing.assert_allclose(ops.to_numpy(actual), expected, **FLOAT32_PAIR)


def _adaptive_reference(x, sizes, reduce):
    out = x
    for offset, n in enumerate(sizes):
        axis = 1 + offset
        length = out.shape[axis]
        pieces = [reduce(np.take(out, range((i * length) // n, -(-((i + 1) * length) // n)), axis=axis), axis=axis,
                         keepdims=True) for i in range(n)]
        out = np.concatenate(pieces, axis=axis)
    return out


@pytest.mark.parametrize("cls, sizes, shape, reduce", [
    (layers.AdaptiveAveragePooling1D, (3,), (2, 7, 2), np.mean),
    (layers.AdaptiveMaxPooling1D, (4,), (2, 7, 2), np.max),
    (layers.AdaptiveAveragePooling2D, (2, 3), (2, 5, 4, 2), np.mean),
    (layers.AdaptiveMaxPooling3D, (2, 1, 2), (1, 3, 3, 4, 2), np.max),
    (layers.AdaptiveAveragePooling3D, (1, 2, 2), (1, 3, 3, 4, 2), np.mean),
])
def test_adaptive_pooling(cls, sizes, shape, reduce):
    run_layer_test(lambda: cls(sizes), shape, reference=lambda p, x: _adaptive_reference(x, sizes, reduce),
                   expected_output_shape=(shape[0],) + sizes + (shape[-1],))


def test_adaptive_pooling_channels_first_and_bad_sizes(backend):
    layer = layers.AdaptiveMaxPooling2D(2, data_format="channels_first")
    x = np.transpose(X, (0, 3, 1, 2))
    y, _ = layer.apply(layer.build(x.shape), ops.convert_to_tensor(x))
    np.testing.assert_allclose(ops.to_numpy(y), np.transpose(_adaptive_reference(X, (2, 2), np.max), (0, 3, 1, 2)))
    with pytest.raises(ValueError, match="threshold"):
        layers.ReLU(threshold=-1.0)
    with pytest.raises(ValueError, match="output_size"):
        layers.AdaptiveAveragePooling2D((2, 0))


def test_alpha_dropout_keeps_mean_and_variance(backend):
    layer = layers.AlphaDropout(0.3, seed=1)
    state = layer.build((None, 4))
    x = ops.convert_to_tensor(np.random.default_rng(0).normal(size=(20000, 4)).astype(np.float32))
    y, _ = layer.apply(state, x)
    assert y is x
    y = np.asarray(ops.to_numpy(layer.apply(state, x, training=True)[0]), np.float64)
    # Unit-normal inputs keep mean 0 and variance 1 (the map is built for that); 80000 samples:
    # standard errors ~0.004 (mean) and ~0.008 (variance).
    assert abs(y.mean()) < 0.03 and abs(y.var() - 1.0) < 0.05
    saturated = -1.6732632423543772 * 1.0507009873554805
    a = ((1 - 0.3) * (1 + 0.3 * saturated ** 2)) ** -0.5
    dropped_value = a * saturated - a * saturated * 0.3
    assert 0.28 < np.mean(np.isclose(y, dropped_value, **FLOAT32)) < 0.32  # a * alpha' + b in float32
    with pytest.raises(ValueError, match="rate"):
        layers.AlphaDropout(1.0)


def test_functional_merge_helpers(backend):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((2, 3), np.float32) * 2
    ta, tb = ops.convert_to_tensor(a), ops.convert_to_tensor(b)
    for helper, expected in [(layers.add, a + b), (layers.subtract, a - b), (layers.multiply, a * b),
                             (layers.average, (a + b) / 2), (layers.maximum, np.maximum(a, b)),
                             (layers.minimum, np.minimum(a, b)), (layers.concatenate, np.concatenate([a, b], -1))]:
        np.testing.assert_allclose(ops.to_numpy(helper([ta, tb])), expected)
    np.testing.assert_allclose(ops.to_numpy(layers.dot([ta, tb], axes=1)), (a * b).sum(1, keepdims=True))
    x1, x2 = ember.Input((3,)), ember.Input((3,))
    model = ember.Model([x1, x2], layers.concatenate([layers.add([x1, x2]), layers.multiply([x1, x2])], axis=1))
    np.testing.assert_allclose(ops.to_numpy(model.predict([a, b], verbose=0)), np.concatenate([a + b, a * b], 1))
    with pytest.raises(TypeError, match="list of tensors"):
        layers.add(ta)


def test_layers_serialize_round_trip():
    config = layers.serialize(layers.PReLU(shared_axes=[1], name="p"))
    rebuilt = layers.deserialize(config)
    assert isinstance(rebuilt, layers.PReLU) and rebuilt.shared_axes == (1,) and rebuilt.name == "p"
    keras_style = {"class_name": "LeakyReLU", "config": {"negative_slope": 0.1, "name": "lr"}}
    assert layers.deserialize(keras_style).negative_slope == 0.1
    with pytest.raises(ValueError, match="class_name"):
        layers.deserialize({"config": {}})
    with pytest.raises(TypeError, match="expected a Layer"):
        layers.serialize("Dense")


@pytest.mark.parametrize("equation, output_shape, bias_axes, input_shape", [
    ("ab,bc->ac", 4, "c", (2, 3)),
    ("abc,cd->abd", (None, 5), "d", (2, 3, 4)),
    ("abc,cde->abde", (3, 4, 5), "de", (2, 3, 2)),
    ("...b,bc->...c", 5, "c", (2, 3, 4)),
    ("ab...,bc->ac...", (4,), None, (2, 3, 2)),
])
def test_einsum_dense_matches_keras_with_the_same_weights(backend, equation, output_shape, bias_axes, input_shape):
    x = np.random.default_rng(0).normal(size=input_shape).astype(np.float32)
    theirs = keras.layers.EinsumDense(equation, output_shape, bias_axes=bias_axes, bias_initializer="random_normal")
    expected = keras.ops.convert_to_numpy(theirs(keras.ops.convert_to_tensor(x)))
    layer = layers.EinsumDense(equation, output_shape, bias_axes=bias_axes)
    state = layer.build((None,) + input_shape[1:], seed=0)
    for variable in theirs.weights:
        key = "kernel" if "kernel" in variable.path else "bias"
        assert ops.shape(state["params"][key]) == tuple(variable.shape)
        state["params"][key] = ops.convert_to_tensor(keras.ops.convert_to_numpy(variable))
    actual, _ = layer.apply(state, ops.convert_to_tensor(x))
    np.testing.assert_allclose(ops.to_numpy(actual), expected, **FLOAT32_PAIR)
    assert layer.compute_output_shape((None,) + input_shape[1:])[1:] == tuple(expected.shape[1:])


def test_einsum_dense_harness_and_bad_equations():
    run_layer_test(lambda: layers.EinsumDense("abc,cd->abd", (None, 2), bias_axes="d", activation="tanh"), (2, 3, 4),
                   reference=lambda p, x: np.tanh(np.einsum("abc,cd->abd", x, p["kernel"]) + p["bias"]),
                   expected_param_shapes={"kernel": (4, 2), "bias": (2,)})
    with pytest.raises(ValueError, match="equation"):
        layers.EinsumDense("ab->b", 3)
    with pytest.raises(ValueError, match="bias_axes"):
        layers.EinsumDense("ab,bc->ac", 3, bias_axes="z").build((None, 2))


def test_wrapper_delegates_to_the_wrapped_layer(backend):
    dense = layers.Dense(2, name="inner")
    wrapper = layers.Wrapper(dense)
    state = wrapper.build((None, 3), seed=0)
    x = ops.convert_to_tensor(np.ones((1, 3), np.float32))
    np.testing.assert_array_equal(ops.to_numpy(wrapper.apply(state, x)[0]), ops.to_numpy(dense.apply(state, x)[0]))
    assert wrapper.compute_output_shape((None, 3)) == (None, 2)
    rebuilt = layers.deserialize(layers.serialize(wrapper))
    assert isinstance(rebuilt.layer, layers.Dense) and rebuilt.layer.units == 2
    with pytest.raises(ValueError, match="layer must be an ember Layer"):
        layers.Wrapper("dense")
