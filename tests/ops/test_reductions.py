"""Reductions against NumPy float64: axes (None/int/negative/tuple), keepdims, empty, dtypes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ember import ops
from tests.helpers import (
    PROPERTY,
    array_and_axis,
    assert_close,
    assert_equal,
    f32,
    f64,
    float64_device,
    logsumexp,
    native,
)


def _reference(function):
    """``(value, None)`` or ``(None, ValueError)`` from a NumPy reference, silencing its warnings."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return function(), None
        except ValueError as error:
            return None, error


def _accumulation_atol(x64, axis=None):
    """float32 accumulation error is bounded by ~n·eps·sum(|x|), not by the (possibly
    cancelling, near-zero) result, so the absolute tolerance scales with sum(|x|)."""
    if x64.size == 0:
        return 1e-6
    return 1e-6 + 4e-6 * float(np.max(np.sum(np.abs(x64), axis=axis)))


def _check(name, x, axis, keepdims, reference, dtype, rtol=1e-5, atol=1e-6, **kwargs):
    expected, error = _reference(lambda: reference(f64(x), axis=axis, keepdims=keepdims, **kwargs))
    op = getattr(ops, name)
    if error is not None:
        with pytest.raises(ValueError):
            op(native(x), axis=axis, keepdims=keepdims, **kwargs)
        return
    out = op(native(x), axis=axis, keepdims=keepdims, **kwargs)
    assert ops.is_array(out), f"{name} returned {type(out).__name__}, not a native array"
    assert_close(out, expected, rtol=rtol, atol=atol, dtype=dtype, err_msg=f"{name} axis={axis} keepdims={keepdims}")


def test_sum(backend):
    @PROPERTY
    @given(case=array_and_axis(), keepdims=st.booleans())
    def check(case, keepdims):
        x, axis = case
        _check("sum", x, axis, keepdims, np.sum, "float32", atol=_accumulation_atol(f64(x), axis))

    check()


def test_mean(backend):
    @PROPERTY
    @given(case=array_and_axis(), keepdims=st.booleans())
    def check(case, keepdims):
        x, axis = case
        _check("mean", x, axis, keepdims, np.mean, "float32", atol=_accumulation_atol(f64(x), axis))

    check()


def test_prod(backend):
    @PROPERTY
    @given(case=array_and_axis(low=-2.0, high=2.0), keepdims=st.booleans())
    def check(case, keepdims):
        x, axis = case
        # no cancellation in a product: n·eps relative error for up to 64 float32 factors
        _check("prod", x, axis, keepdims, np.prod, "float32")

    check()


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min(backend, name):
    @PROPERTY
    @given(case=array_and_axis(), keepdims=st.booleans())
    def check(case, keepdims):
        x, axis = case
        _check(name, x, axis, keepdims, getattr(np, name), "float32", rtol=0, atol=0)

    check()


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(backend, name):
    @PROPERTY
    @given(case=array_and_axis(allow_tuple=False, low=-2.0, high=2.0), keepdims=st.booleans(),
           ties=st.booleans())
    def check(case, keepdims, ties):
        x, axis = case
        if ties:
            x = np.round(x)  # many equal values: the first occurrence must win
        _check(name, x, axis, keepdims, getattr(np, name), "int32", rtol=0, atol=0)

    check()


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std(backend, name):
    @PROPERTY
    @given(case=array_and_axis(), keepdims=st.booleans(), ddof=st.sampled_from([0, 1]))
    def check(case, keepdims, ddof):
        x, axis = case
        m = max(1.0, float(np.max(np.abs(x)))) if x.size else 1.0
        # float32 rounding of the mean leaves ~eps·M² in the variance of near-constant
        # data (M = max|x|); the tolerance is relative to that scale, not to the result.
        atol = 1e-5 * (m * m if name == "var" else m)
        _check(name, x, axis, keepdims, getattr(np, name), "float32", atol=atol, ddof=ddof)

    check()


def test_logsumexp(backend):
    @PROPERTY
    @given(case=array_and_axis(), keepdims=st.booleans())
    def check(case, keepdims):
        x, axis = case
        m = max(1.0, float(np.max(np.abs(x)))) if x.size else 1.0
        _check("logsumexp", x, axis, keepdims, logsumexp, "float32", atol=2e-6 * m)

    check()


