"""How NumPy's ufuncs, functions and methods on a traced array map to ``ember.ops``.

:class:`~ember.autodiff.traced.TracedArray` consults these tables while a tape records:
``_UFUNC_OPS`` / ``_REDUCE_OPS`` / ``_ACCUMULATE_OPS`` for ``__array_ufunc__`` and
``_FUNCTIONS`` for ``__array_function__``. Each target is the *current* ``ember.ops``
function, looked up at call time so the tape's recorder sees the call. Ufuncs and
functions whose results carry no gradient (comparisons, ``argmax``, ``shape`` ...) run on
the plain values (``_PLAIN_UFUNCS`` / ``_PLAIN_FUNCTIONS``); anything else is refused with
a ``TypeError`` that names the NumPy function and the ``ember.ops`` alternative.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember import ops

_OPS: Any = None


def _ops() -> Any:
    global _OPS
    if _OPS is None:
        _OPS = ops
    return _OPS


def _op(qualified: str) -> Callable:
    """The current ``ember.ops`` function ``qualified`` (``"linalg.inv"``), looked up now."""
    namespace, _, name = qualified.rpartition(".")
    module = _ops()
    if namespace:
        module = getattr(module, namespace)
    return getattr(module, name)


def _is_traced(x: Any) -> bool:
    return isinstance(x, np.ndarray) and type(x) is not np.ndarray and hasattr(type(x), "_plain")


def _plain(x: Any) -> Any:
    """``x`` as a plain ndarray if it is traced; lists/tuples converted element-wise."""
    if _is_traced(x):
        plain = x._plain
        return x.view(np.ndarray) if plain is None else plain
    if type(x) in (list, tuple):
        if any(_is_traced(v) or type(v) in (list, tuple) for v in x):
            return type(x)(_plain(v) for v in x)
    return x


def _plain_kwargs(kwargs: dict) -> dict:
    return {k: _plain(v) for k, v in kwargs.items()}


def _ops_name_hint(name: str) -> str:
    module = _ops()
    for namespace in ("", "nn.", "linalg.", "stats."):
        target = module if not namespace else getattr(module, namespace[:-1], None)
        if target is not None and hasattr(target, name):
            return f"ember.ops.{namespace}{name}"
    return _HINTS.get(name, "the matching ember.ops function (see ember.ops)")


_HINTS = {
    "logaddexp": "ember.ops.logsumexp of the stacked values",
    "exp2": "ember.ops.power(2.0, x)",
    "hypot": "ember.ops.sqrt(ops.square(a) + ops.square(b))",
    "copysign": "ember.ops.multiply with ember.ops.sign",
    "cbrt": "ember.ops.power(x, 1 / 3)",
    "fmod": "ember.ops.mod",
    "amax": "ember.ops.max",
    "amin": "ember.ops.min",
    "copy": "ember.ops.convert_to_tensor",
    "atleast_2d": "ember.ops.reshape / ember.ops.expand_dims",
    "vstack": "ember.ops.concatenate",
    "hstack": "ember.ops.concatenate",
    "fliplr": "ember.ops.flip",
    "flipud": "ember.ops.flip",
    "rot90": "ember.ops.flip / ember.ops.transpose",
    "gradient": "ember.ops.subtract of shifted ember.ops.slice results",
    "diff": "ember.ops.subtract of shifted ember.ops.slice results",
    "atleast_1d": "ember.ops.reshape",
    "roll": "ember.ops.concatenate of two slices",
    "nansum": "ember.ops.sum with ember.ops.where",
    "nanmean": "ember.ops.mean with ember.ops.where",
}


def _refuse(what: str, name: str, detail: str = "") -> TypeError:
    return TypeError(
        f"{what} {name} on a traced array cannot be recorded by the GradientTape{detail}; "
        f"use {_ops_name_hint(name.rpartition('.')[2])} instead (or compute it outside the tape, "
        "or on ember.stop_gradient(x) if no gradient should flow through it)"
    )


# --------------------------------------------------------------------------- ufuncs
_UFUNC_OPS = {
    np.add: "add", np.subtract: "subtract", np.multiply: "multiply", np.true_divide: "divide",
    np.power: "power", np.float_power: "power", np.negative: "negative", np.exp: "exp",
    np.log: "log", np.sqrt: "sqrt", np.square: "square", np.absolute: "abs", np.fabs: "abs",
    np.maximum: "maximum", np.minimum: "minimum", np.matmul: "matmul", np.sin: "sin",
    np.cos: "cos", np.tan: "tan", np.arcsin: "arcsin", np.arccos: "arccos", np.arctan: "arctan",
    np.sinh: "sinh", np.cosh: "cosh", np.tanh: "tanh", np.arcsinh: "arcsinh",
    np.arccosh: "arccosh", np.arctanh: "arctanh", np.expm1: "expm1", np.log1p: "log1p",
    np.log2: "log2", np.log10: "log10", np.reciprocal: "reciprocal", np.arctan2: "arctan2",
    np.remainder: "mod", np.conjugate: "conj",
}
# Piecewise-constant or boolean ufuncs: their results carry no gradient.
_PLAIN_UFUNCS = frozenset({
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not, np.isnan, np.isinf,
    np.isfinite, np.sign, np.floor, np.ceil, np.rint, np.trunc, np.floor_divide, np.signbit,
    np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert, np.left_shift, np.right_shift,
    np.isnat, np.spacing,
})
_REDUCE_OPS = {np.add: "sum", np.maximum: "max", np.minimum: "min", np.multiply: "prod"}
_ACCUMULATE_OPS = {np.add: "cumsum", np.multiply: "cumprod"}


def _record_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    name = ufunc.__name__
    if kwargs.get("out") is not None:
        raise TypeError(
            f"numpy.{name} with out= (an in-place update of an array, e.g. `plain += traced` or "
            "np.add(a, b, out=c)) on a traced array cannot be recorded by the GradientTape: it would "
            "change a recorded value; write `x = x + y` (a new array) instead"
        )
    if ufunc in _PLAIN_UFUNCS:
        return getattr(ufunc, method)(*[_plain(v) for v in inputs], **_plain_kwargs(kwargs))
    extra = {k: v for k, v in kwargs.items() if k not in ("out", "axis", "keepdims") and v is not None}
    if method == "__call__":
        if extra and not (set(extra) <= {"casting", "order", "subok"}):
            raise _refuse("numpy ufunc", f"numpy.{name}", f" with {sorted(extra)}")
        if ufunc is np.positive:
            return inputs[0]
        op = _UFUNC_OPS.get(ufunc)
        if op is None:
            raise _refuse("numpy ufunc", f"numpy.{name}")
        if ufunc is np.float_power:
            # float_power computes in float64 (at least).
            inputs = tuple(_op("cast")(v, "float64") if hasattr(v, "dtype") and v.dtype.kind in "biuf" else v
                           for v in inputs)
        return _op(op)(*inputs)
    if method == "reduce" and ufunc in _REDUCE_OPS:
        if set(extra) - {"dtype"} or (extra.get("dtype") is not None and np.dtype(extra["dtype"]) != inputs[0].dtype):
            raise _refuse("numpy ufunc method", f"numpy.{name}.reduce", f" with {sorted(extra)}")
        keepdims = bool(kwargs.get("keepdims", False))
        return _op(_REDUCE_OPS[ufunc])(inputs[0], axis=kwargs.get("axis", 0), keepdims=keepdims)
    if method == "accumulate" and ufunc in _ACCUMULATE_OPS:
        if set(extra) - {"dtype"} or (extra.get("dtype") is not None and np.dtype(extra["dtype"]) != inputs[0].dtype):
            raise _refuse("numpy ufunc method", f"numpy.{name}.accumulate", f" with {sorted(extra)}")
        return _op(_ACCUMULATE_OPS[ufunc])(inputs[0], axis=kwargs.get("axis", 0))
    raise _refuse("numpy ufunc method", f"numpy.{name}.{method}")


# ------------------------------------------------------------------------ functions
_NoValue = getattr(np, "_NoValue", None)


def _reject_extra(name: str, **extra: Any) -> None:
    bad = [k for k, v in extra.items() if v is not None and v is not _NoValue and v is not False]
    if bad:
        raise _refuse("numpy function", f"numpy.{name}", f" with {bad}")


def _reduction(op: str, name: str) -> Callable:
    def handler(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=_NoValue, **extra):
        if dtype is not None and np.dtype(dtype) == a.dtype:
            dtype = None
        _reject_extra(name, dtype=dtype, out=out, initial=initial, where=where, **extra)
        return _op(op)(a, axis=axis, keepdims=bool(keepdims))

    return handler


def _var_like(op: str, name: str) -> Callable:
    def handler(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NoValue, mean=_NoValue,
                correction=_NoValue):
        if correction is not _NoValue:
            ddof = correction
        _reject_extra(name, dtype=dtype, out=out, where=where, mean=mean)
        return _op(op)(a, axis=axis, keepdims=bool(keepdims), ddof=ddof)

    return handler


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order != "C":
        _reject_extra("reshape", order=order)
    return _op("reshape")(a, shape if shape is not None else newshape)


def _where(condition, *xs):
    if len(xs) != 2:
        raise _refuse("numpy function", "numpy.where", " with one argument (use ember.ops.nonzero)")
    return _op("where")(condition, xs[0], xs[1])


def _concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _reject_extra("concatenate", out=out, dtype=dtype)
    return _op("concatenate")(list(arrays), axis=axis)


def _stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _reject_extra("stack", out=out, dtype=dtype)
    return _op("stack")(list(arrays), axis=axis)


def _vstack(tup, *, dtype=None, casting="same_kind"):
    _reject_extra("vstack", dtype=dtype)
    arrays = [a if getattr(a, "ndim", np.ndim(a)) >= 2 else _op("reshape")(a, (1, -1)) for a in tup]
    return _op("concatenate")(arrays, axis=0)


def _hstack(tup, *, dtype=None, casting="same_kind"):
    _reject_extra("hstack", dtype=dtype)
    arrays = list(tup)
    axis = 0 if all(getattr(a, "ndim", np.ndim(a)) == 1 for a in arrays) else 1
    return _op("concatenate")(arrays, axis=axis)


def _clip(a, a_min=_NoValue, a_max=_NoValue, out=None, *, min=_NoValue, max=_NoValue, **kwargs):
    _reject_extra("clip", out=out, **kwargs)
    lo = None if a_min is _NoValue else a_min
    hi = None if a_max is _NoValue else a_max
    lo = lo if min is _NoValue else min
    hi = hi if max is _NoValue else max
    return _op("clip")(a, lo, hi)


def _take(a, indices, axis=None, out=None, mode="raise"):
    _reject_extra("take", out=out, mode=None if mode == "raise" else mode)
    return _op("take")(a, indices, axis=axis)


def _simple(op: str) -> Callable:
    """A handler passing NumPy's arguments through by position/keyword to ``ops.<op>``."""

    def handler(*args, **kwargs):
        return _op(op)(*args, **kwargs)

    handler.__name__ = op
    return handler


