"""``TracedArray``: the ndarray subclass that recorded NumPy ops return inside a tape.

While a NumPy :class:`~ember.GradientTape` records, every op it keeps returns its
result viewed as a ``TracedArray``. Python operators and NumPy functions applied to
such a value are then routed to the *current* ``ember.ops`` function (looked up at
call time, so the tape's recorder sees it):

* ufuncs (``x * w``, ``np.exp(x)``, ``x @ w``, ``-x``, ``x ** 2`` ...) go through
  ``__array_ufunc__``; comparisons and other piecewise-constant ufuncs give plain
  arrays, which carry no gradient. ``np.add.reduce`` / ``maximum`` / ``minimum`` /
  ``multiply`` reductions map to ``ops.sum`` / ``max`` / ``min`` / ``prod``;
* NumPy functions (``np.sum``, ``np.reshape``, ``np.concatenate``, ``np.linalg.inv``
  ...) go through ``__array_function__``;
* methods and properties (``.T``, ``.reshape``, ``.sum``, ``.astype``, ``x[i]`` ...)
  are overridden to call the matching op.

Anything that would produce a new array from a traced value without being mapped
raises ``TypeError`` while a tape records (naming the NumPy function and the
``ember.ops`` alternative), instead of silently returning an array the tape cannot
see: unmapped ufuncs and functions are refused in the two protocols above, and every
other way NumPy creates a ``TracedArray`` from a ``TracedArray`` (an unmapped method
such as ``x.repeat(2)``, ``copy.deepcopy``, ``x.view()``) is refused in
``__array_finalize__``. In-place writes (``x[0] = 1``, ``out=``) are refused too, since
they would change a value the tape already recorded. Augmented assignment (``loss +=
penalty``, ``x *= 2``) is recorded as the out-of-place op and rebinds the name to its
result, as on the tensors of TensorFlow, JAX and MLX: other names bound to the old value
keep it.

With no tape recording, a ``TracedArray`` behaves like a plain ndarray: ufuncs,
functions and the overridden methods return plain ``numpy.ndarray`` results, and
``float()``, ``np.asarray``, ``repr`` and pickling work as for any ndarray (``repr``
and pickles look like a plain array). ``x.view(np.ndarray)`` and ``np.asarray(x)``
always give the plain values; arrays derived from them are invisible to a tape (the
tape raises rather than return a wrong gradient when that cuts a source off).

Example:
    >>> import numpy as np, ember
    >>> from ember import ops
    >>> ember.set_backend("numpy")
    >>> x = np.array([1.0, 2.0])
    >>> with ember.GradientTape() as tape:
    ...     tape.watch(x)
    ...     h = ops.multiply(x, 3.0)       # a TracedArray
    ...     y = np.sum(h * h + 1.0)        # NumPy operators/functions are recorded
    >>> tape.gradient(y, x).tolist()
    [18.0, 36.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from ember.autodiff.numpy_dispatch import (
    _FUNCTIONS,
    _PLAIN_FUNCTIONS,
    _copy_value,
    _diagonal,
    _op,
    _plain,
    _plain_kwargs,
    _record_ufunc,
    _refuse,
    _reject_extra,
    _take,
    _trace,
)
from ember.recorded.calls import _local

_Order = Literal["K", "A", "C", "F"]  # NumPy's memory-order argument


# --------------------------------------------------------------------------- class
def _augmented(ufunc: np.ufunc, in_place: Callable) -> Callable:
    """``x op= y`` on a traced array: while a tape records, the recorded out-of-place ``ufunc``
    (Python rebinds ``x`` to the result); otherwise NumPy's own in-place update."""
    def update(self: Any, other: Any) -> Any:
        if _local.state.engines:
            return ufunc(self, other)
        return in_place(self, other)

    update.__name__ = in_place.__name__
    return update


