"""Input conversion and dtype promotion shared by every NumPy-backend op.

Every op funnels its inputs through :func:`to_native` (one input) or
:func:`binary` (two inputs, promoted to a common dtype). Both return at once when
they are handed ``numpy.ndarray``s (the fast path), so an elementwise op costs one
extra Python call over the NumPy ufunc.

Promotion follows :mod:`ember.dtypes`, not NumPy: ``int32 + float32`` is
``float32`` (NumPy says ``float64``) and Python scalars are weak
(``int32_array + 1.5`` is ``floatx()``, NumPy says ``float64``), so mixed-dtype
inputs are cast to the Ember result dtype before the NumPy call.
"""

from __future__ import annotations

from typing import Any, overload

import ml_dtypes
import numpy as np

from ember import dtypes as _dtypes
from ember.backends._common import foreign_array_error, normalize_axes, normalize_axis, tensor_native

BACKEND = "numpy"
ND = np.ndarray

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype("float16")
F32 = np.dtype("float32")
F64 = np.dtype("float64")
I32 = np.dtype("int32")
I64 = np.dtype("int64")
BOOL = np.dtype("bool")
C64 = np.dtype("complex64")
C128 = np.dtype("complex128")

#: Ember dtype name -> NumPy dtype, for every dtype this backend supports.
NP_DTYPES = {name: _dtypes.to_numpy_dtype(name) for name in _dtypes.ALL}
SUPPORTED = frozenset(NP_DTYPES)
HALF = (F16, BF16)  # computed in float32 by reductions, products and linalg

_FOREIGN = ("torch", "mlx")
# ``np.dtype.name`` is a slow Python property (~microseconds); look names up by dtype instead.
_NAMES = {dt: name for name, dt in NP_DTYPES.items()}
_PROMOTE: dict[tuple[np.dtype, np.dtype], np.dtype] = {}
_DTYPE_ARG: dict[Any, np.dtype] = {}


def floatx() -> np.dtype:
    """The NumPy dtype of ``ember.dtypes.floatx()``."""
    return NP_DTYPES[_dtypes.floatx()]


def name_of(dt: np.dtype) -> str:
    """Ember name of a NumPy dtype; TypeError when this backend does not support it."""
    name = _NAMES.get(dt)
    if name is not None:
        return name
    name = dt.name  # e.g. a non-native byte order
    if name not in SUPPORTED:
        raise TypeError(f"the numpy backend does not support dtype {str(dt)!r}; supported: {_dtypes.ALL}")
    return name


def dtype_arg(dtype: Any, argument: str = "dtype") -> np.dtype:
    """NumPy dtype for a user-given ``dtype`` (Ember name, alias, NumPy or other backend's dtype)."""
    try:
        cached = _DTYPE_ARG.get(dtype)
    except TypeError:  # unhashable
        cached = None
    if cached is not None:
        return cached
    result = NP_DTYPES[_dtypes.standardize_dtype(dtype, argument)]
    if dtype is not None and dtype is not float:  # these follow floatx(), which may change
        try:
            _DTYPE_ARG[dtype] = result
        except TypeError:
            pass
    return result


def _from_sequence(x: Any) -> np.ndarray:
    """A nested list/tuple as an array: Python ints -> int32, floats -> floatx(), complex -> complex64."""
    array = np.asarray(x)
    kind = array.dtype.kind
    if kind == "i" and array.dtype.itemsize == 8:
        # Python ints. Values outside int32 keep int64 rather than wrapping silently.
        if array.size == 0 or (array.min() >= -(2**31) and array.max() < 2**31):
            return array.astype(I32)
        return array
    if array.dtype == F64:
        return array.astype(floatx(), copy=False)
    if array.dtype == C128:
        return array.astype(C64)
    if kind not in "biufc" and array.dtype != BF16:
        raise TypeError(f"cannot convert {type(x).__name__} to an array: got dtype {array.dtype} (expected numbers)")
    return array


def scalar_array(value: Any) -> np.ndarray:
    """A 0-d array for a Python scalar with Ember's default dtypes."""
    t = type(value)
    if t is bool:
        return np.asarray(value, BOOL)
    if t is int:
        if -(2**31) <= value < 2**31:
            return np.asarray(value, I32)
        return np.asarray(value, I64)
    if t is float:
        return np.asarray(value, floatx())
    if t is complex:
        return np.asarray(value, C64)
    return np.asarray(value)


def to_native(x: Any, name: str = "x") -> np.ndarray:
    """``x`` as a ``numpy.ndarray`` (subclasses kept); TypeError for another framework's array."""
    if type(x) is ND:
        return x
    if isinstance(x, ND):
        return x
    t = type(x)
    if getattr(t, "__ember_tensor__", False):
        return tensor_native(x, BACKEND)
    if t is bool or t is int or t is float or t is complex:
        return scalar_array(x)
    if isinstance(x, np.generic):
        array = np.asarray(x)
        name_of(array.dtype)
        return array
    if t is list or t is tuple:
        return _from_sequence(x)
    module = t.__module__
    if module.startswith(_FOREIGN):
        raise foreign_array_error(x, BACKEND)
    array = np.asarray(x)
    if array.dtype.kind == "O":
        raise TypeError(f"{name}: cannot convert {t.__name__} to a numpy array")
    name_of(array.dtype)
    return array


