"""``ops.stats`` against NumPy float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ember import ops
from tests.helpers import PROPERTY, array_and_axis, assert_close, f32, f64, native

X = f32(np.random.default_rng(0).standard_normal((4, 5, 6)) * 3)
AXES = [None, 0, 1, -1, (0, 2), (-1, -2)]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("name", ["mean", "var", "std", "median"])
def test_descriptive(backend, name, axis, keepdims):
    expected = getattr(np, name)(f64(X), axis=axis, keepdims=keepdims)
    out = getattr(ops.stats, name)(native(X), axis=axis, keepdims=keepdims)
    assert ops.is_array(out)
    assert_close(out, expected, atol=1e-5, dtype="float32")


@pytest.mark.parametrize("ddof", [0, 1, 2])
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_ddof(backend, name, ddof):
    assert_close(getattr(ops.stats, name)(native(X), axis=1, ddof=ddof), getattr(np, name)(f64(X), axis=1, ddof=ddof),
                 dtype="float32")


def test_median_hypothesis(backend):
    @PROPERTY
    @given(case=array_and_axis(min_side=1), keepdims=st.booleans())
    def check(case, keepdims):
        x, axis = case
        assert_close(ops.stats.median(native(x), axis=axis, keepdims=keepdims),
                     np.median(f64(x), axis=axis, keepdims=keepdims), dtype="float32")

    check()


def test_median_even_count(backend):
    x = f32([4.0, 1.0, 3.0, 2.0])
    assert_close(ops.stats.median(native(x)), 2.5, dtype="float32")
    assert_close(ops.stats.median(native(np.array([3, 1, 2, 10], np.int32))), 2.5, dtype="float32")


METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("q", [50.0, 0.0, 100.0, 37.5, [10.0, 50.0, 90.0], np.array([25.0, 75.0])])
def test_percentile(backend, q, method):
    for axis, keepdims in [(None, False), (1, False), (-1, True), ((0, 2), False)]:
        expected = np.percentile(f64(X), q, axis=axis, keepdims=keepdims, method=method)
        out = ops.stats.percentile(native(X), q, axis=axis, keepdims=keepdims, method=method)
        assert_close(out, expected, atol=1e-5, dtype="float32", err_msg=f"axis={axis} keepdims={keepdims}")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("q", [0.5, 0.0, 1.0, 0.3, [0.1, 0.5, 0.9]])
def test_quantile(backend, q, method):
    for axis, keepdims in [(None, False), (0, True), (-1, False)]:
        expected = np.quantile(f64(X), q, axis=axis, keepdims=keepdims, method=method)
        out = ops.stats.quantile(native(X), q, axis=axis, keepdims=keepdims, method=method)
        assert_close(out, expected, atol=1e-5, dtype="float32", err_msg=f"axis={axis} keepdims={keepdims}")


@pytest.mark.parametrize(
    "kwargs", [{}, {"rowvar": False}, {"bias": True}, {"ddof": 0}, {"ddof": 2}, {"rowvar": False, "bias": True}]
)
def test_cov(backend, kwargs):
    x = f32(np.random.default_rng(1).standard_normal((3, 10)))
    assert_close(ops.stats.cov(native(x), **kwargs), np.cov(f64(x), **kwargs), atol=1e-5, dtype="float32")


def test_cov_of_vector_is_scalar_variance(backend):
    v = f32([1.0, 2.0, 4.0, 7.0])
    assert_close(ops.stats.cov(native(v)), np.cov(f64(v)), dtype="float32")


@pytest.mark.parametrize(("mean", "std"), [(0.0, 1.0), (1.5, 0.5), (-2.0, 3.0)])
def test_gaussian(backend, mean, std):
    x = f32(np.linspace(-5, 5, 11))
    expected = np.exp(-((f64(x) - mean) ** 2) / (2 * std**2)) / (std * math.sqrt(2 * math.pi))
    assert_close(ops.stats.gaussian(native(x), mean=mean, std=std), expected, dtype="float32")


def test_gaussian_broadcasts_array_parameters(backend):
    x = f32([[0.0], [1.0]])
    mean, std = f32([0.0, 1.0, 2.0]), f32([1.0, 2.0, 0.5])
    expected = np.exp(-((f64(x) - mean) ** 2) / (2 * f64(std) ** 2)) / (f64(std) * math.sqrt(2 * math.pi))
    assert_close(ops.stats.gaussian(native(x), mean=native(mean), std=native(std)), expected, dtype="float32")


def test_stats_of_integers_give_floatx(backend):
    i = np.array([[1, 2, 4], [3, 5, 9]], dtype=np.int32)
    for name in ("mean", "var", "std", "median"):
        assert_close(getattr(ops.stats, name)(native(i), axis=1), getattr(np, name)(f64(i), axis=1), dtype="float32")
