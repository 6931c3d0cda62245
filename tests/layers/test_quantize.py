"""int8 quantization (Keras's ``layer.quantize("int8")``, ``model.quantize``), on every backend.

Error bound (weight-only): ``q_ij = round(W_ij * s_j)`` with ``s_j = 127 / max_i |W_ij|`` is within
1/2 of ``W_ij * s_j``, so every de-quantized weight is within ``1 / (2 s_j)`` of ``W_ij`` and one
output ``y_j = sum_i x_i W_ij`` within ``sum_i |x_i| / (2 s_j)``. With the inputs quantized too
(Keras's default, ``s_x = 127 / max_i |x_i|`` per row) each input is within ``1 / (2 s_x)``, which
adds ``sum_i |W_q,ij / s_j| / (2 s_x)``. The reference output is NumPy float64; the float32
rounding of the computation adds FLOAT32's bounds on top.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import dtype_policies, layers, ops, quantizers
from tests.tolerances import FLOAT32

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(6, 12)).astype("float32")
INDICES = np.array([[0, 3, 9], [4, 4, 1]])


def _dense(**kwargs):
    layer = layers.Dense(5, **kwargs)
    layer(X)
    return layer


def _bound(x, kernel_int8, scale, inputs_quantized):
    """Per-output bound of ``|y_q - y|`` (module docstring), shape ``(batch, units)``."""
    abs_x = np.abs(x.astype("float64"))
    bound = abs_x.sum(-1, keepdims=True) / (2 * scale[None, :])
    if inputs_quantized:
        s_x = 127.0 / (abs_x.max(-1, keepdims=True) + quantizers.EPSILON)
        bound = bound + (np.abs(kernel_int8.astype("float64")) / scale).sum(0)[None, :] / (2 * s_x)
    return bound


@pytest.mark.parametrize("weight_only", [False, True])
def test_dense_int8_within_the_error_bound(backend, weight_only):
    layer = _dense(use_bias=False)
    kernel = layer.get_weights()[0].astype("float64")
    config = quantizers.Int8QuantizationConfig(activation_quantizer=None) if weight_only else None
    layer.quantize("int8", config=config)
    assert layer.dtype_policy == dtype_policies.QuantizedDTypePolicy("int8", "float32")
    assert [(w.path, w.dtype, w.trainable) for w in layer.weights] == [
        ("kernel", "int8", False), ("kernel_scale", "float32", False)]
    kernel_int8, scale = (np.asarray(w) for w in layer.get_weights())
    assert np.array_equal(kernel_int8, np.round(kernel * (127 / (np.abs(kernel).max(0) + quantizers.EPSILON))))
    error = np.abs(ops.to_numpy(layer(X)).astype("float64") - X.astype("float64") @ kernel)
    bound = _bound(X, kernel_int8, scale.astype("float64"), not weight_only)
    # float32 rounding of the 12-term products and the de-scaling on top of the bound: FLOAT32's
    assert np.all(error <= bound + FLOAT32["atol"] + FLOAT32["rtol"] * np.abs(X) @ np.abs(kernel))


@pytest.mark.parametrize("weight_only", [False, True])
def test_dense_int8_equals_keras(backend, weight_only):
    layer = _dense(activation="relu")
    reference = keras.layers.Dense(5, activation="relu")
    reference.build((None, 12))
    reference.set_weights(layer.get_weights())
    config = quantizers.Int8QuantizationConfig(activation_quantizer=None) if weight_only else None
    keras_config = keras.quantizers.Int8QuantizationConfig(activation_quantizer=None) if weight_only else None
    layer.quantize("int8", config=config)
    reference.quantize("int8", config=keras_config)
    assert reference.dtype_policy.name == layer.dtype_policy.name
    ours = {w.path: np.asarray(w) for w in layer.weights}
    assert np.array_equal(ours["kernel"], keras.ops.convert_to_numpy(reference._kernel))
    np.testing.assert_allclose(ours["kernel_scale"], keras.ops.convert_to_numpy(reference.kernel_scale), **FLOAT32)
    np.testing.assert_allclose(ops.to_numpy(layer(X)), keras.ops.convert_to_numpy(reference(X)), **FLOAT32)


def test_embedding_int8_within_bound_and_equals_keras(backend):
    layer = layers.Embedding(10, 4)
    layer(INDICES)
    table = layer.get_weights()[0].astype("float64")
    reference = keras.layers.Embedding(10, 4)
    reference.build()
    reference.set_weights(layer.get_weights())
    layer.quantize("int8")
    reference.quantize("int8")
    table_int8, scale = (np.asarray(w) for w in layer.get_weights())
    assert np.array_equal(table_int8, keras.ops.convert_to_numpy(reference._embeddings))
    out = ops.to_numpy(layer(INDICES)).astype("float64")
    # every looked-up value is one de-quantized weight: within 1 / (2 scale_row), plus one float32 division
    bound = 1 / (2 * scale.astype("float64")[INDICES])[..., None] + FLOAT32["rtol"] * np.abs(table[INDICES])
    assert np.all(np.abs(out - table[INDICES]) <= bound)
    np.testing.assert_allclose(out, keras.ops.convert_to_numpy(reference(INDICES)), **FLOAT32)


@pytest.mark.parametrize("equation, input_shape, output_shape, bias_axes", [
    ("abc,cde->abde", (2, 3, 4), (3, 2, 5), "de"),  # two output axes from the kernel: a 4-d scale layout
    ("abc,bcd->ad", (2, 3, 4), (6,), None),  # two contracted axes
])
@pytest.mark.parametrize("weight_only", [False, True])
def test_einsum_dense_int8_equals_keras(backend, equation, input_shape, output_shape, bias_axes, weight_only):
    x = RNG.normal(size=input_shape).astype("float32")
    layer = layers.EinsumDense(equation, output_shape, bias_axes=bias_axes)
    layer(x)
    reference = keras.layers.EinsumDense(equation, output_shape, bias_axes=bias_axes)
    reference.build((None,) + input_shape[1:])
    reference.set_weights(layer.get_weights())
    config = quantizers.Int8QuantizationConfig(activation_quantizer=None) if weight_only else None
    keras_config = keras.quantizers.Int8QuantizationConfig(activation_quantizer=None) if weight_only else None
    layer.quantize("int8", config=config)
    reference.quantize("int8", config=keras_config)
    ours = {w.path: np.asarray(w) for w in layer.weights}
    assert np.array_equal(ours["kernel"], keras.ops.convert_to_numpy(reference._kernel))
    np.testing.assert_allclose(ours["kernel_scale"], keras.ops.convert_to_numpy(reference.kernel_scale), **FLOAT32)
    np.testing.assert_allclose(ops.to_numpy(layer(x)), keras.ops.convert_to_numpy(reference(x)), **FLOAT32)


def test_einsum_dense_with_an_ellipsis_quantizes(backend):
    # Keras 3.15 cannot quantize an equation with '...' (its layout analysis takes len() of the input
    # rank); Ember reads the rank from the build. Weight-only bound: as Dense's (module docstring).
    x = RNG.normal(size=(2, 3, 12)).astype("float32")
    layer = layers.EinsumDense("...b,bc->...c", output_shape=5)
    layer(x)
    (kernel,) = layer.get_weights()
    layer.quantize(config=quantizers.Int8QuantizationConfig(activation_quantizer=None))
    kernel_int8, scale = (np.asarray(w) for w in layer.get_weights())
    assert scale.shape == (1, 1, 5)
    rows = x.reshape(-1, 12)
    error = np.abs(ops.to_numpy(layer(x)).reshape(-1, 5) - rows.astype("float64") @ kernel)
    bound = _bound(rows, kernel_int8, scale.reshape(5).astype("float64"), False)
    # float32 rounding of the 12-term products on top of the bound: FLOAT32's
    assert np.all(error <= bound + FLOAT32["atol"] + FLOAT32["rtol"] * np.abs(rows) @ np.abs(kernel))


def _model():
    model = ember.Sequential([ember.Input((12,)), layers.Dense(8, activation="relu"), layers.Dropout(0.2),
                              layers.EinsumDense("ab,bc->ac", output_shape=3, bias_axes="c")])
    model.build(seed=0)
    return model


@pytest.mark.parametrize("extension", [".h5", ".keras"])
def test_quantized_model_round_trips_with_ember_and_keras(backend, tmp_path, extension):
    model = _model()
    model.quantize("int8")
    expected = model.predict(X, verbose=0)
    path = str(tmp_path / f"m{extension}")
    model.save(path)
    loaded = ember.saving.load_model(path)
    assert [loaded.layers[i].dtype for i in (0, 2)] == ["int8_from_float32", "int8_from_float32"]
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), expected)
    if extension == ".keras":  # Keras loads Ember's file: same int8 weights, same outputs
        theirs = keras.saving.load_model(path)
        assert np.array_equal(keras.ops.convert_to_numpy(theirs.layers[0]._kernel), model.layers[0].get_weights()[1])
        np.testing.assert_allclose(np.asarray(theirs.predict(X, verbose=0)), expected, **FLOAT32)


@pytest.fixture(scope="module")
def keras_quantized_file(tmp_path_factory):
    """A quantized Keras model's file and its predictions (made once: the Keras side is backend-independent)."""
    reference = keras.Sequential([keras.Input((12,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.Dense(3)])
    reference.quantize("int8")
    path = str(tmp_path_factory.mktemp("keras") / "k.keras")
    reference.save(path)
    return path, np.asarray(reference.predict(X, verbose=0))


def test_ember_loads_a_quantized_keras_model(backend, keras_quantized_file):
    path, expected = keras_quantized_file
    loaded = ember.saving.load_model(path)
    assert loaded.layers[0].dtype_policy.name == "int8_from_float32"
    np.testing.assert_allclose(loaded.predict(X, verbose=0), expected, **FLOAT32)


def test_model_quantize_then_fit(backend):
    model = _model()
    model.quantize("int8")
    assert [layer.quantization_mode for layer in model.layers] == ["int8", None, "int8"]
    model.compile("sgd", "mse")
    before = model.layers[0].get_weights()
    model.fit(X, np.zeros((6, 3), "float32"), epochs=1, verbose=0)
    after = model.layers[0].get_weights()
    assert np.array_equal(before[1], after[1]) and np.array_equal(before[2], after[2])  # int8 kernel frozen
    assert not np.array_equal(before[0], after[0])  # the bias trains


def test_quantize_under_mixed_bfloat16(backend):
    layer = _dense(dtype="mixed_bfloat16")
    expected = ops.to_numpy(ops.cast(layer(X), "float32"))
    layer.quantize("int8")
    assert (layer.dtype_policy.name, layer.compute_dtype) == ("int8_from_mixed_bfloat16", "bfloat16")
    outputs = layer(X)
    assert ops.dtype(outputs) == "bfloat16"
    # bfloat16 keeps 8 significant bits: its rounding (2**-8 relative, on outputs of size ~3) dominates
    # the int8 error here; 0.1 is ~4 bfloat16 ulps of the largest output
    np.testing.assert_allclose(ops.to_numpy(ops.cast(outputs, "float32")), expected, atol=0.1)


def test_quantize_errors_leave_the_layer_unchanged(backend):
    layer = _dense()
    weights = layer.get_weights()
    with pytest.raises(ValueError, match="invalid quantization mode 'int3'"):
        layer.quantize("int3")
    with pytest.raises(NotImplementedError, match="mode 'float8' is not implemented"):
        layer.quantize("float8")
    with pytest.raises(ValueError, match="give a mode"):
        layer.quantize()
    assert layer.dtype is None and all(np.array_equal(a, b) for a, b in zip(weights, layer.get_weights()))
    layer.quantize("int8")
    with pytest.raises(ValueError, match="already quantized with dtype_policy='int8_from_float32'"):
        layer.quantize("int8")
    with pytest.raises(ValueError, match="isn't built yet"):
        layers.Dense(2, name="unbuilt").quantize("int8")
    with pytest.raises(NotImplementedError, match=r"'lstm_q' \(LSTM\) does not support quantize"):
        layers.LSTM(2, name="lstm_q").quantize("int8")
    with pytest.raises(NotImplementedError, match=r"\(Conv2D\) does not support quantize"):
        layers.Conv2D(2, 3).quantize("int8")
    with pytest.raises(ValueError, match="float16"):
        dtype_policies.get("int8_from_mixed_float16")


def test_policies_and_quantizers():
    policy = dtype_policies.get({"module": "keras", "class_name": "QuantizedDTypePolicy",
                                 "config": {"mode": "int8", "source_name": "mixed_bfloat16"}})
    assert (policy.name, policy.compute_dtype, policy.variable_dtype) == ("int8_from_mixed_bfloat16", "bfloat16",
                                                                        "float32")
    assert dtype_policies.serialize(policy)["config"] == {"mode": "int8", "source_name": "mixed_bfloat16"}
    assert policy != dtype_policies.DTypePolicy("mixed_bfloat16")
    policy_map = dtype_policies.DTypePolicyMap("float32", {"enc/.*": "int8_from_float32"})
    assert policy_map["enc/dense"].quantization_mode == "int8" and policy_map["dec"].name == "float32"
    assert dtype_policies.get({"class_name": "DTypePolicyMap", "config": policy_map.get_config()}) == policy_map
    values = np.array([[0.5, -1.0, 0.25]], "float32")
    q, scale = quantizers.abs_max_quantize(values, axis=-1, to_numpy=True)
    kq, kscale = keras.quantizers.abs_max_quantize(values, axis=-1, to_numpy=True)
    assert np.array_equal(ops.to_numpy(q), keras.ops.convert_to_numpy(kq))
    assert np.allclose(ops.to_numpy(scale), keras.ops.convert_to_numpy(kscale))
    with pytest.raises(ValueError, match="value_range within"):
        quantizers.AbsMaxQuantizer(value_range=(-300, 300))


def test_subclasses_are_refused_unless_type_check_is_off_and_abstract_parts_name_themselves(backend):
    """As Keras: a Dense subclass is not quantized (its call may not read the quantized weights) unless
    ``type_check=False``; the base config and quantizer say what to use instead."""
    class Scaled(layers.Dense):
        pass

    layer = Scaled(5, name="scaled")
    layer.build((None, 12))
    weights = layer.get_weights()
    with pytest.raises(NotImplementedError, match=r"subclasses of Dense are not quantized .*type_check=False"):
        layer.quantize("int8")
    assert layer.dtype is None and all(np.array_equal(a, b) for a, b in zip(weights, layer.get_weights()))
    layer.quantize("int8", type_check=False)
    assert layer.quantization_mode == "int8"
    with pytest.raises(NotImplementedError, match="QuantizationConfig is a base class: use Int8QuantizationConfig"):
        getattr(quantizers.QuantizationConfig(), "mode")  # noqa: B009 - the property raises
    with pytest.raises(NotImplementedError, match="Quantizer does not implement get_config"):
        quantizers.Quantizer().get_config()
    from ember.layers.core.dense_adaptation import QuantizeLoRAMixin

    with pytest.raises(NotImplementedError, match=r"Scaled must define _forward\(params, inputs, training\)"):
        QuantizeLoRAMixin._forward(layer, {}, None, False)  # the mixin's hook a layer class must define
