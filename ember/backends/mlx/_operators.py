"""``mx.array`` operators recorded while an MLX ``GradientTape`` records.

MLX arrays have their own Python operators and methods, which no tape could see. While
at least one MLX tape records, :func:`patch` re-binds them on ``mx.array`` to call the
current ``ember.ops`` function (looked up at call time, so the recorder is what runs;
``ember.ops`` is found through the hook it installs at import,
:data:`ember.recorded.op_namespace.OPS`, as a backend imports nothing above the op protocol):
``x * w + b``, ``x @ w``, ``-x``, ``abs(x)``, ``x[1:]``, iteration, the in-place forms
(``x += y`` gives the out-of-place result inside a tape when ``x`` or ``y`` is a value the tape
tracks; MLX's own in-place update otherwise) and the common methods
(``sum mean max min prod var std logsumexp reshape transpose flatten squeeze swapaxes
moveaxis split cumsum cumprod diagonal diag astype square sqrt rsqrt exp log log1p log2
log10 sin cos reciprocal conj`` and the ``T``, ``mT``, ``real``, ``imag`` properties).
Comparisons stay native (no gradient). :func:`unpatch` puts MLX's originals back.

Recording changes nothing for code outside the tape: the patched attributes are MLX's own
behaviour for every thread without a recording tape of its own, and a recorded call computes
the same values with the same MLX op. A patched attribute calls MLX's original directly when
nothing would record it: inside a recorded op (``ember.recorded.calls._local.state.depth > 0``,
so a backend function that uses operators never recurses), during a tape's replay, when no
tape of this thread records, or when another backend is active. Calls with an MLX-only
argument (``stream=``, ``reverse=``) also run the original.
Patching is idempotent and exception-safe: a failure half-way restores what was patched.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import mlx.core as mx
import numpy as np

from ember import backends as _backends
from ember.backends import mlx as _MLX  # this backend's package (importing it: this module loads with it)
from ember.recorded import calls
from ember.recorded.op_namespace import OPS

_ARRAY = mx.array

_ORIGINALS: dict[str, Any] = {}  # attribute name -> MLX's own descriptor, while patched
_ops: Any = None  # the ember.ops module, from the OPS hook on the first patch()




def _raw() -> bool:
    """True when a patched operator must run MLX's original (no tape would see it)."""
    state = calls._local.state  # per thread: another thread's tape never records this one's operators
    return bool(state.depth) or not state.engines or _backends._active is not _MLX


_PLAIN_OPERANDS = (int, float, bool, complex, np.ndarray, np.generic, list, tuple)


def _tracked(*values: Any) -> bool:
    """True when one of this thread's recording tapes tracks one of ``values`` (watched, or recorded)."""
    return any(type(value) is _ARRAY and engine.tracks(value)
               for engine in calls._local.state.engines for value in values)


def _binary(name: str, op: str, reflected: bool) -> Callable:
    original = vars(_ARRAY)[name]
    in_place = name.startswith("__i")

    def method(self: Any, other: Any) -> Any:
        if _raw() or (in_place and not _tracked(self, other)):  # MLX's own update on values no tape tracks
            return original(self, other)
        if type(other) is not _ARRAY and not isinstance(other, _PLAIN_OPERANDS):
            if getattr(type(other), "__ember_tensor__", False):
                return NotImplemented  # let the Tensor's reflected operator answer
            return original(self, other)
        function = getattr(_ops, op)
        return function(other, self) if reflected else function(self, other)

    method.__name__ = name
    return method


def _unary(name: str, op: str) -> Callable:
    original = vars(_ARRAY)[name]

    def method(self: Any) -> Any:
        if _raw():
            return original(self)
        return getattr(_ops, op)(self)

    method.__name__ = name
    return method


