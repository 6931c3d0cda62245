"""Element-wise ops of the torch backend (re-exported by :mod:`.core`).

Hot-path pattern: every op first tests ``type(x) is torch.Tensor`` (and, for two
operands, identical dtypes) and only otherwise calls the slow converter, so an op
on native tensors costs one Python call plus a few attribute checks over torch.
"""

from __future__ import annotations

import builtins as _b

import torch

from ember.backends._common import named_op
from ember.backends.torch._base import (
    COMPLEX,
    FLOATING,
    INEXACT,
    Tensor,
    binary_slow,
    binary_tensors,
    check_int_scalar,
    dtype_name,
    floatx,
    native,
    promote_all,
    scalar_kind,
    to_float,
)
from ember.backends.torch._index import (
    nonzero,
)

_BOOL = torch.bool

# ----------------------------------------------------------------- elementwise unary


def float_unary(fn, name):
    """A floating op of one input (the torch backend's transcendental ops and activations): integers and bools
    are cast to ``floatx()`` first."""

    def op(x):
        if type(x) is not Tensor or x.dtype not in INEXACT:
            x = to_float(x)
        return fn(x)

    return named_op(op, name)


sqrt = float_unary(torch.sqrt, "sqrt")
rsqrt = float_unary(torch.rsqrt, "rsqrt")
reciprocal = float_unary(torch.reciprocal, "reciprocal")
exp = float_unary(torch.exp, "exp")
log = float_unary(torch.log, "log")
log1p = float_unary(torch.log1p, "log1p")
expm1 = float_unary(torch.expm1, "expm1")
log2 = float_unary(torch.log2, "log2")
log10 = float_unary(torch.log10, "log10")
sin = float_unary(torch.sin, "sin")
cos = float_unary(torch.cos, "cos")
tan = float_unary(torch.tan, "tan")
arcsin = float_unary(torch.asin, "arcsin")
arccos = float_unary(torch.acos, "arccos")
arctan = float_unary(torch.atan, "arctan")
sinh = float_unary(torch.sinh, "sinh")
cosh = float_unary(torch.cosh, "cosh")
tanh = float_unary(torch.tanh, "tanh")
arcsinh = float_unary(torch.asinh, "arcsinh")
arccosh = float_unary(torch.acosh, "arccosh")
arctanh = float_unary(torch.atanh, "arctanh")
erf = float_unary(torch.special.erf, "erf")
erfinv = float_unary(torch.special.erfinv, "erfinv")


def negative(x):
    if type(x) is not Tensor:
        x = native(x)
    if x.dtype is torch.bool:
        raise TypeError("negative: not supported for bool arrays; use logical_not")
    return torch.neg(x)


def abs(x):
    if type(x) is not Tensor:
        x = native(x)
    if x.dtype is torch.bool or x.dtype is torch.uint8:
        return x
    return torch.abs(x)


def sign(x):
    if type(x) is not Tensor:
        x = native(x)
    if x.dtype in COMPLEX:
        return torch.sgn(x)
    if x.dtype is torch.bool:
        return x
    return torch.sign(x)


def square(x):
    if type(x) is not Tensor:
        x = native(x)
    if x.dtype is torch.bool:  # bool counts as 0/1: int32, as sum(bool)
        x = x.to(torch.int32)
    return x * x


def round(x, decimals=0):
    if type(x) is not Tensor:
        x = native(x)
    decimals = int(decimals)
    if x.dtype in FLOATING:
        return torch.round(x, decimals=decimals) if decimals else torch.round(x)
    if x.dtype in COMPLEX:
        return torch.complex(round(x.real, decimals), round(x.imag, decimals))
    if decimals >= 0 or x.dtype is torch.bool:
        return x
    # Integers to a negative number of decimals (round(1250, -2) == 1200): in float64.
    compute = torch.float32 if x.device.type == "mps" else torch.float64
    return torch.round(x.to(compute), decimals=decimals).to(x.dtype)


def floor(x):
    if type(x) is not Tensor:
        x = native(x)
    return torch.floor(x) if x.dtype in FLOATING else x


def ceil(x):
    if type(x) is not Tensor:
        x = native(x)
    return torch.ceil(x) if x.dtype in FLOATING else x


def isnan(x):
    if type(x) is not Tensor:
        x = native(x)
    return torch.isnan(x)


def isinf(x):
    if type(x) is not Tensor:
        x = native(x)
    return torch.isinf(x)


