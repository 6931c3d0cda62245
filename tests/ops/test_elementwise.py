"""Element-wise unary and binary ops against NumPy float64 on the same input values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ember import ops
from tests.helpers import (
    PROPERTY,
    assert_close,
    assert_equal,
    f32,
    f64,
    float64_device,
    float_arrays,
    floats32,
    mark_params,
    native,
    needs,
    optional_import,
    shapes,
)

special = optional_import("scipy.special")  # erf/erfinv's reference; None on a core-only install


def _nonzero(low, high):
    return st.one_of(floats32(low, high), floats32(-high, -low))


# name -> (reference on float64, (low, high) of the inputs, output kind)
UNARY = {
    "negative": (np.negative, (-10, 10)),
    "abs": (np.abs, (-10, 10)),
    "sign": (np.sign, (-10, 10)),
    "sqrt": (np.sqrt, (0, 100)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 100)),
    "square": (np.square, (-10, 10)),
    "reciprocal": (np.reciprocal, "nonzero"),
    "exp": (np.exp, (-10, 10)),
    "log": (np.log, (0.01, 100)),
    "log1p": (np.log1p, (-0.99, 10)),
    "expm1": (np.expm1, (-10, 10)),
    "log2": (np.log2, (0.01, 100)),
    "log10": (np.log10, (0.01, 100)),
    "sin": (np.sin, (-10, 10)),
    "cos": (np.cos, (-10, 10)),
    "tan": (np.tan, (-1.5, 1.5)),
    "arcsin": (np.arcsin, (-0.99, 0.99)),
    "arccos": (np.arccos, (-0.99, 0.99)),
    "arctan": (np.arctan, (-10, 10)),
    "sinh": (np.sinh, (-5, 5)),
    "cosh": (np.cosh, (-5, 5)),
    "tanh": (np.tanh, (-10, 10)),
    "arcsinh": (np.arcsinh, (-10, 10)),
    # arccosh/arctanh are ill-conditioned at their branch points (relative error
    # ~eps/distance); keep a small distance from them so float32 libraries can meet 1e-5.
    "arccosh": (np.arccosh, (1.05, 10)),
    "arctanh": (np.arctanh, (-0.95, 0.95)),
    "erf": (lambda x: special.erf(x), (-3, 3)),
    "erfinv": (lambda x: special.erfinv(x), (-0.95, 0.95)),
    "round": (np.round, (-10, 10)),
    "floor": (np.floor, (-10, 10)),
    "ceil": (np.ceil, (-10, 10)),
    "real": (np.real, (-10, 10)),
    "imag": (np.imag, (-10, 10)),
    "conj": (np.conj, (-10, 10)),
}
PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "logical_not": np.logical_not}


def _cases(names):
    """The op names as parameters; those whose reference is SciPy's skip where SciPy is not installed."""
    return mark_params(names, needs("scipy.special"), {"erf", "erfinv"})


def _unary_inputs(domain):
    if domain == "nonzero":
        elements = _nonzero(0.1, 10)
    else:
        elements = floats32(*domain)
    return hnp.arrays(np.float32, shapes(), elements=elements)


@pytest.mark.parametrize("name", _cases(UNARY))
def test_unary_float32(backend, name):
    reference, domain = UNARY[name]

    @PROPERTY
    @given(x=_unary_inputs(domain))
    def check(x):
        assert_close(getattr(ops, name)(native(x)), reference(f64(x)), dtype="float32")

    check()


@pytest.mark.parametrize("name", list(PREDICATES))
def test_predicates_float32(backend, name):
    x = f32([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -3.0])
    assert_equal(getattr(ops, name)(native(x)), PREDICATES[name](x), dtype="bool")
    assert_equal(getattr(ops, name)(native(x.reshape(7, 1)[:0])), np.zeros((0, 1), bool), dtype="bool")


@pytest.mark.parametrize("name", list(PREDICATES))
def test_predicates_on_integers_and_bools(backend, name):
    x = np.array([0, 1, -2, 7], dtype=np.int32)
    assert_equal(getattr(ops, name)(native(x)), PREDICATES[name](x), dtype="bool")
    b = np.array([True, False])
    assert_equal(getattr(ops, name)(native(b)), PREDICATES[name](b), dtype="bool")


