"""VJP rules of reductions, cumulative ops and descriptive statistics.

``max``/``min`` (and ``segment_max``) split the cotangent evenly among tied extrema,
as PyTorch's ``amax``/``amin`` and full ``max()`` do. ``prod`` and ``cumprod`` are exact
with zeros in the input (exclusive products instead of ``out / x``). ``median``,
``percentile`` and ``quantile`` send the cotangent to the order statistics they
interpolate (ties are resolved by a stable sort, so a tie's share goes to the first
occurrence).
"""

from __future__ import annotations

import numpy as np

from ember import ops
from ember.autodiff.rules import axes_of, count_of, expand_reduced, plain, register


@register("sum", unread_args=(0,), reads_out=False)
def sum_(g, out, x, axis=None, keepdims=False):
    return (expand_reduced(g, x.shape, axis, keepdims),)


@register("mean", "stats.mean", unread_args=(0,), reads_out=False)
def mean(g, out, x, axis=None, keepdims=False):
    n = count_of(x.shape, axes_of(axis, x.ndim))
    return (ops.divide(expand_reduced(g, x.shape, axis, keepdims), float(max(n, 1))),)


def _to_last(x, axes):
    """``x`` with ``axes`` moved to the end and merged into one; returns (array, perm, moved shape)."""
    keep = [i for i in range(x.ndim) if i not in axes]
    perm = keep + list(axes)
    moved = ops.transpose(x, perm) if perm != list(range(x.ndim)) else x
    moved_shape = tuple(x.shape[i] for i in perm)
    kept = tuple(x.shape[i] for i in keep)
    return ops.reshape(moved, kept + (count_of(x.shape, axes),)), perm, moved_shape


def _from_last(y, perm, moved_shape):
    y = ops.reshape(y, moved_shape)
    if perm != list(range(len(perm))):
        y = ops.transpose(y, list(np.argsort(perm)))
    return y


def _exclusive_products(v, axis=-1):
    """Product of all other entries along ``axis`` (exact with zeros), via two cumulative products."""
    n = v.shape[axis]
    ones_shape = list(v.shape)
    ones_shape[axis] = 1
    ones = np.ones(ones_shape, dtype=plain(v).dtype)
    head = [slice(None)] * v.ndim
    head[axis] = slice(0, n - 1)
    tail = [slice(None)] * v.ndim
    tail[axis] = slice(1, n)
    left = ops.cumprod(ops.concatenate([ones, ops.getitem(v, tuple(head))], axis=axis), axis=axis)
    right = ops.flip(
        ops.cumprod(ops.flip(ops.concatenate([ops.getitem(v, tuple(tail)), ones], axis=axis), axis=axis), axis=axis),
        axis=axis,
    )
    return ops.multiply(left, right)


@register("prod")
def prod(g, out, x, axis=None, keepdims=False):
    axes = axes_of(axis, x.ndim)
    gb = expand_reduced(g, x.shape, axis, keepdims)
    values = plain(x)
    if values.size == 0:
        return (ops.zeros_like(values),)
    if np.all(values != 0):
        ratio = ops.divide(expand_reduced(out, x.shape, axis, keepdims), x)
        return (ops.multiply(gb, ratio),)
    if not axes:
        return (gb,)
    merged, perm, moved_shape = _to_last(x, axes)
    others = _from_last(_exclusive_products(merged), perm, moved_shape)
    return (ops.multiply(gb, others),)


def _extremum(g, out, x, axis, keepdims):
    outb = plain(expand_reduced(plain(out), x.shape, axis, keepdims))
    mask = np.asarray(plain(x) == outb, dtype=plain(g).dtype)
    count = mask.sum(axis=axes_of(axis, x.ndim), keepdims=True)
    scale = mask / np.maximum(count, 1)
    return (ops.multiply(expand_reduced(g, x.shape, axis, keepdims), scale),)


@register("max")
def max_(g, out, x, axis=None, keepdims=False):
    return _extremum(g, out, x, axis, keepdims)


@register("min")
def min_(g, out, x, axis=None, keepdims=False):
    return _extremum(g, out, x, axis, keepdims)


@register("var", "stats.var")
def var(g, out, x, axis=None, keepdims=False, ddof=0):
    n = count_of(x.shape, axes_of(axis, x.ndim))
    centered = ops.subtract(x, ops.mean(x, axis=axis, keepdims=True))
    scale = 2.0 / (n - ddof) if n - ddof else float("nan")
    return (ops.multiply(ops.multiply(expand_reduced(g, x.shape, axis, keepdims), centered), scale),)


@register("std", "stats.std")
def std(g, out, x, axis=None, keepdims=False, ddof=0):
    n = count_of(x.shape, axes_of(axis, x.ndim))
    centered = ops.subtract(x, ops.mean(x, axis=axis, keepdims=True))
    denominator = ops.multiply(expand_reduced(out, x.shape, axis, keepdims), float(n - ddof))
    return (ops.divide(ops.multiply(expand_reduced(g, x.shape, axis, keepdims), centered), denominator),)


@register("logsumexp")
def logsumexp(g, out, x, axis=None, keepdims=False):
    weights = ops.exp(ops.subtract(x, expand_reduced(out, x.shape, axis, keepdims)))
    return (ops.multiply(expand_reduced(g, x.shape, axis, keepdims), weights),)


