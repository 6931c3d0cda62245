"""NumPy-compatible elementwise math and reductions of ``keras.ops``, built from protocol ops.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.to_numpy(ops.nansum(ops.convert_to_tensor([1.0, float("nan"), 2.0]))).item()
    3.0
"""

from __future__ import annotations

import math as _math
from typing import Any

import numpy as np

from ember import dtypes, ops

__all__ = [
    "absolute", "fabs", "conjugate", "amax", "amin", "true_divide", "divide_no_nan", "allclose", "cbrt",
    "deg2rad", "rad2deg", "exp2", "fmax", "fmin", "fmod", "heaviside", "hypot", "isneginf", "isposinf",
    "isreal", "logaddexp", "logaddexp2", "nan_to_num", "ptp", "signbit", "sinc", "trunc", "angle", "ldexp",
    "average", "nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "nanargmax",
    "nanargmin", "nancumsum", "nancumprod", "nanquantile", "nanpercentile", "nanmedian", "select",
    "saturate_cast", "logspace", "geomspace", "array", "copy", "empty", "empty_like", "identity",
    "is_tensor", "convert_to_numpy", "get_item", "erfc", "i0",
]


def _tensor(x: Any) -> Any:
    return x if ops.is_array(x) else ops.convert_to_tensor(x)


def _float(x: Any) -> Any:
    """``x`` as a native array of a floating (or complex) dtype: integers and bools become ``floatx()``."""
    x = _tensor(x)
    name = ops.dtype(x)
    return x if dtypes.is_float(name) or dtypes.is_complex(name) else ops.cast(x, dtypes.floatx())


def absolute(x):
    """Alias of ``ops.abs``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.absolute(ops.convert_to_tensor([-1.5, 2.0]))).tolist()
        [1.5, 2.0]
    """
    return ops.abs(x)


def fabs(x):
    """Absolute value (NumPy's ``fabs``; integers become floats).

    Example:
        >>> from ember import ops
        >>> y = ops.fabs(ops.convert_to_tensor([-1, 2]))
        >>> ops.dtype(y), ops.to_numpy(y).tolist()
        ('float32', [1.0, 2.0])
    """
    return ops.abs(_float(x))


def conjugate(x):
    """Alias of ``ops.conj``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.conjugate(ops.convert_to_tensor([1 + 2j]))).tolist()
        [(1-2j)]
    """
    return ops.conj(x)


def amax(x, axis=None, keepdims=False):
    """Alias of ``ops.max``.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([[1.0, 5.0], [3.0, 2.0]])
        >>> ops.to_numpy(ops.amax(x, axis=0)).tolist()
        [3.0, 5.0]
    """
    return ops.max(x, axis=axis, keepdims=keepdims)


def amin(x, axis=None, keepdims=False):
    """Alias of ``ops.min``.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([[1.0, 5.0], [3.0, 2.0]])
        >>> ops.to_numpy(ops.amin(x, axis=1)).tolist()
        [1.0, 2.0]
    """
    return ops.min(x, axis=axis, keepdims=keepdims)


def true_divide(x1, x2):
    """Alias of ``ops.divide``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.true_divide(ops.convert_to_tensor([1.0, 3.0]), 2.0)).tolist()
        [0.5, 1.5]
    """
    return ops.divide(x1, x2)


def divide_no_nan(x1, x2):
    """``x1 / x2``, and 0 where ``x2 == 0`` (no NaN or inf, and a finite gradient).

    Example:
        >>> from ember import ops
        >>> x, y = ops.convert_to_tensor([1.0, 2.0]), ops.convert_to_tensor([0.0, 4.0])
        >>> ops.to_numpy(ops.divide_no_nan(x, y)).tolist()
        [0.0, 0.5]
    """
    x1, x2 = _float(x1), _float(x2)
    zero = ops.equal(x2, 0)
    return ops.where(zero, ops.zeros_like(ops.divide(x1, ops.ones_like(x2))), ops.divide(x1, ops.where(zero, 1.0, x2)))


