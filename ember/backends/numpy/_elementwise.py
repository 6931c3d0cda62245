"""Element-wise ops of the NumPy backend (re-exported by ``core``).

NumPy returns scalars (``numpy.float32``) rather than 0-d arrays from ufuncs on 0-d inputs;
every op here returns an ``ndarray`` (see ``_base.out``).
"""

from __future__ import annotations

import numpy as np

from ember.backends._common import broadcast_error, named_op
from ember.backends.numpy import _special
from ember.backends.numpy._base import (
    BF16,
    BOOL,
    F32,
    F64,
    I32,
    ND,
    binary,
    check_int_scalar,
    float_operands,
    floatx,
    name_of,
    operands,
    out,
    to_float,
    to_native,
)
from ember.backends.numpy._index import (
    nonzero,
)

_nd = ND
# Dtypes the floating ops take as they are (bfloat16 too, through the slower check).
_NATIVE_FLOATS = frozenset(np.dtype(name) for name in ("float16", "float32", "float64", "complex64", "complex128"))

# ------------------------------------------------------------------- elementwise unary


def _float_input(x):
    """``x`` as an array; integers and bools cast to ``floatx()`` (transcendental ops)."""
    x = to_native(x)
    return x.astype(floatx()) if x.dtype.kind in "biu" else x


def _float_unary(ufunc, name):
    """A floating elementwise op; the guard lets float32/64, float16 and complex through at once."""

    def op(x):
        if type(x) is not _nd or x.dtype not in _NATIVE_FLOATS:
            x = _float_input(x)
        r = ufunc(x)
        return r if type(r) is _nd else out(r)

    return named_op(op, name)


def negative(x):
    if type(x) is not _nd:
        x = to_native(x)
    if x.dtype == BOOL:
        raise TypeError("negative: not defined for bool arrays; use logical_not")
    r = np.negative(x)
    return r if type(r) is _nd else out(r)


def abs(x):
    if type(x) is not _nd:
        x = to_native(x)
    r = np.abs(x)
    return r if type(r) is _nd else out(r)


def sign(x):
    x = to_native(x)
    if x.dtype == BOOL:
        return x.copy()
    if x.dtype.kind == "u":
        return out(x > 0).astype(x.dtype)
    return out(np.sign(x))


def rsqrt(x):
    x = to_float(to_native(x))
    return out(np.reciprocal(np.sqrt(x)))


def square(x):
    if type(x) is not _nd:
        x = to_native(x)
    if x.dtype == BOOL:
        x = x.astype(I32)
    r = np.square(x)
    return r if type(r) is _nd else out(r)


sqrt = _float_unary(np.sqrt, "sqrt")
reciprocal = _float_unary(np.reciprocal, "reciprocal")
exp = _float_unary(np.exp, "exp")
log = _float_unary(np.log, "log")
log1p = _float_unary(np.log1p, "log1p")
expm1 = _float_unary(np.expm1, "expm1")
log2 = _float_unary(np.log2, "log2")
log10 = _float_unary(np.log10, "log10")
sin = _float_unary(np.sin, "sin")
cos = _float_unary(np.cos, "cos")
tan = _float_unary(np.tan, "tan")
arcsin = _float_unary(np.arcsin, "arcsin")
arccos = _float_unary(np.arccos, "arccos")
arctan = _float_unary(np.arctan, "arctan")
sinh = _float_unary(np.sinh, "sinh")
cosh = _float_unary(np.cosh, "cosh")
tanh = _float_unary(np.tanh, "tanh")
arcsinh = _float_unary(np.arcsinh, "arcsinh")
arccosh = _float_unary(np.arccosh, "arccosh")
arctanh = _float_unary(np.arctanh, "arctanh")


def _real_float64_kernel(kernel, x, op):
    """Run a float64 kernel on a real input, returning the input's float dtype."""
    x = to_float(to_native(x))
    if x.dtype.kind == "c":
        raise TypeError(f"{op}: complex input is not supported (received {x.dtype})")
    return out(kernel(x.astype(F64)).astype(x.dtype, copy=False))


