"""Element-wise math of the MLX backend (re-exported by :mod:`.core`).

Binary ops promote through :func:`._base.binary` (Ember's rules, weak Python scalars)
and call the MLX function bound at module level. Transcendental and true-division ops
compute integers and bools in ``floatx()``; float64 inputs of the functions MLX
evaluates with float32-grade kernels go to :mod:`._f64`.
"""

from __future__ import annotations

import builtins

import mlx.core as mx

from ember.backends._common import broadcast_error
from ember.backends.mlx import _base, _f64
from ember.backends.mlx._base import (
    DEVICE,
    FLOATS,
    INEXACT,
    A,
    binary,
    binary_same,
    floatx,
    inexact,
    to_mx,
)
from ember.backends.mlx._index import nonzero

# ------------------------------------------------------------------------ elementwise unary


def negative(x):
    x = to_mx(x)
    if x.dtype == mx.bool_:
        raise TypeError("negative: not supported for bool arrays; use logical_not")
    return mx.negative(x)


def abs(x):
    return mx.abs(to_mx(x))


def sign(x):
    return mx.sign(to_mx(x))


def sqrt(x):
    return mx.sqrt(inexact(x))


def rsqrt(x):
    return mx.rsqrt(inexact(x))


def square(x):
    x = to_mx(x)
    if x.dtype == mx.bool_:  # bool counts as 0/1: int32, as sum(bool)
        x = x.astype(mx.int32)
    return mx.square(x)


def reciprocal(x):
    return mx.reciprocal(inexact(x))


def exp(x):
    x = inexact(x)
    return _f64.exp(x) if x.itemsize == 8 and x.dtype == mx.float64 else mx.exp(x)


def log(x):
    return mx.log(inexact(x))


def log1p(x):
    return mx.log1p(inexact(x))


def expm1(x):
    return mx.expm1(inexact(x))


def log2(x):
    return mx.log2(inexact(x))


def log10(x):
    return mx.log10(inexact(x))


def sin(x):
    x = inexact(x)
    return _f64.sin(x) if x.itemsize == 8 and x.dtype == mx.float64 else mx.sin(x)


def cos(x):
    x = inexact(x)
    return _f64.cos(x) if x.itemsize == 8 and x.dtype == mx.float64 else mx.cos(x)


def tan(x):
    return mx.tan(inexact(x))


def arcsin(x):
    return mx.arcsin(inexact(x))


def arccos(x):
    return mx.arccos(inexact(x))


def arctan(x):
    return mx.arctan(inexact(x))


def sinh(x):
    return mx.sinh(inexact(x))


def cosh(x):
    return mx.cosh(inexact(x))


def tanh(x):
    return mx.tanh(inexact(x))


def arcsinh(x):
    return mx.arcsinh(inexact(x))


def arccosh(x):
    return mx.arccosh(inexact(x))


def arctanh(x):
    return mx.arctanh(inexact(x))


def erf(x):
    x = inexact(x)
    return _f64.erf(x) if x.itemsize == 8 and x.dtype == mx.float64 else mx.erf(x)


def erfinv(x):
    x = inexact(x)
    return _f64.erfinv(x) if x.itemsize == 8 and x.dtype == mx.float64 else mx.erfinv(x)


def round(x, decimals=0):
    x = to_mx(x)
    decimals = int(decimals)
    if x.dtype not in INEXACT:
        if decimals >= 0 or x.dtype == mx.bool_:
            return x
        # Integers with negative decimals: round half to even in floating point, back to the dtype.
        work = mx.float32 if DEVICE.gpu else mx.float64
        return round(x.astype(work), decimals).astype(x.dtype)
    if decimals == 0:
        return mx.round(x)
    # NumPy's formula in the input's dtype (MLX's own decimals path scales in float32).
    if decimals > 0:
        scale = 10.0 ** decimals
        return mx.round(x * scale) / scale
    scale = 10.0 ** -decimals
    return mx.round(x / scale) * scale


def floor(x):
    x = to_mx(x)
    return mx.floor(x) if x.dtype in FLOATS else x


def ceil(x):
    x = to_mx(x)
    return mx.ceil(x) if x.dtype in FLOATS else x


def isnan(x):
    x = to_mx(x)
    if x.dtype in INEXACT:
        return mx.isnan(x)
    return mx.zeros(x.shape, dtype=mx.bool_)


