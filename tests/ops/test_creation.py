"""Conversion, introspection and creation ops against NumPy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ember import dtypes, ops
from tests.helpers import assert_close, assert_equal, native

# ---------------------------------------------------------------- conversion


@pytest.mark.parametrize(
    ("value", "dtype", "shape"),
    [
        ([1, 2, 3], "int32", (3,)),
        ([[1.0, 2.0], [3.0, 4.0]], "float32", (2, 2)),
        ([True, False], "bool", (2,)),
        ([1, 2.5], "float32", (2,)),
        ([1 + 2j, 3], "complex64", (2,)),
        (3, "int32", ()),
        (2.5, "float32", ()),
        (True, "bool", ()),
        ([], "float32", (0,)),
        (np.float32(1.5), "float32", ()),
        (np.arange(4, dtype=np.int64), "int64", (4,)),
        (np.arange(4, dtype=np.uint8), "uint8", (4,)),
        (np.ones((2, 0, 3), dtype=np.float16), "float16", (2, 0, 3)),
        (np.array(3.0, dtype=np.float64), "float64", ()),
    ],
)
def test_convert_to_tensor_infers_dtype(backend, value, dtype, shape):
    x = ops.convert_to_tensor(value)
    assert ops.is_array(x)
    assert ops.dtype(x) == dtype
    assert ops.shape(x) == shape
    np.testing.assert_array_equal(ops.to_numpy(x), np.asarray(value))


def test_convert_to_tensor_with_dtype(backend):
    x = ops.convert_to_tensor([1, 2, 3], dtype="float16")
    assert_equal(x, [1, 2, 3], dtype="float16")
    x = ops.convert_to_tensor(np.array([1.7, -1.7]), dtype="int32")
    assert_equal(x, [1, -1], dtype="int32")
    x = ops.asarray([0.5], dtype="bfloat16")
    assert_equal(x, [0.5], dtype="bfloat16")


def test_convert_to_tensor_returns_same_native_object(backend):
    x = ops.zeros((2, 2))
    assert ops.convert_to_tensor(x) is x
    assert ops.convert_to_tensor(x, dtype="float32") is x
    assert ops.asarray(x) is x
    y = ops.convert_to_tensor(x, dtype="float16")
    assert ops.dtype(y) == "float16" and ops.dtype(x) == "float32"


def test_convert_bfloat16_numpy_losslessly(backend):
    values = np.array([1.0, -2.5, 3.140625, 1e-3], dtype=ml_dtypes.bfloat16)
    x = ops.convert_to_tensor(values)
    assert ops.dtype(x) == "bfloat16"
    back = ops.to_numpy(x)
    assert back.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(back.view(np.uint16), values.view(np.uint16))


def test_to_numpy_returns_ndarray(backend):
    for value in (ops.zeros((2, 3)), ops.sum(ops.ones((3,))), ops.convert_to_tensor(2.5)):
        out = ops.to_numpy(value)
        assert isinstance(out, np.ndarray)
    assert ops.to_numpy(ops.convert_to_tensor(2.5)).shape == ()


def test_is_array(backend):
    assert ops.is_array(ops.zeros((1,)))
    assert ops.is_array(ops.convert_to_tensor(1.0))
    assert not ops.is_array([1, 2])
    assert not ops.is_array(1.0)
    assert not ops.is_array(None)
    if backend != "numpy":
        assert not ops.is_array(np.zeros(2))


def test_shape_ndim_size_are_python_ints(backend):
    x = ops.zeros((2, 3, 4))
    shape = ops.shape(x)
    assert isinstance(shape, tuple) and shape == (2, 3, 4)
    assert all(type(d) is int for d in shape)
    assert ops.ndim(x) == 3 and type(ops.ndim(x)) is int
    assert ops.size(x) == 24 and type(ops.size(x)) is int
    scalar = ops.convert_to_tensor(1.0)
    assert ops.shape(scalar) == () and ops.ndim(scalar) == 0 and ops.size(scalar) == 1
    empty = ops.zeros((3, 0))
    assert ops.shape(empty) == (3, 0) and ops.size(empty) == 0


@pytest.mark.parametrize("name", ["bool", "int8", "int16", "int32", "int64", "uint8",
                                  "float16", "bfloat16", "float32", "float64", "complex64"])
def test_dtype_names(backend, name):
    assert ops.dtype(ops.zeros((2,), dtype=name)) == name


def test_stop_gradient_keeps_values(backend):
    x = native([1.0, -2.0, 3.5])
    y = ops.stop_gradient(x)
    assert_equal(y, [1.0, -2.0, 3.5], dtype="float32")


# ------------------------------------------------------------------ creation


@pytest.mark.parametrize("shape", [3, (2, 3), (), (0,), (2, 0, 1), [2, 2]])
@pytest.mark.parametrize("op", ["zeros", "ones"])
def test_zeros_ones(backend, op, shape):
    expected = getattr(np, op)(shape)
    assert_equal(getattr(ops, op)(shape), expected, dtype="float32")
    assert_equal(getattr(ops, op)(shape, dtype="int8"), expected, dtype="int8")
    assert_equal(getattr(ops, op)(shape, dtype="bool"), expected.astype(bool), dtype="bool")


@pytest.mark.parametrize(
    ("fill", "dtype", "expected_dtype"),
    [(7, None, "int32"), (1.5, None, "float32"), (True, None, "bool"), (2, "float16", "float16"),
     (-3.25, "float64", "float64"), (1.5, "int32", "int32")],
)
def test_full(backend, fill, dtype, expected_dtype):
    out = ops.full((2, 3), fill, dtype=dtype)
    assert_equal(out, np.full((2, 3), fill).astype(dtypes.to_numpy_dtype(expected_dtype)), dtype=expected_dtype)


def test_full_scalar_shape(backend):
    assert_equal(ops.full((), 4.0), np.array(4.0), dtype="float32")
    assert_equal(ops.full(3, 2), np.full(3, 2), dtype="int32")


@pytest.mark.parametrize("source_dtype", ["float32", "int8", "bool", "float16"])
def test_like_ops_keep_shape_and_dtype(backend, source_dtype):
    x = native(np.arange(6).reshape(2, 3) % 2, dtype=source_dtype)
    assert_equal(ops.zeros_like(x), np.zeros((2, 3)), dtype=source_dtype)
    assert_equal(ops.ones_like(x), np.ones((2, 3)), dtype=source_dtype)
    assert_equal(ops.full_like(x, 1), np.ones((2, 3)), dtype=source_dtype)
    assert_equal(ops.zeros_like(x, dtype="float64"), np.zeros((2, 3)), dtype="float64")
    assert_equal(ops.ones_like(x, dtype="int16"), np.ones((2, 3)), dtype="int16")
    assert_equal(ops.full_like(x, 2.5, dtype="float32"), np.full((2, 3), 2.5), dtype="float32")


def test_like_ops_on_empty_and_scalar(backend):
    assert_equal(ops.zeros_like(ops.zeros((0, 2))), np.zeros((0, 2)), dtype="float32")
    assert_equal(ops.full_like(native(3.0), 7.0), np.array(7.0), dtype="float32")


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((3,), {}), ((3, 4), {}), ((4, 3), {"k": 1}), ((3,), {"k": -1}), ((3, 5), {"k": 2}),
     ((2,), {"dtype": "int32"}), ((0,), {}), ((3,), {"M": 2})],
)
def test_eye(backend, args, kwargs):
    dtype = kwargs.get("dtype", "float32")
    np_kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}
    assert_equal(ops.eye(*args, **kwargs), np.eye(*args, **np_kwargs), dtype=dtype)


@pytest.mark.parametrize(
    ("args", "kwargs", "dtype"),
    [
        ((3,), {}, "int32"),
        ((0.5, 3), {}, "float32"),
        ((1, 10, 3), {}, "int32"),
        ((10, 0, -2), {}, "int32"),
        ((0, 1, 0.25), {}, "float32"),
        ((3,), {"dtype": "float32"}, "float32"),
        ((5, 2), {}, "int32"),
        ((0,), {}, "int32"),
        ((-3, 3), {"dtype": "int8"}, "int8"),
        ((2.0,), {}, "float32"),
        ((1, 2, 0.1), {}, "float32"),
    ],
)
def test_arange(backend, args, kwargs, dtype):
    assert_close(ops.arange(*args, **kwargs), np.arange(*(np.float64(a) for a in args)), dtype=dtype)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((0, 1), {}), ((0, 1, 5), {}), ((-2.5, 7.5, 9), {"endpoint": False}), ((3, 3, 4), {}),
     ((0, 1, 1), {}), ((1, 0, 0), {}), ((0, 10, 5), {"dtype": "float64"}), ((10, -10, 21), {})],
)
def test_linspace(backend, args, kwargs):
    dtype = kwargs.get("dtype", "float32")
    np_kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}
    rtol, atol = (1e-12, 1e-12) if dtype == "float64" else (1e-5, 1e-6)
    assert_close(ops.linspace(*args, **kwargs), np.linspace(*args, **np_kwargs), rtol=rtol, atol=atol, dtype=dtype)


def test_linspace_endpoints_exact(backend):
    out = ops.to_numpy(ops.linspace(-1.3, 2.7, 7))
    assert out[0] == np.float32(-1.3) and out[-1] == np.float32(2.7)
