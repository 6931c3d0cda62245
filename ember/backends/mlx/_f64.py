"""float64-accurate versions of the MLX functions that lose precision in float64.

MLX's CPU kernels evaluate ``exp``, ``sin``, ``cos``, ``erf``, ``erfinv``, ``sigmoid``,
``logaddexp``/``logsumexp``/``softmax`` and ``round(x, decimals)`` with float32-grade
approximations even for float64 arrays (relative errors 1e-8 to 1e-3), while ``expm1``,
``log1p``, ``tan``, ``tanh`` and the arithmetic are accurate to a few ulps. The functions
here rebuild the former from the latter with vectorised MLX ops (no host round trips),
giving ~1e-15 relative accuracy; the backend calls them for float64 inputs only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import mlx.core as mx

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)
_SERIES_TERMS = 40  # erf series, |x| < 1.5: converged to < 1e-17 relative
_FRACTION_TERMS = 100  # erfc continued fraction, x >= 1.5: converged to ~2e-16 relative
_SPLIT = 1.5


def _custom_function(f: Callable) -> Any:
    """``mx.custom_function(f)``. Typed Any: MLX's stub says calling one returns ``object``, where it
    returns what ``f`` returns (arrays here)."""
    return mx.custom_function(f)


def _first(primals):
    """The single primal of a one-argument custom function (MLX may pass it bare or in a tuple)."""
    return primals[0] if isinstance(primals, (tuple, list)) else primals


@_custom_function
def exp(x):
    """``exp`` from ``expm1`` (accurate): ``1 + expm1(x)``, or ``1 / (1 + expm1(-x))`` below 0."""
    positive = x >= 0
    magnitude = mx.expm1(mx.where(positive, x, -x)) + 1.0
    return mx.where(positive, magnitude, 1.0 / magnitude)


@exp.vjp
def _exp_vjp(primals, cotangent, output):
    return cotangent * exp(_first(primals))


@exp.jvp
def _exp_jvp(primals, tangents):
    return _first(tangents) * exp(_first(primals))


def sigmoid(x):
    t = exp(-mx.abs(x))  # in (0, 1]: no overflow
    s = 1.0 / (1.0 + t)
    return mx.where(x >= 0, s, t * s)


def _half_angle(x):
    """``(t, u, big)``: ``t = tan(x / 2)``, ``u = 1 / t``, ``big = |t| > 1``."""
    t = mx.tan(x * 0.5)
    big = mx.abs(t) > 1.0
    u = 1.0 / mx.where(big, t, 1.0)
    return t, u, big


# exp, sin, cos and erfinv carry their own derivatives: differentiating through their
# formulas would use MLX's float32-grade kernels again (d tan = 1 / cos^2, d expm1 = exp).


@_custom_function
def sin(x):
    # sin x = 2t / (1 + t^2) = 2u / (u^2 + 1) with u = 1/t (used where |t| > 1, and t = inf).
    t, u, big = _half_angle(x)
    small = 2.0 * t / (1.0 + t * t)
    large = 2.0 * u / (u * u + 1.0)
    return mx.where(big, large, small)


@_custom_function
def cos(x):
    # cos x = (1 - t)(1 + t) / (1 + t^2) = (u - 1)(u + 1) / (u^2 + 1).
    t, u, big = _half_angle(x)
    small = (1.0 - t) * (1.0 + t) / (1.0 + t * t)
    large = (u - 1.0) * (u + 1.0) / (u * u + 1.0)
    return mx.where(big, large, small)


@sin.vjp
def _sin_vjp(primals, cotangent, output):
    return cotangent * cos(_first(primals))


@sin.jvp
def _sin_jvp(primals, tangents):
    return _first(tangents) * cos(_first(primals))


@cos.vjp
def _cos_vjp(primals, cotangent, output):
    return -cotangent * sin(_first(primals))


@cos.jvp
def _cos_jvp(primals, tangents):
    return -_first(tangents) * sin(_first(primals))


def _erf_series(a):
    """erf for 0 <= a <= 1.5: (2/sqrt(pi)) exp(-a^2) sum (2a^2)^n a / (2n+1)!! (all terms positive)."""
    two_a2 = 2.0 * a * a
    term = a
    total = a
    for n in range(1, _SERIES_TERMS + 1):
        term = term * two_a2 * (1.0 / (2 * n + 1))
        total = total + term
    return _TWO_OVER_SQRT_PI * exp(-a * a) * total


def _erfc_fraction(a):
    """erfc for a >= 1.5: exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...))))."""
    f = a
    for k in range(_FRACTION_TERMS, 0, -1):
        f = a + (0.5 * k) / f
    return _INV_SQRT_PI * exp(-a * a) / f


def erf(x):
    a = mx.abs(x)
    low = _erf_series(mx.minimum(a, _SPLIT))
    high = 1.0 - _erfc_fraction(mx.maximum(a, _SPLIT))
    value = mx.where(a < _SPLIT, low, high)
    return mx.where(x < 0, -value, value)


def erfc_positive(a):
    """erfc for a >= 0 (relative accuracy kept in the tail)."""
    low = 1.0 - _erf_series(mx.minimum(a, _SPLIT))
    high = _erfc_fraction(mx.maximum(a, _SPLIT))
    return mx.where(a < _SPLIT, low, high)


@_custom_function
def erfinv(x):
    """Newton-refined inverse error function.

    Start: MLX's erfinv (float32-grade) inside |x| < 0.99, and the tail asymptote
    ``y ~ sqrt(-log(1 - |x|) - log(sqrt(pi) y))`` beyond. The residual is ``erf(y) - a``
    for small ``a = |x|`` and ``(1 - a) - erfc(y)`` (exact ``1 - a``) for large ``a``,
    so the iteration keeps full relative accuracy up to ``a`` next to 1.
    """
    a = mx.abs(x)
    inside = a < 0.99
    start = mx.abs(mx.erfinv(mx.where(inside, a, 0.5)))
    tail = 1.0 - mx.where(inside, 0.5, mx.minimum(a, 1.0))
    w = -mx.log(mx.maximum(tail, 1e-300))
    guess = mx.sqrt(mx.maximum(w - mx.log(mx.sqrt(w) * math.sqrt(math.pi)), 0.25))
    y = mx.where(inside, start, guess)
    upper = a > 0.5
    one_minus_a = 1.0 - a
    for _ in range(4):
        y = mx.maximum(y, 0.0)
        residual = mx.where(upper, one_minus_a - erfc_positive(y), erf(y) - a)
        slope = _TWO_OVER_SQRT_PI * exp(-y * y)
        step = residual / mx.where(slope > 0, slope, 1.0)
        y = y - mx.where(slope > 0, step, 0.0)
    y = mx.where(a == 1.0, math.inf, mx.where(a > 1.0, math.nan, y))
    y = mx.where(mx.isnan(x), math.nan, y)
    return mx.where(x < 0, -y, y)


@erfinv.vjp
def _erfinv_vjp(primals, cotangent, output):
    # d erfinv(x) / dx = sqrt(pi) / 2 * exp(erfinv(x)^2)
    return cotangent * (math.sqrt(math.pi) / 2.0) * exp(output * output)


@erfinv.jvp
def _erfinv_jvp(primals, tangents):
    y = erfinv(_first(primals))
    return _first(tangents) * (math.sqrt(math.pi) / 2.0) * exp(y * y)


def logsumexp(x, axes, keepdims):
    peak = mx.max(x, axis=axes, keepdims=True)
    peak = mx.where(mx.isfinite(peak), peak, 0.0)
    total = mx.sum(exp(x - peak), axis=axes, keepdims=True)
    out = mx.log(total) + peak
    if not keepdims:
        out = mx.squeeze(out, axes) if axes is not None else mx.reshape(out, ())
    return out


def softmax(x, axes):
    peak = mx.max(x, axis=axes, keepdims=True)
    peak = mx.where(mx.isfinite(peak), peak, 0.0)
    e = exp(x - peak)
    return e / mx.sum(e, axis=axes, keepdims=True)
