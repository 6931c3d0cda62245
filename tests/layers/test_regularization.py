"""Regularization layers: SpatialDropout1D/2D/3D, GaussianNoise, GaussianDropout,
ActivityRegularization.

Each goes through :func:`run_layer_test` (inference is the identity on every backend;
training is reproducible for a fixed ``rng`` and changes the output). The noise itself
is checked per backend: spatial masks constant over the spatial axes and scaled by
``1 / (1 - rate)``, Gaussian noise with the right mean and standard deviation, and the
activity penalty against a NumPy formula, through ``collect_losses`` and a gradient tape.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.autodiff import value_and_grad
from ember.layers.loss_collection import collect_losses
from tests.helpers import assert_close
from tests.layers.layer_test import run_layer_test

RNG = np.random.default_rng(7)


# ------------------------------------------------------------------ SpatialDropout


@pytest.mark.parametrize("cls, shape, data_format", [
    (layers.SpatialDropout1D, (2, 5, 4), None),
    (layers.SpatialDropout1D, (2, 4, 5), "channels_first"),
    (layers.SpatialDropout2D, (2, 3, 3, 4), None),
    (layers.SpatialDropout2D, (2, 4, 3, 3), "channels_first"),
    (layers.SpatialDropout3D, (2, 2, 2, 2, 4), "channels_last"),
])
def test_spatial_dropout_layer_test(cls, shape, data_format):
    run_layer_test(lambda: cls(0.5, data_format=data_format, name="sd"), shape, reference=lambda p, x: x,
                   supports_masking=True, training_changes_output=True)


@pytest.mark.parametrize("cls, shape, data_format, spatial", [
    (layers.SpatialDropout1D, (8, 6, 16), "channels_last", (1,)),
    (layers.SpatialDropout1D, (8, 16, 6), "channels_first", (2,)),
    (layers.SpatialDropout2D, (8, 3, 4, 16), "channels_last", (1, 2)),
    (layers.SpatialDropout2D, (8, 16, 3, 4), "channels_first", (2, 3)),
    (layers.SpatialDropout3D, (4, 2, 3, 2, 16), "channels_last", (1, 2, 3)),
])
def test_spatial_dropout_drops_whole_channels(backend, cls, shape, data_format, spatial):
    rate = 0.4
    layer = cls(rate, data_format=data_format, name="sd")
    state = layer.build((None,) + shape[1:])
    x = RNG.uniform(0.5, 1.5, size=shape).astype(np.float32)
    y, new_state = layer.apply(state, ops.convert_to_tensor(x), training=True, rng=11)
    ratio = ops.to_numpy(y) / x
    kept = ratio[(slice(None),) + tuple(slice(0, 1) if a in spatial else slice(None) for a in range(1, len(shape)))]
    # One decision per (sample, channel), shared by every spatial position.
    np.testing.assert_allclose(ratio, np.broadcast_to(kept, shape), rtol=1e-6)
    dropped = kept == 0
    np.testing.assert_allclose(kept[~dropped], 1 / (1 - rate), rtol=1e-6)  # survivors scaled by 1 / (1 - rate)
    fraction = float(dropped.mean())
    assert 0.15 < fraction < 0.65, fraction  # 128 channel draws at rate 0.4
    assert new_state is state
    y_inf, _ = layer.apply(state, ops.convert_to_tensor(x), training=False)
    np.testing.assert_array_equal(ops.to_numpy(y_inf), x)
    again, _ = layer.apply(state, ops.convert_to_tensor(x), training=True, rng=11)
    np.testing.assert_array_equal(ops.to_numpy(again), ops.to_numpy(y))


def test_spatial_dropout_seed_and_rate_zero(backend):
    x = ops.ones((2, 3, 4))
    layer = layers.SpatialDropout1D(0.5, seed=3, name="sd")
    a, _ = layer.apply(layer.build((None, 3, 4)), x, training=True)
    b, _ = layer.apply(layer.build((None, 3, 4)), x, training=True)
    np.testing.assert_array_equal(ops.to_numpy(a), ops.to_numpy(b))
    zero = layers.SpatialDropout1D(0.0, name="sd0")
    out, _ = zero.apply(zero.build((None, 3, 4)), x, training=True, rng=0)
    np.testing.assert_array_equal(ops.to_numpy(out), 1.0)


def test_spatial_dropout_bad_input(backend):
    with pytest.raises(ValueError, match=r"sd_bad: rate must be a number in \[0, 1\), received 1.0"):
        layers.SpatialDropout2D(1.0, name="sd_bad")
    with pytest.raises(ValueError, match=r"sd_bad: data_format must be one of .* received 'NHWC'"):
        layers.SpatialDropout2D(0.1, data_format="NHWC", name="sd_bad")
    with pytest.raises(TypeError, match=r"sd_bad: seed must be an int seed or None"):
        layers.SpatialDropout1D(0.1, seed=1.5, name="sd_bad")
    layer = layers.SpatialDropout2D(0.5, name="sd_rank")
    with pytest.raises(ValueError, match=r"'sd_rank' expects inputs of rank 4, received shape \(None, 3, 4\)"):
        layer.compute_output_shape((None, 3, 4))
    with pytest.raises(ValueError, match=r"'sd_rank' expects inputs of rank 4, received shape \(2, 3\)"):
        layer.apply({"params": {}, "buffers": {}}, ops.ones((2, 3)), training=True)
    assert layers.SpatialDropout2D(0.5).data_format == "channels_last"


# ------------------------------------------------------------------ Gaussian noise / dropout


def test_gaussian_noise_layer_test():
    run_layer_test(lambda: layers.GaussianNoise(0.3, name="noise"), (2, 3, 4), reference=lambda p, x: x,
                   supports_masking=True, training_changes_output=True)


def test_gaussian_dropout_layer_test():
    run_layer_test(lambda: layers.GaussianDropout(0.3, name="gdrop"), (2, 3, 4), reference=lambda p, x: x,
                   supports_masking=True, training_changes_output=True)


def test_gaussian_noise_statistics(backend):
    stddev = 0.5
    layer = layers.GaussianNoise(stddev, name="noise")
    x = RNG.normal(size=(100, 50)).astype(np.float32)
    y, state = layer.apply(layer.build((None, 50)), ops.convert_to_tensor(x), training=True, rng=5)
    assert ops.dtype(y) == "float32"
    noise = ops.to_numpy(y).astype(np.float64) - x
    # 5000 normal draws: the sample mean has standard error sigma / sqrt(n), the sample std (normal data)
    # sigma / sqrt(2 (n - 1)) = 1% of sigma; 6.1 standard errors: a false failure below 1e-9 (two-sided).
    assert abs(noise.mean()) < 6.1 * stddev / np.sqrt(noise.size)
    assert noise.std() == pytest.approx(stddev, rel=6.1 / np.sqrt(2 * (noise.size - 1)))
    y_inf, _ = layer.apply(state, ops.convert_to_tensor(x))
    np.testing.assert_array_equal(ops.to_numpy(y_inf), x)


def test_gaussian_dropout_statistics(backend):
    rate = 0.3
    layer = layers.GaussianDropout(rate, name="gdrop")
    x = RNG.uniform(0.5, 2.0, size=(100, 50)).astype(np.float32)
    y, _ = layer.apply(layer.build((None, 50)), ops.convert_to_tensor(x), training=True, rng=5)
    factor = ops.to_numpy(y).astype(np.float64) / x
    stddev = np.sqrt(rate / (1 - rate))
    # the factor is 1 + normal(0, stddev): 6.1 standard errors of the mean and std, as above
    assert abs(factor.mean() - 1.0) < 6.1 * stddev / np.sqrt(factor.size)
    assert factor.std() == pytest.approx(stddev, rel=6.1 / np.sqrt(2 * (factor.size - 1)))
    y_inf, _ = layer.apply(layer.build((None, 50)), ops.convert_to_tensor(x), training=False)
    np.testing.assert_array_equal(ops.to_numpy(y_inf), x)


def test_gaussian_noise_gradient_is_identity(backend):
    layer = layers.GaussianNoise(1.0, name="noise")
    x = ops.convert_to_tensor(RNG.normal(size=(3, 4)).astype(np.float32))
    _, grad = value_and_grad(
        lambda v: ops.sum(layer.apply({"params": {}, "buffers": {}}, v, training=True, rng=1)[0]))(x)
    np.testing.assert_array_equal(ops.to_numpy(grad), 1.0)


def test_gaussian_layers_bad_input(backend):
    for layer in (layers.GaussianNoise(0.1, name="noise_int"), layers.GaussianDropout(0.1, name="noise_int")):
        with pytest.raises(TypeError,
                           match=r"'noise_int' adds Gaussian noise to floating-point inputs, received dtype int32"):
            layer.apply({"params": {}, "buffers": {}}, ops.ones((2, 2), dtype="int32"), training=True)
    with pytest.raises(ValueError, match=r"noise_bad: stddev must be a finite number >= 0, received -0.1"):
        layers.GaussianNoise(-0.1, name="noise_bad")
    with pytest.raises(ValueError, match=r"gd_bad: rate must be a number in \[0, 1\), received 1"):
        layers.GaussianDropout(1, name="gd_bad")
    with pytest.raises(TypeError, match=r"gd_bad: seed must be an int seed or None"):
        layers.GaussianDropout(0.1, seed="0", name="gd_bad")


# ------------------------------------------------------------------ ActivityRegularization


def test_activity_regularization_layer_test():
    run_layer_test(lambda: layers.ActivityRegularization(l1=0.1, l2=0.2, name="act"), (2, 3),
                   reference=lambda p, x: x, supports_masking=True)


def test_activity_regularization_adds_the_penalty(backend):
    layer = layers.ActivityRegularization(l1=0.1, l2=0.2, name="act")
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    with collect_losses() as losses:
        y, _ = layer.apply(layer.build((None, 3)), ops.convert_to_tensor(x))
    np.testing.assert_array_equal(ops.to_numpy(y), x)
    assert len(losses) == 1
    x64 = x.astype(np.float64)
    assert_close(losses[0], 0.1 * np.abs(x64).sum() + 0.2 * np.square(x64).sum())
    # Outside collect_losses the penalty goes nowhere (and nothing fails).
    layer.apply(layer.build((None, 3)), ops.convert_to_tensor(x))


def test_activity_regularization_in_a_model_under_a_tape(backend):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="dense"),
                              layers.ActivityRegularization(l2=0.5, name="act")])
    state = model.build(seed=0)
    x = RNG.normal(size=(4, 3)).astype(np.float32)

    def loss(params):
        with collect_losses() as losses:
            y, _ = model.apply({"params": params, "buffers": state["buffers"]}, ops.convert_to_tensor(x))
        return ops.add(ops.sum(y), losses[0])

    value, grads = value_and_grad(loss)(state["params"])
    kernel = ops.to_numpy(state["params"]["dense"]["kernel"]).astype(np.float64)
    bias = ops.to_numpy(state["params"]["dense"]["bias"]).astype(np.float64)
    h = x.astype(np.float64) @ kernel + bias
    assert_close(value, h.sum() + 0.5 * np.square(h).sum())
    # d/dh [sum(h) + 0.5 sum(h^2)] = 1 + h
    assert_close(grads["dense"]["kernel"], x.astype(np.float64).T @ (1 + h), rtol=1e-4, atol=1e-5)
    assert_close(grads["dense"]["bias"], (1 + h).sum(axis=0), rtol=1e-4, atol=1e-5)


def test_activity_regularization_bad_input():
    with pytest.raises(ValueError, match=r"act_bad: L1L2: l1 must be a non-negative finite float, received -1"):
        layers.ActivityRegularization(l1=-1, name="act_bad")


def test_public_names():
    for name in ["ActivityRegularization", "GaussianDropout", "GaussianNoise", "SpatialDropout1D", "SpatialDropout2D",
                 "SpatialDropout3D"]:
        assert name in layers.__all__ and hasattr(layers, name), name