def _squeeze(a, axis=None):
    return _op("squeeze")(a, axis=axis)


def _transpose(a, axes=None):
    return _op("transpose")(a, axes)


def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    _reject_extra("sort", order=order)
    if axis is None:
        return _op("sort")(_op("ravel")(a), axis=-1)
    return _op("sort")(a, axis=axis)


def _cumulative(op: str, name: str) -> Callable:
    def handler(a, axis=None, dtype=None, out=None):
        _reject_extra(name, dtype=dtype, out=out)
        return _op(op)(a, axis=axis)

    return handler


def _diagonal(a, offset=0, axis1=0, axis2=1):
    return _op("linalg.diagonal")(a, offset=offset, axis1=axis1, axis2=axis2)


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _reject_extra("trace", dtype=dtype, out=out)
    return _op("linalg.trace")(a, offset=offset, axis1=axis1, axis2=axis2)


def _norm(x, ord=None, axis=None, keepdims=False):
    return _op("linalg.norm")(x, ord=ord, axis=axis, keepdims=keepdims)


def _quantile_like(op: str, name: str) -> Callable:
    def handler(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                weights=None, interpolation=None):
        _reject_extra(name, out=out, weights=weights, interpolation=interpolation)
        return _op(op)(a, q, axis=axis, keepdims=keepdims, method=method)

    return handler


