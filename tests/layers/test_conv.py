"""Convolution layers: Conv1D/2D/3D, Conv1D/2D/3DTranspose, DepthwiseConv1D/2D, SeparableConv1D/2D.

Every layer goes through :func:`run_layer_test` (all backends, compared with each
other, with the NumPy float64 references of :mod:`tests.layers.conv_reference` and with
finite differences of them). A second set of checks uses torch.nn.functional as the
reference, with the weights converted from Keras's layout:

* convolution kernel ``(*k, in // groups, filters)`` -> torch ``(filters, in // groups, *k)``:
  ``permute(nd + 1, nd, 0, ..., nd - 1)``;
* transposed kernel ``(*k, filters, in)`` -> torch ``(in, filters, *k)``: the same permutation;
* TF "same" padding is asymmetric (the odd cell at the end), so it is applied with ``F.pad``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import ember
from ember import layers, ops, regularizers
from ember.layers.loss_collection import collect_losses
from ember.saving import register_serializable
from tests.helpers import assert_close
from tests.layers import conv_reference as ref
from tests.layers.layer_test import run_layer_test
from tests.tolerances import FLOAT32

# ------------------------------------------------------------------------ helpers


def _activation(name):
    return {None: lambda v: v, "tanh": np.tanh, "relu": lambda v: np.maximum(v, 0.0)}[name]


def _conv_reference(strides, padding, dilation, groups=1, activation=None, channels_first=False, bias=True):
    def reference(p, x):
        if channels_first:
            x = ref.to_last(x)
        y = ref.conv(x, p["kernel"], strides, padding, dilation, groups)
        if bias:
            y = y + p["bias"]
        y = _activation(activation)(y)
        return ref.to_first(y) if channels_first else y

    return reference


# -------------------------------------------------------------------------- Conv*D

CONV_CASES = [
    # (class, kwargs, input shape, strides, padding, dilation, groups)
    (layers.Conv1D, dict(filters=3, kernel_size=3), (2, 7, 2), (1,), "valid", (1,), 1),
    (layers.Conv1D, dict(filters=2, kernel_size=3, padding="causal", dilation_rate=2), (2, 7, 2), (1,), "causal",
     (2,), 1),
    (layers.Conv1D, dict(filters=4, kernel_size=2, strides=2, padding="same", groups=2), (2, 7, 4), (2,), "same",
     (1,), 2),
    (layers.Conv2D, dict(filters=3, kernel_size=3, padding="same", activation="tanh"), (2, 5, 5, 2), (1, 1), "same",
     (1, 1), 1),
    (layers.Conv2D, dict(filters=2, kernel_size=(3, 2), strides=2, padding="same"), (2, 6, 5, 3), (2, 2), "same",
     (1, 1), 1),
    (layers.Conv2D, dict(filters=6, kernel_size=2, dilation_rate=(2, 1), groups=3), (1, 5, 4, 3), (1, 1), "valid",
     (2, 1), 3),
    (layers.Conv3D, dict(filters=2, kernel_size=(2, 3, 2), strides=(1, 2, 1), padding="same"), (1, 3, 5, 3, 2),
     (1, 2, 1), "same", (1, 1, 1), 1),
    (layers.Conv3D, dict(filters=2, kernel_size=2, groups=2), (1, 3, 3, 3, 2), (1, 1, 1), "valid", (1, 1, 1), 2),
]


@pytest.mark.parametrize("cls, kwargs, shape, strides, padding, dilation, groups", CONV_CASES)
def test_conv(cls, kwargs, shape, strides, padding, dilation, groups):
    kwargs = dict(kwargs, bias_initializer="random_normal", name="conv")
    run_layer_test(
        lambda: cls(**kwargs),
        shape,
        reference=_conv_reference(strides, padding, dilation, groups, kwargs.get("activation")),
        expected_param_shapes={
            "kernel": tuple(np.broadcast_to(kwargs["kernel_size"], (cls.rank,))) + (shape[-1] // groups,
                                                                                     kwargs["filters"]),
            "bias": (kwargs["filters"],),
        },
    )


def test_conv2d_channels_first_no_bias():
    run_layer_test(
        lambda: layers.Conv2D(3, 3, strides=2, data_format="channels_first", use_bias=False, name="conv"),
        (2, 2, 6, 5),
        reference=_conv_reference((2, 2), "valid", (1, 1), channels_first=True, bias=False),
        expected_output_shape=(2, 3, 2, 2),
        expected_param_shapes={"kernel": (3, 3, 2, 3)},
    )


def test_conv1d_causal_channels_first():
    run_layer_test(
        lambda: layers.Conv1D(2, 3, padding="causal", data_format="channels_first", name="conv",
                              bias_initializer="ones"),
        (2, 3, 6),
        reference=_conv_reference((1,), "causal", (1,), channels_first=True),
        expected_output_shape=(2, 2, 6),
    )


def test_conv1d_causal_sees_only_the_past(backend):
    conv = layers.Conv1D(1, 3, padding="causal", dilation_rate=2, kernel_initializer="ones")
    state = conv.build((None, 8, 1), seed=0)
    x = np.zeros((1, 8, 1), np.float32)
    x[0, 4, 0] = 1.0
    y, _ = conv.apply(state, ops.convert_to_tensor(x))
    # An impulse at t=4 reaches t = 4, 6, 8 (dilation 2): never an earlier step.
    assert ops.to_numpy(y)[0, :, 0].tolist() == [0, 0, 0, 0, 1, 0, 1, 0]


# ------------------------------------------------------------------- Conv*DTranspose

TRANSPOSE_CASES = [
    # (class, kwargs, input shape)
    (layers.Conv1DTranspose, dict(filters=2, kernel_size=3, strides=2), (2, 4, 3)),
    (layers.Conv1DTranspose, dict(filters=2, kernel_size=3, strides=2, padding="same"), (2, 4, 3)),
    (layers.Conv1DTranspose, dict(filters=2, kernel_size=3, strides=2, padding="same", output_padding=0), (2, 4, 3)),
    (layers.Conv1DTranspose, dict(filters=2, kernel_size=2, strides=3), (2, 3, 2)),  # stride > kernel
    (layers.Conv2DTranspose, dict(filters=2, kernel_size=3, strides=2, padding="same"), (2, 3, 4, 2)),
    (layers.Conv2DTranspose, dict(filters=3, kernel_size=(2, 3), strides=2, output_padding=(1, 0)), (1, 3, 3, 2)),
    (layers.Conv2DTranspose, dict(filters=2, kernel_size=4, strides=2, padding="same", output_padding=1),
     (1, 3, 3, 2)),
    (layers.Conv2DTranspose, dict(filters=2, kernel_size=2, dilation_rate=2, padding="same"), (1, 4, 3, 2)),
    (layers.Conv3DTranspose, dict(filters=2, kernel_size=2, strides=(2, 1, 2), padding="same"), (1, 2, 3, 2, 2)),
]


@pytest.mark.parametrize("cls, kwargs, shape", TRANSPOSE_CASES)
def test_conv_transpose(cls, kwargs, shape):
    kwargs = dict(kwargs, bias_initializer="random_normal", name="deconv")
    nd = cls.rank

    def per_axis(value):
        return tuple(np.broadcast_to(value, (nd,)).tolist())

    strides, dilation = per_axis(kwargs.get("strides", 1)), per_axis(kwargs.get("dilation_rate", 1))
    extra = kwargs.get("output_padding")
    extra = None if extra is None else per_axis(extra)
    padding = kwargs.get("padding", "valid")
    run_layer_test(
        lambda: cls(**kwargs),
        shape,
        reference=lambda p, x: ref.conv_transpose(x, p["kernel"], strides, padding, extra, dilation) + p["bias"],
        expected_param_shapes={"kernel": per_axis(kwargs["kernel_size"]) + (kwargs["filters"], shape[-1]),
                               "bias": (kwargs["filters"],)},
    )


def test_conv2d_transpose_channels_first():
    def reference(p, x):
        y = ref.conv_transpose(ref.to_last(x), p["kernel"], (2, 2), "same", None, (1, 1))
        return ref.to_first(np.tanh(y))

    run_layer_test(
        lambda: layers.Conv2DTranspose(3, 3, strides=2, padding="same", data_format="channels_first",
                                       activation="tanh", use_bias=False, name="deconv"),
        (2, 2, 3, 4),
        reference=reference,
        expected_output_shape=(2, 3, 6, 8),
    )


def test_conv_transpose_is_the_adjoint_of_conv(backend):
    """<conv(y, K), x> == <y, conv_transpose(x, K)> for the same strides and padding."""
    rng = np.random.default_rng(0)
    conv = layers.Conv2D(3, 3, strides=2, padding="same", use_bias=False)
    deconv = layers.Conv2DTranspose(2, 3, strides=2, padding="same", use_bias=False)
    kernel = rng.normal(size=(3, 3, 2, 3)).astype(np.float32)  # conv: (k, k, in=2, out=3); deconv: (k, k, 2, 3)
    y = rng.normal(size=(1, 6, 6, 2)).astype(np.float32)
    x = rng.normal(size=(1, 3, 3, 3)).astype(np.float32)
    state = {"params": {"kernel": ops.convert_to_tensor(kernel)}, "buffers": {}}
    forward, _ = conv.apply(state, ops.convert_to_tensor(y))
    backward, _ = deconv.apply(state, ops.convert_to_tensor(x))
    np.testing.assert_allclose(np.sum(ops.to_numpy(forward).astype(np.float64) * x),
                               np.sum(y.astype(np.float64) * ops.to_numpy(backward)), rtol=1e-5,
                               atol=1e-4)  # float32 sums of ~100 terms of size ~1 that cancel


# ----------------------------------------------------------------- depthwise / separable


@pytest.mark.parametrize("cls, kwargs, shape", [
    (layers.DepthwiseConv2D, dict(kernel_size=3, depth_multiplier=2, strides=2, padding="same"), (2, 5, 4, 3)),
    (layers.DepthwiseConv2D, dict(kernel_size=(2, 3), dilation_rate=2), (1, 5, 6, 2)),
    (layers.DepthwiseConv1D, dict(kernel_size=3, depth_multiplier=3, padding="same"), (2, 5, 2)),
])
def test_depthwise_conv(cls, kwargs, shape):
    nd = cls.rank
    strides = (kwargs.get("strides", 1),) * nd
    dilation = (kwargs.get("dilation_rate", 1),) * nd
    padding = kwargs.get("padding", "valid")
    multiplier = kwargs.get("depth_multiplier", 1)
    run_layer_test(
        lambda: cls(**kwargs, bias_initializer="random_normal", name="depthwise"),
        shape,
        reference=lambda p, x: ref.depthwise_conv(x, p["kernel"], strides, padding, dilation) + p["bias"],
        expected_param_shapes={
            "kernel": tuple(np.broadcast_to(kwargs["kernel_size"], (nd,))) + (shape[-1], multiplier),
            "bias": (shape[-1] * multiplier,),
        },
    )


def test_depthwise_conv2d_channels_first():
    run_layer_test(
        lambda: layers.DepthwiseConv2D(2, depth_multiplier=2, data_format="channels_first", use_bias=False,
                                       name="depthwise"),
        (2, 3, 4, 4),
        reference=lambda p, x: ref.to_first(ref.depthwise_conv(ref.to_last(x), p["kernel"], (1, 1), "valid", (1, 1))),
        expected_output_shape=(2, 6, 3, 3),
    )


@pytest.mark.parametrize("cls, kwargs, shape, channels_first", [
    (layers.SeparableConv2D, dict(filters=4, kernel_size=3, depth_multiplier=2, padding="same", strides=2),
     (2, 5, 5, 2), False),
    (layers.SeparableConv2D, dict(filters=3, kernel_size=2, data_format="channels_first", activation="relu"),
     (2, 2, 4, 3), True),
    (layers.SeparableConv1D, dict(filters=3, kernel_size=3, dilation_rate=2), (2, 7, 2), False),
])
def test_separable_conv(cls, kwargs, shape, channels_first):
    nd = cls.rank
    strides = (kwargs.get("strides", 1),) * nd
    dilation = (kwargs.get("dilation_rate", 1),) * nd
    padding = kwargs.get("padding", "valid")
    multiplier = kwargs.get("depth_multiplier", 1)
    channels = shape[1] if channels_first else shape[-1]

    def reference(p, x):
        x = ref.to_last(x) if channels_first else x
        hidden = ref.depthwise_conv(x, p["depthwise_kernel"], strides, padding, dilation)
        pointwise = p["pointwise_kernel"].reshape(p["pointwise_kernel"].shape[-2:])  # (1, ..., 1, in, out) -> (in, out)
        y = _activation(kwargs.get("activation"))(hidden @ pointwise + p["bias"])
        return ref.to_first(y) if channels_first else y

    run_layer_test(
        lambda: cls(**kwargs, bias_initializer="random_normal", name="separable"),
        shape,
        reference=reference,
        expected_param_shapes={
            "depthwise_kernel": tuple(np.broadcast_to(kwargs["kernel_size"], (nd,))) + (channels, multiplier),
            "pointwise_kernel": (1,) * nd + (channels * multiplier, kwargs["filters"]),
            "bias": (kwargs["filters"],),
        },
    )


# ------------------------------------------------------ torch.nn.functional references


# Inputs above run_layer_test's finite-difference limit (600 elements): the gradients were
# checked against finite differences of the NumPy references above; here torch's outputs
# and the cross-backend gradient agreement are checked.


def _torch_conv_reference(nd, strides, padding, dilation, groups, transpose=False, output_padding=None):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional

    def reference(p, x):
        xt = torch.from_numpy(np.moveaxis(x, -1, 1).copy())  # channels_last -> channels_first
        w = torch.from_numpy(p["kernel"]).permute(nd + 1, nd, *range(nd))  # Keras layout -> torch layout
        b = torch.from_numpy(p["bias"])
        if transpose:
            # torch crops ``padding`` cells from both ends of the full result and re-adds
            # ``output_padding`` at the end; TF/Keras crop ``before`` (the forward conv's
            # TF padding) and keep Keras's output length. Equal when padding == before.
            n, k = x.shape[1], p["kernel"].shape[0]
            length = ref.conv_transpose_length(n, k, strides, padding, output_padding, 1)
            before = 0 if padding == "valid" else max((n - 1) * strides + k - length, 0) // 2
            extra = length - ((n - 1) * strides - 2 * before + k)
            assert 0 <= extra < strides, "a case torch's conv_transpose cannot express"
            fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d}[nd]
            y = fn(xt, w, b, stride=strides, padding=before, output_padding=extra)
        else:
            if padding == "same":
                pads = []
                for n, k, s, d in reversed(list(zip(x.shape[1:-1], p["kernel"].shape[:nd], strides, dilation))):
                    pads.extend(ref.tf_same_pads(n, (k - 1) * d + 1, s))  # F.pad: last axis first
                xt = F.pad(xt, pads)
            fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
            y = fn(xt, w, b, stride=strides, dilation=dilation, groups=groups)
        return np.moveaxis(y.numpy(), 1, -1)

    return reference


@pytest.mark.parametrize("cls, kwargs, shape", [
    (layers.Conv2D, dict(filters=4, kernel_size=3, strides=2, padding="same", groups=2), (2, 8, 9, 4)),
    (layers.Conv1D, dict(filters=3, kernel_size=3, dilation_rate=2, padding="same"), (4, 40, 4)),
    (layers.Conv3D, dict(filters=2, kernel_size=2, strides=2), (2, 6, 6, 6, 2)),
])
def test_conv_matches_torch_functional(cls, kwargs, shape):
    nd = cls.rank
    reference = _torch_conv_reference(nd, (kwargs.get("strides", 1),) * nd, kwargs.get("padding", "valid"),
                                      (kwargs.get("dilation_rate", 1),) * nd, kwargs.get("groups", 1))
    run_layer_test(lambda: cls(**kwargs, bias_initializer="random_normal", name="conv"), shape, reference=reference)


@pytest.mark.parametrize("cls, kwargs, shape", [
    (layers.Conv2DTranspose, dict(filters=3, kernel_size=4, strides=2, padding="same"), (2, 8, 8, 6)),
    (layers.Conv2DTranspose, dict(filters=2, kernel_size=3, strides=2, output_padding=1), (2, 10, 10, 4)),
    (layers.Conv1DTranspose, dict(filters=2, kernel_size=3, strides=3, padding="same"), (4, 40, 4)),
])
def test_conv_transpose_matches_torch_functional(cls, kwargs, shape):
    nd = cls.rank
    reference = _torch_conv_reference(nd, kwargs.get("strides", 1), kwargs.get("padding", "valid"), 1, 1,
                                      transpose=True, output_padding=kwargs.get("output_padding"))
    run_layer_test(lambda: cls(**kwargs, bias_initializer="random_normal", name="deconv"), shape,
                   reference=reference)


# ------------------------------------------------------------------------ output shapes


@pytest.mark.parametrize("layer, input_shape, expected", [
    # Keras: valid floor((n - d (k - 1) - 1) / s) + 1; same/causal floor((n - 1) / s) + 1.
    (layers.Conv1D(4, 3), (None, 10, 2), (None, 8, 4)),
    (layers.Conv1D(4, 3, strides=3), (None, 10, 2), (None, 3, 4)),
    (layers.Conv1D(4, 3, padding="causal", dilation_rate=4), (None, None, 2), (None, None, 4)),
    (layers.Conv2D(8, 3, strides=2, padding="same"), (None, 7, 8, 3), (None, 4, 4, 8)),
    (layers.Conv2D(8, (3, 5), dilation_rate=(2, 1)), (None, 9, None, 3), (None, 5, None, 8)),
    (layers.Conv2D(8, 2, data_format="channels_first"), (None, 3, 5, 6), (None, 8, 4, 5)),
    (layers.Conv3D(1, 3, strides=(1, 2, 3), padding="same"), (None, 5, 5, 5, None), (None, 5, 3, 2, 1)),
    # Transposed: valid (n-1)s + k + max(s-k, 0) or + output_padding; same n*s or (n-1)s + k%2 + output_padding.
    (layers.Conv1DTranspose(2, 3, strides=2), (None, 5, 1), (None, 11, 2)),
    (layers.Conv1DTranspose(2, 2, strides=4), (None, 5, 1), (None, 20, 2)),
    (layers.Conv1DTranspose(2, 3, strides=2, output_padding=1), (None, 5, 1), (None, 12, 2)),
    (layers.Conv2DTranspose(2, 3, strides=2, padding="same"), (None, 5, None, 1), (None, 10, None, 2)),
    (layers.Conv2DTranspose(2, 4, strides=3, padding="same", output_padding=2), (None, 5, 5, 1), (None, 14, 14, 2)),
    (layers.Conv2DTranspose(2, 3, dilation_rate=2), (None, 5, 5, 1), (None, 9, 9, 2)),
    (layers.Conv3DTranspose(2, 2, strides=2, data_format="channels_first"), (None, 1, 2, 3, 4), (None, 2, 4, 6, 8)),
    (layers.DepthwiseConv2D(3, depth_multiplier=3), (None, 5, 5, 2), (None, 3, 3, 6)),
    (layers.DepthwiseConv2D(3, padding="same"), (None, 5, 5, None), (None, 5, 5, None)),
    (layers.DepthwiseConv1D(3, strides=2, data_format="channels_first"), (None, 4, 9), (None, 4, 4)),
    (layers.SeparableConv2D(7, 3, strides=2), (None, 9, 8, 2), (None, 4, 3, 7)),
    (layers.SeparableConv1D(7, 3, padding="same"), (None, None, 2), (None, None, 7)),
])
def test_compute_output_shape(layer, input_shape, expected):
    assert layer.compute_output_shape(input_shape) == expected
    assert layer(ember.Input(input_shape[1:])).shape == expected


# ------------------------------------------------------------------------- config


def test_config_is_normalized_and_round_trips():
    conv = layers.Conv2D(4, [3, 3], strides=2, padding="SAME", kernel_regularizer="l2", bias_constraint="non_neg")
    config = conv.get_config()
    assert config["kernel_size"] == (3, 3) and config["strides"] == (2, 2) and config["dilation_rate"] == (1, 1)
    assert config["padding"] == "same" and config["data_format"] == "channels_last"
    rebuilt = layers.Conv2D.from_config(json.loads(json.dumps(config)))
    assert rebuilt.kernel_size == (3, 3) and rebuilt.kernel_regularizer == conv.kernel_regularizer
    assert json.loads(json.dumps(rebuilt.get_config())) == json.loads(json.dumps(config))
    deconv = layers.Conv2DTranspose(2, 3, strides=2, output_padding=1)
    assert deconv.output_padding == (1, 1)
    assert layers.MaxPooling2D is not None and layers.Convolution2D is layers.Conv2D


# --------------------------------------------------------- regularizers and constraints


@register_serializable(package="tests")
def sum_of_kernel(weight):
    """A plain-function regularizer: the sum of the weight's entries."""
    return ops.sum(weight)