def allclose(x1, x2, rtol=1e-05, atol=1e-08, equal_nan=False):
    """A scalar bool array: every element of ``isclose(x1, x2, ...)`` holds.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, 2.0])
        >>> bool(ops.allclose(x, ops.add(x, 1e-9))), bool(ops.allclose(x, ops.add(x, 0.1)))
        (True, False)
    """
    return ops.all(ops.isclose(x1, x2, rtol=rtol, atol=atol, equal_nan=equal_nan))


def cbrt(x):
    """Real cube root (negative for negative ``x``).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.cbrt(ops.convert_to_tensor([-8.0, 27.0]))).astype(float).round(4).tolist()
        [-2.0, 3.0]
    """
    x = _float(x)
    return ops.multiply(ops.sign(x), ops.power(ops.abs(x), 1.0 / 3.0))


def deg2rad(x):
    """Degrees to radians.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.deg2rad(ops.convert_to_tensor([90.0, 180.0]))).astype(float).round(4).tolist()
        [1.5708, 3.1416]
    """
    return ops.multiply(_float(x), _math.pi / 180.0)


def rad2deg(x):
    """Radians to degrees.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.rad2deg(ops.convert_to_tensor([3.14159265]))).astype(float).round(2).tolist()
        [180.0]
    """
    return ops.multiply(_float(x), 180.0 / _math.pi)


def exp2(x):
    """``2 ** x`` (floating).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.exp2(ops.convert_to_tensor([0.0, 3.0]))).astype(float).round(4).tolist()
        [1.0, 8.0]
    """
    return ops.exp(ops.multiply(_float(x), _math.log(2.0)))


def fmax(x1, x2):
    """Elementwise maximum that ignores NaN (NaN only where both are NaN).

    Example:
        >>> from ember import ops
        >>> x, y = ops.convert_to_tensor([1.0, float('nan')]), ops.convert_to_tensor([2.0, 0.0])
        >>> ops.to_numpy(ops.fmax(x, y)).tolist()
        [2.0, 0.0]
    """
    x1, x2 = _tensor(x1), _tensor(x2)
    best = ops.maximum(x1, x2)
    return ops.where(ops.isnan(x1), x2, ops.where(ops.isnan(x2), x1, best))


def fmin(x1, x2):
    """Elementwise minimum that ignores NaN (NaN only where both are NaN).

    Example:
        >>> from ember import ops
        >>> x, y = ops.convert_to_tensor([1.0, float('nan')]), ops.convert_to_tensor([2.0, 0.0])
        >>> ops.to_numpy(ops.fmin(x, y)).tolist()
        [1.0, 0.0]
    """
    x1, x2 = _tensor(x1), _tensor(x2)
    best = ops.minimum(x1, x2)
    return ops.where(ops.isnan(x1), x2, ops.where(ops.isnan(x2), x1, best))


def fmod(x1, x2):
    """Remainder with the sign of the dividend (C's ``fmod``; ``ops.mod`` follows the divisor).

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([-5, 5])
        >>> ops.to_numpy(ops.fmod(x, 3)).tolist(), ops.to_numpy(ops.mod(x, 3)).tolist()
        ([-2, 2], [1, 2])
    """
    x1, x2 = _tensor(x1), _tensor(x2)
    remainder = ops.mod(x1, x2)
    differs = ops.logical_and(ops.not_equal(remainder, 0), ops.not_equal(ops.less(remainder, 0), ops.less(x1, 0)))
    return ops.where(differs, ops.subtract(remainder, x2), remainder)


def heaviside(x1, x2):
    """0 where ``x1 < 0``, 1 where ``x1 > 0``, ``x2`` where ``x1 == 0``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.heaviside(ops.convert_to_tensor([-1.0, 0.0, 2.0]), 0.5)).tolist()
        [0.0, 0.5, 1.0]
    """
    x1, x2 = _float(x1), _float(x2)
    return ops.where(ops.less(x1, 0), 0.0, ops.where(ops.greater(x1, 0), 1.0, ops.multiply(x2, ops.ones_like(x1))))