class TracedArray(np.ndarray):
    """An ndarray produced by an op a NumPy tape recorded; see the module docstring."""

    __slots__ = ("_plain",)  # the backend's own result (a plain ndarray) when known: a free fast path
    _plain: np.ndarray | None

    # --- creation guard ---------------------------------------------------------------
    def __array_finalize__(self, obj: Any) -> None:
        self._plain = None
        if _local.state.engines and isinstance(obj, TracedArray):
            raise TypeError(
                "an operation created a new array from a traced array in a way the GradientTape "
                "cannot record (an ndarray method or view without an ember.ops equivalent, e.g. "
                "x.repeat / x.view() / copy.deepcopy); use the ember.ops function instead "
                "(ops.repeat, ops.reshape, ...), or apply it to x.view(np.ndarray) outside the "
                "gradient path"
            )

    # --- protocols ----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if _local.state.engines:
            return _record_ufunc(ufunc, method, inputs, kwargs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        result = getattr(ufunc, method)(*[_plain(v) for v in inputs], **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return result

    def __array_function__(self, func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
        if _local.state.engines:
            handler = _FUNCTIONS.get(func)
            if handler is not None:
                return handler(*args, **kwargs)
            if func not in _PLAIN_FUNCTIONS:
                name = getattr(func, "__name__", str(func))
                module = getattr(func, "__module__", "numpy") or "numpy"
                prefix = "numpy.linalg." if "linalg" in module else "numpy."
                raise _refuse("numpy function", prefix + name)
        return func(*_plain(args), **_plain_kwargs(kwargs))

    # --- augmented assignment: ``x += y`` is ``x = x + y`` while a tape records -----------
    __iadd__ = _augmented(np.add, np.ndarray.__iadd__)
    __isub__ = _augmented(np.subtract, np.ndarray.__isub__)
    __imul__ = _augmented(np.multiply, np.ndarray.__imul__)
    __itruediv__ = _augmented(np.true_divide, np.ndarray.__itruediv__)
    __ipow__ = _augmented(np.power, np.ndarray.__ipow__)
    __imatmul__ = _augmented(np.matmul, np.ndarray.__imatmul__)
    __imod__ = _augmented(np.remainder, np.ndarray.__imod__)
    __ifloordiv__ = _augmented(np.floor_divide, np.ndarray.__ifloordiv__)

    # --- plain-looking output -----------------------------------------------------------
    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))

    def __str__(self) -> str:
        return str(self.view(np.ndarray))

    def __format__(self, spec: str) -> str:
        return format(self.view(np.ndarray), spec)

    def __reduce__(self) -> Any:
        return self.view(np.ndarray).__reduce__()

    def __copy__(self) -> Any:
        return _copy_value(self) if _local.state.engines else self.view(np.ndarray).copy()

    def __deepcopy__(self, memo: Any) -> Any:
        return self.__copy__()

    def copy(self, order: str = "C") -> Any:  # noqa: D102
        return self.__copy__()

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    # --- indexing -----------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        if _local.state.engines:
            return _op("getitem")(self, _plain(key))
        return self.view(np.ndarray)[_plain(key)]

    def __setitem__(self, key: Any, value: Any) -> None:
        if _local.state.engines:
            raise TypeError(
                "item assignment (x[key] = value) on a traced array cannot be recorded by the "
                "GradientTape: it would change a recorded value; use ember.ops.scatter_update / "
                "ember.ops.slice_update / ember.ops.where to build a new array instead"
            )
        self.view(np.ndarray)[_plain(key)] = _plain(value)

    # --- properties and methods routed to ops ------------------------------------------
    @property
    def T(self) -> Any:  # noqa: N802
        return _op("transpose")(self) if _local.state.engines else self.view(np.ndarray).T

    @property
    def mT(self) -> Any:  # noqa: N802
        return _op("swapaxes")(self, -1, -2) if _local.state.engines else self.view(np.ndarray).mT

    # Read-only (no setter): writing .real/.imag in place is refused, as every in-place write.
    @property  # type: ignore[misc]  # ndarray's is writable
    def real(self) -> Any:
        return _op("real")(self) if _local.state.engines else self.view(np.ndarray).real

    @property  # type: ignore[misc]  # ndarray's is writable
    def imag(self) -> Any:
        return _op("imag")(self) if _local.state.engines else self.view(np.ndarray).imag

    def reshape(self, *shape: Any, order: str = "C") -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).reshape(*shape, order=order)
        if order != "C":
            raise _refuse("ndarray method", "reshape", " with order != 'C'")
        single = len(shape) == 1 and (isinstance(shape[0], (tuple, list)) or shape[0] is None)
        new_shape = shape[0] if single else shape
        return _op("reshape")(self, tuple(new_shape) if isinstance(new_shape, (tuple, list)) else new_shape)

    def transpose(self, *axes: Any) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).transpose(*axes)
        single = len(axes) == 1 and (isinstance(axes[0], (tuple, list)) or axes[0] is None)
        permutation = axes[0] if single else axes
        return _op("transpose")(self, tuple(permutation) if permutation else None)

    def swapaxes(self, axis1: int, axis2: int) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).swapaxes(axis1, axis2)
        return _op("swapaxes")(self, axis1, axis2)

    def flatten(self, order: _Order = "C") -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).flatten(order)
        if order != "C":
            raise _refuse("ndarray method", "flatten", " with order != 'C'")
        return _copy_value(_op("ravel")(self))

    def ravel(self, order: _Order = "C") -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).ravel(order)
        if order != "C":
            raise _refuse("ndarray method", "ravel", " with order != 'C'")
        return _op("ravel")(self)

    def squeeze(self, axis: Any = None) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).squeeze(axis)
        return _op("squeeze")(self, axis=axis)

    def astype(  # noqa: D102
        self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True, copy: bool = True
    ) -> Any:
        if not _local.state.engines:
            return self.view(np.ndarray).astype(dtype, order=order, casting=casting, copy=copy)
        if np.dtype(dtype) == self.dtype:
            return self if not copy else _copy_value(self)
        return _op("cast")(self, np.dtype(dtype))

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).sum(axis, dtype, _plain(out), keepdims, **kw)
        return _FUNCTIONS[np.sum](self, axis, dtype, out, keepdims, **kw)

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).mean(axis, dtype, _plain(out), keepdims, **kw)
        return _FUNCTIONS[np.mean](self, axis, dtype, out, keepdims, **kw)

    def prod(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).prod(axis, dtype, _plain(out), keepdims, **kw)
        return _FUNCTIONS[np.prod](self, axis, dtype, out, keepdims, **kw)

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).max(axis, _plain(out), keepdims, **kw)
        return _FUNCTIONS[np.max](self, axis, None, out, keepdims, **kw)

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).min(axis, _plain(out), keepdims, **kw)
        return _FUNCTIONS[np.min](self, axis, None, out, keepdims, **kw)

    def var(  # noqa: D102
        self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0, keepdims: bool = False, **kw: Any
    ) -> Any:
        if not _local.state.engines:
            return self.view(np.ndarray).var(axis, dtype, _plain(out), ddof, keepdims, **kw)
        return _FUNCTIONS[np.var](self, axis, dtype, out, ddof, keepdims, **kw)

    def std(  # noqa: D102
        self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0, keepdims: bool = False, **kw: Any
    ) -> Any:
        if not _local.state.engines:
            return self.view(np.ndarray).std(axis, dtype, _plain(out), ddof, keepdims, **kw)
        return _FUNCTIONS[np.std](self, axis, dtype, out, ddof, keepdims, **kw)

    def cumsum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).cumsum(axis, dtype, _plain(out))
        return _FUNCTIONS[np.cumsum](self, axis, dtype, out)

    def cumprod(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).cumprod(axis, dtype, _plain(out))
        return _FUNCTIONS[np.cumprod](self, axis, dtype, out)

    def clip(self, min: Any = None, max: Any = None, out: Any = None, **kw: Any) -> Any:  # noqa: A002,D102
        if not _local.state.engines:
            return self.view(np.ndarray).clip(_plain(min), _plain(max), _plain(out), **kw)
        _reject_extra("clip", out=out, **kw)
        return _op("clip")(self, min, max)

    def dot(self, b: Any, out: Any = None) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).dot(_plain(b), _plain(out))
        _reject_extra("dot", out=out)
        return _op("dot")(self, b)

    def conj(self) -> Any:  # noqa: D102
        return _op("conj")(self) if _local.state.engines else self.view(np.ndarray).conj()

    conjugate = conj

    def take(self, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).take(_plain(indices), axis, _plain(out), mode)
        return _take(self, indices, axis, out, mode)

    def repeat(self, repeats: Any, axis: Any = None) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).repeat(_plain(repeats), axis)
        return _op("repeat")(self, repeats, axis=axis)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).diagonal(offset, axis1, axis2)
        return _diagonal(self, offset, axis1, axis2)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:  # noqa: D102
        if not _local.state.engines:
            return self.view(np.ndarray).trace(offset, axis1, axis2, dtype, _plain(out))
        return _trace(self, offset, axis1, axis2, dtype, out)

    def sort(self, axis: int = -1, kind: Any = None, order: Any = None) -> None:  # noqa: D102
        if _local.state.engines:
            raise TypeError(
                "ndarray.sort sorts in place, which the GradientTape cannot record; use "
                "ember.ops.sort(x) (a new array) instead"
            )
        self.view(np.ndarray).sort(axis, kind, order)

    def fill(self, value: Any) -> None:  # noqa: D102
        if _local.state.engines:
            raise TypeError(
                "ndarray.fill changes a traced array in place, which the GradientTape cannot record; "
                "use ember.ops.full_like"
            )
        self.view(np.ndarray).fill(value)

    # Methods whose results carry no gradient: plain arrays in and out.
    def _plain_method(name: str) -> Callable:  # type: ignore[misc]  # runs in the class body (deleted below)
        method = getattr(np.ndarray, name)

        def plain_method(self, *args: Any, **kwargs: Any) -> Any:
            return method(self.view(np.ndarray), *_plain(args), **_plain_kwargs(kwargs))

        plain_method.__name__ = name
        plain_method.__doc__ = method.__doc__
        return plain_method

    argmax = _plain_method("argmax")
    argmin = _plain_method("argmin")
    argsort = _plain_method("argsort")
    nonzero = _plain_method("nonzero")
    any = _plain_method("any")
    all = _plain_method("all")
    round = _plain_method("round")
    searchsorted = _plain_method("searchsorted")
    tobytes = _plain_method("tobytes")
    del _plain_method


def traced_view(array: np.ndarray) -> TracedArray:
    """``array`` (a plain ndarray) viewed as a :class:`TracedArray` that remembers it."""
    view = array.view(TracedArray)
    view._plain = array
    return view


__all__ = ["TracedArray", "traced_view"]