_WEAK = {bool: "bool", int: "int", float: "float", complex: "complex", np.float64: "float", np.complex128: "complex"}


def _weak_kind(x: Any) -> str | None:
    """The weak-scalar kind of ``x`` as :mod:`ember.dtypes` sees it, or None for arrays."""
    kind = _WEAK.get(type(x))
    if kind is not None or isinstance(x, (ND, np.generic)):
        return kind
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int"
    if isinstance(x, float):  # np.float64 subclasses float: weak, as in ember.dtypes
        return "float"
    if isinstance(x, complex):
        return "complex"
    return None


def promote_dtypes(d1: np.dtype, d2: np.dtype) -> np.dtype:
    """The NumPy dtype of ``ember.dtypes.result_type`` for two array dtypes."""
    key = (d1, d2)
    result = _PROMOTE.get(key)
    if result is None:
        result = NP_DTYPES[_dtypes.result_type(name_of(d1), name_of(d2))]
        _PROMOTE[key] = result
    return result


def weak_dtype(dt: np.dtype, kind: str) -> np.dtype:
    """Dtype of an array of dtype ``dt`` combined with a weak Python scalar of ``kind``.

    The same table as ``ember.dtypes._with_weak`` (bfloat16 is NumPy kind ``"V"``).
    """
    category = dt.kind
    if kind == "float":
        return dt if category in "fcV" else floatx()
    if kind == "int":
        return I32 if category == "b" else dt
    if kind == "bool":
        return dt
    if category == "c":
        return dt
    return C128 if dt == F64 else C64


def binary(x1: Any, x2: Any) -> tuple[np.ndarray, np.ndarray]:
    """Both inputs as arrays of their Ember result dtype (Python scalars are weak)."""
    if type(x1) is ND and type(x2) is ND and x1.dtype is x2.dtype:
        return x1, x2
    return _binary_slow(x1, x2)


