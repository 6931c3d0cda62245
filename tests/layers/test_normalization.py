"""Normalization layers: BatchNormalization, LayerNormalization, GroupNormalization,
RMSNormalization, UnitNormalization.

Every layer goes through :func:`run_layer_test` (all backends, against a NumPy float64
reference written here). Training-mode BatchNormalization, LayerNormalization and
GroupNormalization are also checked against PyTorch's own functionals
(``torch.nn.functional.batch_norm/layer_norm/group_norm``) in float64, with these
layout conversions:

* PyTorch normalizes channels-first tensors ``(N, C, *spatial)``; Ember's default is
  channels-last ``(N, *spatial, C)``, so inputs are moved with ``np.moveaxis(x, -1, 1)``
  before the call and outputs moved back.
* PyTorch's BatchNorm ``momentum`` weighs the *new* batch: Keras's ``momentum`` is
  ``1 - torch_momentum``. PyTorch's running variance uses the *unbiased* batch variance
  (``n / (n - 1)`` times Keras's biased one), so the running variance is compared with
  the NumPy formula and the torch value only after that correction.
* ``gamma``/``beta`` are torch's ``weight``/``bias``, same shapes.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import initializers, layers, ops
from ember.autodiff import value_and_grad
from tests.helpers import assert_close
from tests.layers.layer_test import run_layer_test
from tests.tolerances import FLOAT32

RNG = np.random.default_rng(42)


def _torch():
    return pytest.importorskip("torch")


def _native(x):
    return ops.convert_to_tensor(np.asarray(x, dtype=np.float32))


def _np(tree):
    return {k: ops.to_numpy(v).astype(np.float64) for k, v in tree.items()}


# ------------------------------------------------------------------ BatchNormalization


def _bn(**kwargs):
    """A BatchNormalization whose params and running statistics are all random (so the
    checks see every term), with positive running variances."""
    kwargs.setdefault("name", "bn")
    return layers.BatchNormalization(
        beta_initializer="random_normal",
        gamma_initializer=initializers.RandomUniform(0.5, 1.5),
        moving_mean_initializer=initializers.RandomNormal(0.0, 0.5),
        moving_variance_initializer=initializers.RandomUniform(0.5, 1.5),
        **kwargs,
    )


def _bn_state_numpy(factory, batchless_shape, seed=0):
    """The state ``run_layer_test`` builds (initializers are backend-independent)."""
    with ember.using_backend("numpy"):
        state = factory().build(batchless_shape, seed=seed)
        return {"params": _np(state["params"]), "buffers": _np(state["buffers"])}


def _bn_inference_reference(buffers, axis, epsilon):
    def reference(params, x):
        shape = [1] * x.ndim
        shape[axis] = -1
        mean = buffers["moving_mean"].reshape(shape)
        var = buffers["moving_variance"].reshape(shape)
        y = (x - mean) / np.sqrt(var + epsilon)
        if "gamma" in params:
            y = y * params["gamma"].reshape(shape)
        if "beta" in params:
            y = y + params["beta"].reshape(shape)
        return y

    return reference


@pytest.mark.parametrize("input_shape, axis, kwargs", [
    ((4, 3), -1, {}),
    ((2, 3, 4), -1, {"epsilon": 1e-2}),
    ((2, 3, 2, 2), 1, {"center": False}),
    ((2, 2, 3), 2, {"scale": False, "momentum": 0.5}),
])
def test_batch_normalization_layer_test(input_shape, axis, kwargs):
    factory = lambda: _bn(axis=axis, **kwargs)  # noqa: E731
    buffers = _bn_state_numpy(factory, (None,) + input_shape[1:])["buffers"]
    channels = input_shape[axis]
    expected = {"moving_mean": (channels,), "moving_variance": (channels,)}
    assert {k: v.shape for k, v in buffers.items()} == expected
    params = {name: (channels,) for name, on in (("beta", kwargs.get("center", True)),
                                                 ("gamma", kwargs.get("scale", True))) if on}
    run_layer_test(
        factory, input_shape,
        reference=_bn_inference_reference(buffers, axis % len(input_shape), kwargs.get("epsilon", 1e-3)),
        expected_param_shapes=params,
        supports_masking=True,
    )


def _bn_numpy_training(x, params, buffers, axis, momentum, epsilon):
    """Keras's training step in float64: batch statistics (biased variance) and the
    running-average update."""
    reduce = tuple(a for a in range(x.ndim) if a != axis)
    mean, var = x.mean(axis=reduce), x.var(axis=reduce)
    shape = [1] * x.ndim
    shape[axis] = -1
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + epsilon)
    y = y * params["gamma"].reshape(shape) + params["beta"].reshape(shape)
    new_mean = buffers["moving_mean"] * momentum + mean * (1 - momentum)
    new_var = buffers["moving_variance"] * momentum + var * (1 - momentum)
    return y, new_mean, new_var


@pytest.mark.parametrize("shape, axis", [((6, 5, 3), -1), ((4, 3, 2, 2), 1), ((8, 4), -1)])
def test_batch_normalization_training_matches_torch(backend, shape, axis):
    torch = _torch()
    momentum, epsilon = 0.9, 1e-3
    layer = _bn(axis=axis, momentum=momentum, epsilon=epsilon)
    state = layer.build((None,) + shape[1:], seed=3)
    x = RNG.normal(1.0, 2.0, size=shape).astype(np.float32)
    old_buffers = dict(state["buffers"])
    old_values = {k: ops.to_numpy(v).copy() for k, v in old_buffers.items()}
    old_params = {k: ops.to_numpy(v).copy() for k, v in state["params"].items()}

    y, new_state = layer.apply(state, _native(x), training=True)

    p64, b64 = _np(state["params"]), _np(old_buffers)
    cf = axis % len(shape) == 1
    x_t = torch.tensor(x.astype(np.float64) if cf else np.moveaxis(x.astype(np.float64), -1, 1))
    running_mean, running_var = torch.tensor(b64["moving_mean"]), torch.tensor(b64["moving_variance"])
    y_t = torch.nn.functional.batch_norm(
        x_t, running_mean, running_var, weight=torch.tensor(p64["gamma"]), bias=torch.tensor(p64["beta"]),
        training=True, momentum=1 - momentum, eps=epsilon).numpy()
    assert_close(y, y_t if cf else np.moveaxis(y_t, 1, -1))
    assert_close(new_state["buffers"]["moving_mean"], running_mean.numpy())

    y_np, mean_np, var_np = _bn_numpy_training(x.astype(np.float64), p64, b64, axis % len(shape), momentum, epsilon)
    assert_close(y, y_np)
    assert_close(new_state["buffers"]["moving_mean"], mean_np)
    assert_close(new_state["buffers"]["moving_variance"], var_np)
    # torch's running variance is the same average of the unbiased batch variance.
    n = x.size // shape[axis]
    kept = momentum * b64["moving_variance"]  # the old average's share of the new one
    torch_biased = (running_var.numpy() - kept) * (n - 1) / n + kept
    np.testing.assert_allclose(ops.to_numpy(new_state["buffers"]["moving_variance"]), torch_biased, **FLOAT32)

    # Nothing was changed in place: the old state dict and its arrays keep their values.
    assert state["buffers"] is not new_state["buffers"]
    for key, array in old_buffers.items():
        assert state["buffers"][key] is array
        np.testing.assert_array_equal(ops.to_numpy(array), old_values[key])
    for key, array in state["params"].items():
        np.testing.assert_array_equal(ops.to_numpy(array), old_params[key])
        assert new_state["params"][key] is array


def test_batch_normalization_inference_matches_torch(backend):
    torch = _torch()
    layer = _bn(epsilon=1e-2)
    state = layer.build((None, 4, 3), seed=1)
    x = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    y, new_state = layer.apply(state, _native(x), training=False)
    p64, b64 = _np(state["params"]), _np(state["buffers"])
    y_t = torch.nn.functional.batch_norm(
        torch.tensor(np.moveaxis(x.astype(np.float64), -1, 1)), torch.tensor(b64["moving_mean"]),
        torch.tensor(b64["moving_variance"]), weight=torch.tensor(p64["gamma"]), bias=torch.tensor(p64["beta"]),
        training=False, eps=1e-2).numpy()
    assert_close(y, np.moveaxis(y_t, 1, -1))
    assert new_state is state


def test_batch_normalization_training_gradients_match_torch(backend):
    torch = _torch()
    layer = _bn(momentum=0.8)
    state = layer.build((None, 3), seed=5)
    x = RNG.normal(size=(5, 3)).astype(np.float32)
    weights = RNG.normal(size=(5, 3))
    buffers = state["buffers"]

    def loss(params, inputs):
        y, new_state = layer.apply({"params": params, "buffers": buffers}, inputs, training=True)
        return ops.sum(ops.multiply(y, _native(weights))), new_state["buffers"]

    (value, new_buffers), (g_params, g_x) = value_and_grad(loss, argnums=(0, 1), has_aux=True)(
        state["params"], _native(x))

    p64 = _np(state["params"])
    x_t = torch.tensor(x.astype(np.float64), requires_grad=True)
    gamma_t = torch.tensor(p64["gamma"], requires_grad=True)
    beta_t = torch.tensor(p64["beta"], requires_grad=True)
    y_t = torch.nn.functional.batch_norm(x_t, None, None, weight=gamma_t, bias=beta_t, training=True, eps=1e-3)
    loss_t = (y_t * torch.tensor(weights)).sum()
    loss_t.backward()
    assert_close(value, loss_t.item(), rtol=1e-5, atol=1e-5)
    # float32 sums of products compared with float64 autograd: 1e-4 as in run_layer_test.
    assert_close(g_params["gamma"], gamma_t.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert_close(g_params["beta"], beta_t.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert_close(g_x, x_t.grad.numpy(), rtol=1e-4, atol=1e-5)
    # The buffers come back as plain values (cut from the gradient), equal to the update.
    mean = x.astype(np.float64).mean(axis=0)
    assert_close(new_buffers["moving_mean"], 0.8 * _np(buffers)["moving_mean"] + 0.2 * mean)


def test_frozen_batch_normalization_runs_in_inference_mode(backend):
    trainable = _bn(momentum=0.5)
    frozen = _bn(momentum=0.5, trainable=False)
    state = trainable.build((None, 3), seed=2)
    x = _native(RNG.normal(size=(4, 3)))
    inference, _ = trainable.apply(state, x, training=False)
    y, new_state = frozen.apply(state, x, training=True)
    np.testing.assert_array_equal(ops.to_numpy(y), ops.to_numpy(inference))
    assert new_state is state  # running statistics not updated
    trained, _ = trainable.apply(state, x, training=True)
    assert not np.allclose(ops.to_numpy(trained), ops.to_numpy(inference))
    # A frozen layer reports no penalties/constraints (its params are not updated).
    reg = _bn(gamma_regularizer="l2", gamma_constraint="non_neg", trainable=False)
    assert reg.regularization_losses(state["params"]) == [] and reg.constraints() == {}


def test_batch_normalization_masked_moments(backend):
    layer = _bn(momentum=0.0)
    state = layer.build((None, 4, 2), seed=0)
    x = RNG.normal(size=(3, 4, 2))
    mask = RNG.random(size=(3, 4)) < 0.6
    mask[0, 0] = True
    y, new_state = layer.apply(state, _native(x), training=True, mask=ops.convert_to_tensor(mask))
    selected = x[mask]  # (count, channels): the positions the mask keeps
    mean, var = selected.mean(axis=0), selected.var(axis=0)
    p = _np(state["params"])
    assert_close(new_state["buffers"]["moving_mean"], mean, rtol=1e-5, atol=1e-5)
    assert_close(new_state["buffers"]["moving_variance"], var, rtol=1e-5, atol=1e-5)
    assert_close(y, (x - mean) / np.sqrt(var + 1e-3) * p["gamma"] + p["beta"], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"'bn'.*mask must have the inputs' shape without the last axis"):
        layer.apply(state, _native(x), training=True, mask=ops.ones((3, 2)))
    channels_first = _bn(axis=1)
    with pytest.raises(ValueError, match=r"'bn': a mask .* needs the features on the last axis, but axis=1"):
        channels_first.apply(channels_first.build((None, 4, 2)), _native(x), training=True,
                             mask=ops.convert_to_tensor(mask))


def test_batch_normalization_half_precision(backend):
    layer = _bn()
    state = layer.build((None, 3), seed=0)
    x = RNG.normal(size=(6, 3))
    y16, new_state = layer.apply(state, ops.convert_to_tensor(x.astype(np.float16)), training=True)
    assert ops.dtype(y16) == "float16"
    assert ops.dtype(new_state["buffers"]["moving_mean"]) == "float32"
    y32, _ = layer.apply(state, _native(x.astype(np.float16).astype(np.float32)), training=True)
    # float16 output rounding: ~1e-3 relative.
    np.testing.assert_allclose(ops.to_numpy(y16).astype(np.float64), ops.to_numpy(y32), rtol=2e-3, atol=2e-3)


def test_batch_normalization_in_a_model_returns_new_buffers(backend):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(4, name="dense"), layers.BatchNormalization(name="bn")])
    state = model.build(seed=0)
    x = RNG.normal(size=(5, 3)).astype(np.float32)
    before = {k: ops.to_numpy(v).copy() for k, v in state["buffers"]["bn"].items()}
    _, new_state = model.apply(state, _native(x), training=True)
    kernel, bias = (ops.to_numpy(state["params"]["dense"][k]).astype(np.float64) for k in ("kernel", "bias"))
    h = x.astype(np.float64) @ kernel + bias
    assert_close(new_state["buffers"]["bn"]["moving_mean"], 0.01 * h.mean(axis=0))  # 0.99 * 0 + 0.01 * mean
    assert_close(new_state["buffers"]["bn"]["moving_variance"], 0.99 + 0.01 * h.var(axis=0))
    for key, value in before.items():
        np.testing.assert_array_equal(ops.to_numpy(state["buffers"]["bn"][key]), value)
    assert model.state is state
    _, same = model.apply(state, _native(x), training=False)
    np.testing.assert_array_equal(ops.to_numpy(same["buffers"]["bn"]["moving_mean"]), before["moving_mean"])


def test_batch_normalization_bad_input(backend):
    with pytest.raises(ValueError, match=r"bn_bad: momentum must be a number in \[0.0, 1.0\], received 1.5"):
        layers.BatchNormalization(momentum=1.5, name="bn_bad")
    with pytest.raises(ValueError, match=r"bn_bad: epsilon must be a number in \(0.0, inf\)"):
        layers.BatchNormalization(epsilon=0.0, name="bn_bad")
    with pytest.raises(TypeError, match=r"bn_bad: axis must be an int, received \[1, 2\]"):
        layers.BatchNormalization(axis=[1, 2], name="bn_bad")
    with pytest.raises(TypeError, match=r"bn_bad: center must be a bool"):
        layers.BatchNormalization(center=1, name="bn_bad")
    with pytest.raises(ValueError, match=r"synchronized=True .* not supported"):
        layers.BatchNormalization(synchronized=True, name="bn_bad")
    with pytest.raises(ValueError, match=r"bn_bad: gamma_regularizer: unknown regularizer 'l5'"):
        layers.BatchNormalization(gamma_regularizer="l5", name="bn_bad")
    layer = layers.BatchNormalization(axis=3, name="bn_axis")
    with pytest.raises(ValueError, match=r"'bn_axis': axis 3 is out of range for inputs of shape \(None, 4\)"):
        layer.build((None, 4))
    with pytest.raises(ValueError, match=r"'bn_axis'.*batch axis"):
        layers.BatchNormalization(axis=0, name="bn_axis").compute_output_shape((None, 4))
    with pytest.raises(ValueError, match=r"'bn_axis' needs known sizes on axis \(1,\)"):
        layers.BatchNormalization(axis=1, name="bn_axis").build((None, None, 3))
    layer = layers.BatchNormalization(name="bn_shape")
    state = layer.build((None, 3))
    with pytest.raises(ValueError,
                       match=r"'bn_shape' was built for 3 features on axis -1, received inputs of shape \(2, 4\)"):
        layer.apply(state, ops.ones((2, 4)), training=True)
    with pytest.raises(TypeError, match=r"'bn_shape' expects floating-point inputs, received dtype int32"):
        layer.apply(state, ops.ones((2, 3), dtype="int32"))
    with pytest.raises(ValueError, match=r"'bn_shape' expects inputs of rank >= 2"):
        layer.apply(state, ops.ones((3,)))


def test_batch_normalization_regularizers_and_constraints(backend):
    layer = _bn(beta_regularizer=ember.regularizers.L1(0.5), gamma_regularizer="l2",
                beta_constraint="non_neg", gamma_constraint=ember.constraints.MaxNorm(1.0))
    state = layer.build((None, 3), seed=0)
    p = _np(state["params"])
    values = [float(ops.to_numpy(v)) for v in layer.regularization_losses(state["params"])]
    # in declaration order (Keras's weight order: gamma, then beta)
    np.testing.assert_allclose(values, [0.01 * np.square(p["gamma"]).sum(), 0.5 * np.abs(p["beta"]).sum()], rtol=1e-5)
    assert layer.constraints() == {"beta": ember.constraints.NonNeg(), "gamma": ember.constraints.MaxNorm(1.0)}
    assert _bn(center=False, beta_constraint="non_neg").constraints() == {}
    rebuilt = layers.BatchNormalization.from_config(layer.get_config())
    assert rebuilt.constraints() == layer.constraints()


# ------------------------------------------------------------------ LayerNormalization


def _ln_reference(axes, epsilon, rms_scaling=False):
    def reference(params, x):
        axes_ = tuple(sorted(a % x.ndim for a in axes))
        shape = [x.shape[a] if a in axes_ else 1 for a in range(x.ndim)]
        if rms_scaling:
            return x / np.sqrt(x.var(axis=axes_, keepdims=True) + epsilon) * params["gamma"].reshape(shape)
        y = (x - x.mean(axis=axes_, keepdims=True)) / np.sqrt(x.var(axis=axes_, keepdims=True) + epsilon)
        if "gamma" in params:
            y = y * params["gamma"].reshape(shape)
        if "beta" in params:
            y = y + params["beta"].reshape(shape)
        return y

    return reference


@pytest.mark.parametrize("input_shape, axis, kwargs, param_shape", [
    ((3, 4), -1, {}, (4,)),
    ((2, 3, 4), (-2, -1), {"epsilon": 1e-5}, (3, 4)),
    ((2, 3, 4), 1, {"center": False}, (3,)),
    ((2, 3, 2, 2), [3, 1], {}, (3, 2)),
    ((2, 5), -1, {"rms_scaling": True}, (5,)),
])
def test_layer_normalization_layer_test(input_shape, axis, kwargs, param_shape):
    kwargs = dict(kwargs)
    epsilon = kwargs.pop("epsilon", 1e-3)
    has_gamma = True
    has_beta = kwargs.get("center", True) and not kwargs.get("rms_scaling", False)
    run_layer_test(
        lambda: layers.LayerNormalization(axis=axis, epsilon=epsilon, beta_initializer="random_normal",
                                          gamma_initializer="random_normal", name="ln", **kwargs),
        input_shape,
        reference=_ln_reference(axis if isinstance(axis, (list, tuple)) else (axis,), epsilon,
                                kwargs.get("rms_scaling", False)),
        expected_param_shapes={name: param_shape for name, on in (("beta", has_beta), ("gamma", has_gamma)) if on},
        supports_masking=True,
    )


@pytest.mark.parametrize("shape, axis", [((3, 4, 5), -1), ((2, 3, 4), (-2, -1))])
def test_layer_normalization_matches_torch(backend, shape, axis):
    torch = _torch()
    layer = layers.LayerNormalization(axis=axis, epsilon=1e-3, beta_initializer="random_normal",
                                      gamma_initializer="random_normal", name="ln")
    state = layer.build((None,) + shape[1:], seed=0)
    x = RNG.normal(2.0, 3.0, size=shape).astype(np.float32)
    y, _ = layer.apply(state, _native(x))
    p = _np(state["params"])
    normalized = tuple(shape[a] for a in (axis if isinstance(axis, tuple) else (axis,)))
    y_t = torch.nn.functional.layer_norm(torch.tensor(x.astype(np.float64)), normalized,
                                         weight=torch.tensor(p["gamma"]), bias=torch.tensor(p["beta"]), eps=1e-3)
    assert_close(y, y_t.numpy())


def test_layer_normalization_bad_input(backend):
    with pytest.raises(TypeError, match=r"ln_bad: axis must be an int or a non-empty list/tuple of ints, received 'x'"):
        layers.LayerNormalization(axis="x", name="ln_bad")
    with pytest.raises(ValueError, match=r"ln_bad: axis must not repeat"):
        layers.LayerNormalization(axis=[1, 1], name="ln_bad")
    layer = layers.LayerNormalization(axis=[1, -2], name="ln_same")
    with pytest.raises(ValueError, match=r"'ln_same': axis \(1, -2\) names the same axis twice"):
        layer.build((None, 3, 4))
    layer = layers.LayerNormalization(name="ln_shape")
    state = layer.build((None, 4))
    with pytest.raises(ValueError,
                       match=r"'ln_shape' was built for sizes \(4,\) on axis -1, received inputs of shape \(2, 5\)"):
        layer.apply(state, ops.ones((2, 5)))
    with pytest.raises(ValueError, match=r"'ln_shape' expects inputs of rank >= 2"):
        layer.compute_output_shape((None,))


# ------------------------------------------------------------------ GroupNormalization


def _gn_reference(groups, epsilon, axis=-1):
    """Group normalization in float64, channels-last after moving ``axis`` to the end."""
    def reference(params, x):
        xl = np.moveaxis(x, axis, -1)
        channels = xl.shape[-1]
        g = channels if groups == -1 else groups
        grouped = xl.reshape(xl.shape[:-1] + (g, channels // g))
        reduce = tuple(range(1, grouped.ndim - 2)) + (grouped.ndim - 1,)
        mean = grouped.mean(axis=reduce, keepdims=True)
        var = grouped.var(axis=reduce, keepdims=True)
        y = ((grouped - mean) / np.sqrt(var + epsilon)).reshape(xl.shape)
        if "gamma" in params:
            y = y * params["gamma"]
        if "beta" in params:
            y = y + params["beta"]
        return np.moveaxis(y, -1, axis)

    return reference


@pytest.mark.parametrize("input_shape, groups, axis, kwargs", [
    ((2, 3, 4), 2, -1, {}),
    ((2, 2, 2, 6), 3, -1, {"epsilon": 1e-5}),
    ((2, 4, 3), -1, -1, {"center": False}),
    ((2, 4, 3), 1, -1, {}),
    ((2, 4, 3, 2), 2, 1, {}),
])
def test_group_normalization_layer_test(input_shape, groups, axis, kwargs):
    kwargs = dict(kwargs)
    epsilon = kwargs.pop("epsilon", 1e-3)
    channels = input_shape[axis]
    run_layer_test(
        lambda: layers.GroupNormalization(groups=groups, axis=axis, epsilon=epsilon, beta_initializer="random_normal",
                                          gamma_initializer="random_normal", name="gn", **kwargs),
        input_shape,
        reference=_gn_reference(groups, epsilon, axis),
        expected_param_shapes={name: (channels,) for name, on in (("beta", kwargs.get("center", True)), ("gamma", True))
                               if on},
        supports_masking=True,
    )


@pytest.mark.parametrize("shape, groups", [((2, 5, 4, 6), 3), ((2, 7, 4), -1), ((3, 6), 2)])
def test_group_normalization_matches_torch(backend, shape, groups):
    torch = _torch()
    layer = layers.GroupNormalization(groups=groups, epsilon=1e-3, beta_initializer="random_normal",
                                      gamma_initializer="random_normal", name="gn")
    state = layer.build((None,) + shape[1:], seed=0)
    x = RNG.normal(1.0, 2.0, size=shape).astype(np.float32)
    y, _ = layer.apply(state, _native(x))
    p = _np(state["params"])
    channels = shape[-1]
    # channels-last -> torch's channels-first and back.
    y_t = torch.nn.functional.group_norm(
        torch.tensor(np.moveaxis(x.astype(np.float64), -1, 1)), channels if groups == -1 else groups,
        weight=torch.tensor(p["gamma"]), bias=torch.tensor(p["beta"]), eps=1e-3).numpy()
    assert_close(y, np.moveaxis(y_t, 1, -1))


def test_group_normalization_bad_input(backend):
    with pytest.raises(ValueError, match=r"gn_bad: groups must be a positive int or -1, received 0"):
        layers.GroupNormalization(groups=0, name="gn_bad")
    layer = layers.GroupNormalization(groups=4, name="gn_bad")
    with pytest.raises(ValueError, match=r"'gn_bad': groups=4 must divide the 6 channels on axis -1"):
        layer.build((None, 6))
    with pytest.raises(ValueError, match=r"'gn_bad': groups=4 must divide the 3 channels"):
        layer.compute_output_shape((None, 5, 3))
    state = layer.build((None, 8))
    with pytest.raises(ValueError, match=r"'gn_bad' was built for 8 channels, received inputs of shape \(1, 4\)"):
        layer.apply(state, ops.ones((1, 4)))


# ------------------------------------------------------------------ RMS / Unit normalization


@pytest.mark.parametrize("input_shape, axis, epsilon",
                         [((3, 4), -1, 1e-6), ((2, 3, 4), (1, 2), 1e-2), ((2, 3, 4), 1, 0.1)])
def test_rms_normalization_layer_test(input_shape, axis, epsilon):
    axes = tuple(sorted(a % len(input_shape) for a in (axis if isinstance(axis, tuple) else (axis,))))

    def reference(params, x):
        shape = [x.shape[a] if a in axes else 1 for a in range(x.ndim)]
        return x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + epsilon) * params["scale"].reshape(shape)

    run_layer_test(lambda: layers.RMSNormalization(axis=axis, epsilon=epsilon, name="rms"), input_shape,
                   reference=reference, random_init=False,
                   expected_param_shapes={"scale": tuple(input_shape[a] for a in axes)})


def test_rms_normalization_matches_torch_with_a_trained_scale(backend):
    torch = _torch()
    layer = layers.RMSNormalization(name="rms")
    state = layer.build((None, 5))
    scale = RNG.normal(size=(5,)).astype(np.float32)
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    y, _ = layer.apply({"params": {"scale": _native(scale)}, "buffers": {}}, _native(x))
    y_t = torch.nn.functional.rms_norm(torch.tensor(x.astype(np.float64)), (5,), torch.tensor(scale.astype(np.float64)),
                                       eps=1e-6)
    assert_close(y, y_t.numpy())
    np.testing.assert_array_equal(ops.to_numpy(state["params"]["scale"]), np.ones(5, dtype=np.float32))


@pytest.mark.parametrize("input_shape, axis", [((3, 4), -1), ((2, 3, 4), [1, 2]), ((2, 3, 4), 1)])
def test_unit_normalization_layer_test(input_shape, axis):
    axes = tuple(a % len(input_shape) for a in (axis if isinstance(axis, list) else [axis]))

    def reference(params, x):
        return x / np.sqrt(np.maximum(np.sum(x * x, axis=axes, keepdims=True), 1e-12))

    out = run_layer_test(lambda: layers.UnitNormalization(axis=axis, name="unit"), input_shape,
                         reference=reference, supports_masking=True)
    np.testing.assert_allclose(np.sqrt(np.sum(np.square(out["outputs"].astype(np.float64)), axis=axes)), 1.0, **FLOAT32)


def test_unit_normalization_zero_vector_and_bad_input(backend):
    layer = layers.UnitNormalization(name="unit_bad")
    y, _ = layer.apply(layer.build((None, 3)), ops.zeros((2, 3)))
    np.testing.assert_array_equal(ops.to_numpy(y), 0.0)
    with pytest.raises(ValueError, match=r"'unit_bad': axis -1 includes the batch axis 0"):
        layer.apply(layer.build((None, 3)), ops.ones((3,)))
    with pytest.raises(ValueError, match=r"'unit_bad' expects inputs of rank >= 2"):
        layer.compute_output_shape((None,))


def test_public_names():
    for name in ["BatchNormalization", "GroupNormalization", "LayerNormalization", "RMSNormalization",
                 "UnitNormalization"]:
        assert name in layers.__all__ and hasattr(layers, name), name