def _translated(name: str, translate: Callable) -> Callable:
    """A method whose recorded form is ``translate(self, *args, **kwargs)``; ``stream=`` runs MLX's own."""
    original = vars(_ARRAY)[name]

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _raw() or "stream" in kwargs:
            return original(self, *args, **kwargs)
        result = translate(self, *args, **kwargs)
        if result is NotImplemented:
            return original(self, *args, **kwargs)
        return result

    method.__name__ = name
    return method


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _reduction(op: str) -> Callable:
    def translate(self: Any, axis: Any = None, keepdims: bool = False, **kwargs: Any) -> Any:
        if kwargs:
            return NotImplemented
        return getattr(_ops, op)(self, axis=_axis(axis), keepdims=keepdims)

    return translate


def _moment(op: str) -> Callable:
    def translate(self: Any, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Any:
        return getattr(_ops, op)(self, axis=_axis(axis), keepdims=keepdims, ddof=ddof)

    return translate


def _shape_args(args: tuple) -> tuple:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _reshape(self: Any, *shape: Any, **kwargs: Any) -> Any:
    if kwargs:
        return NotImplemented
    return _ops.reshape(self, _shape_args(shape))


def _transpose(self: Any, *axes: Any, **kwargs: Any) -> Any:
    if kwargs:
        return NotImplemented
    axes = _shape_args(axes)
    return _ops.transpose(self, axes if axes else None)


def _flatten(self: Any, start_axis: int = 0, end_axis: int = -1) -> Any:
    shape = tuple(self.shape)
    if not shape:
        return _ops.reshape(self, (1,))
    start, end = start_axis % len(shape), end_axis % len(shape)
    if start > end:
        return NotImplemented
    merged = math.prod(shape[start:end + 1])
    return _ops.reshape(self, shape[:start] + (merged,) + shape[end + 1:])


def _cumulative(op: str) -> Callable:
    def translate(self: Any, axis: Any = None, reverse: bool = False, inclusive: bool = True) -> Any:
        if reverse or not inclusive:
            return NotImplemented
        return getattr(_ops, op)(self, axis=axis)

    return translate


def _iter(self: Any) -> Any:
    if _raw() or not self.shape:
        return _ORIGINALS["__iter__"](self)
    getitem = _ops.getitem
    return iter([getitem(self, i) for i in range(self.shape[0])])


def _getitem(self: Any, key: Any) -> Any:
    if _raw():
        return _ORIGINALS["__getitem__"](self, key)
    return _ops.getitem(self, key)


def _property(name: str, translate: Callable) -> property:
    original = vars(_ARRAY)[name]

    def getter(self: Any) -> Any:
        if _raw():
            return original.__get__(self, _ARRAY)
        return translate(self)

    return property(getter, doc=getattr(original, "__doc__", None))


_BINARY_OPS = {
    "__add__": ("add", False), "__radd__": ("add", True),
    "__sub__": ("subtract", False), "__rsub__": ("subtract", True),
    "__mul__": ("multiply", False), "__rmul__": ("multiply", True),
    "__truediv__": ("divide", False), "__rtruediv__": ("divide", True),
    "__div__": ("divide", False), "__rdiv__": ("divide", True),
    "__floordiv__": ("floor_divide", False), "__rfloordiv__": ("floor_divide", True),
    "__mod__": ("mod", False), "__rmod__": ("mod", True),
    "__pow__": ("power", False), "__rpow__": ("power", True),
    "__matmul__": ("matmul", False), "__rmatmul__": ("matmul", True),
    # in-place forms give a new array inside a tape (the recorded, functional op)
    "__iadd__": ("add", False), "__isub__": ("subtract", False), "__imul__": ("multiply", False),
    "__itruediv__": ("divide", False), "__ifloordiv__": ("floor_divide", False),
    "__imod__": ("mod", False), "__ipow__": ("power", False), "__imatmul__": ("matmul", False),
}
_UNARY_OPS = {"__neg__": "negative", "__abs__": "abs"}
_UNARY_METHODS = {
    "abs": "abs", "square": "square", "sqrt": "sqrt", "rsqrt": "rsqrt", "exp": "exp", "log": "log",
    "log1p": "log1p", "log2": "log2", "log10": "log10", "sin": "sin", "cos": "cos",
    "reciprocal": "reciprocal", "conj": "conj",
}


def _replacements() -> dict[str, Any]:
    present = vars(_ARRAY)
    out: dict[str, Any] = {}
    for name, (op, reflected) in _BINARY_OPS.items():
        if name in present:
            out[name] = _binary(name, op, reflected)
    for name, op in _UNARY_OPS.items():
        if name in present:
            out[name] = _unary(name, op)
    for name, op in _UNARY_METHODS.items():
        if name in present:
            out[name] = _translated(name, lambda self, _op=op: getattr(_ops, _op)(self))
    translations: dict[str, Callable] = {
        "sum": _reduction("sum"), "mean": _reduction("mean"), "max": _reduction("max"),
        "min": _reduction("min"), "prod": _reduction("prod"), "logsumexp": _reduction("logsumexp"),
        "var": _moment("var"), "std": _moment("std"),
        "reshape": _reshape, "transpose": _transpose, "flatten": _flatten,
        "astype": lambda self, dtype: _ops.cast(self, dtype),
        "squeeze": lambda self, axis=None: _ops.squeeze(self, _axis(axis)),
        "swapaxes": lambda self, axis1, axis2: _ops.swapaxes(self, axis1, axis2),
        "moveaxis": lambda self, source, destination: _ops.moveaxis(self, source, destination),
        "split": lambda self, indices_or_sections, axis=0: _ops.split(self, indices_or_sections, axis),
        "cumsum": _cumulative("cumsum"), "cumprod": _cumulative("cumprod"),
        "diagonal": lambda self, offset=0, axis1=0, axis2=1: _ops.linalg.diagonal(self, offset, axis1, axis2),
        "diag": lambda self, k=0: _ops.linalg.diag(self, k),
    }
    for name, translate in translations.items():
        if name in present:
            out[name] = _translated(name, translate)
    properties: dict[str, Callable] = {
        "T": lambda self: _ops.transpose(self),
        "mT": lambda self: _ops.swapaxes(self, -1, -2),
        "real": lambda self: _ops.real(self),
        "imag": lambda self: _ops.imag(self),
    }
    for name, translate in properties.items():
        if isinstance(present.get(name), property):
            out[name] = _property(name, translate)
    if "__getitem__" in present:
        out["__getitem__"] = _getitem
    if "__iter__" in present:
        out["__iter__"] = _iter
    return out


_REPLACEMENTS: dict[str, Any] = {}  # built once: name -> patched attribute


def patch() -> None:
    """Re-bind ``mx.array``'s operators and methods to recorded ``ember.ops`` calls (idempotent)."""
    global _ops
    if _ORIGINALS:
        return
    _ops = OPS.module()
    if not _REPLACEMENTS:
        _REPLACEMENTS.update(_replacements())
    replacements = _REPLACEMENTS
    present = vars(_ARRAY)
    done: dict[str, Any] = {}
    try:
        for name, replacement in replacements.items():
            done[name] = present[name]
            setattr(_ARRAY, name, replacement)
    except BaseException:
        for name, original in done.items():
            setattr(_ARRAY, name, original)
        raise
    _ORIGINALS.update(done)


def unpatch() -> None:
    """Restore MLX's own operators and methods."""
    failed = None
    for name in list(_ORIGINALS):
        try:
            setattr(_ARRAY, name, _ORIGINALS[name])
            del _ORIGINALS[name]
        except BaseException as error:  # keep restoring the others
            failed = error
    if failed is not None:
        raise failed


def is_patched() -> bool:
    """True while ``mx.array``'s operators are re-bound to recorded ``ember.ops`` calls."""
    return bool(_ORIGINALS)