def hypot(x1, x2):
    """``sqrt(x1**2 + x2**2)``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.hypot(ops.convert_to_tensor([3.0]), ops.convert_to_tensor([4.0]))).tolist()
        [5.0]
    """
    return ops.sqrt(ops.add(ops.square(_float(x1)), ops.square(_float(x2))))


def isneginf(x):
    """True where ``x`` is negative infinity.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.isneginf(ops.convert_to_tensor([-float('inf'), float('inf'), 0.0]))).tolist()
        [True, False, False]
    """
    x = _tensor(x)
    return ops.logical_and(ops.isinf(x), ops.less(x, 0))


def isposinf(x):
    """True where ``x`` is positive infinity.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.isposinf(ops.convert_to_tensor([-float('inf'), float('inf'), 0.0]))).tolist()
        [False, True, False]
    """
    x = _tensor(x)
    return ops.logical_and(ops.isinf(x), ops.greater(x, 0))


def isreal(x):
    """True where the imaginary part is zero (everywhere for real dtypes).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.isreal(ops.convert_to_tensor([1 + 0j, 1j]))).tolist()
        [True, False]
    """
    x = _tensor(x)
    if dtypes.is_complex(ops.dtype(x)):
        return ops.equal(ops.imag(x), 0)
    return ops.ones_like(x, dtype="bool")


def logaddexp(x1, x2):
    """``log(exp(x1) + exp(x2))`` without overflow.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([0.0, 1000.0])
        >>> ops.to_numpy(ops.logaddexp(x, x)).astype(float).round(4).tolist()
        [0.6931, 1000.6932]
    """
    x1, x2 = _float(x1), _float(x2)
    top = ops.maximum(x1, x2)
    return ops.add(top, ops.log1p(ops.exp(ops.negative(ops.abs(ops.subtract(x1, x2))))))


