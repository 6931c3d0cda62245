"""Reductions of the torch backend (re-exported by :mod:`.core`).

Ember's dtype rules differ from torch's defaults: ``sum``/``prod``/``cumsum`` of bool
and small integers accumulate in int32 (torch: int64), ``mean``/``var``/``std`` of
integers give ``floatx()``, and ``argmax``/``argmin``/``count_nonzero`` give int32.
``axis=()`` reduces nothing (torch would read an empty ``dim`` as "every axis"), and
``max``/``min``/``argmax``/``argmin`` of an empty reduction raise ``ValueError`` as NumPy.
"""

from __future__ import annotations

import builtins as _b
import math
import warnings

import torch

from ember.backends._common import named_op, normalize_axes, normalize_axis
from ember.backends.torch._base import ACCUMULATE, COMPLEX, Tensor, along_axis, native, to_float


def _reduce_axes(x: Tensor, axis) -> tuple[int, ...] | None:
    """``None`` for a full reduction, else a tuple of non-negative axes (maybe empty)."""
    if axis is None:
        return None
    return normalize_axes(axis, x.ndim)


def sum(x, axis=None, keepdims=False):
    if type(x) is not Tensor:
        x = native(x)
    acc = ACCUMULATE.get(x.dtype)
    if axis is None:
        if keepdims:
            return torch.sum(x, dim=tuple(range(x.ndim)), keepdim=True, dtype=acc)
        return torch.sum(x) if acc is None else torch.sum(x, dtype=acc)
    axes = normalize_axes(axis, x.ndim)
    if not axes:  # sum over no axes: the input itself (torch would reduce everything)
        return x if acc is None else x.to(acc)
    return torch.sum(x, dim=axes, keepdim=keepdims, dtype=acc)


def prod(x, axis=None, keepdims=False):
    if type(x) is not Tensor:
        x = native(x)
    acc = ACCUMULATE.get(x.dtype)
    axes = _reduce_axes(x, axis)
    if axes is None:
        out = torch.prod(x, dtype=acc)
        return out.reshape((1,) * x.ndim) if keepdims else out
    if not axes:
        return x if acc is None else x.to(acc)
    # torch.prod reduces one dim at a time: go from the last axis so indices stay valid.
    out = x
    for axis_ in sorted(axes, reverse=True):
        out = torch.prod(out, dim=axis_, keepdim=keepdims, dtype=acc)
    return out


def mean(x, axis=None, keepdims=False):
    x = to_float(x)
    axes = _reduce_axes(x, axis)
    if axes is None:
        return torch.mean(x, dim=tuple(range(x.ndim)), keepdim=True) if keepdims else torch.mean(x)
    if not axes:
        return x
    return torch.mean(x, dim=axes, keepdim=keepdims)


def _moment(function, x, axis, keepdims, ddof):
    x = to_float(x)
    axes = _reduce_axes(x, axis)
    if axes is not None and not axes:
        return torch.zeros_like(x.real if x.dtype in COMPLEX else x)
    count = x.numel() if axes is None else math.prod(x.shape[d] for d in axes)
    if count - ddof <= 0 or x.numel() == 0:
        # NaN/inf (or empty), as on NumPy and MLX, without torch's "degrees of freedom <= 0" UserWarning.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return function(x, dim=axes, correction=ddof, keepdim=keepdims)
    return function(x, dim=axes, correction=ddof, keepdim=keepdims)


def var(x, axis=None, keepdims=False, ddof=0):
    return _moment(torch.var, x, axis, keepdims, ddof)


def std(x, axis=None, keepdims=False, ddof=0):
    return _moment(torch.std, x, axis, keepdims, ddof)


def _check_nonempty(x: Tensor, axes, name: str) -> None:
    if x.numel() == 0:
        dims = range(x.ndim) if axes is None else axes
        if x.ndim == 0 or _b.any(x.shape[d] == 0 for d in dims) or axes is None:
            raise ValueError(
                f"{name}: zero-size array of shape {tuple(x.shape)} reduced over axis "
                f"{None if axes is None else axes} has no identity"
            )


def _extremum(fn, name):
    def op(x, axis=None, keepdims=False):
        if type(x) is not Tensor:
            x = native(x)
        axes = _reduce_axes(x, axis)
        _check_nonempty(x, axes, name)
        if axes is None:
            return fn(x, dim=tuple(range(x.ndim)), keepdim=keepdims) if keepdims else fn(x)
        if not axes:
            return x
        return fn(x, dim=axes, keepdim=keepdims)

    return named_op(op, name)


max = _extremum(torch.amax, "max")
min = _extremum(torch.amin, "min")


def _arg_extremum(fn, name):
    def op(x, axis=None, keepdims=False):
        if type(x) is not Tensor:
            x = native(x)
        if x.dtype is torch.bool:
            x = x.to(torch.uint8)
        if axis is None:
            _check_nonempty(x, None, name)
            out = fn(x.reshape(-1)).to(torch.int32)
            return out.reshape((1,) * x.ndim) if keepdims else out
        axis_ = normalize_axis(axis, x.ndim)
        _check_nonempty(x, (axis_,), name)
        return fn(x, dim=axis_, keepdim=keepdims).to(torch.int32)

    return named_op(op, name)


argmax = _arg_extremum(torch.argmax, "argmax")
argmin = _arg_extremum(torch.argmin, "argmin")


def logsumexp(x, axis=None, keepdims=False):
    x = to_float(x)
    axes = _reduce_axes(x, axis)
    if axes is None:
        axes = tuple(range(x.ndim))
        if not axes:
            return x.clone()
    elif not axes:
        return x
    return torch.logsumexp(x, dim=axes, keepdim=keepdims)


def _boolean_reduction(fn, name):
    def op(x, axis=None, keepdims=False):
        if type(x) is not Tensor:
            x = native(x)
        if x.dtype is not torch.bool:
            x = x != 0
        axes = _reduce_axes(x, axis)
        if axes is None:
            return fn(x, dim=tuple(range(x.ndim)), keepdim=True) if keepdims else fn(x)
        if not axes:
            return x
        return fn(x, dim=axes, keepdim=keepdims)

    return named_op(op, name)


all = _boolean_reduction(torch.all, "all")
any = _boolean_reduction(torch.any, "any")


def _cumulative(fn, name):
    def op(x, axis=None):
        x, axis_ = along_axis(x, axis)
        return fn(x, dim=axis_, dtype=ACCUMULATE.get(x.dtype))

    return named_op(op, name)


cumsum = _cumulative(torch.cumsum, "cumsum")
cumprod = _cumulative(torch.cumprod, "cumprod")


def count_nonzero(x, axis=None):
    if type(x) is not Tensor:
        x = native(x)
    axes = _reduce_axes(x, axis)
    if axes is not None and not axes:
        return (x != 0).to(torch.int32)
    if axes is None:
        return torch.count_nonzero(x).to(torch.int32)
    return torch.count_nonzero(x, dim=axes).to(torch.int32)