# integer inputs: which ops keep the dtype and which go to floatx()
INT_KEEP = ["negative", "abs", "sign", "square", "floor", "ceil", "round", "real", "conj", "imag"]
INT_INPUTS = {
    "sqrt": [0, 1, 4, 9], "rsqrt": [1, 4, 9], "reciprocal": [1, -2, 4], "exp": [0, 1, -2], "log": [1, 2, 10],
    "log1p": [0, 1, 5], "expm1": [0, 1, -1], "log2": [1, 8, 3], "log10": [1, 100, 7], "sin": [0, 1, -2],
    "cos": [0, 1, -2], "tan": [0, 1, -1], "arcsin": [-1, 0, 1], "arccos": [-1, 0, 1], "arctan": [0, 5, -5],
    "sinh": [0, 1, -2], "cosh": [0, 1, -2], "tanh": [0, 1, -2], "arcsinh": [0, 3, -3], "arccosh": [1, 2, 5],
    "arctanh": [0], "erf": [0, 1, -1], "erfinv": [0],
}


@pytest.mark.parametrize("name", INT_KEEP)
def test_unary_on_int32_keeps_dtype(backend, name):
    x = np.array([-3, -1, 0, 2, 5], dtype=np.int32)
    reference = UNARY[name][0]
    assert_equal(getattr(ops, name)(native(x)), reference(x).astype(np.int32), dtype="int32")


@pytest.mark.parametrize("name", _cases(INT_INPUTS))
def test_unary_on_int32_gives_floatx(backend, name):
    x = np.array(INT_INPUTS[name], dtype=np.int32)
    reference = UNARY[name][0]
    assert_close(getattr(ops, name)(native(x)), reference(f64(x)), dtype="float32")


# float16 / bfloat16 stay in their dtype. Their resolution is 2**-11 / 2**-8 relative,
# so the tolerance is a few units in the last place of the *output* dtype.
LOW_PRECISION = {"float16": 4e-3, "bfloat16": 3e-2}


@pytest.mark.parametrize("dtype", list(LOW_PRECISION))
@pytest.mark.parametrize("name", _cases(UNARY))
def test_unary_low_precision_keeps_dtype(backend, name, dtype):
    reference, domain = UNARY[name]
    low, high = (0.5, 4.0) if domain == "nonzero" else domain
    x = np.linspace(low, high, 9).astype(np.float32)
    x = native(x, dtype=dtype)
    values = f64(ops.to_numpy(ops.cast(x, "float32")))  # the values actually fed in
    tol = LOW_PRECISION[dtype]
    if name in ("round", "floor", "ceil"):
        tol = 0
    assert_close(getattr(ops, name)(x), reference(values), rtol=tol, atol=tol, dtype=dtype)


@pytest.mark.parametrize("name", _cases(UNARY))
def test_unary_float64_is_float64_precise(backend, name):
    reference, domain = UNARY[name]
    low, high = (0.5, 4.0) if domain == "nonzero" else domain
    x = np.linspace(low, high, 13)
    with float64_device(backend):
        # DESIGN.md: float64 paths within ~1e-10 of the reference
        assert_close(getattr(ops, name)(native(x)), reference(x), rtol=1e-10, atol=1e-12, dtype="float64")


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "power", "arctan2", "maximum", "mod",
                                  "floor_divide"])
def test_binary_float64_is_float64_precise(backend, name):
    a = np.linspace(0.3, 7.7, 12).reshape(3, 4)
    positive_b = name in ("power", "divide", "mod", "floor_divide")
    b = np.linspace(0.7, 2.9, 4) if positive_b else np.linspace(-2.9, 2.2, 4)
    with float64_device(backend):
        assert_close(getattr(ops, name)(native(a), native(b)), getattr(np, name)(a, b), rtol=1e-10, atol=1e-12,
                     dtype="float64")


def test_round_half_to_even_and_decimals(backend):
    x = f32([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, 3.5])
    assert_equal(ops.round(native(x)), np.round(x), dtype="float32")
    y = f32([1.26, -3.14159, 12.349, 2.71828, 0.0])
    assert_close(ops.round(native(y), decimals=1), np.round(f64(y), 1), dtype="float32")
    assert_close(ops.round(native(y), decimals=2), np.round(f64(y), 2), dtype="float32")
    z = f32([14.0, 25.0, 35.0, 126.0, -45.0])
    assert_equal(ops.round(native(z), decimals=-1), [10.0, 20.0, 40.0, 130.0, -40.0], dtype="float32")