def isfinite(x):
    if type(x) is not Tensor:
        x = native(x)
    return torch.isfinite(x)


def logical_not(x):
    if type(x) is not Tensor:
        x = native(x)
    return torch.logical_not(x)


def real(x):
    if type(x) is not Tensor:
        x = native(x)
    return torch.real(x)


def imag(x):
    if type(x) is not Tensor:
        x = native(x)
    if x.dtype in COMPLEX:
        return torch.imag(x)
    return torch.zeros_like(x)


def conj(x):
    if type(x) is not Tensor:
        x = native(x)
    if x.dtype in COMPLEX:
        return torch.conj_physical(x)
    return x


# ---------------------------------------------------------------- elementwise binary


def _op_error(name: str, error: RuntimeError, *operands) -> Exception:
    """torch's RuntimeError as the ValueError/TypeError NumPy would raise."""
    shapes = [tuple(o.shape) if isinstance(o, Tensor) else () for o in operands]
    if isinstance(error, NotImplementedError):
        kinds = [dtype_name(o.dtype) for o in operands if isinstance(o, Tensor)]
        return TypeError(f"{name}: not supported for dtype(s) {kinds} on the torch backend ({error})")
    text = str(error)
    if "bool" in text.lower():  # e.g. bool - bool: a dtype error, a TypeError as in NumPy
        kinds = [dtype_name(o.dtype) for o in operands if isinstance(o, Tensor)]
        return TypeError(f"{name}: not supported for dtype(s) {kinds} on the torch backend ({error})")
    if "size of tensor" in text or "broadcast" in text or "shape" in text:
        return ValueError(f"{name}: operands could not be broadcast together with shapes {shapes}")
    return error


def _binary_op(fn, name, bool_as_int=False):
    # A weak Python scalar as x2 reaches ``fn`` as a number (torch keeps the tensor's dtype).
    # ``bool_as_int``: arithmetic that treats bool as the numbers 0/1 (floor_divide, mod,
    # power) gives int32 for two bool operands, as ``sum(bool)`` does.
    def op(x1, x2):
        if type(x1) is not Tensor:
            x1, x2 = binary_slow(x1, x2)
        elif type(x2) is Tensor:
            if x1.dtype is not x2.dtype:
                x1, x2 = binary_slow(x1, x2)
        elif not (type(x2) is float and x1.dtype in INEXACT or type(x2) is int and x1.dtype is not _BOOL):
            # (tensor, float) with a float tensor and (tensor, int) with a non-bool tensor
            # already give Ember's dtype in torch; anything else is promoted first.
            x1, x2 = binary_slow(x1, x2)
        elif type(x2) is int and not 0 <= x2 <= 127:  # cheap guard before the range check
            check_int_scalar(x2, x1.dtype)
        if bool_as_int and x1.dtype is _BOOL:
            x1, x2 = _bool_operands_as_int32(x1, x2)
        try:
            return fn(x1, x2)
        except RuntimeError as error:
            raise _op_error(name, error, x1, x2) from None

    return named_op(op, name)


def _bool_operands_as_int32(x1, x2):
    return x1.to(torch.int32), (x2.to(torch.int32) if isinstance(x2, Tensor) else int(x2))


def _binary_tensor_op(fn, name, to_inexact=False):
    # For torch functions that only take tensors (maximum, atan2, ...).
    def op(x1, x2):
        if type(x1) is not Tensor or type(x2) is not Tensor or x1.dtype is not x2.dtype:
            x1, x2 = binary_tensors(x1, x2)
        if to_inexact and x1.dtype not in INEXACT:
            target = floatx()
            x1, x2 = x1.to(target), x2.to(target)
        try:
            return fn(x1, x2)
        except RuntimeError as error:
            raise _op_error(name, error, x1, x2) from None

    return named_op(op, name)


add = _binary_op(torch.add, "add")
subtract = _binary_op(torch.sub, "subtract")
multiply = _binary_op(torch.mul, "multiply")  # torch.mul: the alias torch.multiply is slower with scalars
floor_divide = _binary_op(torch.floor_divide, "floor_divide", bool_as_int=True)
mod = _binary_op(torch.remainder, "mod", bool_as_int=True)
_power = _binary_op(torch.pow, "power", bool_as_int=True)


def power(x1, x2):
    if type(x2) is int and x2 < 0:
        _check_integer_power(x1, x2)
    return _power(x1, x2)