def logaddexp2(x1, x2):
    """``log2(2**x1 + 2**x2)`` without overflow.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, 3.0])
        >>> ops.to_numpy(ops.logaddexp2(x, x)).astype(float).round(4).tolist()
        [2.0, 4.0]
    """
    x1, x2 = _float(x1), _float(x2)
    top = ops.maximum(x1, x2)
    gap = ops.multiply(ops.negative(ops.abs(ops.subtract(x1, x2))), _math.log(2.0))
    return ops.add(top, ops.divide(ops.log1p(ops.exp(gap)), _math.log(2.0)))


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (default: the dtype's extremes).

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([float('nan'), 1.0, float('inf')])
        >>> ops.to_numpy(ops.nan_to_num(x, posinf=9.0)).tolist()
        [0.0, 1.0, 9.0]
    """
    x = _tensor(x)
    name = ops.dtype(x)
    if not dtypes.is_float(name):
        return x
    info = np.finfo(dtypes.to_numpy_dtype("float32" if name == "bfloat16" else name))
    big = float(info.max) if name != "bfloat16" else 3.3895313892515355e38
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    x = ops.where(ops.isnan(x), ops.full_like(x, nan), x)
    x = ops.where(isposinf(x), ops.full_like(x, posinf), x)
    return ops.where(isneginf(x), ops.full_like(x, neginf), x)


def ptp(x, axis=None, keepdims=False):
    """Range ``max - min`` along ``axis``.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([[1.0, 5.0], [3.0, 2.0]])
        >>> ops.to_numpy(ops.ptp(x, axis=1)).tolist()
        [4.0, 1.0]
    """
    return ops.subtract(ops.max(x, axis=axis, keepdims=keepdims), ops.min(x, axis=axis, keepdims=keepdims))


def signbit(x):
    """True where the sign bit is set (negative numbers and ``-0.0``).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.signbit(ops.convert_to_tensor([-0.0, 0.0, -2.0]))).tolist()
        [True, False, True]
    """
    x = _tensor(x)
    if not dtypes.is_float(ops.dtype(x)):
        return ops.less(x, 0)
    return ops.less(ops.arctan2(x, ops.full_like(x, -1.0)), 0)  # -pi for -0.0, +pi for +0.0


def sinc(x):
    """Normalized sinc ``sin(pi x) / (pi x)``, 1 at 0.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.sinc(ops.convert_to_tensor([0.0, 0.5]))).astype(float).round(4).tolist()
        [1.0, 0.6366]
    """
    x = _float(x)
    zero = ops.equal(x, 0)
    scaled = ops.multiply(ops.where(zero, 1.0, x), _math.pi)
    return ops.where(zero, 1.0, ops.divide(ops.sin(scaled), scaled))


def trunc(x):
    """Round towards zero.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.trunc(ops.convert_to_tensor([-1.5, 1.5]))).tolist()
        [-1.0, 1.0]
    """
    x = _tensor(x)
    if not dtypes.is_float(ops.dtype(x)):
        return x
    return ops.where(ops.less(x, 0), ops.ceil(x), ops.floor(x))


def angle(x):
    """Argument of complex ``x`` (``arctan2(imag, real)``); 0 or pi for real ``x``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.angle(ops.convert_to_tensor([-1.0, 1.0]))).astype(float).round(4).tolist()
        [3.1416, 0.0]
    """
    x = _tensor(x)
    if dtypes.is_complex(ops.dtype(x)):
        return ops.arctan2(ops.imag(x), ops.real(x))
    x = _float(x)
    return ops.arctan2(ops.zeros_like(x), x)


def ldexp(x1, x2):
    """``x1 * 2 ** x2``.

    Example:
        >>> from ember import ops
        >>> x, exponent = ops.convert_to_tensor([1.0, 3.0]), ops.convert_to_tensor([2, 1])
        >>> ops.to_numpy(ops.ldexp(x, exponent)).astype(float).round(4).tolist()
        [4.0, 6.0]
    """
    return ops.multiply(_float(x1), exp2(x2))


def average(x, axis=None, weights=None):
    """Weighted mean; 1-D ``weights`` apply along ``axis`` (NumPy's ``average``).

    Example:
        >>> from ember import ops
        >>> x, w = ops.convert_to_tensor([1.0, 2.0, 4.0]), ops.convert_to_tensor([1.0, 1.0, 2.0])
        >>> ops.to_numpy(ops.average(x, weights=w)).tolist()
        2.75
    """
    x = _float(x)
    if weights is None:
        return ops.mean(x, axis=axis)
    weights = ops.cast(_tensor(weights), ops.dtype(x))
    if axis is not None and ops.ndim(weights) == 1 and ops.ndim(x) > 1:
        axis = axis % ops.ndim(x)
        shape = [1] * ops.ndim(x)
        shape[axis] = ops.shape(weights)[0]
        weights = ops.reshape(weights, tuple(shape))
    weights = ops.multiply(weights, ops.ones_like(x))
    return ops.divide(ops.sum(ops.multiply(x, weights), axis=axis), ops.sum(weights, axis=axis))


# ---------------------------------------------------------------- NaN-ignoring reductions
def _all_nan(x, axis, keepdims):
    return ops.all(ops.isnan(x), axis=axis, keepdims=keepdims)


def nansum(x, axis=None, keepdims=False):
    """Sum treating NaN as 0.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([[1.0, float('nan')], [2.0, 3.0]])
        >>> ops.to_numpy(ops.nansum(x, axis=0)).tolist()
        [3.0, 3.0]
    """
    x = _tensor(x)
    return ops.sum(ops.where(ops.isnan(x), ops.zeros_like(x), x), axis=axis, keepdims=keepdims)


def nanprod(x, axis=None, keepdims=False):
    """Product treating NaN as 1.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([2.0, float('nan'), 3.0])
        >>> ops.to_numpy(ops.nanprod(x)).tolist()
        6.0
    """
    x = _tensor(x)
    return ops.prod(ops.where(ops.isnan(x), ops.ones_like(x), x), axis=axis, keepdims=keepdims)


def _count(x, axis, keepdims):
    return ops.sum(ops.cast(ops.logical_not(ops.isnan(x)), ops.dtype(x)), axis=axis, keepdims=keepdims)


def nanmean(x, axis=None, keepdims=False):
    """Mean over the non-NaN elements (NaN where there are none).

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, float('nan'), 3.0])
        >>> ops.to_numpy(ops.nanmean(x)).tolist()
        2.0
    """
    x = _float(x)
    return ops.divide(nansum(x, axis, keepdims), _count(x, axis, keepdims))


def nanvar(x, axis=None, keepdims=False, ddof=0):
    """Variance over the non-NaN elements.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, float('nan'), 3.0])
        >>> ops.to_numpy(ops.nanvar(x)).tolist()
        1.0
    """
    x = _float(x)
    centred = ops.subtract(x, nanmean(x, axis, True))
    return ops.divide(nansum(ops.square(centred), axis, keepdims), ops.subtract(_count(x, axis, keepdims), ddof))


def nanstd(x, axis=None, keepdims=False, ddof=0):
    """Standard deviation over the non-NaN elements.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, float('nan'), 3.0])
        >>> ops.to_numpy(ops.nanstd(x)).tolist()
        1.0
    """
    return ops.sqrt(nanvar(x, axis, keepdims, ddof))


def nanmax(x, axis=None, keepdims=False):
    """Maximum ignoring NaN (NaN where every element is NaN).

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, float('nan'), 3.0])
        >>> ops.to_numpy(ops.nanmax(x)).tolist()
        3.0
    """
    x = _tensor(x)
    best = ops.max(ops.where(ops.isnan(x), ops.full_like(x, -np.inf), x), axis=axis, keepdims=keepdims)
    return ops.where(_all_nan(x, axis, keepdims), ops.full_like(best, np.nan), best)


def nanmin(x, axis=None, keepdims=False):
    """Minimum ignoring NaN (NaN where every element is NaN).

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, float('nan'), 3.0])
        >>> ops.to_numpy(ops.nanmin(x)).tolist()
        1.0
    """
    x = _tensor(x)
    best = ops.min(ops.where(ops.isnan(x), ops.full_like(x, np.inf), x), axis=axis, keepdims=keepdims)
    return ops.where(_all_nan(x, axis, keepdims), ops.full_like(best, np.nan), best)


def nanargmax(x, axis=None, keepdims=False):
    """Index of the maximum ignoring NaN (-1 where every element is NaN, as Keras).

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, float('nan'), 3.0])
        >>> ops.to_numpy(ops.nanargmax(x)).tolist()
        2
    """
    x = _tensor(x)
    index = ops.argmax(ops.where(ops.isnan(x), ops.full_like(x, -np.inf), x), axis=axis, keepdims=keepdims)
    return ops.where(_all_nan(x, axis, keepdims), -1, index)


def nanargmin(x, axis=None, keepdims=False):
    """Index of the minimum ignoring NaN (-1 where every element is NaN, as Keras).

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, float('nan'), 3.0])
        >>> ops.to_numpy(ops.nanargmin(x)).tolist()
        0
    """
    x = _tensor(x)
    index = ops.argmin(ops.where(ops.isnan(x), ops.full_like(x, np.inf), x), axis=axis, keepdims=keepdims)
    return ops.where(_all_nan(x, axis, keepdims), -1, index)


def nancumsum(x, axis=None):
    """Cumulative sum treating NaN as 0.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, float('nan'), 3.0])
        >>> ops.to_numpy(ops.nancumsum(x)).tolist()
        [1.0, 1.0, 4.0]
    """
    x = _tensor(x)
    return ops.cumsum(ops.where(ops.isnan(x), ops.zeros_like(x), x), axis=axis)


def nancumprod(x, axis=None):
    """Cumulative product treating NaN as 1.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([2.0, float('nan'), 3.0])
        >>> ops.to_numpy(ops.nancumprod(x)).tolist()
        [2.0, 2.0, 6.0]
    """
    x = _tensor(x)
    return ops.cumprod(ops.where(ops.isnan(x), ops.ones_like(x), x), axis=axis)


def _move_to_last(x, axis):
    """``x`` with the reduced axes flattened into one last axis, and the kept shape."""
    rank = ops.ndim(x)
    if axis is None:
        return ops.reshape(x, (-1,)), ()
    axes = sorted({a % rank for a in ((axis,) if isinstance(axis, int) else axis)})
    kept = [a for a in range(rank) if a not in axes]
    moved = ops.transpose(x, kept + axes)
    kept_shape = tuple(ops.shape(x)[a] for a in kept)
    return ops.reshape(moved, kept_shape + (-1,)), kept_shape


def nanquantile(x, q, axis=None, keepdims=False, method="linear"):
    """Quantile(s) ``q`` in [0, 1] of the non-NaN elements (linear interpolation, NumPy's default).

    Raises:
        ValueError: a ``method`` other than ``"linear"``, or ``q`` outside [0, 1].

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, float('nan'), 3.0, 5.0])
        >>> ops.to_numpy(ops.nanquantile(x, [0.25, 0.5])).tolist()
        [2.0, 3.0]
    """
    if method != "linear":
        raise ValueError(f"nanquantile: method must be 'linear', received {method!r}")
    x = _float(x)
    q_array = np.asarray(q, dtype=np.float64)
    if q_array.ndim > 1 or np.any((q_array < 0) | (q_array > 1)):
        raise ValueError(f"nanquantile: q must be a scalar or 1-D with values in [0, 1], received {q!r}")
    flat, kept = _move_to_last(x, axis)
    nan = ops.isnan(flat)
    ordered = ops.sort(ops.where(nan, ops.full_like(flat, np.inf), flat), axis=-1)  # NaN last
    valid = ops.sum(ops.cast(ops.logical_not(nan), "int32"), axis=-1, keepdims=True)
    last = ops.maximum(ops.subtract(valid, 1), 0)
    results = []
    for value in np.atleast_1d(q_array):
        position = ops.multiply(ops.cast(last, ops.dtype(flat)), float(value))
        low = ops.cast(ops.floor(position), "int32")
        high = ops.minimum(ops.add(low, 1), last)
        fraction = ops.subtract(position, ops.cast(low, ops.dtype(flat)))
        below = ops.take_along_axis(ordered, low, axis=-1)
        above = ops.take_along_axis(ordered, high, axis=-1)
        result = ops.add(below, ops.multiply(fraction, ops.subtract(above, below)))
        result = ops.where(ops.equal(valid, 0), ops.full_like(result, np.nan), result)
        results.append(ops.reshape(result, kept))
    out = results[0] if q_array.ndim == 0 else ops.stack(results, axis=0)
    if keepdims:
        rank = ops.ndim(x)
        axes = range(rank) if axis is None else sorted({a % rank for a in ((axis,) if isinstance(axis, int) else axis)})
        for a in axes:
            out = ops.expand_dims(out, a + (0 if q_array.ndim == 0 else 1))
    return out


def nanpercentile(x, q, axis=None, keepdims=False, method="linear"):
    """Percentile(s) ``q`` in [0, 100] of the non-NaN elements.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, float('nan'), 3.0, 5.0])
        >>> ops.to_numpy(ops.nanpercentile(x, 50)).tolist()
        3.0
    """
    return nanquantile(x, np.asarray(q, dtype=np.float64) / 100.0, axis=axis, keepdims=keepdims, method=method)


def nanmedian(x, axis=None, keepdims=False):
    """Median of the non-NaN elements.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([1.0, float('nan'), 4.0])
        >>> ops.to_numpy(ops.nanmedian(x)).tolist()
        2.5
    """
    return nanquantile(x, 0.5, axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------- selection, casting, creation
def select(condlist, choicelist, default=0):
    """The element of the first ``choicelist`` entry whose condition holds, else ``default``.

    Raises:
        ValueError: lists of different lengths or empty lists.

    Example:
        >>> from ember import ops
        >>> x = ops.arange(4)
        >>> y = ops.select([ops.less(x, 1), ops.greater(x, 2)], [x, ops.multiply(x, 10)], default=-1)
        >>> ops.to_numpy(y).tolist()
        [0, -1, -1, 30]
    """
    if len(condlist) != len(choicelist) or not condlist:
        raise ValueError(f"select: condlist and choicelist must be non-empty lists of the same length, "
                         f"received {len(condlist)} and {len(choicelist)}")
    result = ops.multiply(ops.ones_like(_tensor(choicelist[0])), default)
    result = ops.cast(result, ops.dtype(_tensor(choicelist[0])))
    for condition, choice in zip(reversed(condlist), reversed(choicelist)):
        result = ops.where(condition, choice, result)
    return result


def saturate_cast(x, dtype):
    """``x`` cast to ``dtype`` with values clipped to that dtype's range first (no wrap-around).

    Example:
        >>> from ember import ops
        >>> y = ops.saturate_cast(ops.convert_to_tensor([-5.0, 7.0, 300.0]), 'uint8')
        >>> ops.dtype(y), ops.to_numpy(y).tolist()
        ('uint8', [0, 7, 255])
    """
    x = _tensor(x)
    target = dtypes.standardize_dtype(dtype)
    if target != "bool" and not dtypes.is_complex(target):
        numpy_target = dtypes.to_numpy_dtype("float32" if target == "bfloat16" else target)
        info = np.iinfo(numpy_target) if dtypes.is_integer(target) else np.finfo(numpy_target)
        low, high = float(info.min), float(info.max)
        source = ops.dtype(x)
        if dtypes.is_integer(source):
            source_info = np.iinfo(dtypes.to_numpy_dtype(source))
            low, high = max(low, source_info.min), min(high, source_info.max)
            x = ops.clip(x, int(low), int(high))
        elif dtypes.is_float(source):
            if dtypes.is_integer(target):
                x = ops.clip(x, low, high if high < 2**24 else float(np.nextafter(np.float32(high), 0)))
            else:
                x = ops.clip(x, low, high)
    return ops.cast(x, target)


def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    """``base ** linspace(start, stop, num)``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.logspace(0.0, 2.0, num=3)).astype(float).round(3).tolist()
        [1.0, 10.0, 100.0]
    """
    exponents = ops.linspace(start, stop, num=num, endpoint=endpoint, dtype="float32" if dtype is None else dtype)
    out = ops.power(ops.cast(ops.convert_to_tensor(base), ops.dtype(exponents)), exponents)
    return out if axis == 0 else ops.moveaxis(out, 0, axis)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Numbers spaced evenly on a log scale from ``start`` to ``stop`` (same sign, non-zero).

    Raises:
        ValueError: ``start`` or ``stop`` is zero, or they differ in sign.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.geomspace(1.0, 8.0, num=4)).astype(float).round(3).tolist()
        [1.0, 2.0, 4.0, 8.0]
    """
    if start == 0 or stop == 0 or (start < 0) != (stop < 0):
        raise ValueError(f"geomspace: start and stop must be non-zero with the same sign, received {start}, {stop}")
    sign = -1.0 if start < 0 else 1.0
    exponents = ops.linspace(_math.log(abs(start)), _math.log(abs(stop)), num=num, endpoint=endpoint,
                             dtype="float32" if dtype is None else dtype)
    out = ops.multiply(ops.exp(exponents), sign)
    return out if axis == 0 else ops.moveaxis(out, 0, axis)