def isinf(x):
    x = to_mx(x)
    if x.dtype in INEXACT:
        return mx.isinf(x)
    return mx.zeros(x.shape, dtype=mx.bool_)


def isfinite(x):
    x = to_mx(x)
    if x.dtype in INEXACT:
        return mx.isfinite(x)
    return mx.ones(x.shape, dtype=mx.bool_)


def logical_not(x):
    return mx.logical_not(to_mx(x))


def real(x):
    x = to_mx(x)
    return mx.real(x) if x.dtype == mx.complex64 else x


def imag(x):
    x = to_mx(x)
    return mx.imag(x) if x.dtype == mx.complex64 else mx.zeros(x.shape, dtype=x.dtype)


def conj(x):
    x = to_mx(x)
    return mx.conj(x) if x.dtype == mx.complex64 else x


# ----------------------------------------------------------------------- elementwise binary

# Module-level aliases: one global lookup instead of a global plus an attribute per call.
# Each binary op first inlines the fast path of ``binary`` (two native arrays of equal,
# non-8-byte item size, whose MLX promotion is Ember's): ~0.15 us over the MLX call.
_add, _subtract, _multiply, _divide = mx.add, mx.subtract, mx.multiply, mx.divide
_floor_divide, _remainder, _power = mx.floor_divide, mx.remainder, mx.power
_maximum, _minimum = mx.maximum, mx.minimum
_equal, _not_equal, _less, _less_equal = mx.equal, mx.not_equal, mx.less, mx.less_equal
_greater, _greater_equal = mx.greater, mx.greater_equal