def _check_integer_power(x1, x2):
    """NumPy's rule: an integer (or bool) base with a negative integer exponent is a ValueError."""
    base = x1 if type(x1) is Tensor else native(x1, "x1")
    if base.dtype not in INEXACT:
        raise ValueError(
            f"power: integers to negative integer powers are not allowed (received a {dtype_name(base.dtype)} "
            f"base and exponent {x2}); cast x1 to a float dtype first")


equal = _binary_op(torch.eq, "equal")
not_equal = _binary_op(torch.ne, "not_equal")
less = _binary_op(torch.lt, "less")
less_equal = _binary_op(torch.le, "less_equal")
greater = _binary_op(torch.gt, "greater")
greater_equal = _binary_op(torch.ge, "greater_equal")
maximum = _binary_tensor_op(torch.maximum, "maximum")
minimum = _binary_tensor_op(torch.minimum, "minimum")
arctan2 = _binary_tensor_op(torch.atan2, "arctan2", to_inexact=True)


def divide(x1, x2):
    if type(x1) is not Tensor or type(x2) is not Tensor or x1.dtype is not x2.dtype:
        x1, x2 = binary_slow(x1, x2)
    if x1.dtype not in INEXACT:  # true division of integers gives floatx()
        target = floatx()
        x1 = x1.to(target)
        if isinstance(x2, Tensor):
            x2 = x2.to(target)
    try:
        return torch.div(x1, x2)
    except RuntimeError as error:
        raise _op_error("divide", error, x1, x2) from None


def _logical(fn, name):
    def op(x1, x2):
        if type(x1) is not Tensor:
            x1 = native(x1, "x1")
        if type(x2) is not Tensor:
            x2 = native(x2, "x2", x1.device)
        try:
            return fn(x1, x2)
        except RuntimeError as error:
            raise _op_error(name, error, x1, x2) from None

    return named_op(op, name)


logical_and = _logical(torch.logical_and, "logical_and")
logical_or = _logical(torch.logical_or, "logical_or")
logical_xor = _logical(torch.logical_xor, "logical_xor")


def isclose(x1, x2, rtol=1e-05, atol=1e-08, equal_nan=False):
    x1, x2 = binary_tensors(x1, x2)
    if x1.dtype is torch.bool:
        x1, x2 = x1.to(torch.int32), x2.to(torch.int32)
    try:
        return torch.isclose(x1, x2, rtol=rtol, atol=atol, equal_nan=equal_nan)
    except RuntimeError as error:
        raise _op_error("isclose", error, x1, x2) from None


def clip(x, x_min, x_max):
    x = native(x)
    bounds = [b for b in (x_min, x_max) if b is not None]
    if not bounds:
        return x.to(torch.int32) if x.dtype is _BOOL else x.clone()
    if _b.all(scalar_kind(b) is not None for b in bounds):
        target = promote_all([x] + bounds)
        if target is _BOOL:  # clip counts bool as 0/1: int32 (Keras)
            target = torch.int32
        for b in bounds:
            if type(b) is int:
                check_int_scalar(b, target)
        if x.dtype is not target:
            x = x.to(target)
        return torch.clamp(x, x_min, x_max)
    lo = None if x_min is None else native(x_min, "x_min", x.device)
    hi = None if x_max is None else native(x_max, "x_max", x.device)
    pairs = ((x, x), (lo, x_min), (hi, x_max))
    target = promote_all([v if scalar_kind(b) is None else b for v, b in pairs if b is not None])
    if target is _BOOL:
        target = torch.int32
    x = x.to(target)
    lo = None if lo is None else lo.to(device=x.device, dtype=target)
    hi = None if hi is None else hi.to(device=x.device, dtype=target)
    try:
        return torch.clamp(x, lo, hi)
    except RuntimeError as error:
        raise _op_error("clip", error, x, lo, hi) from None


def where(condition, x1=None, x2=None):
    if x1 is None and x2 is None:
        return nonzero(condition)
    if x1 is None or x2 is None:
        raise ValueError("where: pass both x1 and x2, or neither (then where(condition) is nonzero(condition))")
    c = native(condition, "condition")
    if c.dtype is not torch.bool:
        c = c != 0
    if type(x1) is not Tensor or type(x2) is not Tensor or x1.dtype is not x2.dtype:
        x1, x2 = binary_tensors(x1, x2)
    if c.device != x1.device:
        c = c.to(x1.device)
    try:
        return torch.where(c, x1, x2)
    except RuntimeError as error:
        raise _op_error("where", error, c, x1, x2) from None