def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _reject_extra("median", out=out)
    return _op("stats.median")(a, axis=axis, keepdims=keepdims)


def _cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    _reject_extra("cov", y=y, fweights=fweights, aweights=aweights, dtype=dtype)
    return _op("stats.cov")(m, rowvar=rowvar, bias=bias, ddof=ddof)


def _copy(a, order="K", subok=False):
    return _copy_value(a)


def _copy_value(a: Any) -> Any:
    if getattr(a, "dtype", np.dtype(float)).kind == "b":
        return np.array(_plain(a))
    return _op("multiply")(a, 1)


def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    _reject_extra("linalg.svd", hermitian=hermitian)
    return _op("linalg.svd")(a, full_matrices=full_matrices, compute_uv=compute_uv)


def _einsum(*operands, out=None, optimize=False, **kwargs):
    _reject_extra("einsum", out=out, **kwargs)
    return _op("einsum")(*operands)


def _pad(array, pad_width, mode="constant", **kwargs):
    return _op("pad")(array, pad_width, mode=mode, constant_values=kwargs.get("constant_values", 0))


def _split(ary, indices_or_sections, axis=0):
    return _op("split")(ary, indices_or_sections, axis=axis)


def _repeat(a, repeats, axis=None):
    return _op("repeat")(a, repeats, axis=axis)


