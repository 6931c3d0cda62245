"""Reductions of the MLX backend (re-exported by :mod:`.core`).

Ember's dtype rules: ``sum``/``prod``/``cumsum``/``cumprod`` of bool and integers
narrower than 32 bits accumulate in int32; ``mean``/``var``/``std``/``logsumexp`` of
integers give ``floatx()``; index results are int32 (MLX returns uint32). Empty inputs
never reach MLX's reduction kernels (some read garbage for them, e.g. ``all`` over a
(0, 3) array): their results are built from the reduction's identity.
"""

from __future__ import annotations

import builtins
import math

import mlx.core as mx

from ember.backends.mlx import _base, _f64
from ember.backends.mlx._base import SMALL_INTS, axes_of, inexact, to_mx

# -------------------------------------------------------------------------------- reductions


def _accumulating(x):
    """bool and narrow ints accumulate in int32 (Ember's rule for sum/prod/cumsum)."""
    return x.astype(mx.int32) if x.itemsize <= 2 and x.dtype in SMALL_INTS else x  # (itemsize: cheap)


def _reduced_shape(x, axes, keepdims):
    reduced = range(x.ndim) if axes is None else axes
    if keepdims:
        return tuple(1 if a in reduced else d for a, d in enumerate(x.shape))
    return tuple(d for a, d in enumerate(x.shape) if a not in reduced)


def _identity(x, axes, keepdims, value, dtype):
    """The result of reducing an empty ``x``: MLX's kernels read garbage for some empty
    reductions (e.g. ``all`` over a (0, 3) array), so empty inputs never reach them."""
    return mx.full(_reduced_shape(x, axes, keepdims), value, dtype=dtype)


def sum(x, axis=None, keepdims=False):
    x = to_mx(x)
    axes = axes_of(axis, x.ndim)
    x = _accumulating(x)
    if x.size == 0:
        return _identity(x, axes, keepdims, 0, x.dtype)
    return mx.sum(x, axis=axes, keepdims=keepdims)


def prod(x, axis=None, keepdims=False):
    x = to_mx(x)
    axes = axes_of(axis, x.ndim)
    x = _accumulating(x)
    if x.size == 0:
        return _identity(x, axes, keepdims, 1, x.dtype)
    return mx.prod(x, axis=axes, keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    x = inexact(x)
    axes = axes_of(axis, x.ndim)
    if x.size == 0:
        return _identity(x, axes, keepdims, math.nan, x.dtype)
    return mx.mean(x, axis=axes, keepdims=keepdims)


def var(x, axis=None, keepdims=False, ddof=0):
    x = inexact(x)
    axes = axes_of(axis, x.ndim)
    if x.size == 0:
        return _identity(x, axes, keepdims, math.nan, mx.float32 if x.dtype == mx.complex64 else x.dtype)
    if x.dtype == mx.complex64:
        centred = x - mx.mean(x, axis=axes, keepdims=True)
        count = _count(x, axes)
        power2 = mx.real(centred * mx.conj(centred))
        return mx.sum(power2, axis=axes, keepdims=keepdims) / builtins.max(count - ddof, 0)
    return mx.var(x, axis=axes, keepdims=keepdims, ddof=int(ddof))


def std(x, axis=None, keepdims=False, ddof=0):
    return mx.sqrt(var(x, axis=axis, keepdims=keepdims, ddof=ddof))


def _count(x, axes):
    if axes is None:
        return x.size
    return math.prod(x.shape[a] for a in axes)


def _check_nonempty(x, axes, op):
    if x.size == 0:
        reduced = range(x.ndim) if axes is None else axes
        if x.ndim == 0 or builtins.any(x.shape[a] == 0 for a in reduced):
            raise ValueError(f"{op}: zero-size reduction over axis {axes if axes is not None else None} "
                             f"of an array of shape {tuple(x.shape)} has no identity")


def max(x, axis=None, keepdims=False):
    x = to_mx(x)
    axes = axes_of(axis, x.ndim)
    _check_nonempty(x, axes, "max")
    if x.size == 0:
        return _identity(x, axes, keepdims, 0, x.dtype)
    return mx.max(x, axis=axes, keepdims=keepdims)


def min(x, axis=None, keepdims=False):
    x = to_mx(x)
    axes = axes_of(axis, x.ndim)
    _check_nonempty(x, axes, "min")
    if x.size == 0:
        return _identity(x, axes, keepdims, 0, x.dtype)
    return mx.min(x, axis=axes, keepdims=keepdims)


def _arg_reduce(function, x, axis, keepdims, op):
    x = to_mx(x)
    if axis is None:
        _check_nonempty(x, None, op)
        out = function(mx.reshape(x, (-1,)), axis=0).astype(mx.int32)
        return mx.reshape(out, (1,) * x.ndim) if keepdims else out
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"{op}: axis must be an int or None, received {axis!r}")
    axis = _base.normalize_axis(axis, x.ndim)
    _check_nonempty(x, [axis], op)
    if x.size == 0:
        return _identity(x, [axis], keepdims, 0, mx.int32)
    return function(x, axis=axis, keepdims=keepdims).astype(mx.int32)


def argmax(x, axis=None, keepdims=False):
    return _arg_reduce(mx.argmax, x, axis, keepdims, "argmax")


def argmin(x, axis=None, keepdims=False):
    return _arg_reduce(mx.argmin, x, axis, keepdims, "argmin")


def logsumexp(x, axis=None, keepdims=False):
    x = inexact(x)
    axes = axes_of(axis, x.ndim)
    if x.size == 0:
        # log(sum over nothing) = log(0) = -inf, like scipy.special.logsumexp.
        return _identity(x, axes, keepdims, -math.inf, x.dtype)
    if x.dtype == mx.float64:
        return _f64.logsumexp(x, axes, keepdims)
    return mx.logsumexp(x, axis=axes, keepdims=keepdims)


def all(x, axis=None, keepdims=False):
    x = to_mx(x)
    axes = axes_of(axis, x.ndim)
    if x.size == 0:
        return _identity(x, axes, keepdims, True, mx.bool_)
    return mx.all(x, axis=axes, keepdims=keepdims)


def any(x, axis=None, keepdims=False):
    x = to_mx(x)
    axes = axes_of(axis, x.ndim)
    if x.size == 0:
        return _identity(x, axes, keepdims, False, mx.bool_)
    return mx.any(x, axis=axes, keepdims=keepdims)


def _cumulative(function, x, axis):
    x = _accumulating(to_mx(x))
    if axis is None:
        x = mx.reshape(x, (-1,))
        axis = 0
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"axis must be an int or None, received {axis!r}")
    axis = _base.normalize_axis(axis, x.ndim)
    if x.size == 0:
        return x
    return function(x, axis=axis)


def cumsum(x, axis=None):
    return _cumulative(mx.cumsum, x, axis)


def cumprod(x, axis=None):
    return _cumulative(mx.cumprod, x, axis)


def count_nonzero(x, axis=None):
    x = to_mx(x)
    axes = axes_of(axis, x.ndim)
    if x.size == 0:
        return _identity(x, axes, False, 0, mx.int32)
    return mx.sum(mx.not_equal(x, mx.zeros((), dtype=x.dtype)), axis=axes).astype(mx.int32)
