"""Descriptive statistics of the MLX backend (NumPy semantics).

Quantiles sort along the reduced axis (moved last, several axes merged into one) and
interpolate between the neighbouring order statistics, with NumPy's ``method`` names;
NaN anywhere in a reduced slice makes that result NaN, as in NumPy.
"""

from __future__ import annotations

import math

import mlx.core as mx
import numpy as np

from ember.backends.mlx import core as _core
from ember.backends.mlx._base import A, axes_of, inexact, to_mx, to_numpy

mean = _core.mean
var = _core.var
std = _core.std

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _q_values(q, scale, op):
    host = to_numpy(q) if isinstance(q, A) or getattr(type(q), "__ember_tensor__", False) else np.asarray(q)
    host = host.astype(np.float64) / scale
    if host.ndim > 1:
        raise ValueError(f"{op}: q must be a scalar or 1-D, received shape {host.shape}")
    if np.any(np.isnan(host)) or np.any(host < 0) or np.any(host > 1):
        bound = "[0, 100]" if scale == 100 else "[0, 1]"
        raise ValueError(f"{op}: q must lie in {bound}, received {np.asarray(q).tolist()}")
    return host


def _quantile(x, q, axis, keepdims, method, op):
    if method not in _METHODS:
        raise ValueError(f"{op}: method must be one of {_METHODS}, received {method!r}")
    x = inexact(x)
    scalar_q = q.ndim == 0
    ndim = x.ndim
    axes = axes_of(axis, ndim)
    if axes is None:
        axes = list(range(ndim))
    kept = [a for a in range(ndim) if a not in axes]
    # Move the reduced axes last and merge them into one.
    moved = mx.transpose(x, kept + list(axes)) if ndim else x
    kept_shape = tuple(x.shape[a] for a in kept)
    n = math.prod(x.shape[a] for a in axes)
    if n == 0:
        flat = mx.zeros(kept_shape + (q.size,), dtype=x.dtype) + math.nan  # NumPy: NaN for empty slices
        return _arrange(flat, q, scalar_q, kept, ndim, x.shape, keepdims)
    flat = mx.reshape(moved, kept_shape + (n,))
    ordered = mx.sort(flat, axis=-1)
    position = q * (n - 1)
    lower = np.floor(position).astype(np.int64)
    upper = np.minimum(lower + 1, n - 1)
    if method == "lower":
        upper = lower
    elif method == "higher":
        lower = upper = np.ceil(position).astype(np.int64)
    elif method == "midpoint":
        upper = np.ceil(position).astype(np.int64)
    elif method == "nearest":
        lower = upper = np.round(position).astype(np.int64)  # round half to even, as NumPy
    low_vals = mx.take(ordered, mx.array(lower.reshape(-1).astype(np.int32)), axis=-1)
    high_vals = mx.take(ordered, mx.array(upper.reshape(-1).astype(np.int32)), axis=-1)
    if method == "linear":
        weight = mx.array((position - np.floor(position)).reshape(-1), dtype=mx.float32).astype(x.dtype)
        out = low_vals + (high_vals - low_vals) * weight
        out = mx.where(weight == 0, low_vals, out)  # exact order statistics (also with inf)
    elif method == "midpoint":
        out = mx.where(mx.array(lower.reshape(-1) == upper.reshape(-1)), low_vals, (low_vals + high_vals) * 0.5)
    else:
        out = low_vals
    has_nan = mx.any(mx.isnan(flat), axis=-1, keepdims=True)
    out = mx.where(has_nan, mx.array(float("nan"), dtype=out.dtype), out)
    return _arrange(out, q, scalar_q, kept, ndim, x.shape, keepdims)


def _arrange(out, q, scalar_q, kept, ndim, shape, keepdims):
    """``kept_shape + (nq,)`` -> ``(nq,) + kept_shape`` (NumPy's layout), keepdims restored."""
    out = mx.moveaxis(out, -1, 0)
    if keepdims:
        full = [1] * ndim
        for a in kept:
            full[a] = shape[a]
        out = mx.reshape(out, (out.shape[0],) + tuple(full))
    return out[0] if scalar_q else out


def median(x, axis=None, keepdims=False):
    return _quantile(x, np.asarray(0.5), axis, keepdims, "linear", "median")


def percentile(x, q, axis=None, keepdims=False, method="linear"):
    return _quantile(x, _q_values(q, 100.0, "percentile"), axis, keepdims, method, "percentile")


def quantile(x, q, axis=None, keepdims=False, method="linear"):
    return _quantile(x, _q_values(q, 1.0, "quantile"), axis, keepdims, method, "quantile")


def cov(x, rowvar=True, bias=False, ddof=None):
    x = inexact(x)
    if x.ndim > 2:
        raise ValueError(f"cov: x must be 1-D or 2-D, received shape {tuple(x.shape)}")
    if x.ndim < 2:
        x = mx.reshape(x, (1, -1))
    if not rowvar and x.shape[0] != 1:
        x = mx.transpose(x)
    if ddof is None:
        ddof = 0 if bias else 1
    count = x.shape[1]
    centred = x - mx.mean(x, axis=1, keepdims=True)
    product = mx.matmul(centred, mx.conj(mx.transpose(centred)))
    out = product / max(count - ddof, 0)
    return mx.squeeze(out) if out.shape == (1, 1) else out


def gaussian(x, mean=0.0, std=1.0):
    x = inexact(x)
    mean = to_mx(mean, "mean").astype(x.dtype) if not isinstance(mean, (int, float)) else mean
    std = to_mx(std, "std").astype(x.dtype) if not isinstance(std, (int, float)) else std
    z = (x - mean) / std
    return _core.exp(-0.5 * z * z) / (std * math.sqrt(2.0 * math.pi))