_INTS = frozenset(np.dtype(n) for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"))
_FLOATS = frozenset(np.dtype(n) for n in ("float16", "float32", "float64", "complex64", "complex128"))
# Array dtypes that NumPy's own weak-scalar rule (NEP 50) keeps, exactly as Ember does, for a
# Python scalar of each type. bfloat16 is left out: ml_dtypes turns bfloat16 * 0.5 into float32.
_KEEPS = {float: _FLOATS, int: _FLOATS | _INTS, bool: _FLOATS | _INTS | {BOOL}}


def check_int_scalar(value: Any, dt: np.dtype) -> None:
    """A Python int out of range of the integer dtype it takes is an OverflowError (NumPy 2, JAX)."""
    if type(value) is int and dt.kind in "iu":
        info = np.iinfo(dt)
        if not info.min <= value <= info.max:
            raise OverflowError(
                f"Python integer {value} is out of bounds for {dt.name} (a Python scalar takes the "
                f"array's dtype); cast the array to a wider dtype first")


def operands(x1: Any, x2: Any) -> tuple[Any, Any]:
    """Like :func:`binary`, for inputs going straight into a NumPy ufunc.

    An array with a Python scalar whose weak promotion leaves the array's dtype
    unchanged is returned as it is (the scalar stays a Python number): NumPy then
    applies the same rule itself, without building a 0-d array.
    """
    t1, t2 = type(x1), type(x2)
    if t1 is ND:
        keeps = _KEEPS.get(t2)
        if keeps is not None and x1.dtype in keeps:
            return x1, x2
    elif t2 is ND:
        keeps = _KEEPS.get(t1)
        if keeps is not None and x2.dtype in keeps:
            return x1, x2
    return _binary_slow(x1, x2)


def float_operands(x1: Any, x2: Any) -> tuple[Any, Any]:
    """:func:`operands` for floating ops: an integer or bool common dtype becomes ``floatx()``."""
    t1, t2 = type(x1), type(x2)
    if t1 is ND:
        if t2 in _KEEPS and x1.dtype in _FLOATS:
            return x1, x2
    elif t2 is ND and t1 in _KEEPS and x2.dtype in _FLOATS:
        return x1, x2
    x1, x2 = _binary_slow(x1, x2)
    if x1.dtype.kind in "biu":
        target = floatx()
        x1, x2 = x1.astype(target), x2.astype(target)
    return x1, x2


def _binary_slow(x1: Any, x2: Any) -> tuple[np.ndarray, np.ndarray]:
    k1, k2 = _weak_kind(x1), _weak_kind(x2)
    if k1 is None and k2 is None:
        a1, a2 = to_native(x1, "x1"), to_native(x2, "x2")
        d1, d2 = a1.dtype, a2.dtype
        if d1 == d2:
            return a1, a2
        target = promote_dtypes(d1, d2)
        return (a1 if d1 == target else a1.astype(target)), (a2 if d2 == target else a2.astype(target))
    if k1 is not None and k2 is not None:
        target = NP_DTYPES[_dtypes.result_type(x1, x2)]
        return np.asarray(x1, target), np.asarray(x2, target)
    if k1 is None:
        assert k2 is not None  # both None returned above
        a1 = to_native(x1, "x1")
        name_of(a1.dtype)
        target = weak_dtype(a1.dtype, k2)
        # A weak scalar becomes a 0-d array of the target (OverflowError if it does not fit, as NumPy).
        return (a1 if a1.dtype == target else a1.astype(target)), np.asarray(x2, target)
    a2 = to_native(x2, "x2")
    name_of(a2.dtype)
    target = weak_dtype(a2.dtype, k1)
    return np.asarray(x1, target), (a2 if a2.dtype == target else a2.astype(target))


def promote_all(values: Any, argument: str = "xs") -> list[np.ndarray]:
    """A sequence of inputs as arrays of their common Ember dtype."""
    arrays = [to_native(v, argument) for v in values]
    if not arrays:
        return arrays
    target = arrays[0].dtype
    for a in arrays[1:]:
        if a.dtype != target:
            target = promote_dtypes(target, a.dtype)
    return [a if a.dtype == target else a.astype(target) for a in arrays]


def out(r: Any) -> np.ndarray:
    """Make sure a NumPy result is an array (NumPy returns scalars from 0-d computations)."""
    if isinstance(r, ND):
        return r
    return np.asarray(r)


def float_compute(x: Any) -> tuple[np.ndarray, np.dtype | None]:
    """``(x to compute on, dtype to round the result back to or None)`` for ops computed in floating point:
    integers and bools as ``floatx()`` (float32 when that is a half), float16/bfloat16 in float32.

    Example:
        >>> import numpy as np
        >>> from ember.backends.numpy._base import float_compute
        >>> x, final = float_compute(np.ones(2, "float16"))
        >>> x.dtype.name, final.name
        ('float32', 'float16')
    """
    if type(x) is not ND:
        x = to_native(x)
    dt = x.dtype
    if dt.kind in "biu":
        target = floatx()
        if target in HALF:
            return x.astype(F32), target
        return x.astype(target), None
    if dt in HALF:
        return x.astype(F32), dt
    return x, None


def to_float(x: np.ndarray) -> np.ndarray:
    """Integer and bool arrays cast to ``floatx()``; floating and complex arrays unchanged."""
    if x.dtype.kind in "biu":
        return x.astype(floatx())
    return x


@overload
def axes_arg(axis: None, ndim: int, argument: str = "axis") -> None: ...
@overload
def axes_arg(axis: Any, ndim: int, argument: str = "axis") -> tuple[int, ...]: ...
def axes_arg(axis: Any, ndim: int, argument: str = "axis") -> tuple[int, ...] | None:
    """``axis`` (None, int or sequence) validated against ``ndim`` as a tuple or None."""
    if axis is None:
        return None
    if type(axis) is int:
        if -ndim <= axis < ndim:
            return (axis % ndim,) if ndim else (axis,)
        raise ValueError(f"{argument}={axis} is out of range for an array of rank {ndim}")
    if isinstance(axis, ND) or getattr(type(axis), "__ember_tensor__", False):
        axis = to_native(axis).tolist()
    return normalize_axes(axis, ndim, argument)


def axis_arg(axis: Any, ndim: int, argument: str = "axis") -> int:
    """A single axis validated against ``ndim``."""
    if type(axis) is int and -ndim <= axis < ndim:
        return axis % ndim
    return normalize_axis(axis, ndim, argument)


def shape_arg(shape: Any, argument: str = "shape") -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple of Python ints."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        dims: tuple[int, ...] = (int(shape),)
    else:
        if isinstance(shape, ND) or getattr(type(shape), "__ember_tensor__", False):
            shape = to_native(shape).tolist()
        try:
            dims = tuple(int(d.__index__()) for d in shape)
        except (TypeError, AttributeError):
            raise TypeError(f"{argument}: expected an int or a tuple of ints, received {shape!r}") from None
    for d in dims:
        if d < 0:
            raise ValueError(f"{argument}: dimensions must be >= 0, received {dims}")
    return dims


def int_list(values: Any, argument: str) -> list[int]:
    """A sequence (or array/Tensor) of ints as a list of Python ints."""
    if isinstance(values, ND) or getattr(type(values), "__ember_tensor__", False):
        values = to_native(values).tolist()
    if isinstance(values, (int, np.integer)):
        return [int(values)]
    try:
        return [int(v.__index__()) if not isinstance(v, ND) else int(v) for v in values]
    except (TypeError, AttributeError):
        raise TypeError(f"{argument}: expected a sequence of ints, received {values!r}") from None


def check_device(device: Any) -> None:
    """ValueError unless ``device`` names the CPU (``"cpu"``, ``"CPU"``, ``"cpu:0"``)."""
    if isinstance(device, str) and device.lower() in ("cpu", "cpu:0"):
        return
    raise ValueError(f"the numpy backend has no device {device!r}; available devices: ['cpu']")