def test_logsumexp_is_stable(backend):
    x = f32([[1000.0, 1000.0, 999.0], [-1000.0, -1001.0, -1000.0]])
    assert_close(ops.logsumexp(native(x), axis=1), logsumexp(f64(x), axis=1), dtype="float32")
    assert_close(ops.logsumexp(native(x)), logsumexp(f64(x)), dtype="float32")


@pytest.mark.parametrize("name", ["all", "any"])
def test_all_any(backend, name):
    @PROPERTY
    @given(case=array_and_axis(low=-1.0, high=1.0), keepdims=st.booleans(), as_bool=st.booleans())
    def check(case, keepdims, as_bool):
        x, axis = case
        x = np.round(x)  # plenty of zeros
        if as_bool:
            x = x.astype(bool)
        expected = getattr(np, name)(x, axis=axis, keepdims=keepdims)
        assert_equal(getattr(ops, name)(native(x), axis=axis, keepdims=keepdims), expected, dtype="bool")

    check()


def test_count_nonzero(backend):
    @PROPERTY
    @given(case=array_and_axis(low=-1.0, high=1.0))
    def check(case):
        x, axis = case
        x = np.round(x)
        expected = np.count_nonzero(x, axis=axis)
        assert_equal(ops.count_nonzero(native(x), axis=axis), np.asarray(expected), dtype="int32")

    check()


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_cumsum_cumprod(backend, name):
    @PROPERTY
    @given(case=array_and_axis(allow_tuple=False, low=-2.0, high=2.0))
    def check(case):
        x, axis = case
        if x.ndim == 0 and axis is not None:
            axis = None
        expected = getattr(np, name)(f64(x), axis=axis)
        atol = _accumulation_atol(f64(x)) if name == "cumsum" else 1e-6
        out = getattr(ops, name)(native(x), axis=axis)
        assert_close(out, expected, atol=atol, dtype="float32", err_msg=f"axis={axis}")

    check()


# --------------------------------------------------------------- deterministic


X = f32(np.arange(24).reshape(2, 3, 4) % 7 - 3)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (-1, -3), (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "var", "std"])
def test_axis_forms(backend, name, axis, keepdims):
    _check(name, X, axis, keepdims, getattr(np, name), "float32", atol=1e-5)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "all", "any"])
def test_empty_tuple_axis_reduces_nothing(backend, name):
    x = f32([[1.0, 0.0], [3.0, -2.0]])
    expected = getattr(np, name)(x, axis=())
    out = getattr(ops, name)(native(x), axis=())
    assert_equal(out, expected, dtype="bool" if name in ("all", "any") else "float32")


def test_empty_inputs(backend):
    empty = native(np.zeros((0,), np.float32))
    assert_equal(ops.sum(empty), np.array(0.0), dtype="float32")
    assert_equal(ops.prod(empty), np.array(1.0), dtype="float32")
    assert np.isnan(ops.to_numpy(ops.mean(empty)))
    assert ops.dtype(ops.mean(empty)) == "float32"
    assert_equal(ops.all(empty), np.array(True), dtype="bool")
    assert_equal(ops.any(empty), np.array(False), dtype="bool")
    assert_equal(ops.count_nonzero(empty), np.array(0), dtype="int32")
    assert_equal(ops.cumsum(empty), np.zeros((0,)), dtype="float32")
    for name in ("max", "min", "argmax", "argmin"):
        with pytest.raises(ValueError):
            getattr(ops, name)(empty)
    matrix = native(np.zeros((0, 3), np.float32))
    assert_equal(ops.sum(matrix, axis=0), np.zeros(3), dtype="float32")
    assert_equal(ops.max(matrix, axis=1), np.zeros((0,)), dtype="float32")
    with pytest.raises(ValueError):
        ops.max(matrix, axis=0)