COMPLEX_UNARY = {
    "negative": (np.negative, "complex64"),
    "abs": (np.abs, "float32"),
    "square": (np.square, "complex64"),
    "exp": (np.exp, "complex64"),
    "sqrt": (np.sqrt, "complex64"),
    "real": (np.real, "float32"),
    "imag": (np.imag, "float32"),
    "conj": (np.conj, "complex64"),
    "reciprocal": (np.reciprocal, "complex64"),
}


@pytest.mark.parametrize("name", list(COMPLEX_UNARY))
def test_unary_complex64(backend, name):
    reference, dtype = COMPLEX_UNARY[name]
    z = np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j, -2 - 2j], dtype=np.complex64)
    assert_close(getattr(ops, name)(native(z)), reference(z.astype(np.complex128)), dtype=dtype)


# ------------------------------------------------------------------- binary

BINARY = {
    "add": (np.add, "any"),
    "subtract": (np.subtract, "any"),
    "multiply": (np.multiply, "any"),
    "divide": (np.divide, "nonzero_right"),
    "power": (np.power, "power"),
    "maximum": (np.maximum, "any"),
    "minimum": (np.minimum, "any"),
    "arctan2": (np.arctan2, "any"),
}
COMPARISONS = {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}


@st.composite
def _broadcast_pair(draw, left=None, right=None):
    shapes_pair = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
    a_shape, b_shape = shapes_pair.input_shapes
    left = floats32(-10, 10) if left is None else left
    right = left if right is None else right
    a = draw(hnp.arrays(np.float32, a_shape, elements=left))
    b = draw(hnp.arrays(np.float32, b_shape, elements=right))
    return a, b


def _pair_strategy(kind):
    if kind == "nonzero_right":
        return _broadcast_pair(right=_nonzero(0.5, 10))
    if kind == "power":
        return _broadcast_pair(left=floats32(0.1, 5), right=floats32(-3, 3))
    # a small pool of values so that ties (equal elements) are common
    return _broadcast_pair(left=st.sampled_from([-2.5, -1.0, 0.0, 0.5, 1.0, 3.0]) | floats32(-10, 10))


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_float32_broadcasting(backend, name):
    reference, kind = BINARY[name]

    @PROPERTY
    @given(pair=_pair_strategy(kind))
    def check(pair):
        a, b = pair
        assert_close(getattr(ops, name)(native(a), native(b)), reference(f64(a), f64(b)), dtype="float32")

    check()


@pytest.mark.parametrize("name", list(COMPARISONS))
def test_comparisons_broadcasting(backend, name):
    reference = COMPARISONS[name]

    @PROPERTY
    @given(pair=_pair_strategy("any"))
    def check(pair):
        a, b = pair
        assert_equal(getattr(ops, name)(native(a), native(b)), reference(a, b), dtype="bool")

    check()


@pytest.mark.parametrize("name", list(LOGICAL))
def test_logical_broadcasting(backend, name):
    reference = LOGICAL[name]

    @PROPERTY
    @given(shapes_pair=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4), data=st.data())
    def check(shapes_pair, data):
        a = data.draw(hnp.arrays(np.bool_, shapes_pair.input_shapes[0]))
        b = data.draw(hnp.arrays(np.bool_, shapes_pair.input_shapes[1]))
        assert_equal(getattr(ops, name)(native(a), native(b)), reference(a, b), dtype="bool")

    check()


@pytest.mark.parametrize("name", list(LOGICAL))
def test_logical_on_numbers_uses_truthiness(backend, name):
    a = f32([0.0, 1.5, 0.0, -2.0])
    b = np.array([0, 0, 3, 4], dtype=np.int32)
    assert_equal(getattr(ops, name)(native(a), native(b)), LOGICAL[name](a, b), dtype="bool")


@pytest.mark.parametrize("name", ["floor_divide", "mod"])
def test_floor_divide_mod_float32(backend, name):
    reference = getattr(np, name)

    # integer-valued floats: exact in float32, so the float64 reference is exact too
    @PROPERTY
    @given(pair=_broadcast_pair(left=st.integers(-20, 20).map(float),
                                right=st.integers(1, 6).map(float) | st.integers(-6, -1).map(float)))
    def check(pair):
        a, b = pair
        assert_close(getattr(ops, name)(native(a), native(b)), reference(f64(a), f64(b)), dtype="float32")

    check()
    a, b = f32([5.5, -5.5, 7.25, -7.25]), f32([2.0, 2.0, -1.5, -1.5])
    assert_close(getattr(ops, name)(native(a), native(b)), reference(f64(a), f64(b)), dtype="float32")


