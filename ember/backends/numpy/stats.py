"""NumPy backend, ``ember.ops.stats``: descriptive statistics.

Order statistics and covariances are computed in float64 and rounded once to the
result dtype (the input's float dtype, ``floatx()`` for integers).
"""

from __future__ import annotations

import math

import numpy as np

from ember import dtypes as _dtypes
from ember.backends.numpy import _reduce
from ember.backends.numpy._base import F64, NP_DTYPES, axes_arg, floatx, name_of, out, to_native

# ``ops.stats`` re-exports the reductions; plain names, since ``gaussian``'s arguments reuse two of them.
mean, std, var = _reduce.mean, _reduce.std, _reduce.var

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _float64(x):
    """``(x as float64, result dtype)``: integers give ``floatx()``, floats keep their dtype."""
    x = to_native(x)
    final = floatx() if x.dtype.kind in "biu" else x.dtype
    if x.dtype.kind == "c":
        raise TypeError(f"complex input is not supported by this statistic (received {x.dtype})")
    return x.astype(F64), final


def median(x, axis=None, keepdims=False):
    x, final = _float64(x)
    return out(np.median(x, axis=axes_arg(axis, x.ndim), keepdims=keepdims)).astype(final)


def _quantile(x, q, axis, keepdims, method, op):
    if method not in _METHODS:
        raise ValueError(f"stats.{op}: method must be one of {_METHODS}, received {method!r}")
    x, final = _float64(x)
    if q.ndim > 1:
        raise ValueError(f"stats.{op}: q must be a scalar or 1-D, received shape {q.shape}")
    if q.size and (np.isnan(q).any() or q.min() < 0.0 or q.max() > 1.0):
        bounds = "[0, 100]" if op == "percentile" else "[0, 1]"
        raise ValueError(f"stats.{op}: q must lie in {bounds}")
    r = np.quantile(x, q, axis=axes_arg(axis, x.ndim), keepdims=keepdims, method=method)
    return out(r).astype(final)


def _q_array(q):
    # Python numbers go straight to float64 (a float32 round trip would move ties of 'nearest').
    if isinstance(q, (int, float, list, tuple)):
        return np.asarray(q, dtype=F64)
    return to_native(q, "q").astype(F64)


def quantile(x, q, axis=None, keepdims=False, method="linear"):
    return _quantile(x, _q_array(q), axis, keepdims, method, "quantile")


def percentile(x, q, axis=None, keepdims=False, method="linear"):
    return _quantile(x, _q_array(q) / 100.0, axis, keepdims, method, "percentile")


def cov(x, rowvar=True, bias=False, ddof=None):
    x = to_native(x)
    if x.ndim > 2:
        raise ValueError(f"stats.cov: x must be 1-D or 2-D, received shape {x.shape}")
    final = floatx() if x.dtype.kind in "biu" else x.dtype
    work = x.astype(np.complex128 if x.dtype.kind == "c" else F64)
    return out(np.cov(work, rowvar=rowvar, bias=bias, ddof=ddof)).astype(final)


def _arg(value, name):
    """A Python scalar stays weak (for promotion); anything else becomes an array."""
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        return value, value
    array = to_native(value, name)
    return array, name_of(array.dtype)


def gaussian(x, mean=0.0, std=1.0):
    x = to_native(x)
    mean, mean_kind = _arg(mean, "mean")
    std, std_kind = _arg(std, "std")
    result = _dtypes.result_type(name_of(x.dtype), mean_kind, std_kind)
    if result not in _dtypes.FLOATING:
        result = _dtypes.floatx()
    z = (x.astype(F64) - np.asarray(mean, F64)) / np.asarray(std, F64)
    density = np.exp(-0.5 * z * z) / (np.asarray(std, F64) * math.sqrt(2.0 * math.pi))
    return out(density).astype(NP_DTYPES[result])