def erf(x):
    return _real_float64_kernel(_special.erf, x, "erf")


def erfinv(x):
    return _real_float64_kernel(_special.erfinv, x, "erfinv")


def round(x, decimals=0):
    x = to_native(x)
    decimals = int(decimals)
    if x.dtype == BOOL:
        return x.copy()
    if x.dtype.kind in "iu":
        return x.copy() if decimals >= 0 else out(np.round(x, decimals))
    if x.dtype.itemsize == 2 and decimals != 0:  # float16/bfloat16: scale in float32
        return out(np.round(x.astype(F32), decimals).astype(x.dtype))
    return out(np.round(x, decimals))


def floor(x):
    x = to_native(x)
    if x.dtype.kind in "biu":
        return x.copy()
    return out(np.floor(x))


def ceil(x):
    x = to_native(x)
    if x.dtype.kind in "biu":
        return x.copy()
    return out(np.ceil(x))


def isnan(x):
    x = to_native(x)
    if x.dtype.kind in "biu":
        return np.zeros(x.shape, BOOL)
    return out(np.isnan(x))


def isinf(x):
    x = to_native(x)
    if x.dtype.kind in "biu":
        return np.zeros(x.shape, BOOL)
    return out(np.isinf(x))


def isfinite(x):
    x = to_native(x)
    if x.dtype.kind in "biu":
        return np.ones(x.shape, BOOL)
    return out(np.isfinite(x))


def logical_not(x):
    return out(np.logical_not(to_native(x)))


def real(x):
    x = to_native(x)
    return out(np.real(x)) if x.dtype.kind == "c" else x


def imag(x):
    x = to_native(x)
    return out(np.imag(x)) if x.dtype.kind == "c" else np.zeros(x.shape, x.dtype)


def conj(x):
    x = to_native(x)
    return out(np.conj(x)) if x.dtype.kind == "c" else x


# ------------------------------------------------------------------ elementwise binary


def _binary_op(ufunc, name):
    """An elementwise op on inputs promoted by Ember's rules (no work when they already agree)."""

    def op(x1, x2):
        if type(x1) is not _nd or type(x2) is not _nd or x1.dtype is not x2.dtype:
            x1, x2 = operands(x1, x2)
        try:
            r = ufunc(x1, x2)
        except ValueError:
            raise broadcast_error(name, x1, x2) from None
        return r if type(r) is _nd else out(r)

    return named_op(op, name)


def _float_binary(ufunc, name):
    """A floating binary op: integer and bool inputs give ``floatx()``."""

    def op(x1, x2):
        if type(x1) is not _nd or type(x2) is not _nd or x1.dtype is not x2.dtype or x1.dtype not in _NATIVE_FLOATS:
            x1, x2 = float_operands(x1, x2)
        try:
            r = ufunc(x1, x2)
        except ValueError:
            raise broadcast_error(name, x1, x2) from None
        return r if type(r) is _nd else out(r)

    return named_op(op, name)


def _int_pair(x1, x2):
    """Promoted operands; a bool result dtype becomes int32 (NumPy has no bool loop for these ops)."""
    x1, x2 = operands(x1, x2)
    array = x1 if isinstance(x1, _nd) else x2  # operands leaves at most one Python scalar
    if array.dtype == BOOL:
        x1, x2 = np.asarray(x1, I32), np.asarray(x2, I32)
    return x1, x2


def floor_divide(x1, x2):
    x1, x2 = _int_pair(x1, x2)
    return out(np.floor_divide(x1, x2))


def mod(x1, x2):
    x1, x2 = _int_pair(x1, x2)
    return out(np.mod(x1, x2))


def power(x1, x2):
    if type(x2) is int and x2 < 0:
        _check_integer_power(x1, x2)
    x1, x2 = _int_pair(x1, x2)
    return out(np.power(x1, x2))