def array(x, dtype=None):
    """Alias of ``ops.convert_to_tensor``.

    Example:
        >>> from ember import ops
        >>> x = ops.array([[1, 2]], dtype='float32')
        >>> ops.is_array(x), ops.shape(x), ops.dtype(x)
        (True, (1, 2), 'float32')
    """
    return ops.convert_to_tensor(x, dtype=dtype)


def copy(x: Any) -> Any:
    """A new array equal to ``x`` (gradients flow through).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.copy(ops.convert_to_tensor([1.0, 2.0]))).tolist()
        [1.0, 2.0]
    """
    x = _tensor(x)
    return ops.where(ops.ones_like(x, dtype="bool"), x, x)


def empty(shape, dtype=None):
    """An array of ``shape`` (Ember fills it with zeros: reading it is deterministic).

    Example:
        >>> from ember import ops
        >>> x = ops.empty((2, 3))
        >>> ops.shape(x), ops.dtype(x)
        ((2, 3), 'float32')
    """
    return ops.zeros(shape, dtype=dtype)


def empty_like(x, dtype=None):
    """An array shaped like ``x`` (zeros, see :func:`empty`).

    Example:
        >>> from ember import ops
        >>> x = ops.empty_like(ops.ones((2,)), dtype='int32')
        >>> ops.shape(x), ops.dtype(x)
        ((2,), 'int32')
    """
    return ops.zeros_like(x, dtype=dtype)