def test_zero_d_inputs(backend):
    x = native(np.array(2.5, np.float32))
    for name in ("sum", "mean", "max", "min", "prod"):
        out = getattr(ops, name)(x)
        assert ops.is_array(out)
        assert_equal(out, np.array(2.5), dtype="float32")
    assert_equal(ops.argmax(x), np.array(0), dtype="int32")
    assert_equal(ops.var(x), np.array(0.0), dtype="float32")
    assert_equal(ops.cumsum(x), np.array([2.5]), dtype="float32")


@pytest.mark.parametrize(
    ("source", "expected"),
    [("bool", "int32"), ("int8", "int32"), ("uint8", "int32"), ("int16", "int32"), ("int32", "int32"),
     ("int64", "int64"), ("float16", "float16"), ("bfloat16", "bfloat16"), ("float64", "float64")],
)
@pytest.mark.parametrize("name", ["sum", "prod", "cumsum", "cumprod"])
def test_sum_like_result_dtypes(backend, name, source, expected):
    x = np.array([[1, 0, 1], [1, 1, 0]]).astype(bool if source == "bool" else np.float64)
    out = getattr(ops, name)(native(x, dtype=source), axis=1)
    reference = getattr(np, name)(x.astype(np.float64), axis=1)
    assert_equal(out, reference, dtype=expected)


@pytest.mark.parametrize("source", ["int8", "int32", "int64", "uint8"])
@pytest.mark.parametrize("name", ["mean", "var", "std"])
def test_mean_var_std_of_integers_give_floatx(backend, name, source):
    x = np.array([[1, 2, 4], [3, 5, 9]])
    out = getattr(ops, name)(native(x, dtype=source), axis=-1)
    assert_close(out, getattr(np, name)(x.astype(np.float64), axis=-1), dtype="float32")


@pytest.mark.parametrize("source", ["int8", "uint8", "int32", "int64", "float16", "bfloat16", "float64", "bool"])
def test_max_min_arg_keep_or_index_dtypes(backend, source):
    x = np.array([[1, 0, 1], [0, 1, 1]]).astype(np.float64)
    arr = native(x.astype(bool) if source == "bool" else x, dtype=source)
    assert_equal(ops.max(arr, axis=0), x.max(axis=0), dtype=source)
    assert_equal(ops.min(arr, axis=0), x.min(axis=0), dtype=source)
    assert_equal(ops.argmax(arr, axis=1), [0, 1], dtype="int32")
    assert_equal(ops.argmin(arr), np.argmin(x), dtype="int32")
    assert_equal(ops.count_nonzero(arr, axis=0), [1, 1, 2], dtype="int32")
    assert_equal(ops.all(arr, axis=1), [False, False], dtype="bool")
    assert_equal(ops.any(arr, axis=0), [True, True, True], dtype="bool")


def test_float16_mean_stays_float16(backend):
    x = np.linspace(-3, 3, 12).astype(np.float16)
    # float16 keeps ~3 decimal digits
    assert_close(ops.mean(native(x)), f64(x).mean(), rtol=1e-3, atol=1e-3, dtype="float16")
    assert_close(ops.sum(native(x)), f64(x).sum(), rtol=1e-3, atol=1e-2, dtype="float16")


def test_argmax_first_occurrence(backend):
    x = f32([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    assert_equal(ops.argmax(native(x), axis=1), [1, 0], dtype="int32")
    assert_equal(ops.argmin(native(x), axis=1), [3, 0], dtype="int32")
    assert_equal(ops.argmax(native(x)), np.array(1), dtype="int32")
    assert_equal(ops.argmax(native(x), axis=None, keepdims=True), np.array([[1]]), dtype="int32")


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "var", "std", "logsumexp", "max", "cumsum"])
def test_float64_reductions_are_float64_precise(backend, name):
    x = np.random.default_rng(5).uniform(0.5, 1.5, (3, 4, 5))
    reference = logsumexp if name == "logsumexp" else getattr(np, name)
    with float64_device(backend):
        for axis in (None, 1, (0, 2)) if name != "cumsum" else (None, 1):
            kwargs = {} if name == "cumsum" else {"keepdims": False}
            assert_close(getattr(ops, name)(native(x), axis=axis, **kwargs), reference(x, axis=axis, **kwargs),
                         rtol=1e-10, atol=1e-12, dtype="float64", err_msg=f"axis={axis}")