def _reverse_cumsum(g, axis):
    return ops.flip(ops.cumsum(ops.flip(g, axis=axis), axis=axis), axis=axis)


@register("cumsum")
def cumsum(g, out, x, axis=None):
    if axis is None:
        return (ops.reshape(_reverse_cumsum(g, 0), x.shape),)
    return (_reverse_cumsum(g, axis),)


@register("cumprod")
def cumprod(g, out, x, axis=None):
    if axis is None:
        flat = ops.reshape(x, (-1,))
        return (ops.reshape(_cumprod_grad(g, out, flat, 0), x.shape),)
    return (_cumprod_grad(g, out, x, int(axis) % x.ndim),)


def _cumprod_grad(g, out, x, axis):
    values = plain(x)
    if values.size == 0:
        return ops.zeros_like(values)
    if np.all(values != 0):
        return ops.divide(_reverse_cumsum(ops.multiply(g, out), axis), x)
    # Exact with zeros: d out_j / d x_k = prod_{i <= j, i != k} x_i for j >= k. Build those
    # products for every k at once (an n x n triangle along a new axis).
    n = x.shape[axis]
    xt = ops.moveaxis(x, axis, -1)
    gt = ops.moveaxis(g, axis, -1)
    eye = np.eye(n, dtype=bool)
    rows = ops.broadcast_to(ops.expand_dims(xt, -2), tuple(xt.shape[:-1]) + (n, n))
    rows = ops.where(eye, 1.0, rows)  # row k: x with x_k replaced by 1
    partial = ops.cumprod(rows, axis=-1)  # [k, j] = prod_{i <= j, i != k} x_i
    upper = np.triu(np.ones((n, n), dtype=values.dtype))
    weighted = ops.multiply(ops.multiply(partial, upper), ops.expand_dims(gt, -2))
    return ops.moveaxis(ops.sum(weighted, axis=-1), -1, axis)


# ---------------------------------------------------------------- order statistics
def _quantile_weights(n: int, qs: np.ndarray, method: str) -> np.ndarray:
    """Matrix ``W`` (len(qs), n): quantile j = sum_i W[j, i] * sorted[i]."""
    weights = np.zeros((len(qs), n))
    for j, q in enumerate(qs):
        position = q * (n - 1)
        lo = int(np.floor(position))
        hi = min(lo + 1, n - 1)
        frac = position - lo
        if method == "linear":
            weights[j, lo] += 1.0 - frac
            if frac:
                weights[j, hi] += frac
        elif method == "lower":
            weights[j, lo] = 1.0
        elif method == "higher":
            weights[j, int(np.ceil(position))] = 1.0
        elif method == "nearest":
            weights[j, int(np.around(position))] = 1.0
        elif method == "midpoint":
            if frac:
                weights[j, lo] += 0.5
                weights[j, hi] += 0.5
            else:
                weights[j, lo] = 1.0
        else:
            raise NotImplementedError(f"ember.ops.stats.quantile: no gradient for method={method!r}")
    return weights


def _quantile_grad(g, x, q, axis, keepdims, method):
    qs = np.atleast_1d(np.asarray(plain(q), dtype=np.float64))
    axes = axes_of(axis, x.ndim)
    merged, perm, moved_shape = _to_last(x, axes)
    n = merged.shape[-1]
    order = np.argsort(plain(merged), axis=-1, kind="stable")
    inverse = np.argsort(order, axis=-1, kind="stable")
    weights = _quantile_weights(n, qs, method).astype(plain(g).dtype)
    kept = tuple(merged.shape[:-1])
    g2 = ops.reshape(g, (len(qs),) + kept)
    sorted_grad = ops.tensordot(g2, weights, axes=([0], [0]))  # kept + (n,)
    grad = ops.take_along_axis(sorted_grad, inverse, axis=-1)
    return _from_last(grad, perm, moved_shape)


@register("stats.median")
def median(g, out, x, axis=None, keepdims=False):
    return (_quantile_grad(g, x, 0.5, axis, keepdims, "linear"),)


@register("stats.quantile")
def quantile(g, out, x, q, axis=None, keepdims=False, method="linear"):
    return (_quantile_grad(g, x, q, axis, keepdims, method), None)


@register("stats.percentile")
def percentile(g, out, x, q, axis=None, keepdims=False, method="linear"):
    return (_quantile_grad(g, x, np.asarray(plain(q), dtype=np.float64) / 100.0, axis, keepdims, method), None)


@register("stats.cov")
def cov(g, out, x, rowvar=True, bias=False, ddof=None):
    one_d = x.ndim == 1
    variables = ops.reshape(x, (1, -1)) if one_d else (x if rowvar else ops.transpose(x))
    n_vars, n_obs = variables.shape
    if ddof is None:
        ddof = 0 if bias else 1
    centered = ops.subtract(variables, ops.mean(variables, axis=1, keepdims=True))
    g2 = ops.reshape(g, (n_vars, n_vars))
    symmetric = ops.add(g2, ops.transpose(g2))
    grad = ops.divide(ops.matmul(symmetric, centered), float(n_obs - ddof))
    if one_d:
        return (ops.reshape(grad, x.shape),)
    return (grad if rowvar else ops.transpose(grad),)

