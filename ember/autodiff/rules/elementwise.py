"""VJP rules of element-wise ops (with NumPy broadcasting), casts and identities.

Conventions follow PyTorch's autograd: ``maximum``/``minimum`` split the cotangent
0.5/0.5 between equal inputs; ``abs`` has derivative 0 at 0; ``clip`` passes the
cotangent where ``x_min <= x <= x_max`` (inclusive) and sends it to an array bound
where that bound is active; ``power`` gives 0 for ``x1`` where ``x2 == 0`` and 0 for
``x2`` where ``x1 == 0 and x2 >= 0``. For complex inputs the cotangent is conjugated
as in PyTorch (``grad * conj(f'(z))``). ``cast`` carries a gradient only between
floating dtypes and into complex (complex -> real gives none).
"""

from __future__ import annotations

import math

import numpy as np

from ember import ops
from ember.autodiff.rules import conj, is_complex, needs, plain, register, unbroadcast


def _unary(*names: str, **flags):
    """Register ``fn(g, out, x) -> cotangent`` as a one-argument rule (``flags``: see ``register``)."""

    def decorate(fn):
        def rule(g, out, x, *args, **kwargs):
            return (fn(g, out, x, *args, **kwargs),)

        rule.__name__ = fn.__name__
        rule.__doc__ = fn.__doc__
        register(*names, **flags)(rule)
        return fn

    return decorate


# --------------------------------------------------------------------- identities
@register("convert_to_tensor", "asarray")
def convert_to_tensor(g, out, x, dtype=None, device=None):
    if isinstance(x, (list, tuple)):
        # A list of arrays stacked into one: each element gets its slice.
        return ([ops.getitem(g, i) if hasattr(v, "shape") else None for i, v in enumerate(x)],)
    return (g,)


@register("to_device")
def to_device(g, out, x, device):
    return (g,)


@register("cast")
def cast(g, out, x, dtype):
    source = plain(x).dtype
    if source.kind not in "fc" and source.name != "bfloat16":
        return (None,)
    if is_complex(g) and source.kind != "c":
        g = ops.real(g)
    elif source.kind == "c" and not is_complex(g):
        return (ops.cast(g, source),)
    if source.kind == "c" and plain(out).dtype.kind != "c":
        return (None,)  # complex -> real: no gradient (only float->float and ->complex carry one)
    return (ops.cast(g, source) if g.dtype != source else g,)


# ---------------------------------------------------------------------- unary math
@_unary("negative", unread_args=(0,), reads_out=False)
def negative(g, out, x):
    return ops.negative(g)


@_unary("abs")
def abs_(g, out, x):
    if is_complex(x):
        safe = np.where(plain(out) == 0, 1, plain(out))
        phase = ops.where(plain(out) == 0, 0, ops.divide(x, safe))
        return ops.multiply(ops.cast(g, plain(x).dtype), phase)
    return ops.multiply(g, ops.sign(plain(x)))


@_unary("sqrt")
def sqrt(g, out, x):
    return ops.divide(g, ops.multiply(conj(out), 2.0))


@_unary("rsqrt")
def rsqrt(g, out, x):
    return ops.multiply(g, ops.multiply(ops.multiply(conj(out), ops.square(conj(out))), -0.5))


@_unary("square")
def square(g, out, x):
    return ops.multiply(g, ops.multiply(conj(x), 2.0))


@_unary("reciprocal")
def reciprocal(g, out, x):
    return ops.negative(ops.multiply(g, ops.square(conj(out))))


@_unary("exp", unread_args=(0,))
def exp(g, out, x):
    return ops.multiply(g, conj(out))


@_unary("log")
def log(g, out, x):
    return ops.divide(g, conj(x))


@_unary("log1p")
def log1p(g, out, x):
    return ops.divide(g, ops.add(conj(x), 1.0))


@_unary("expm1")
def expm1(g, out, x):
    return ops.multiply(g, ops.add(conj(out), 1.0))


@_unary("log2")
def log2(g, out, x):
    return ops.divide(g, ops.multiply(conj(x), math.log(2.0)))


@_unary("log10")
def log10(g, out, x):
    return ops.divide(g, ops.multiply(conj(x), math.log(10.0)))