_FUNCTIONS: dict[Callable, Callable] = {
    np.sum: _reduction("sum", "sum"),
    np.mean: _reduction("mean", "mean"),
    np.prod: _reduction("prod", "prod"),
    np.max: _reduction("max", "max"),
    np.min: _reduction("min", "min"),
    np.amax: _reduction("max", "amax"),
    np.amin: _reduction("min", "amin"),
    np.var: _var_like("var", "var"),
    np.std: _var_like("std", "std"),
    np.cumsum: _cumulative("cumsum", "cumsum"),
    np.cumprod: _cumulative("cumprod", "cumprod"),
    np.reshape: _reshape,
    np.transpose: _transpose,
    np.concatenate: _concatenate,
    np.stack: _stack,
    np.vstack: _vstack,
    np.hstack: _hstack,
    np.where: _where,
    np.dot: _simple("dot"),
    np.matmul: _simple("matmul"),
    np.tensordot: _simple("tensordot"),
    np.einsum: _einsum,
    np.outer: _simple("outer"),
    np.clip: _clip,
    np.expand_dims: _simple("expand_dims"),
    np.squeeze: _squeeze,
    np.take: _take,
    np.take_along_axis: _simple("take_along_axis"),
    np.swapaxes: _simple("swapaxes"),
    np.moveaxis: _simple("moveaxis"),
    np.broadcast_to: _simple("broadcast_to"),
    np.flip: _simple("flip"),
    np.tile: _simple("tile"),
    np.repeat: _repeat,
    np.pad: _pad,
    np.split: _split,
    np.ravel: _simple("ravel"),
    np.sort: _sort,
    np.real: _simple("real"),
    np.imag: _simple("imag"),
    np.conj: _simple("conj"),
    np.diagonal: _diagonal,
    np.trace: _trace,
    np.diag: _simple("linalg.diag"),
    np.median: _median,
    np.percentile: _quantile_like("stats.percentile", "percentile"),
    np.quantile: _quantile_like("stats.quantile", "quantile"),
    np.cov: _cov,
    np.copy: _copy,
    np.linalg.inv: _simple("linalg.inv"),
    np.linalg.solve: _simple("linalg.solve"),
    np.linalg.det: _simple("linalg.det"),
    np.linalg.slogdet: _simple("linalg.slogdet"),
    np.linalg.cholesky: _simple("linalg.cholesky"),
    np.linalg.eigh: _simple("linalg.eigh"),
    np.linalg.eigvalsh: _simple("linalg.eigvalsh"),
    np.linalg.eig: _simple("linalg.eig"),
    np.linalg.eigvals: _simple("linalg.eigvals"),
    np.linalg.svd: _svd,
    np.linalg.norm: _norm,
    np.linalg.qr: _simple("linalg.qr"),
    np.linalg.pinv: _simple("linalg.pinv"),
    np.linalg.lstsq: lambda a, b, rcond=None: (_op("linalg.lstsq")(a, b, rcond=rcond),),
    np.linalg.matmul: _simple("linalg.matmul"),
}
# Functions whose results carry no gradient (metadata, indices, booleans, constants).
_PLAIN_FUNCTIONS = frozenset({
    np.shape, np.ndim, np.size, np.argmax, np.argmin, np.argsort, np.nonzero, np.count_nonzero,
    np.any, np.all, np.isclose, np.allclose, np.array_equal, np.array_equiv, np.zeros_like,
    np.ones_like, np.empty_like, np.full_like, np.round, np.around, np.searchsorted, np.unique,
    np.array_repr, np.array_str, np.array2string, np.may_share_memory, np.shares_memory,
    np.result_type, np.can_cast, np.min_scalar_type, np.iscomplexobj, np.isrealobj, np.flatnonzero,
    np.argwhere, np.bincount, np.digitize, np.histogram, np.fix, np.isneginf, np.isposinf,
    np.iscomplex, np.isreal, np.ascontiguousarray, np.save, np.savez, np.savetxt,
    np.linalg.matrix_rank,
})
