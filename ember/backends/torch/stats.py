"""``ember.ops.stats`` on torch: descriptive statistics with NumPy's semantics.

Quantiles are computed from a sort (not ``torch.quantile``, which caps the input
size and supports only float32/float64): the reduced axes are moved last and
flattened, sorted (NaN sorts last; any NaN makes the result NaN as in NumPy), and
the order statistics are interpolated by the requested method.
"""

from __future__ import annotations

import math

import torch

from ember.backends._common import normalize_axes
from ember.backends.torch import core
from ember.backends.torch._base import COMPLEX, HALF, native, to_float

mean = core.mean
var = core.var
std = core.std

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(x, q, axis, keepdims, method, name, scale):
    if method not in _METHODS:
        raise ValueError(f"{name}: unknown method {method!r}; expected one of {_METHODS}")
    x = to_float(x)
    if x.dtype in COMPLEX:
        raise TypeError(f"{name}: complex inputs are not supported")
    out_dtype = x.dtype
    compute = torch.float32 if out_dtype in HALF else out_dtype
    x = x.to(compute)
    qs = native(q, "q", x.device).to(device=x.device, dtype=compute) / scale
    if qs.ndim > 1:
        raise ValueError(f"{name}: q must be a scalar or 1-D, received shape {tuple(qs.shape)}")
    if qs.numel() and (bool((qs < 0).any()) or bool((qs > 1).any())):
        bound = "[0, 100]" if scale == 100 else "[0, 1]"
        raise ValueError(f"{name}: q must lie in {bound}, received {q!r}")
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(axis, x.ndim)
    kept = [d for d in range(x.ndim) if d not in axes]
    flat = x.permute(kept + list(axes)).reshape([x.shape[d] for d in kept] + [-1])
    n = flat.shape[-1]
    if n == 0:
        result = torch.full(tuple(flat.shape[:-1]) + tuple(qs.shape), math.nan, dtype=compute, device=x.device)
    else:
        ordered = torch.sort(flat, dim=-1).values
        position = qs * (n - 1)
        low = torch.floor(position).long().clamp(0, n - 1)
        high = torch.ceil(position).long().clamp(0, n - 1)
        if method == "lower":
            result = ordered[..., low]
        elif method == "higher":
            result = ordered[..., high]
        elif method == "nearest":
            result = ordered[..., torch.round(position).long().clamp(0, n - 1)]  # half to even, as NumPy
        else:
            a, b = ordered[..., low], ordered[..., high]
            if method == "midpoint":
                result = (a + b) / 2
            else:
                # NumPy's lerp: from the nearer end, so t=1 gives b exactly.
                t = position - low
                diff = b - a
                result = torch.where(t >= 0.5, b - diff * (1 - t), a + diff * t)
        has_nan = torch.isnan(ordered[..., -1])
        result = torch.where(has_nan.reshape(tuple(has_nan.shape) + (1,) * qs.ndim), math.nan, result)
    # result: kept axes then q's axis; NumPy puts q's axis first.
    if qs.ndim:
        result = torch.movedim(result, -1, 0)
    if keepdims:
        shape = [1 if d in axes else x.shape[d] for d in range(x.ndim)]
        result = result.reshape(tuple(qs.shape) + tuple(shape))
    return result.to(out_dtype)


def median(x, axis=None, keepdims=False):
    return _quantile(x, 0.5, axis, keepdims, "linear", "median", 1)


def percentile(x, q, axis=None, keepdims=False, method="linear"):
    return _quantile(x, q, axis, keepdims, method, "percentile", 100)


def quantile(x, q, axis=None, keepdims=False, method="linear"):
    return _quantile(x, q, axis, keepdims, method, "quantile", 1)


def cov(x, rowvar=True, bias=False, ddof=None):
    x = to_float(x)
    if x.ndim > 2:
        raise ValueError(f"cov: expected a 1-D or 2-D array, received shape {tuple(x.shape)}")
    X = x.reshape(1, -1) if x.ndim < 2 else x
    if not rowvar and X.shape[0] != 1:
        X = X.T
    if ddof is None:
        ddof = 0 if bias else 1
    n = X.shape[1]
    centered = X - X.mean(dim=1, keepdim=True)
    c = centered @ centered.conj().T / (n - ddof)
    return c.squeeze()


def gaussian(x, mean=0.0, std=1.0):
    x = to_float(x)
    mu = mean if isinstance(mean, (int, float)) else native(mean, "mean", x.device).to(x.dtype)
    sigma = std if isinstance(std, (int, float)) else native(std, "std", x.device).to(x.dtype)
    z = (x - mu) / sigma
    return torch.exp(-0.5 * z * z) / (sigma * math.sqrt(2.0 * math.pi))