def test_integer_arithmetic_numpy_semantics(backend):
    a = np.array([7, -7, 7, -7, 0], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 3], dtype=np.int32)
    assert_equal(ops.floor_divide(native(a), native(b)), np.floor_divide(a, b), dtype="int32")
    assert_equal(ops.mod(native(a), native(b)), np.mod(a, b), dtype="int32")
    assert_equal(ops.add(native(a), native(b)), a + b, dtype="int32")
    assert_equal(ops.subtract(native(a), native(b)), a - b, dtype="int32")
    assert_equal(ops.multiply(native(a), native(b)), a * b, dtype="int32")
    assert_close(ops.divide(native(a), native(b)), f64(a) / f64(b), dtype="float32")
    assert_equal(ops.maximum(native(a), native(b)), np.maximum(a, b), dtype="int32")
    assert_equal(ops.minimum(native(a), native(b)), np.minimum(a, b), dtype="int32")
    base, exponent = np.array([2, 3, 4, -2], np.int32), np.array([3, 2, 0, 3], np.int32)
    assert_equal(ops.power(native(base), native(exponent)), base**exponent, dtype="int32")
    assert_equal(ops.floor_divide(native(a), 2), a // 2, dtype="int32")
    assert_equal(ops.mod(native(a), 3), a % 3, dtype="int32")


def test_int8_wraps_like_numpy(backend):
    a = np.array([100, -100, 127], dtype=np.int8)
    assert_equal(ops.add(native(a), native(a)), (a + a), dtype="int8")


SCALAR_CASES = [
    ("add", (None, 2.5)), ("add", (2.5, None)), ("subtract", (1, None)), ("subtract", (None, 1)),
    ("multiply", (None, -3)), ("divide", (1.0, None)), ("divide", (None, 4)), ("power", (None, 2)),
    ("power", (2.0, None)), ("maximum", (None, 0.0)), ("minimum", (0, None)), ("arctan2", (1.0, None)),
]


@pytest.mark.parametrize(("name", "args"), SCALAR_CASES)
def test_binary_with_python_scalars_stays_float32(backend, name, args):
    x = f32([0.5, 1.0, 2.0, 3.5])
    native_args = [native(x) if a is None else a for a in args]
    ref_args = [f64(x) if a is None else a for a in args]
    assert_close(getattr(ops, name)(*native_args), getattr(np, name)(*ref_args), dtype="float32")


def test_binary_with_zero_d_arrays(backend):
    x = f32([[1.0, 2.0], [3.0, 4.0]])
    s = np.float32(2.5)
    assert_close(ops.add(native(x), native(np.array(s))), f64(x) + 2.5, dtype="float32")
    assert_close(ops.multiply(native(np.array(s)), native(np.array(s))), np.array(6.25), dtype="float32")
    assert_equal(ops.less(native(np.array(s)), native(x)), s < x, dtype="bool")


def test_binary_empty_broadcast(backend):
    a = np.zeros((0, 3), np.float32)
    b = f32([1.0, 2.0, 3.0])
    assert_close(ops.add(native(a), native(b)), np.zeros((0, 3)), dtype="float32")
    assert_equal(ops.equal(native(a), native(b)), np.zeros((0, 3), bool), dtype="bool")


def test_incompatible_broadcast_is_value_error(backend):
    with pytest.raises(ValueError):
        ops.add(native(np.ones((2, 3), np.float32)), native(np.ones((4,), np.float32)))


def test_maximum_minimum_propagate_nan(backend):
    a, b = f32([np.nan, 1.0, 2.0]), f32([0.0, np.nan, 1.0])
    assert_equal(ops.maximum(native(a), native(b)), np.maximum(a, b), dtype="float32")
    assert_equal(ops.minimum(native(a), native(b)), np.minimum(a, b), dtype="float32")


def test_arctan2_quadrants_and_zeros(backend):
    y = f32([1, 1, -1, -1, 0, 0, 0.0, 2])
    x = f32([1, -1, 1, -1, 1, -1, 0.0, 0])
    assert_close(ops.arctan2(native(y), native(x)), np.arctan2(f64(y), f64(x)), dtype="float32")


def test_complex_binary(backend):
    a = np.array([1 + 2j, -1j, 3], dtype=np.complex64)
    b = np.array([2 - 1j, 1 + 1j, -0.5j], dtype=np.complex64)
    ref_a, ref_b = a.astype(np.complex128), b.astype(np.complex128)
    assert_close(ops.add(native(a), native(b)), ref_a + ref_b, dtype="complex64")
    assert_close(ops.multiply(native(a), native(b)), ref_a * ref_b, dtype="complex64")
    assert_close(ops.divide(native(a), native(b)), ref_a / ref_b, dtype="complex64")
    assert_equal(ops.equal(native(a), native(a)), [True, True, True], dtype="bool")


# ------------------------------------------------------------- isclose / clip / where


# The arguments of the isclose under test, not tolerances of this test.
ISCLOSE_KWARGS = [{}, {"rtol": 1e-3}, {"atol": 0.1}, {"equal_nan": True}, {"rtol": 0.0, "atol": 0.0}]


@pytest.mark.parametrize("kwargs", ISCLOSE_KWARGS)
def test_isclose(backend, kwargs):
    a = f32([1.0, 1.0, np.nan, np.inf, -np.inf, 0.0, 100.0])
    b = f32([1.0, 1.0001, np.nan, np.inf, np.inf, 1e-9, 100.05])
    assert_equal(ops.isclose(native(a), native(b), **kwargs), np.isclose(a, b, **kwargs), dtype="bool")


def test_isclose_broadcasts(backend):
    a = f32([[1.0], [2.0]])
    b = f32([1.0, 2.0, 2.0000001])
    assert_equal(ops.isclose(native(a), native(b)), np.isclose(a, b), dtype="bool")


@pytest.mark.parametrize(("low", "high"), [(-1.0, 1.0), (None, 0.5), (0.0, None), (2.0, 2.0)])
def test_clip_float(backend, low, high):
    @PROPERTY
    @given(x=float_arrays())
    def check(x):
        assert_close(ops.clip(native(x), low, high), np.clip(f64(x), low, high), dtype="float32")

    check()


def test_clip_int_and_array_bounds(backend):
    x = np.arange(-5, 6, dtype=np.int32)
    assert_equal(ops.clip(native(x), -2, 3), np.clip(x, -2, 3), dtype="int32")
    y = f32([[-3.0, 0.0, 3.0], [1.0, 2.0, 5.0]])
    low, high = f32([-1.0, 0.5, 0.0]), f32([[1.0], [4.0]])
    assert_close(ops.clip(native(y), native(low), native(high)), np.clip(y, low, high), dtype="float32")


def test_where_three_arguments(backend):
    @PROPERTY
    @given(shapes3=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=4), data=st.data())
    def check(shapes3, data):
        c_shape, a_shape, b_shape = shapes3.input_shapes
        cond = data.draw(hnp.arrays(np.bool_, c_shape))
        a = data.draw(float_arrays(a_shape))
        b = data.draw(float_arrays(b_shape))
        assert_close(ops.where(native(cond), native(a), native(b)), np.where(cond, a, b), dtype="float32")

    check()


def test_where_dtypes_and_scalars(backend):
    cond = np.array([True, False, True])
    x = f32([1.0, 2.0, 3.0])
    i = np.array([4, 5, 6], dtype=np.int32)
    assert_close(ops.where(native(cond), native(x), 0.0), np.where(cond, x, 0.0), dtype="float32")
    assert_close(ops.where(native(cond), native(i), native(x)), np.where(cond, i, x), dtype="float32")
    assert_equal(ops.where(native(cond), native(i), -1), np.where(cond, i, -1), dtype="int32")
    assert_equal(ops.where(native(cond), 1, 0), np.where(cond, 1, 0), dtype="int32")
    assert_close(ops.where(native(f32([0.0, 2.0, 0.0])), native(x), 9.0), [9.0, 2.0, 9.0], dtype="float32")


def test_where_one_argument_is_nonzero(backend):
    x = np.array([[0, 3, 0], [4, 0, 5]], dtype=np.int32)
    result = ops.where(native(x))
    expected = np.nonzero(x)
    assert isinstance(result, tuple) and len(result) == 2
    for got, want in zip(result, expected):
        assert_equal(got, want, dtype="int32")
