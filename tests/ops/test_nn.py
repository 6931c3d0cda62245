"""``ops.nn``: activations against equations written here, convolutions and pooling
against float64 NumPy direct-sum references written here (checked against torch in
``test_references_agree_with_torch``)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given

from ember import ops
from tests.helpers import (
    ATOL,
    EPS32,
    PROPERTY,
    assert_close,
    f32,
    f64,
    float_arrays,
    logsumexp,
    mark_params,
    native,
    needs,
    optional_import,
    same_padding,
)
from tests.tolerances import FLOAT64

special = optional_import("scipy.special")  # a few references; None on a core-only install

# ----------------------------------------------------------------- activations

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _relu6(x):
    return np.minimum(np.maximum(x, 0.0), 6.0)


ACTIVATIONS = {
    "relu": (lambda x: np.maximum(x, 0.0), {}),
    "relu6": (_relu6, {}),
    "leaky_relu": (lambda x: np.where(x > 0, x, 0.2 * x), {}),
    "leaky_relu(0.05)": (lambda x: np.where(x > 0, x, 0.05 * x), {"negative_slope": 0.05}),
    "elu": (lambda x: np.where(x > 0, x, np.expm1(x)), {}),
    "elu(0.5)": (lambda x: np.where(x > 0, x, 0.5 * np.expm1(x)), {"alpha": 0.5}),
    "selu": (lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), {}),
    "gelu": (lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))), {}),
    "gelu(approximate=False)": (lambda x: 0.5 * x * (1 + special.erf(x / math.sqrt(2))),
                                {"approximate": False}),
    "silu": (lambda x: x * _sigmoid(x), {}),
    "sigmoid": (_sigmoid, {}),
    "hard_sigmoid": (lambda x: _relu6(x + 3.0) / 6.0, {}),
    "softplus": (lambda x: np.log1p(np.exp(x)), {}),
    "softsign": (lambda x: x / (1 + np.abs(x)), {}),
    "tanh": (np.tanh, {}),
    "lecun_tanh": (lambda x: 1.7159 * np.tanh(0.666 * x), {}),
}


@pytest.mark.parametrize("label", mark_params(ACTIVATIONS, needs("scipy.special"), {"gelu(approximate=False)"}))
def test_activation(backend, label):
    reference, kwargs = ACTIVATIONS[label]
    name = label.split("(")[0]

    def close(x):
        # The float32 intermediates are of size |x| (x * sigmoid(x), 0.5 * x * (1 + erf(x / sqrt 2)))
        # and cancel where the result is small: a few (4) eps32 of |x| on top of the default bound.
        atol = ATOL + 4 * EPS32 * float(np.abs(x).max(initial=0.0))
        assert_close(getattr(ops.nn, name)(native(x), **kwargs), reference(f64(x)), atol=atol, dtype="float32")

    @PROPERTY
    @given(x=float_arrays(low=-8.0, high=8.0))
    def check(x):
        close(x)

    check()
    # the kinks and defaults are hit exactly, not just by chance
    close(f32([-6.5, -3.0, -1.0, -0.0, 0.0, 0.5, 3.0, 6.0, 7.5]))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
@pytest.mark.parametrize("label", ["relu", "sigmoid", "gelu", "softplus", "silu", "elu"])
def test_activation_keeps_dtype(backend, label, dtype):
    reference, kwargs = ACTIVATIONS[label]
    x = native(np.linspace(-4, 4, 9), dtype=dtype)
    values = f64(ops.to_numpy(ops.cast(x, "float64")))
    # float16/bfloat16 results are rounded to 11/8 significant bits
    tol = {"float16": 4e-3, "bfloat16": 3e-2, "float64": 1e-10}[dtype]
    assert_close(getattr(ops.nn, label)(x, **kwargs), reference(values), rtol=tol, atol=tol, dtype=dtype)


@needs("scipy.special")
def test_sigmoid_softplus_are_stable(backend):
    x = f32([-1000.0, -100.0, -20.0, 0.0, 20.0, 100.0, 1000.0])
    assert_close(ops.nn.sigmoid(native(x)), special.expit(f64(x)), dtype="float32")
    assert_close(ops.nn.softplus(native(x)), np.logaddexp(0.0, f64(x)), dtype="float32")
    assert_close(ops.nn.silu(native(x)), f64(x) * special.expit(f64(x)), dtype="float32")
    assert_close(ops.nn.gelu(native(x)), np.where(f64(x) > 0, f64(x), 0.0), atol=1e-6, dtype="float32")


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_log_softmax(backend, axis):
    @PROPERTY
    @given(x=float_arrays(shape=(3, 4, 2), low=-20.0, high=20.0))
    def check(x):
        expected_log = f64(x) - logsumexp(f64(x), axis=axis, keepdims=True)
        assert_close(ops.nn.softmax(native(x), axis=axis), np.exp(expected_log), dtype="float32")
        # log-softmax values are O(|x|): the float32 rounding of x itself is ~eps·20
        assert_close(ops.nn.log_softmax(native(x), axis=axis), expected_log, atol=1e-5, dtype="float32")

    check()


def test_softmax_stable_with_large_inputs(backend):
    x = f32([[1000.0, 1001.0, 1002.0], [-1000.0, 0.0, 1000.0], [-1e4, -1e4, -1e4], [3e38, 0.0, -3e38]])
    expected_log = f64(x) - logsumexp(f64(x), axis=-1, keepdims=True)
    soft = ops.nn.softmax(native(x))
    assert np.all(np.isfinite(ops.to_numpy(soft)))
    assert_close(soft, np.exp(expected_log), dtype="float32")
    log_soft = ops.nn.log_softmax(native(x[:3]))
    assert_close(log_soft, expected_log[:3], dtype="float32")
    assert_close(ops.sum(soft, axis=-1), np.ones(4), dtype="float32")


@needs("scipy.special")
def test_softmax_default_axis_is_last(backend):
    x = f32(np.arange(6).reshape(2, 3))
    expected = special.softmax(f64(x), axis=-1)
    assert_close(ops.nn.softmax(native(x)), expected, dtype="float32")


# ------------------------------------------------------------------ references


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def conv_reference(x, kernel, strides=1, padding="valid", dilation=1):
    """Direct-sum float64 Keras convolution, channels_last. ``kernel``: (*k, C // groups, O)."""
    x, kernel = f64(x), f64(kernel)
    nd = x.ndim - 2
    strides, dilation = _tuple(strides, nd), _tuple(dilation, nd)
    ksize = kernel.shape[:nd]
    in_per_group, out_channels = kernel.shape[-2:]
    groups = x.shape[-1] // in_per_group
    out_per_group = out_channels // groups
    if padding == "same":
        pads = [same_padding(n, k, s, d) for n, k, s, d in zip(x.shape[1:-1], ksize, strides, dilation)]
        x = np.pad(x, [(0, 0), *pads, (0, 0)])
    out_size = [max((n - d * (k - 1) - 1) // s + 1, 0)
                for n, k, s, d in zip(x.shape[1:-1], ksize, strides, dilation)]
    out = np.zeros((x.shape[0], *out_size, out_channels))
    for tap in itertools.product(*(range(k) for k in ksize)):
        window = tuple(slice(t * d, t * d + s * (o - 1) + 1, s) for t, d, s, o in zip(tap, dilation, strides, out_size))
        patch = x[(slice(None), *window, slice(None))]
        for g in range(groups):
            cin = slice(g * in_per_group, (g + 1) * in_per_group)
            cout = slice(g * out_per_group, (g + 1) * out_per_group)
            out[..., cout] += patch[..., cin] @ kernel[tap][:, cout]
    return out


def conv_transpose_length(size, kernel, stride, padding, output_padding, dilation):
    """Keras ``deconv_output_length``."""
    kernel = (kernel - 1) * dilation + 1
    if output_padding is None:
        return size * stride + max(kernel - stride, 0) if padding == "valid" else size * stride
    pad = kernel // 2 if padding == "same" else 0
    return (size - 1) * stride + kernel - 2 * pad + output_padding


def _transpose_crop(kernel, stride, padding, output_padding, dilation):
    """Left crop of the full transposed convolution (TF/JAX placement used by Keras)."""
    kernel = (kernel - 1) * dilation + 1
    if padding == "valid":
        return 0
    pad_len = stride + kernel - 2 if output_padding is None else kernel + kernel % 2 - 2 + output_padding
    left = min(pad_len // 2 + pad_len % 2, kernel - 1)
    return kernel - 1 - left


def conv_transpose_reference(x, kernel, strides=1, padding="valid", output_padding=None, dilation=1):
    """Direct-sum float64 transposed convolution, channels_last. ``kernel``: (*k, O, C_in)."""
    x, kernel = f64(x), f64(kernel)
    nd = x.ndim - 2
    strides, dilation = _tuple(strides, nd), _tuple(dilation, nd)
    output_padding = (None,) * nd if output_padding is None else _tuple(output_padding, nd)
    ksize = kernel.shape[:nd]
    in_size = x.shape[1:-1]
    full_size = [(n - 1) * s + (k - 1) * d + 1 for n, k, s, d in zip(in_size, ksize, strides, dilation)]
    full = np.zeros((x.shape[0], *full_size, kernel.shape[-2]))
    for tap in itertools.product(*(range(k) for k in ksize)):
        window = tuple(slice(t * d, t * d + s * (n - 1) + 1, s) for t, d, s, n in zip(tap, dilation, strides, in_size))
        full[(slice(None), *window, slice(None))] += x @ kernel[tap].T
    lengths = [conv_transpose_length(n, k, s, padding, op, d)
               for n, k, s, op, d in zip(in_size, ksize, strides, output_padding, dilation)]
    crops = [_transpose_crop(k, s, padding, op, d) for k, s, op, d in zip(ksize, strides, output_padding, dilation)]
    extra = [max(c + n - f, 0) for c, n, f in zip(crops, lengths, full_size)]
    full = np.pad(full, [(0, 0), *[(0, e) for e in extra], (0, 0)])
    return full[(slice(None), *(slice(c, c + n) for c, n in zip(crops, lengths)), slice(None))]


def pool_reference(x, pool_size, strides=None, padding="valid", kind="max"):
    """float64 pooling, channels_last; padded cells never count (not in the max, not in the mean)."""
    x = f64(x)
    nd = x.ndim - 2
    pool_size = _tuple(pool_size, nd)
    strides = pool_size if strides is None else _tuple(strides, nd)
    if padding == "same":
        pads = [same_padding(n, p, s) for n, p, s in zip(x.shape[1:-1], pool_size, strides)]
        x = np.pad(x, [(0, 0), *pads, (0, 0)], constant_values=np.nan)
    out_size = [(n - p) // s + 1 for n, p, s in zip(x.shape[1:-1], pool_size, strides)]
    patches = []
    for tap in itertools.product(*(range(p) for p in pool_size)):
        window = tuple(slice(t, t + s * (o - 1) + 1, s) for t, s, o in zip(tap, strides, out_size))
        patches.append(x[(slice(None), *window, slice(None))])
    stacked = np.stack(patches)
    return np.nanmax(stacked, axis=0) if kind == "max" else np.nanmean(stacked, axis=0)


def _to_first(x, data_format):
    return np.moveaxis(x, -1, 1) if data_format == "channels_first" else x


# --------------------------------------------------------------------- conv

CONV_CASES = {
    "1d valid": ((2, 9, 4), (3, 4, 5), {}),
    "1d same stride 2": ((2, 9, 4), (3, 4, 5), {"strides": 2, "padding": "same"}),
    "1d same even kernel": ((2, 8, 3), (4, 3, 2), {"padding": "same"}),
    "1d dilation 2": ((2, 9, 4), (3, 4, 5), {"dilation_rate": 2}),
    "1d same dilation 2": ((1, 7, 2), (2, 2, 3), {"dilation_rate": 2, "padding": "same"}),
    "1d groups 2": ((2, 9, 4), (3, 2, 6), {}),
    "1d channels_first": ((2, 9, 4), (3, 4, 5), {"data_format": "channels_first", "strides": 2}),
    "2d valid": ((2, 7, 6, 4), (3, 2, 4, 6), {}),
    "2d same strides (2, 1)": ((2, 7, 6, 4), (3, 3, 4, 6), {"strides": (2, 1), "padding": "same"}),
    "2d dilation (1, 2)": ((2, 7, 8, 3), (2, 3, 3, 4), {"dilation_rate": (1, 2)}),
    "2d depthwise groups": ((1, 6, 6, 4), (3, 3, 1, 8), {"padding": "same"}),
    "2d groups 2 channels_first": ((2, 6, 5, 4), (2, 2, 2, 6), {"data_format": "channels_first"}),
    "2d same stride 3": ((1, 7, 7, 2), (2, 2, 2, 3), {"strides": 3, "padding": "same"}),
    "3d valid": ((1, 5, 6, 4, 2), (2, 3, 2, 2, 3), {}),
    "3d same stride 2": ((1, 5, 6, 4, 2), (3, 3, 3, 2, 3), {"strides": 2, "padding": "same"}),
    "3d channels_first dilation": ((1, 6, 5, 5, 2), (2, 2, 2, 2, 2), {"data_format": "channels_first",
                                                                      "dilation_rate": 2}),
}


@pytest.mark.parametrize("label", list(CONV_CASES))
def test_conv(backend, label):
    x_shape, k_shape, kwargs = CONV_CASES[label]
    rng = np.random.default_rng(0)
    x = f32(rng.standard_normal(x_shape))  # channels_last shape; moved below when channels_first
    kernel = f32(rng.standard_normal(k_shape))
    data_format = kwargs.get("data_format", "channels_last")
    expected = conv_reference(x, kernel, kwargs.get("strides", 1), kwargs.get("padding", "valid"),
                              kwargs.get("dilation_rate", 1))
    out = ops.nn.conv(native(_to_first(x, data_format)), native(kernel), **kwargs)
    # sums of up to ~50 float32 products of O(1) terms: absolute error ~1e-6..1e-5
    assert_close(out, _to_first(expected, data_format), atol=1e-5, dtype="float32")


CONV_TRANSPOSE_CASES = {
    "1d valid": ((2, 5, 3), (3, 4, 3), {}),
    "1d valid stride 2": ((2, 5, 3), (3, 4, 3), {"strides": 2}),
    "1d valid stride 3 > kernel": ((1, 4, 2), (2, 3, 2), {"strides": 3}),
    "1d same stride 1": ((2, 5, 3), (3, 4, 3), {"padding": "same"}),
    "1d same stride 2 kernel 3": ((2, 5, 3), (3, 4, 3), {"strides": 2, "padding": "same"}),
    "1d same stride 2 kernel 4": ((1, 5, 2), (4, 2, 2), {"strides": 2, "padding": "same"}),
    "1d output_padding": ((1, 5, 2), (3, 2, 2), {"strides": 2, "output_padding": 1}),
    "1d same output_padding": ((1, 5, 2), (3, 2, 2), {"strides": 3, "padding": "same", "output_padding": 1}),
    "1d dilation 2": ((1, 5, 2), (3, 3, 2), {"dilation_rate": 2}),
    "1d channels_first": ((2, 5, 3), (3, 4, 3), {"strides": 2, "data_format": "channels_first"}),
    "2d valid strides (2, 1)": ((1, 4, 3, 2), (3, 2, 3, 2), {"strides": (2, 1)}),
    "2d same stride 2": ((2, 3, 4, 2), (3, 3, 2, 2), {"strides": 2, "padding": "same"}),
    "2d channels_first": ((1, 3, 3, 2), (2, 2, 3, 2), {"strides": 2, "data_format": "channels_first"}),
    "3d valid stride 2": ((1, 3, 3, 2, 2), (2, 2, 2, 3, 2), {"strides": 2}),
    "3d same": ((1, 3, 2, 3, 2), (3, 2, 3, 2, 2), {"padding": "same"}),
}


@pytest.mark.parametrize("label", list(CONV_TRANSPOSE_CASES))
def test_conv_transpose(backend, label):
    x_shape, k_shape, kwargs = CONV_TRANSPOSE_CASES[label]
    rng = np.random.default_rng(1)
    x = f32(rng.standard_normal(x_shape))
    kernel = f32(rng.standard_normal(k_shape))
    data_format = kwargs.get("data_format", "channels_last")
    expected = conv_transpose_reference(x, kernel, kwargs.get("strides", 1), kwargs.get("padding", "valid"),
                                        kwargs.get("output_padding"), kwargs.get("dilation_rate", 1))
    out = ops.nn.conv_transpose(native(_to_first(x, data_format)), native(kernel), **kwargs)
    assert_close(out, _to_first(expected, data_format), atol=1e-5, dtype="float32")


def test_references_agree_with_torch():
    """The direct-sum references above are themselves checked against torch (float64):
    conv against ``torch.nn.functional.conv*d``, conv_transpose against torch autograd's
    gradient of that convolution w.r.t. its input (the definition in ``_spec``)."""
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    rng = np.random.default_rng(2)
    for label, (x_shape, k_shape, kwargs) in CONV_CASES.items():
        x, kernel = rng.standard_normal(x_shape), rng.standard_normal(k_shape)
        nd = x.ndim - 2
        strides, dilation = _tuple(kwargs.get("strides", 1), nd), _tuple(kwargs.get("dilation_rate", 1), nd)
        xt = torch.tensor(np.moveaxis(x, -1, 1))
        if kwargs.get("padding") == "same":
            pads = [same_padding(n, k, s, d) for n, k, s, d in zip(x.shape[1:-1], k_shape[:nd], strides, dilation)]
            xt = functional.pad(xt, [p for pair in reversed(pads) for p in pair])
        wt = torch.tensor(np.moveaxis(kernel, (-1, -2), (0, 1)).copy())
        groups = x.shape[-1] // k_shape[-2]
        conv = getattr(functional, f"conv{nd}d")
        want = conv(xt, wt, stride=strides, dilation=dilation, groups=groups).numpy()
        got = conv_reference(x, kernel, strides, kwargs.get("padding", "valid"), dilation)
        np.testing.assert_allclose(np.moveaxis(got, -1, 1), want, **FLOAT64, err_msg=label)  # <= 54-term sums
    for label, (x_shape, k_shape, kwargs) in CONV_TRANSPOSE_CASES.items():
        x, kernel = rng.standard_normal(x_shape), rng.standard_normal(k_shape)
        nd = x.ndim - 2
        strides, dilation = _tuple(kwargs.get("strides", 1), nd), _tuple(kwargs.get("dilation_rate", 1), nd)
        padding = kwargs.get("padding", "valid")
        got = conv_transpose_reference(x, kernel, strides, padding, kwargs.get("output_padding"), dilation)
        # gradient of conv(z, kernel) w.r.t. z, for z of the transposed output's size
        z = torch.zeros((x.shape[0], kernel.shape[-2], *got.shape[1:-1]), dtype=torch.float64, requires_grad=True)
        zp = z
        if padding == "same":
            pads = [same_padding(n, k, s, d) for n, k, s, d in zip(got.shape[1:-1], k_shape[:nd], strides, dilation)]
            zp = functional.pad(z, [p for pair in reversed(pads) for p in pair])
        wt = torch.tensor(np.moveaxis(kernel, (-1, -2), (0, 1)).copy())  # (C_in, O, *k): O -> C_in conv
        y = getattr(functional, f"conv{nd}d")(zp, wt, stride=strides, dilation=dilation)
        assert tuple(y.shape[2:]) == x.shape[1:-1], label
        (grad,) = torch.autograd.grad(y, z, torch.tensor(np.moveaxis(x, -1, 1)))
        np.testing.assert_allclose(np.moveaxis(got, -1, 1), grad.numpy(), **FLOAT64, err_msg=label)
    for padding, kind in itertools.product(["valid", "same"], ["max", "avg"]):
        x = rng.standard_normal((2, 7, 6, 3))
        got = pool_reference(x, (2, 3), (2, 2), padding, kind)
        xt = torch.tensor(np.moveaxis(x, -1, 1))
        if padding == "same":
            pads = [same_padding(n, p, s) for n, p, s in zip(x.shape[1:-1], (2, 3), (2, 2))]
            flat = [p for pair in reversed(pads) for p in pair]
            if kind == "max":
                xt = functional.pad(xt, flat, value=-np.inf)
                want = functional.max_pool2d(xt, (2, 3), (2, 2))
            else:
                ones = functional.pad(torch.ones_like(xt), flat)
                xt = functional.pad(xt, flat)
                want = functional.avg_pool2d(xt, (2, 3), (2, 2)) / functional.avg_pool2d(ones, (2, 3), (2, 2))
        else:
            pool = functional.max_pool2d if kind == "max" else functional.avg_pool2d
            want = pool(xt, (2, 3), (2, 2))
        np.testing.assert_allclose(np.moveaxis(got, -1, 1), want.numpy(), **FLOAT64, err_msg=f"{padding} {kind}")


# ---------------------------------------------------------------------- pooling

POOL_CASES = {
    "1d valid": ((2, 7, 3), 2, None, "valid"),
    "1d valid stride 1": ((2, 7, 3), 3, 1, "valid"),
    "1d same": ((2, 7, 3), 2, None, "same"),
    "1d same stride 2 pool 3": ((2, 8, 3), 3, 2, "same"),
    "2d valid": ((2, 5, 6, 3), (2, 3), None, "valid"),
    "2d same strides (1, 2)": ((2, 5, 6, 3), (2, 3), (1, 2), "same"),
    "2d same pool 3": ((1, 5, 5, 2), 3, 2, "same"),
    "3d valid": ((1, 4, 5, 3, 2), 2, None, "valid"),
    "3d same": ((1, 4, 5, 3, 2), (2, 3, 2), (2, 2, 1), "same"),
}


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("label", list(POOL_CASES))
def test_pool(backend, label, kind, data_format):
    shape, pool_size, strides, padding = POOL_CASES[label]
    x = f32(np.random.default_rng(3).standard_normal(shape))
    expected = pool_reference(x, pool_size, strides, padding, kind)
    op = ops.nn.max_pool if kind == "max" else ops.nn.avg_pool
    out = op(native(_to_first(x, data_format)), pool_size, strides=strides, padding=padding, data_format=data_format)
    assert_close(out, _to_first(expected, data_format), dtype="float32")


def test_avg_pool_same_excludes_padding(backend):
    x = f32(np.ones((1, 3, 3, 1)))
    out = ops.nn.avg_pool(native(x), 2, strides=2, padding="same")
    # with the pads counted the corner cells would be 0.5 / 0.25
    assert_close(out, np.ones((1, 2, 2, 1)), dtype="float32")


def test_max_pool_same_with_negative_inputs(backend):
    x = -f32(np.arange(1, 10).reshape(1, 3, 3, 1))
    out = ops.nn.max_pool(native(x), 2, strides=2, padding="same")
    assert_close(out, pool_reference(x, 2, 2, "same", "max"), dtype="float32")


# --------------------------------------------------------------------- moments


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axes", [[0], [0, 1], (0, 1, 2), [-1], (1, -1), 1])
def test_moments(backend, axes, keepdims):
    x = f32(np.random.default_rng(4).standard_normal((3, 4, 5)) * 2 + 1)
    mean, variance = ops.nn.moments(native(x), axes, keepdims=keepdims)
    np_axes = tuple(axes) if isinstance(axes, (list, tuple)) else axes
    assert_close(mean, np.mean(f64(x), axis=np_axes, keepdims=keepdims), dtype="float32")
    assert_close(variance, np.var(f64(x), axis=np_axes, keepdims=keepdims), dtype="float32")
