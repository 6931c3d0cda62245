"""NumPy backend: reductions (re-exported by ``core``).

Accumulator dtypes follow Ember, not NumPy: sums/products of bool and small
integers give ``int32`` (NumPy gives ``int64``), ``int32`` stays ``int32``,
float16/bfloat16 accumulate in float32 and are rounded back once, and means /
variances of integers are computed in float64 and returned as ``floatx()``.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np

from ember.backends.numpy._base import (
    BF16,
    F32,
    F64,
    HALF,
    I32,
    ND,
    NP_DTYPES,
    axes_arg,
    axis_arg,
    floatx,
    out,
    to_float,
    to_native,
)


def _accumulator(dt: np.dtype) -> tuple[np.dtype, np.dtype | None]:
    """``(dtype to accumulate in, dtype to cast the result to or None)`` for sum/prod/cumsum."""
    plan = _ACCUMULATORS.get(dt)
    if plan is not None:
        return plan
    kind = dt.kind
    if kind in "biu":
        return (I32, None) if dt.itemsize < 4 else (dt, None)
    if dt in HALF:
        return F32, dt
    return dt, None


_ACCUMULATORS: dict = {}
_ACCUMULATORS.update({dt: _accumulator(dt) for dt in NP_DTYPES.values()})


def _reduce_with(ufunc, x, axis, keepdims):
    if type(x) is not ND:
        x = to_native(x)
    axes = None if axis is None else axes_arg(axis, x.ndim)
    acc, final = _accumulator(x.dtype)
    # ufunc.reduce directly (np.sum is a Python wrapper around it); out=... keeps 0-d arrays.
    r = ufunc.reduce(x, axis=axes, dtype=acc, keepdims=keepdims, out=...)
    return r if final is None else r.astype(final)


def sum(x, axis=None, keepdims=False):
    return _reduce_with(np.add, x, axis, keepdims)


def prod(x, axis=None, keepdims=False):
    return _reduce_with(np.multiply, x, axis, keepdims)


def _moment_input(x):
    """``(array to compute on, dtype of the result)`` for mean/var/std."""
    if type(x) is not ND:
        x = to_native(x)
    dt = x.dtype
    if dt.kind in "biu":
        return x.astype(F64), floatx()
    if dt in HALF:
        return x.astype(F32), dt
    return x, None


def mean(x, axis=None, keepdims=False):
    x, final = _moment_input(x)
    axes = None if axis is None else axes_arg(axis, x.ndim)
    count = x.size if axes is None else math.prod([x.shape[a] for a in axes])
    if count == 0:
        with _silent_nan():  # NaN, as on torch and MLX, without NumPy's RuntimeWarning
            r = out(np.mean(x, axis=axes, keepdims=keepdims))
    else:
        # NumPy's mean: a pairwise sum in the input precision, then one division.
        r = np.true_divide(np.add.reduce(x, axis=axes, keepdims=keepdims, out=...), count, out=...)
    return r if final is None else r.astype(final)


@contextlib.contextmanager
def _silent_nan():
    """Silence NumPy's RuntimeWarnings for a degenerate moment (empty slice, ``ddof >= n``): the
    result is NaN/inf on every backend, and only NumPy would warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _moment(function, x, axis, keepdims, ddof):
    x, final = _moment_input(x)
    axes = axes_arg(axis, x.ndim)
    count = x.size if axes is None else math.prod([x.shape[a] for a in axes])
    if count - ddof <= 0 or x.size == 0:
        with _silent_nan():
            r = out(function(x, axis=axes, keepdims=keepdims, ddof=ddof))
    else:
        r = out(function(x, axis=axes, keepdims=keepdims, ddof=ddof))
    return r if final is None else r.astype(final)


def var(x, axis=None, keepdims=False, ddof=0):
    return _moment(np.var, x, axis, keepdims, ddof)


def std(x, axis=None, keepdims=False, ddof=0):
    return _moment(np.std, x, axis, keepdims, ddof)


def _check_nonempty(x, axes, op):
    if x.size == 0 and (axes is None or np.prod([x.shape[a] for a in axes]) == 0):
        raise ValueError(f"{op}: cannot reduce over an empty axis (input shape {x.shape}, axis {axes})")


def _extremum(fn, x, axis, keepdims, op):
    x = to_native(x)
    axes = axes_arg(axis, x.ndim)
    _check_nonempty(x, axes, op)
    if x.dtype == BF16:  # exact in float32, and NumPy's NaN propagation
        return out(fn(x.astype(F32), axis=axes, keepdims=keepdims)).astype(BF16)
    return out(fn(x, axis=axes, keepdims=keepdims))


def max(x, axis=None, keepdims=False):
    return _extremum(np.max, x, axis, keepdims, "max")


def min(x, axis=None, keepdims=False):
    return _extremum(np.min, x, axis, keepdims, "min")


def _arg_extremum(fn, x, axis, keepdims, op):
    x = to_native(x)
    if axis is not None:
        axis = axis_arg(axis, x.ndim)
        if x.shape[axis] == 0:
            raise ValueError(f"{op}: cannot reduce over an empty axis (input shape {x.shape}, axis {axis})")
    elif x.size == 0:
        raise ValueError(f"{op}: cannot reduce an empty array (input shape {x.shape})")
    if x.dtype == BF16:
        x = x.astype(F32)
    return out(fn(x, axis=axis, keepdims=keepdims)).astype(I32)


def argmax(x, axis=None, keepdims=False):
    return _arg_extremum(np.argmax, x, axis, keepdims, "argmax")


def argmin(x, axis=None, keepdims=False):
    return _arg_extremum(np.argmin, x, axis, keepdims, "argmin")


def logsumexp(x, axis=None, keepdims=False):
    x = to_float(to_native(x))
    final = x.dtype if x.dtype in HALF else None
    if final is not None:
        x = x.astype(F32)
    axes = axes_arg(axis, x.ndim)
    with np.errstate(divide="ignore"):
        if x.size == 0:
            r = np.log(np.sum(np.exp(x), axis=axes, keepdims=keepdims))
        else:
            shift = np.max(x, axis=axes, keepdims=True)
            shift = np.where(np.isfinite(shift), shift, 0).astype(x.dtype, copy=False)
            r = np.log(np.sum(np.exp(x - shift), axis=axes, keepdims=True)) + shift
            if not keepdims:
                r = np.squeeze(r, axis=axes) if axes is not None else r.reshape(())
    r = out(r)
    return r if final is None else r.astype(final)


def all(x, axis=None, keepdims=False):
    x = to_native(x)
    return out(np.all(x, axis=axes_arg(axis, x.ndim), keepdims=keepdims))


def any(x, axis=None, keepdims=False):
    x = to_native(x)
    return out(np.any(x, axis=axes_arg(axis, x.ndim), keepdims=keepdims))


def _cumulative(fn, x, axis):
    x = to_native(x)
    if axis is not None:
        axis = axis_arg(axis, x.ndim)
    acc, final = _accumulator(x.dtype)
    r = fn(x, axis=axis, dtype=acc)
    return r if final is None else r.astype(final)


def cumsum(x, axis=None):
    return _cumulative(np.cumsum, x, axis)


def cumprod(x, axis=None):
    return _cumulative(np.cumprod, x, axis)


def count_nonzero(x, axis=None):
    x = to_native(x)
    return np.asarray(np.count_nonzero(x, axis=axes_arg(axis, x.ndim)), dtype=I32)
