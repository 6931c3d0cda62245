"""Every layer type Keras 3 and Ember both have crosses between them: a one-layer Keras model with
random non-trivial weights (BatchNorm variances positive), saved by Keras, loads in Ember on every
backend and predicts what Keras predicts; saved again by Ember, Keras loads it and predicts the same.

Tolerance: float32, rtol=atol=1e-5 (different summation orders; measured differences <= 3e-7).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import ember
from ember import ops
from tests.saving.keras_models import as_list
from tests.tolerances import FLOAT32_PAIR

keras = pytest.importorskip("keras")  # the reference of every case (tests.saving.keras_models sets its backend)
L = keras.layers
# Ember against Keras on the same weights: two float32 implementations (FLOAT32_PAIR), whose absolute part is
# scaled for terms of unit size (activations up to 1 times weights, summed) rather than 0.1: 10x.
TOL = {"rtol": FLOAT32_PAIR["rtol"], "atol": 10 * FLOAT32_PAIR["atol"]}
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Keras 3.15: NumPy 2 __array__ notices

CASES = {  # name: (input shape, input dtype, layers)
    "Conv1D_causal_dilated": ((8, 3), "float32", lambda: [L.Conv1D(2, 3, dilation_rate=2, padding="causal",
                                                                   activation="relu")]),
    "Conv1D_strided": ((8, 3), "float32", lambda: [L.Conv1D(2, 3, strides=2, padding="same")]),
    "Conv2D_groups": ((6, 6, 4), "float32", lambda: [L.Conv2D(4, 3, groups=2)]),
    "Conv3D": ((4, 4, 4, 2), "float32", lambda: [L.Conv3D(2, 2)]),
    "Conv1DTranspose": ((5, 3), "float32", lambda: [L.Conv1DTranspose(2, 3, strides=2)]),
    "Conv2DTranspose": ((4, 4, 3), "float32", lambda: [L.Conv2DTranspose(2, 3, strides=2, padding="same")]),
    "Conv3DTranspose": ((3, 3, 3, 2), "float32", lambda: [L.Conv3DTranspose(2, 2)]),
    "DepthwiseConv1D": ((6, 3), "float32", lambda: [L.DepthwiseConv1D(3, depth_multiplier=2)]),
    "DepthwiseConv2D": ((5, 5, 3), "float32", lambda: [L.DepthwiseConv2D(3, depth_multiplier=2)]),
    "SeparableConv1D": ((6, 3), "float32", lambda: [L.SeparableConv1D(4, 3, depth_multiplier=2)]),
    "SeparableConv2D": ((5, 5, 3), "float32", lambda: [L.SeparableConv2D(4, 3)]),
    "pooling_1d": ((6, 3), "float32", lambda: [L.AveragePooling1D(2), L.MaxPooling1D(2, strides=1),
                                               L.GlobalMaxPooling1D()]),
    "pooling_2d": ((6, 6, 3), "float32", lambda: [L.AveragePooling2D(2, padding="same"), L.MaxPooling2D(),
                                                  L.GlobalAveragePooling2D(keepdims=True), L.Flatten()]),
    "pooling_3d": ((4, 4, 4, 2), "float32", lambda: [L.AveragePooling3D(2), L.MaxPooling3D(1),
                                                     L.GlobalAveragePooling3D()]),
    "GlobalMaxPooling2D": ((4, 4, 3), "float32", lambda: [L.GlobalMaxPooling2D()]),
    "normalizations": ((5, 4), "float32", lambda: [L.GroupNormalization(2), L.LayerNormalization(scale=False),
                                                   L.RMSNormalization(), L.UnitNormalization()]),
    "BatchNormalization_axis1": ((3, 4), "float32", lambda: [L.BatchNormalization(axis=1)]),
    "TimeDistributed": ((5, 4), "float32", lambda: [L.TimeDistributed(L.Dense(3))]),
    "reshaping_1d": ((6, 3), "float32", lambda: [L.Cropping1D((1, 2)), L.UpSampling1D(2), L.ZeroPadding1D(2)]),
    "reshaping_2d": ((6, 6, 3), "float32", lambda: [L.Cropping2D(1), L.UpSampling2D(2, interpolation="bilinear"),
                                                    L.ZeroPadding2D(1)]),
    "core_shapes": ((6,), "float32", lambda: [L.Reshape((2, 3)), L.Permute((2, 1)), L.Flatten(),
                                              L.RepeatVector(2)]),
    "Masking_LSTM": ((4, 3), "float32", lambda: [L.Masking(0.0), L.LSTM(2)]),
    "GRU_reset_before": ((4, 3), "float32", lambda: [L.GRU(2, reset_after=False)]),
    "LSTM_backwards": ((4, 3), "float32", lambda: [L.LSTM(2, go_backwards=True, return_sequences=True)]),
    "Bidirectional_GRU_sum": ((4, 3), "float32", lambda: [L.Bidirectional(L.GRU(2), merge_mode="sum")]),
    "SimpleRNN_relu": ((4, 3), "float32", lambda: [L.SimpleRNN(2, activation="relu", return_sequences=True)]),
    "noise_and_regularization": ((3, 2), "float32", lambda: [L.GaussianNoise(0.1), L.GaussianDropout(0.1),
                                                             L.SpatialDropout1D(0.1), L.ActivityRegularization(0.01),
                                                             L.Identity()]),
    "activations": ((3,), "float32", lambda: [L.Activation("gelu"), L.Dense(3, activation="selu"),
                                              L.Activation("softplus")]),
    "Dense_regularized": ((3,), "float32", lambda: [L.Dense(2, kernel_regularizer=keras.regularizers.L2(0.01),
                                                            kernel_constraint=keras.constraints.MaxNorm(2.0),
                                                            use_bias=False)]),
    "Embedding_mask_zero": ((4,), "int32", lambda: [L.Embedding(5, 3, mask_zero=True), L.LSTM(2)]),
    "Dense_on_sequences": ((2, 3), "float32", lambda: [L.Dense(2, activation="softmax")]),
}


def _merge_and_attention():
    a, b = keras.Input((3,)), keras.Input((3,))
    q, v = keras.Input((4, 3)), keras.Input((5, 3))
    outputs = [L.Multiply()([a, b]), L.Subtract()([a, b]), L.Average()([a, b]), L.Maximum()([a, b]),
               L.Minimum()([a, b]), L.Dot(axes=1)([a, b]), L.Flatten()(L.Attention(use_scale=True)([q, v])),
               L.Flatten()(L.AdditiveAttention()([q, v]))]
    return keras.Model([a, b, q, v], outputs)


def _random_inputs(model, rng):
    inputs = []
    for tensor in model.inputs:
        shape = (2,) + tuple(tensor.shape[1:])
        inputs.append(rng.integers(0, 5, size=shape).astype("int32") if "int" in str(tensor.dtype)
                      else rng.normal(size=shape).astype("float32"))
    return inputs[0] if len(inputs) == 1 else inputs


@functools.cache
def keras_case(name, directory):
    """``(path of the .keras file, inputs, Keras's outputs)`` for one case (built once per session)."""
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    keras.utils.set_random_seed(0)
    if name == "merge_and_attention":
        model = _merge_and_attention()
    else:
        shape, dtype, make = CASES[name]
        model = keras.Sequential([keras.Input(shape, dtype=dtype)] + make())
    weights = [w + 0.3 * rng.normal(size=w.shape).astype(w.dtype) for w in model.get_weights()]
    model.set_weights(weights)
    for variable in model.weights:
        if "variance" in variable.path:
            variable.assign(np.abs(np.asarray(variable.numpy())) + 0.5)
    x = _random_inputs(model, rng)
    path = f"{directory}/{name}.keras"
    model.save(path)
    return path, x, as_list(model.predict(x, verbose=0))


NAMES = [*CASES, "merge_and_attention"]


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    return str(tmp_path_factory.mktemp("keras_layers"))


@pytest.mark.parametrize("name", NAMES)
def test_keras_layer_loads_in_ember(backend, directory, name):
    path, x, expected = keras_case(name, directory)
    model = ember.load_model(path, compile=False)
    got = model.predict_on_batch(x)  # one eager batch: no step compilation for a one-off call
    got = [ops.to_numpy(g) for g in (got if isinstance(got, list) else [got])]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, **TOL)


@pytest.mark.parametrize("name", NAMES)
def test_ember_written_layer_loads_in_keras(directory, tmp_path, name):
    path, x, expected = keras_case(name, directory)
    ember.load_model(path, compile=False).save(tmp_path / "back.keras")
    got = as_list(keras.saving.load_model(tmp_path / "back.keras").predict(x, verbose=0))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, **TOL)