def _check_integer_power(x1, x2):
    """NumPy's rule: an integer (or bool) base with a negative integer exponent is a ValueError."""
    base = to_native(x1, "x1")
    if base.dtype.kind in "biu":
        raise ValueError(
            f"power: integers to negative integer powers are not allowed (received a {name_of(base.dtype)} "
            f"base and exponent {x2}); cast x1 to a float dtype first")


add = _binary_op(np.add, "add")
subtract = _binary_op(np.subtract, "subtract")
multiply = _binary_op(np.multiply, "multiply")
maximum = _binary_op(np.maximum, "maximum")
minimum = _binary_op(np.minimum, "minimum")


def _comparison_op(ufunc, name):
    """A comparison: like :func:`_binary_op`, but NumPy compares an out-of-range Python int
    exactly, where the other backends (and every arithmetic op) raise OverflowError; so do we."""

    def op(x1, x2):
        if type(x1) is not _nd or type(x2) is not _nd or x1.dtype is not x2.dtype:
            x1, x2 = operands(x1, x2)  # a weak Python int that keeps the array's dtype stays an int
            if type(x2) is int:
                check_int_scalar(x2, x1.dtype)
            elif type(x1) is int:
                check_int_scalar(x1, x2.dtype)
        r = ufunc(x1, x2)
        return r if type(r) is _nd else out(r)

    return named_op(op, name)


equal = _comparison_op(np.equal, "equal")
not_equal = _comparison_op(np.not_equal, "not_equal")
less = _comparison_op(np.less, "less")
less_equal = _comparison_op(np.less_equal, "less_equal")
greater = _comparison_op(np.greater, "greater")
greater_equal = _comparison_op(np.greater_equal, "greater_equal")
divide = _float_binary(np.true_divide, "divide")
arctan2 = _float_binary(np.arctan2, "arctan2")


def logical_and(x1, x2):
    return out(np.logical_and(to_native(x1, "x1"), to_native(x2, "x2")))


def logical_or(x1, x2):
    return out(np.logical_or(to_native(x1, "x1"), to_native(x2, "x2")))


def logical_xor(x1, x2):
    return out(np.logical_xor(to_native(x1, "x1"), to_native(x2, "x2")))


def isclose(x1, x2, rtol=1e-05, atol=1e-08, equal_nan=False):
    x1, x2 = binary(x1, x2)
    if x1.dtype == BOOL:
        return out(np.equal(x1, x2))
    if x1.dtype.kind in "iu":
        x1, x2 = x1.astype(F64), x2.astype(F64)
    elif x1.dtype == BF16:
        x1, x2 = x1.astype(F32), x2.astype(F32)
    return out(np.isclose(x1, x2, rtol=rtol, atol=atol, equal_nan=equal_nan))


def clip(x, x_min, x_max):
    # Result dtype: result_type(x, x_min, x_max) (weak Python scalars); bool -> int32.
    r = to_native(x)
    try:
        if x_min is not None:
            r = np.maximum(*binary(r, x_min))
        if x_max is not None:
            r = np.minimum(*binary(r, x_max))
    except ValueError:
        raise broadcast_error("clip", to_native(x), *(b for b in (x_min, x_max) if b is not None)) from None
    r = out(r)
    return r.astype(I32) if r.dtype == BOOL else r


def where(condition, x1=None, x2=None):
    if x1 is None and x2 is None:
        return nonzero(condition)
    if x1 is None or x2 is None:
        raise ValueError("where: give both x1 and x2, or neither (to get the indices of non-zero entries)")
    condition = to_native(condition, "condition")
    if condition.dtype != BOOL:
        condition = condition.astype(BOOL)
    x1, x2 = binary(x1, x2)
    try:
        return out(np.where(condition, x1, x2))
    except ValueError:
        raise broadcast_error("where", condition, x1, x2) from None