def add(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and x1.itemsize == x2.itemsize != 8:
            return _add(x1, x2)
        x1, x2 = binary(x1, x2)
        return _add(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("add", x1, x2) from None


def subtract(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and 1 < x1.itemsize == x2.itemsize < 8:  # (1 byte: maybe bool)
            return _subtract(x1, x2)
        x1, x2 = binary(x1, x2)
        if x1.itemsize == 1 and x1.dtype == mx.bool_ and x2.dtype == mx.bool_:
            raise TypeError("subtract: not supported for two bool arrays; use logical_xor")
        return _subtract(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("subtract", x1, x2) from None


def multiply(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and x1.itemsize == x2.itemsize != 8:
            return _multiply(x1, x2)
        x1, x2 = binary(x1, x2)
        return _multiply(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("multiply", x1, x2) from None


def divide(x1, x2):
    try:
        x1, x2 = binary(x1, x2)
        if x1.dtype not in INEXACT or x2.dtype not in INEXACT:
            x1, x2 = _true_division_operands(x1, x2)
        return _divide(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("divide", x1, x2) from None


def _true_division_operands(x1, x2):
    """Common dtype of ``x1`` and ``x2``; integer and bool results become ``floatx()``."""
    x1, x2 = binary_same(x1, x2)
    if x1.dtype not in INEXACT:
        target = floatx()
        x1, x2 = x1.astype(target), x2.astype(target)
    return x1, x2


def floor_divide(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and 1 < x1.itemsize == x2.itemsize < 8:  # (1 byte: maybe bool)
            return _floor_divide(x1, x2)
        x1, x2 = _numeric(*binary(x1, x2))
        return _floor_divide(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("floor_divide", x1, x2) from None


def mod(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and 1 < x1.itemsize == x2.itemsize < 8:  # (1 byte: maybe bool)
            return _remainder(x1, x2)
        x1, x2 = _numeric(*binary(x1, x2))
        return _remainder(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("mod", x1, x2) from None


def power(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and 1 < x1.itemsize == x2.itemsize < 8:  # (1 byte: maybe bool)
            return _power(x1, x2)
        if type(x2) is int and x2 < 0:
            _check_integer_power(x1, x2)
        x1, x2 = _numeric(*binary(x1, x2))
        return _power(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("power", x1, x2) from None


def _check_integer_power(x1, x2):
    """NumPy's rule: an integer (or bool) base with a negative integer exponent is a ValueError."""
    base = to_mx(x1, "x1")
    if base.dtype not in INEXACT:
        raise ValueError(
            f"power: integers to negative integer powers are not allowed (received a {_base.FROM_MX[base.dtype]} "
            f"base and exponent {x2}); cast x1 to a float dtype first")


def _numeric(x1, x2):
    """Two bool operands of arithmetic that counts bool as 0/1 (floor_divide, mod, power) become int32."""
    if x1.itemsize == 1 and x1.dtype == mx.bool_ and x2.dtype == mx.bool_:
        return x1.astype(mx.int32), x2.astype(mx.int32)
    return x1, x2


def maximum(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and x1.itemsize == x2.itemsize != 8:
            return _maximum(x1, x2)
        x1, x2 = binary(x1, x2)
        return _maximum(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("maximum", x1, x2) from None


def minimum(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and x1.itemsize == x2.itemsize != 8:
            return _minimum(x1, x2)
        x1, x2 = binary(x1, x2)
        return _minimum(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("minimum", x1, x2) from None


def arctan2(x1, x2):
    try:
        x1, x2 = _true_division_operands(x1, x2)
        return mx.arctan2(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("arctan2", x1, x2) from None


def equal(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and x1.itemsize == x2.itemsize != 8:
            return _equal(x1, x2)
        x1, x2 = binary(x1, x2)
        return _equal(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("equal", x1, x2) from None


def not_equal(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and x1.itemsize == x2.itemsize != 8:
            return _not_equal(x1, x2)
        x1, x2 = binary(x1, x2)
        return _not_equal(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("not_equal", x1, x2) from None


def less(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and x1.itemsize == x2.itemsize != 8:
            return _less(x1, x2)
        x1, x2 = binary(x1, x2)
        return _less(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("less", x1, x2) from None


def less_equal(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and x1.itemsize == x2.itemsize != 8:
            return _less_equal(x1, x2)
        x1, x2 = binary(x1, x2)
        return _less_equal(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("less_equal", x1, x2) from None


def greater(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and x1.itemsize == x2.itemsize != 8:
            return _greater(x1, x2)
        x1, x2 = binary(x1, x2)
        return _greater(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("greater", x1, x2) from None


def greater_equal(x1, x2):
    try:
        if type(x1) is A and type(x2) is A and x1.itemsize == x2.itemsize != 8:
            return _greater_equal(x1, x2)
        x1, x2 = binary(x1, x2)
        return _greater_equal(x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("greater_equal", x1, x2) from None


def logical_and(x1, x2):
    try:
        return mx.logical_and(to_mx(x1, "x1"), to_mx(x2, "x2"))
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("logical_and", x1, x2) from None


def logical_or(x1, x2):
    try:
        return mx.logical_or(to_mx(x1, "x1"), to_mx(x2, "x2"))
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("logical_or", x1, x2) from None


def logical_xor(x1, x2):
    try:
        x1, x2 = to_mx(x1, "x1"), to_mx(x2, "x2")
        return mx.not_equal(x1.astype(mx.bool_), x2.astype(mx.bool_))
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("logical_xor", x1, x2) from None


def isclose(x1, x2, rtol=1e-05, atol=1e-08, equal_nan=False):
    x1, x2 = _true_division_operands(x1, x2)
    return mx.isclose(x1, x2, rtol=float(rtol), atol=float(atol), equal_nan=builtins.bool(equal_nan))


def clip(x, x_min, x_max):
    try:
        # Result dtype: result_type(x, x_min, x_max) (weak Python scalars); bool -> int32.
        x = to_mx(x)
        bounds = [b for b in (x_min, x_max) if b is not None]
        arrays = _base.promote([x, *bounds], "clip")
        if arrays[0].dtype == mx.bool_:
            arrays = [a.astype(mx.int32) for a in arrays]
        out = arrays[0]
        index = 1
        if x_min is not None:
            out = mx.maximum(out, arrays[index])
            index += 1
        if x_max is not None:
            out = mx.minimum(out, arrays[index])
        return out
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("clip", *(v for v in (x, x_min, x_max) if v is not None)) from None


def where(condition, x1=None, x2=None):
    if x1 is None and x2 is None:
        return nonzero(condition)
    if x1 is None or x2 is None:
        raise ValueError("where: give both x1 and x2, or neither (then where(condition) is nonzero(condition))")
    condition = to_mx(condition, "condition")
    if condition.dtype != mx.bool_:
        condition = condition.astype(mx.bool_)
    x1, x2 = binary_same(x1, x2)
    try:
        return mx.where(condition, x1, x2)
    except ValueError as error:  # MLX's own "[broadcast_shapes]" message does not name the op
        if "broadcast" not in str(error):
            raise
        raise broadcast_error("where", condition, x1, x2) from None