@_unary("sin")
def sin(g, out, x):
    return ops.multiply(g, conj(ops.cos(x)))


@_unary("cos")
def cos(g, out, x):
    return ops.negative(ops.multiply(g, conj(ops.sin(x))))


@_unary("tan")
def tan(g, out, x):
    return ops.multiply(g, ops.add(ops.square(conj(out)), 1.0))


@_unary("arcsin")
def arcsin(g, out, x):
    return ops.multiply(g, ops.rsqrt(ops.subtract(1.0, ops.square(conj(x)))))


@_unary("arccos")
def arccos(g, out, x):
    return ops.negative(ops.multiply(g, ops.rsqrt(ops.subtract(1.0, ops.square(conj(x))))))


@_unary("arctan")
def arctan(g, out, x):
    return ops.divide(g, ops.add(ops.square(conj(x)), 1.0))


@_unary("sinh")
def sinh(g, out, x):
    return ops.multiply(g, conj(ops.cosh(x)))


@_unary("cosh")
def cosh(g, out, x):
    return ops.multiply(g, conj(ops.sinh(x)))


@_unary("tanh", "nn.tanh", unread_args=(0,))
def tanh(g, out, x):
    return ops.multiply(g, ops.subtract(1.0, ops.square(conj(out))))


@_unary("arcsinh")
def arcsinh(g, out, x):
    return ops.multiply(g, ops.rsqrt(ops.add(ops.square(conj(x)), 1.0)))


@_unary("arccosh")
def arccosh(g, out, x):
    return ops.multiply(g, ops.rsqrt(ops.subtract(ops.square(conj(x)), 1.0)))


@_unary("arctanh")
def arctanh(g, out, x):
    return ops.divide(g, ops.subtract(1.0, ops.square(conj(x))))


@_unary("erf")
def erf(g, out, x):
    return ops.multiply(g, ops.multiply(ops.exp(ops.negative(ops.square(x))), 2.0 / math.sqrt(math.pi)))


@_unary("erfinv")
def erfinv(g, out, x):
    return ops.multiply(g, ops.multiply(ops.exp(ops.square(out)), math.sqrt(math.pi) / 2.0))


@_unary("real")
def real(g, out, x):
    return ops.cast(g, plain(x).dtype) if is_complex(x) else g


@_unary("imag")
def imag(g, out, x):
    if is_complex(x):
        return ops.multiply(ops.cast(g, plain(x).dtype), 1j)
    return ops.zeros_like(plain(x))  # imag of a real array is constant 0


@_unary("conj")
def conj_(g, out, x):
    return conj(g)


# --------------------------------------------------------------------- binary math
@register("add", unread_args=(0, 1), reads_out=False)
def add(g, out, x1, x2):
    return (unbroadcast(g, x1) if needs(0) else None, unbroadcast(g, x2) if needs(1) else None)


@register("subtract", unread_args=(0, 1), reads_out=False)
def subtract(g, out, x1, x2):
    return (unbroadcast(g, x1) if needs(0) else None,
            unbroadcast(ops.negative(g), x2) if needs(1) else None)


@register("multiply", reads_out=False)
def multiply(g, out, x1, x2):
    return (unbroadcast(ops.multiply(g, conj(x2)), x1) if needs(0) else None,
            unbroadcast(ops.multiply(g, conj(x1)), x2) if needs(1) else None)


@register("divide")
def divide(g, out, x1, x2):
    g1 = ops.divide(g, conj(x2))
    return (unbroadcast(g1, x1) if needs(0) else None,
            unbroadcast(ops.negative(ops.multiply(g1, conj(out))), x2) if needs(1) else None)


@register("mod")
def mod(g, out, x1, x2):
    d2 = None
    if needs(1):
        quotient = ops.floor_divide(plain(x1), plain(x2)).astype(plain(out).dtype)
        d2 = unbroadcast(ops.negative(ops.multiply(g, quotient)), x2)
    return (unbroadcast(g, x1) if needs(0) else None, d2)


@register("power")
def power(g, out, x1, x2):
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 ** -1 etc. are masked out below
        return _power(g, out, x1, x2)