def test_regularizers_constraints_through_run_layer_test():
    run_layer_test(
        lambda: layers.Conv2D(2, 2, kernel_regularizer=regularizers.L2(0.1), bias_regularizer="l1",
                              activity_regularizer=sum_of_kernel, kernel_constraint="max_norm",
                              bias_initializer="random_normal", name="conv"),
        (1, 3, 3, 2),
        reference=_conv_reference((1, 1), "valid", (1, 1)),
    )


@pytest.mark.parametrize("make, names", [
    (lambda **kw: layers.Conv2D(2, 2, **kw), {"kernel": "kernel_regularizer", "bias": "bias_regularizer"}),
    (lambda **kw: layers.Conv1DTranspose(2, 2, **kw), {"kernel": "kernel_regularizer", "bias": "bias_regularizer"}),
    (lambda **kw: layers.DepthwiseConv2D(2, **kw), {"kernel": "depthwise_regularizer", "bias": "bias_regularizer"}),
    (lambda **kw: layers.SeparableConv1D(2, 2, **kw),
     {"depthwise_kernel": "depthwise_regularizer", "pointwise_kernel": "pointwise_regularizer",
      "bias": "bias_regularizer"}),
])
def test_weight_and_activity_penalties(backend, make, names):
    kwargs = {field: regularizers.L1L2(l1=0.1 * (i + 1), l2=0.05) for i, field in enumerate(names.values())}
    layer = make(**kwargs, activity_regularizer=sum_of_kernel, bias_initializer="random_normal")
    shape = (None, 4, 2) if layer.rank == 1 else (None, 4, 4, 2)
    state = layer.build(shape, seed=3)
    params = state["params"]
    penalties = layer.regularization_losses(params)
    expected = []
    for i, param in enumerate(names):
        w = ops.to_numpy(params[param]).astype(np.float64)
        expected.append(0.1 * (i + 1) * np.abs(w).sum() + 0.05 * np.square(w).sum())
    np.testing.assert_allclose([float(ops.to_numpy(v)) for v in penalties], expected, **FLOAT32)
    x = ops.convert_to_tensor(np.random.default_rng(0).normal(size=(2,) + shape[1:]).astype(np.float32))
    with collect_losses() as losses:
        y, _ = layer.apply(state, x)
    assert len(losses) == 1
    assert_close(losses[0], np.sum(ops.to_numpy(y).astype(np.float64)), rtol=1e-5, atol=1e-5)
    # Outside collect_losses nothing is recorded; a frozen layer reports no weight penalty.
    layer.apply(state, x)
    assert layer.replace(trainable=False).regularization_losses(params) == []