def identity(n, dtype=None):
    """The ``n x n`` identity matrix.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.identity(2)).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    return ops.eye(n, dtype=dtype)


def is_tensor(x):
    """Alias of ``ops.is_array``: True for a native array of the active backend.

    Example:
        >>> from ember import ops
        >>> ops.is_tensor(ops.ones(2)), ops.is_tensor([1.0])
        (True, False)
    """
    return ops.is_array(x)


def convert_to_numpy(x: Any) -> np.ndarray:
    """Alias of ``ops.to_numpy``.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_numpy(ops.ones(2))
        >>> type(x).__name__, x.tolist()
        ('ndarray', [1.0, 1.0])
    """
    return ops.to_numpy(x)


def get_item(x, key):
    """Alias of ``ops.getitem`` (``x[key]``).

    Example:
        >>> from ember import ops
        >>> x = ops.arange(6)
        >>> ops.to_numpy(ops.get_item(x, 2)).tolist(), ops.to_numpy(ops.get_item(x, slice(1, 3))).tolist()
        (2, [1, 2])
    """
    return ops.getitem(x, key)


def erfc(x):
    """Complementary error function ``1 - erf(x)``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.erfc(ops.convert_to_tensor([0.0, 1.0]))).astype(float).round(4).tolist()
        [1.0, 0.1573]
    """
    return ops.subtract(1.0, ops.erf(_float(x)))


_I0_SERIES_LIMIT = 30.0
# Asymptotic coefficients ((2k-1)!!)^2 / (k! 8^k) of i0(x) ~ e^x / sqrt(2 pi x) * sum_k c_k / x^k.
_I0_ASYMPTOTIC = [1.0]
for _k in range(1, 12):
    _I0_ASYMPTOTIC.append(_I0_ASYMPTOTIC[-1] * (2 * _k - 1) ** 2 / (_k * 8.0))


def i0(x):
    """Modified Bessel function of the first kind, order 0: its power series up to ``|x| = 30``
    (80 terms), the asymptotic expansion beyond (relative error below 1e-12 in float64).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.i0(ops.convert_to_tensor([0.0, 1.0]))).astype(float).round(4).tolist()
        [1.0, 1.2661]
    """
    x = _float(x)
    a = ops.abs(x)
    small = ops.less_equal(a, _I0_SERIES_LIMIT)
    near = ops.where(small, a, ops.zeros_like(a))
    quarter_square = ops.square(ops.divide(near, 2.0))
    term = ops.ones_like(a)
    total = ops.ones_like(a)
    for k in range(1, 81):
        term = ops.divide(ops.multiply(term, quarter_square), float(k * k))
        total = ops.add(total, term)
    far = ops.where(small, ops.full_like(a, _I0_SERIES_LIMIT), a)
    series = ops.ones_like(a)
    power = ops.ones_like(a)
    for coefficient in _I0_ASYMPTOTIC[1:]:
        power = ops.divide(power, far)
        series = ops.add(series, ops.multiply(power, coefficient))
    large = ops.multiply(ops.divide(ops.exp(far), ops.sqrt(ops.multiply(far, 2.0 * _math.pi))), series)
    return ops.where(small, total, large)