def _power(g, out, x1, x2):
    d1 = d2 = None
    if needs(0):
        exponent_zero = np.asarray(plain(x2) == 0)
        if _is_scalar(x2):
            d1 = ops.multiply(g, ops.multiply(ops.power(x1, x2 - 1), x2)) if x2 != 0 else ops.zeros_like(plain(g))
        else:
            scaled = ops.multiply(g, ops.multiply(ops.power(x1, ops.subtract(x2, 1)), x2))
            d1 = ops.where(exponent_zero, 0.0, scaled) if exponent_zero.any() else scaled
        d1 = unbroadcast(d1, x1)
    if needs(1):
        base = plain(x1)
        masked = np.asarray((base == 0) & (plain(x2) >= 0))
        if _is_scalar(x1):
            log_base = math.log(x1) if x1 > 0 else float("nan") if x1 < 0 else 0.0
        else:
            log_base = ops.log(ops.where(base == 0, 1.0, x1) if masked.any() else x1)
        d2 = ops.multiply(g, ops.multiply(out, log_base))
        if masked.any():
            d2 = ops.where(masked, 0.0, d2)
        d2 = unbroadcast(d2, x2)
    return (d1, d2)


def _split_mask(x1, x2, g, first_wins):
    a, b = plain(x1), plain(x2)
    return np.asarray(first_wins(a, b) + 0.5 * (a == b), dtype=plain(g).dtype)


@register("maximum")
def maximum(g, out, x1, x2):
    mask = _split_mask(x1, x2, g, np.greater)
    return (unbroadcast(ops.multiply(g, mask), x1) if needs(0) else None,
            unbroadcast(ops.multiply(g, 1.0 - mask), x2) if needs(1) else None)


@register("minimum")
def minimum(g, out, x1, x2):
    mask = _split_mask(x1, x2, g, np.less)
    return (unbroadcast(ops.multiply(g, mask), x1) if needs(0) else None,
            unbroadcast(ops.multiply(g, 1.0 - mask), x2) if needs(1) else None)


@register("arctan2")
def arctan2(g, out, x1, x2):
    denominator = ops.add(ops.square(x1), ops.square(x2))
    return (unbroadcast(ops.divide(ops.multiply(g, x2), denominator), x1) if needs(0) else None,
            unbroadcast(ops.negative(ops.divide(ops.multiply(g, x1), denominator)), x2) if needs(1) else None)


@register("clip")
def clip(g, out, x, x_min, x_max):
    v = plain(x)
    lo = None if x_min is None else plain(x_min)
    hi = None if x_max is None else plain(x_max)
    inside = np.ones(v.shape, dtype=bool)
    if lo is not None:
        inside = inside & (v >= lo)
    if hi is not None:
        inside = inside & (v <= hi)
    dx = ops.where(inside, g, 0.0) if needs(0) else None
    d_lo = d_hi = None
    if needs(1) and lo is not None:
        active = (v < lo) if hi is None else (v < lo) & (lo < hi)
        d_lo = unbroadcast(ops.where(active, g, 0.0), x_min)
    if needs(2) and hi is not None:
        active = (v > hi) if lo is None else (v > hi) | (hi < lo)
        d_hi = unbroadcast(ops.where(active, g, 0.0), x_max)
    return (dx, d_lo, d_hi)


@register("where")
def where(g, out, condition, x1=None, x2=None):
    c = plain(condition).astype(bool)
    return (None,
            unbroadcast(ops.where(c, g, 0.0), x1) if needs(1) else None,
            unbroadcast(ops.where(c, 0.0, g), x2) if needs(2) else None)


def _is_scalar(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


@register("stats.gaussian")
def gaussian(g, out, x, mean=0.0, std=1.0):
    diff = ops.subtract(x, mean)
    variance = std * std if _is_scalar(std) else ops.square(std)
    dx = ops.negative(ops.divide(ops.multiply(ops.multiply(g, out), diff), variance))
    d_std = None
    if needs(2):
        term = ops.subtract(ops.divide(ops.square(diff), variance), 1.0)
        d_std = unbroadcast(ops.divide(ops.multiply(ops.multiply(g, out), term), std), std)
    return (unbroadcast(dx, x) if needs(0) else None,
            unbroadcast(ops.negative(dx), mean) if needs(1) else None,
            d_std)