def test_constraints_are_reported_per_param(backend):
    conv = layers.Conv2D(2, 2, kernel_constraint="non_neg", bias_constraint="max_norm")
    found = conv.constraints()
    assert sorted(found) == ["bias", "kernel"]
    assert found["kernel"] == ember.constraints.get("non_neg")
    assert layers.Conv2D(2, 2, use_bias=False, bias_constraint="non_neg").constraints() == {}
    assert conv.replace(trainable=False).constraints() == {}
    separable = layers.SeparableConv2D(2, 2, pointwise_constraint="non_neg")
    state = separable.build((None, 4, 4, 2), seed=0)
    projected = ember.constraints.apply_constraints(separable.constraints(), state["params"])
    assert np.all(ops.to_numpy(projected["pointwise_kernel"]) >= 0)
    assert projected["depthwise_kernel"] is state["params"]["depthwise_kernel"]


def test_model_collects_conv_penalties(backend):
    model = ember.Sequential([
        ember.Input((6, 6, 1)),
        layers.Conv2D(2, 3, kernel_regularizer=regularizers.L2(0.5), name="c1"),
        layers.MaxPooling2D(name="pool"),
        layers.Flatten(name="flat"),
        layers.Dense(1, name="head"),
    ])
    model.build(seed=0)
    kernel = ops.to_numpy(model.state["params"]["c1"]["kernel"]).astype(np.float64)
    (penalty,) = model.regularization_losses(model.state["params"])
    assert_close(penalty, 0.5 * np.square(kernel).sum(), rtol=1e-5)
    assert ops.shape(model(ops.ones((3, 6, 6, 1)))) == (3, 1)


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("make, error, match", [
    (lambda: layers.Conv2D(0, 3), ValueError, "filters must be a positive int"),
    (lambda: layers.Conv2D(2.5, 3), ValueError, "filters must be a positive int"),
    (lambda: layers.Conv2D(4, (3, 3, 3)), ValueError, "kernel_size must be an int or a tuple of 2 ints"),
    (lambda: layers.Conv2D(4, 0), ValueError, "kernel_size"),
    (lambda: layers.Conv2D(4, "3"), ValueError, "kernel_size"),
    (lambda: layers.Conv2D(4, 3, padding="causal"), ValueError, "padding must be one of"),
    (lambda: layers.Conv1D(4, 3, padding="full"), ValueError, "padding must be one of"),
    (lambda: layers.Conv2D(4, 3, strides=2, dilation_rate=2), ValueError, "strides > 1 cannot be combined"),
    (lambda: layers.Conv2D(4, 3, groups=3), ValueError, "divisible by groups"),
    (lambda: layers.Conv2D(4, 3, data_format="NHWC"), ValueError, "data_format must be one of"),
    (lambda: layers.Conv2D(4, 3, activation="nope"), ValueError, "unknown activation"),
    (lambda: layers.Conv2D(4, 3, kernel_regularizer="nope"), ValueError, "kernel_regularizer"),
    (lambda: layers.Conv2D(4, 3, use_bias=1), TypeError, "use_bias must be a bool"),
    (lambda: layers.Conv2DTranspose(4, 3, strides=2, output_padding=2), ValueError, "smaller than strides"),
    (lambda: layers.Conv2DTranspose(4, 3, output_padding=(0, -1)), ValueError, "output_padding"),
    (lambda: layers.DepthwiseConv2D(3, depth_multiplier=0), ValueError, "depth_multiplier"),
    (lambda: layers.SeparableConv2D(0, 3), ValueError, "filters must be a positive int"),
])
def test_bad_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_bad_input_shapes(backend):
    conv = layers.Conv2D(4, 3, groups=2, name="c")
    with pytest.raises(ValueError, match=r"'c'.*divisible by groups"):
        conv.build((None, 8, 8, 3))
    with pytest.raises(ValueError, match=r"'c'.*rank 4"):
        conv.compute_output_shape((None, 8, 2))
    with pytest.raises(ValueError, match=r"'c'.*known channel"):
        conv.build((None, 8, 8, None))
    with pytest.raises(ValueError, match=r"'c'.*empty output"):
        conv.compute_output_shape((None, 2, 8, 2))
    with pytest.raises(ValueError, match=r"'c'.*empty output"):
        layers.DepthwiseConv2D(3, name="c").build((None, 2, 8, 2))
    state = conv.build((None, 8, 8, 2), seed=0)
    with pytest.raises(ValueError, match=r"'c' expects inputs of rank 4 with 2 channels.*\(1, 8, 8, 4\)"):
        conv.apply(state, ops.ones((1, 8, 8, 4)))
    with pytest.raises(ValueError, match=r"'c' expects inputs of rank 4"):
        conv.apply(state, ops.ones((8, 8, 2)))
    deconv = layers.Conv2DTranspose(2, 3, name="d")
    with pytest.raises(ValueError, match=r"'d'.*known channel"):
        deconv.build((None, 4, 4, None))
    state = deconv.build((None, 4, 4, 3), seed=0)
    with pytest.raises(ValueError, match=r"'d' expects inputs of rank 4 with 3 channels"):
        deconv.apply(state, ops.ones((1, 4, 4, 2)))
