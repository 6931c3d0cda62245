"""Fused normalizations: ``ops.nn.layer_norm``, ``ops.nn.fused_batch_norm`` and the layers that use them.

References (independent of the code under test): the normalization and its gradient written out
here in NumPy float64 from the equations (``y = (x - mean) / sqrt(var + eps) * gamma + beta``;
``dx = inv / n * (n * dxhat - sum(dxhat) - xhat * sum(dxhat * xhat))``), and central finite
differences of the float64 composite.

The fused kernels (torch's ``F.layer_norm`` and ``torch.native_batch_norm``, MLX's
``mx.fast.layer_norm``) are checked against the reference and against the composites
(``ember.ops.extra.normalization``, the NumPy path) in values and gradients, and spied on so a silent
fallback to the composite would fail the test.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.ops.extra.normalization import fused_batch_norm as composite_batch_norm
from ember.ops.extra.normalization import layer_norm as composite_layer_norm
from tests.tolerances import FLOAT32_PAIR, FLOAT64

EPSILON = 1e-3


def norm_reference(x, gamma, beta, stat_axes, param_axes, weights, epsilon=EPSILON):
    """``(y, mean, var, dx, dgamma, dbeta)`` of ``sum(y * weights)``, float64, from the equations.

    ``stat_axes``: the axes the statistics reduce over; ``param_axes``: the axes gamma/beta span.
    """
    n = np.prod([x.shape[a] for a in stat_axes])
    full = tuple(x.shape[a] if a in param_axes else 1 for a in range(x.ndim))
    g = np.ones(full) if gamma is None else gamma.reshape(full)
    b = np.zeros(full) if beta is None else beta.reshape(full)
    mean = x.mean(axis=stat_axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=stat_axes, keepdims=True)
    inv = 1.0 / np.sqrt(var + epsilon)
    xhat = (x - mean) * inv
    y = xhat * g + b
    dxhat = weights * g
    dx = inv / n * (n * dxhat - dxhat.sum(axis=stat_axes, keepdims=True)
                    - xhat * (dxhat * xhat).sum(axis=stat_axes, keepdims=True))
    other = tuple(a for a in range(x.ndim) if a not in param_axes)
    param_shape = tuple(x.shape[a] for a in sorted(param_axes))
    dgamma = (weights * xhat).sum(axis=other).reshape(param_shape)
    dbeta = weights.sum(axis=other).reshape(param_shape)
    return y, mean.reshape(-1), var.reshape(-1), dx, dgamma, dbeta


def _operands(shape, param_shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape) * 2.0 + 0.5
    gamma, beta = rng.normal(size=param_shape) + 1.0, rng.normal(size=param_shape)
    weights = np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape)
    return x, gamma, beta, weights


def _value_and_grads(function, x, gamma, beta, weights, **kwargs):
    """The output (first output for a tuple) and the gradients of ``sum(out * weights)``."""
    def first(*args):
        out = function(*args, **kwargs)
        return out[0] if isinstance(out, tuple) else out

    def loss(x, gamma, beta):
        return ops.sum(ops.multiply(first(x, gamma, beta), weights))

    _, grads = ember.value_and_grad(loss, argnums=(0, 1, 2))(x, gamma, beta)
    return ops.to_numpy(first(x, gamma, beta)).astype(np.float64), [ops.to_numpy(g).astype(np.float64) for g in grads]


def _dtypes(backend):
    return ["float64"] + (["float32"] if backend != "numpy" else [])


LAYER_NORM_CASES = {  # shape, axis
    "last": ((3, 4, 5), -1),
    "trailing pair": ((2, 3, 4, 5), (2, 3)),
    "middle": ((3, 4, 5), 1),
    "split": ((2, 3, 4, 5), (1, 3)),
}


@pytest.mark.parametrize("case", list(LAYER_NORM_CASES))
def test_layer_norm_matches_reference_and_composite(backend, case):
    shape, axis = LAYER_NORM_CASES[case]
    axes = tuple(sorted(a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)))
    x, gamma, beta, weights = _operands(shape, tuple(shape[a] for a in axes))
    y_ref, _, _, *grads_ref = norm_reference(x, gamma, beta, axes, axes, weights)
    for dtype in _dtypes(backend):
        args = [ops.convert_to_tensor(a, dtype=dtype) for a in (x, gamma, beta, weights)]
        fused, fused_grads = _value_and_grads(ops.nn.layer_norm, *args, axis=axis, epsilon=EPSILON)
        composite, composite_grads = _value_and_grads(composite_layer_norm, *args, axis=axis, epsilon=EPSILON)
        tolerance = FLOAT64 if dtype == "float64" else FLOAT32_PAIR
        np.testing.assert_allclose(fused, y_ref, **tolerance)
        np.testing.assert_allclose(fused, composite, **tolerance)
        for got, other, expected in zip(fused_grads, composite_grads, grads_ref):
            np.testing.assert_allclose(got, expected, **tolerance)
            np.testing.assert_allclose(got, other, **tolerance)


def test_layer_norm_without_params(backend):
    x, _, _, _ = _operands((4, 6), (6,))
    y_ref = norm_reference(x, None, None, (1,), (1,), np.zeros_like(x))[0]
    np.testing.assert_allclose(ops.to_numpy(ops.nn.layer_norm(ops.convert_to_tensor(x, dtype="float64"))),
                               y_ref, **FLOAT64)


BATCH_NORM_CASES = {  # shape, feature axis
    "dense": ((6, 4), -1),
    "channels last": ((3, 4, 5, 6), -1),
    "channels first": ((3, 4, 5, 2), 1),
    "sequence": ((3, 5, 4), 1),
    "one value per feature": ((1, 4), -1),  # torch: var_mean (no unbiased variance for the kernel)
}


@pytest.mark.parametrize("case", list(BATCH_NORM_CASES))
def test_fused_batch_norm_updates_the_moving_averages_as_keras(backend, case):
    """With the moving averages given, the op returns ``m * moving + (1 - m) * batch`` (the biased variance,
    as Keras) in the moving averages' dtype; torch's kernel updates them itself (its unbiased term
    corrected), the composite computes them."""
    shape, axis = BATCH_NORM_CASES[case]
    feature = axis % len(shape)
    stat_axes = tuple(a for a in range(len(shape)) if a != feature)
    x, gamma, beta, weights = _operands(shape, (shape[feature],), seed=2)
    old_mean, old_var = np.linspace(-1.0, 1.0, shape[feature]), np.linspace(0.5, 2.0, shape[feature])
    y_ref, mean_ref, var_ref, *_ = norm_reference(x, gamma, beta, stat_axes, (feature,), weights)
    momentum = 0.9
    for dtype in _dtypes(backend):
        tolerance = FLOAT64 if dtype == "float64" else FLOAT32_PAIR
        args = [ops.convert_to_tensor(a, dtype=dtype) for a in (x, gamma, beta)]
        moving = [ops.convert_to_tensor(a, dtype=dtype) for a in (old_mean, old_var)]
        y, moving_mean, moving_var = ops.nn.fused_batch_norm(
            *args, axis=axis, epsilon=EPSILON, moving_mean=moving[0], moving_variance=moving[1], momentum=momentum)
        assert ops.dtype(moving_mean) == ops.dtype(moving_var) == dtype
        np.testing.assert_allclose(ops.to_numpy(y).astype(np.float64), y_ref, **tolerance)
        np.testing.assert_allclose(ops.to_numpy(moving_mean), momentum * old_mean + (1 - momentum) * mean_ref,
                                   **tolerance)
        np.testing.assert_allclose(ops.to_numpy(moving_var), momentum * old_var + (1 - momentum) * var_ref,
                                   **tolerance)


def test_fused_batch_norm_moving_averages_are_checked(backend):
    x = ops.ones((4, 3))
    with pytest.raises(ValueError, match="moving_mean and moving_variance go together, received only moving_mean"):
        ops.nn.fused_batch_norm(x, moving_mean=ops.zeros((3,)))
    with pytest.raises(ValueError, match=r"momentum must be a float in \[0, 1\], received 1.5"):
        ops.nn.fused_batch_norm(x, moving_mean=ops.zeros((3,)), moving_variance=ops.ones((3,)), momentum=1.5)
    with pytest.raises(ValueError, match=r"moving_variance must have shape \(3,\).*received shape \(2,\)"):
        ops.nn.fused_batch_norm(x, moving_mean=ops.zeros((3,)), moving_variance=ops.ones((2,)))


@pytest.mark.parametrize("case", list(BATCH_NORM_CASES))
def test_fused_batch_norm_matches_reference_and_composite(backend, case):
    shape, axis = BATCH_NORM_CASES[case]
    feature = axis % len(shape)
    stat_axes = tuple(a for a in range(len(shape)) if a != feature)
    x, gamma, beta, weights = _operands(shape, (shape[feature],), seed=1)
    y_ref, mean_ref, var_ref, *grads_ref = norm_reference(x, gamma, beta, stat_axes, (feature,), weights)
    for dtype in _dtypes(backend):
        args = [ops.convert_to_tensor(a, dtype=dtype) for a in (x, gamma, beta, weights)]
        tolerance = FLOAT64 if dtype == "float64" else FLOAT32_PAIR
        y, mean, var = ops.nn.fused_batch_norm(*args[:3], axis=axis, epsilon=EPSILON)
        for got, expected in ((y, y_ref), (mean, mean_ref), (var, var_ref)):
            assert ops.dtype(got) == dtype
            np.testing.assert_allclose(ops.to_numpy(got).astype(np.float64), expected, **tolerance)
        fused, fused_grads = _value_and_grads(ops.nn.fused_batch_norm, *args, axis=axis, epsilon=EPSILON)
        composite, composite_grads = _value_and_grads(composite_batch_norm, *args, axis=axis, epsilon=EPSILON)
        np.testing.assert_allclose(fused, composite, **tolerance)
        for got, other, expected in zip(fused_grads, composite_grads, grads_ref):
            np.testing.assert_allclose(got, expected, **tolerance)
            np.testing.assert_allclose(got, other, **tolerance)


def test_reference_gradient_matches_finite_differences():
    """The hand-derived gradient above against central differences of the float64 composite."""
    x, gamma, beta, weights = _operands((3, 4), (4,), seed=2)
    _, _, _, dx, _, _ = norm_reference(x, gamma, beta, (0,), (1,), weights)
    step = 1e-6
    numeric = np.zeros_like(x)
    with ember.using_backend("numpy"):
        for index in np.ndindex(x.shape):
            plus, minus = x.copy(), x.copy()
            plus[index] += step
            minus[index] -= step
            f_plus, f_minus = (float(np.sum(ops.to_numpy(composite_batch_norm(a, gamma, beta, axis=-1,
                                                                           epsilon=EPSILON)[0]) * weights))
                               for a in (plus, minus))
            numeric[index] = (f_plus - f_minus) / (2 * step)
    # central difference: truncation O(step**2 * f''') ~ 1e-12, rounding ~ 1e-16 * |f| / step ~ 1e-10
    np.testing.assert_allclose(numeric, dx, rtol=1e-6, atol=1e-8)


_KERNELS = {"torch": [("torch.nn.functional", "layer_norm"), ("torch", "native_batch_norm")],
            "mlx": [("mlx.core.fast", "layer_norm")]}


def _spy(monkeypatch, backend):
    """Names of the backend's fused kernels, appended on each call (None on NumPy, which has none)."""
    if backend not in _KERNELS:
        return None
    calls: list[str] = []
    for module_name, name in _KERNELS[backend]:
        module = pytest.importorskip(module_name)
        original = getattr(module, name)

        def spy(*args, _original=original, _name=name, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    return calls


def test_fused_kernels_are_called_by_the_layers(backend, monkeypatch):
    calls = _spy(monkeypatch, backend)
    x = ops.convert_to_tensor(np.random.default_rng(3).normal(size=(4, 3, 6)), dtype="float32")
    ln, bn = layers.LayerNormalization(), layers.BatchNormalization()
    ln_state, bn_state = ln.build((None, 3, 6)), bn.build((None, 3, 6))
    ln.apply(ln_state, x)
    layers.LayerNormalization(axis=(1, 2)).apply(layers.LayerNormalization(axis=(1, 2)).build((None, 3, 6)), x)
    bn.apply(bn_state, x, training=True)
    if calls is None:
        return
    expected = ["layer_norm", "layer_norm"] + (["native_batch_norm"] if backend == "torch" else [])
    assert calls == expected
    # rms_scaling, a masked batch norm and inference: no fused kernel.
    rms = layers.LayerNormalization(rms_scaling=True)
    rms.apply(rms.build((None, 3, 6)), x)
    bn.apply(bn_state, x, training=True, mask=ops.convert_to_tensor(np.ones((4, 3), bool)))
    bn.apply(bn_state, x)
    assert calls == expected


def test_batch_normalization_layer_training_step(backend):
    """The layer's outputs, gradients and Keras-momentum moving statistics on the fused path."""
    x, gamma, beta, weights = _operands((4, 3, 3, 5), (5,), seed=4)
    y_ref, mean_ref, var_ref, dx_ref, dgamma_ref, dbeta_ref = norm_reference(x, gamma, beta, (0, 1, 2), (3,), weights)
    bn = layers.BatchNormalization(momentum=0.9, dtype="float64")
    state = bn.build((None, 3, 3, 5))
    state["params"] = {"gamma": ops.convert_to_tensor(gamma), "beta": ops.convert_to_tensor(beta)}
    xs, w = ops.convert_to_tensor(x), ops.convert_to_tensor(weights)

    def loss(params, inputs):
        y, new_state = bn.apply({"params": params, "buffers": state["buffers"]}, inputs, training=True)
        return ops.sum(ops.multiply(y, w)), (y, new_state)

    (_, (y, new_state)), (grads, dx) = ember.value_and_grad(loss, argnums=(0, 1), has_aux=True)(state["params"], xs)
    np.testing.assert_allclose(ops.to_numpy(y), y_ref, **FLOAT64)
    for got, expected in ((dx, dx_ref), (grads["gamma"], dgamma_ref), (grads["beta"], dbeta_ref)):
        np.testing.assert_allclose(ops.to_numpy(got), expected, **FLOAT64)
    buffers = new_state["buffers"]
    np.testing.assert_allclose(ops.to_numpy(buffers["moving_mean"]), 0.1 * mean_ref, **FLOAT64)
    np.testing.assert_allclose(ops.to_numpy(buffers["moving_variance"]), 0.9 + 0.1 * var_ref, **FLOAT64)


def test_bad_arguments(backend):
    x = ops.ones((2, 3, 4))
    with pytest.raises(ValueError, match=r"nn.layer_norm: gamma must have shape \(3, 4\).*received shape \(4,\)"):
        ops.nn.layer_norm(x, ops.ones((4,)), axis=(1, 2))
    with pytest.raises(ValueError, match="nn.layer_norm: axis 3 is out of range for x of rank 3"):
        ops.nn.layer_norm(x, axis=3)
    with pytest.raises(ValueError, match="distinct axes"):
        ops.nn.layer_norm(x, axis=(1, -2))
    with pytest.raises(TypeError, match="nn.layer_norm: x must have a floating dtype.*received int32"):
        ops.nn.layer_norm(ops.ones((2, 3), dtype="int32"))
    with pytest.raises(ValueError, match=r"nn.fused_batch_norm: beta must have shape \(4,\).*received shape \(3,\)"):
        ops.nn.fused_batch_norm(x, beta=ops.ones((3,)))
    with pytest.raises(ValueError, match="nn.fused_batch_norm: axis must be one int"):
        ops.nn.fused_batch_norm(x, axis=(1, 2))
    with pytest.raises(ValueError, match="nn.fused_batch_norm: epsilon must be a number >= 0"):
        ops.nn.fused_batch_norm(x, epsilon=-1.0)


def test_gradient_tape_records_the_fused_ops(backend):
    """A recording ``GradientTape`` gives the reference gradients through both ops."""
    x, gamma, beta, weights = _operands((4, 6), (6,), seed=5)
    xs, gs, bs, w = (ops.convert_to_tensor(a) for a in (x, gamma, beta, weights))
    # ops looked up inside the tape (a tape re-binds ember.ops: a function taken before it began is not recorded)
    for function, stat_axes, param_axes in ((lambda *a: ops.nn.layer_norm(*a), (1,), (1,)),
                                            (lambda *a: ops.nn.fused_batch_norm(*a)[0], (0,), (1,))):
        with ember.GradientTape() as tape:
            tape.watch(xs)
            tape.watch(gs)
            tape.watch(bs)
            loss = ops.sum(ops.multiply(function(xs, gs, bs), w))
        grads = tape.gradient(loss, [xs, gs, bs])
        expected = norm_reference(x, gamma, beta, stat_axes, param_axes, weights)[3:]
        for got, want in zip(grads, expected):
            np.testing.assert_allclose(ops.to_numpy(got), want, **FLOAT64)
