"""Shared plumbing of the MLX backend: dtype tables, input conversion, the device.

Every op funnels its inputs through :func:`to_mx` (one argument) or :func:`binary`
(two arguments, promoted by :func:`ember.dtypes.result_type`). Both return at once
for native ``mx.array`` inputs that need no conversion, so ``ops.add`` stays within a
fraction of a microsecond of ``mx.add``.

Conversion rules (see the backend brief):

* ``mx.array`` -> itself; ``ember.Tensor`` of this backend -> its native array;
  a native array of another framework -> ``TypeError``.
* NumPy arrays (and subclasses, and NumPy scalars) keep their dtype. ``mx.array``
  would silently narrow float64 to float32, so float64 is passed with an explicit
  dtype; bfloat16 (``ml_dtypes``) travels as its uint16 bit pattern.
* Python scalars and nested lists: ints -> int32, floats -> ``floatx()``,
  bools -> bool, complex -> complex64.

MLX has no complex128 (TypeError) and runs float64 only on the CPU device (TypeError
when the default device is the GPU).
"""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import numpy as np

from ember import dtypes as _dtypes
from ember.backends._common import foreign_array_error, normalize_axes, normalize_axis, tensor_native

NAME = "mlx"
A = mx.array  # the native array type; fast paths test ``type(x) is A``

TO_MX = {
    "bool": mx.bool_,
    "int8": mx.int8, "int16": mx.int16, "int32": mx.int32, "int64": mx.int64,
    "uint8": mx.uint8, "uint16": mx.uint16, "uint32": mx.uint32, "uint64": mx.uint64,
    "float16": mx.float16, "bfloat16": mx.bfloat16, "float32": mx.float32, "float64": mx.float64,
    "complex64": mx.complex64,
}
FROM_MX = {value: key for key, value in TO_MX.items()}

FLOATS = frozenset({mx.float16, mx.bfloat16, mx.float32, mx.float64})
INEXACT = FLOATS | {mx.complex64}
SIGNED = frozenset({mx.int8, mx.int16, mx.int32, mx.int64})
UNSIGNED = frozenset({mx.uint8, mx.uint16, mx.uint32, mx.uint64})
INTEGERS = SIGNED | UNSIGNED
# bool and integers narrower than 32 bits accumulate (sum, prod, cumsum) in int32.
SMALL_INTS = frozenset({mx.bool_, mx.int8, mx.int16, mx.uint8, mx.uint16})

F64_GPU_ERROR = "float64 is not supported on the MLX gpu device; use float32 or the cpu device"
_PY_SCALARS = (bool, int, float, complex)


# ----------------------------------------------------------------------------- device


def gpu_available() -> bool:
    """True when MLX can run on a GPU here (Metal on Apple silicon, or CUDA)."""
    for module_name in ("metal", "cuda"):
        module = getattr(mx, module_name, None)
        try:
            if module is not None and module.is_available():
                return True
        except Exception:  # noqa: BLE001  (a probe must never break import)
            continue
    return False


class _Device:
    """The backend's default device: ``"cpu"`` or ``"gpu"`` (MLX arrays live in unified memory)."""

    def __init__(self) -> None:
        self.name = "cpu"
        self.gpu = False
        self.set("gpu" if gpu_available() else "cpu")

    def valid(self) -> list[str]:
        return ["cpu", "gpu"] if gpu_available() else ["cpu"]

    def normalize(self, device: Any, argument: str = "device") -> str:
        """``device`` as ``"cpu"``/``"gpu"``; ValueError naming it and the valid devices."""
        text = device if isinstance(device, str) else str(device)
        name = text.strip().lower()
        if name.startswith("device("):  # str(mx.cpu) -> 'Device(cpu, 0)'
            name = name[len("device("):].split(",")[0]
        if name.endswith(":0"):
            name = name[:-2]
        if name in ("metal", "cuda", "mps"):
            name = "gpu"
        valid = self.valid()
        if name not in valid:
            raise ValueError(f"{argument}: unknown device {device!r} for the mlx backend; expected one of {valid}")
        return name

    def set(self, device: Any) -> None:
        name = self.normalize(device, "set_default_device")
        mx.set_default_device(mx.gpu if name == "gpu" else mx.cpu)
        self.name = name
        self.gpu = name == "gpu"

    def __repr__(self) -> str:
        return f"MLXDevice({self.name!r})"


DEVICE = _Device()


def check_device(device: Any, argument: str = "device") -> str | None:
    """Validate an optional ``device=`` argument; returns the normalised name or None."""
    if device is None:
        return None
    return DEVICE.normalize(device, argument)


def stream_for(device: str | None) -> Any:
    """The MLX stream for a validated device name (None: the default device)."""
    if device is None:
        return None
    return mx.gpu if device == "gpu" else mx.cpu


# ------------------------------------------------------------------------------ dtypes


def mx_dtype(dtype: Any, op: str = "dtype", device: str | None = None) -> Any:
    """The ``mx.Dtype`` for an Ember dtype (or anything dtype-like)."""
    native: mx.Dtype | None
    if dtype is not None and type(dtype) is mx.Dtype:
        native = dtype
        name = FROM_MX[native]
    else:
        name = _dtypes.standardize_dtype(dtype, argument=f"{op}: dtype")
        native = TO_MX.get(name)
        if native is None:
            raise TypeError(f"{op}: dtype {name!r} is not supported on the mlx backend (MLX has no {name})")
    if name == "float64":
        gpu = DEVICE.gpu if device is None else device == "gpu"
        if gpu:
            raise TypeError(f"{op}: {F64_GPU_ERROR}")
    return native


def floatx() -> Any:
    """``mx.Dtype`` of Ember's default float."""
    return TO_MX[_dtypes.floatx()]


def name_of(x: Any) -> str:
    """Ember dtype name of a native array."""
    return FROM_MX[x.dtype]


# -------------------------------------------------------------------------- conversion


def to_mx(x: Any, argument: str = "x") -> Any:
    """Any accepted input as an ``mx.array`` (fast path: already one)."""
    if type(x) is A:
        return x
    return convert(x, argument)


def convert(x: Any, argument: str = "x", dtype: Any = None) -> Any:
    """The slow path of :func:`to_mx`; with ``dtype`` (an ``mx.Dtype``) converts straight to it."""
    cls = type(x)
    if cls is A or isinstance(x, A):
        return x if dtype is None or x.dtype == dtype else x.astype(dtype)
    if getattr(cls, "__ember_tensor__", False):
        native = tensor_native(x, NAME)
        return native if dtype is None or native.dtype == dtype else native.astype(dtype)
    if isinstance(x, (np.ndarray, np.generic)):
        array = np.asarray(x)
        if dtype is not None:
            array = array.astype(_dtypes.to_numpy_dtype(FROM_MX[dtype]), copy=False)
        return from_numpy(array, argument)
    if isinstance(x, _PY_SCALARS):
        native = dtype if dtype is not None else mx_dtype(_dtypes.result_type(x))
        if native is mx.float64 and DEVICE.gpu:
            raise TypeError(f"{argument}: {F64_GPU_ERROR}")
        return mx.array(x, dtype=native)
    module = cls.__module__ or ""
    if module.startswith(("torch", "mlx", "jax", "tensorflow")):
        raise foreign_array_error(x, NAME)
    if isinstance(x, (list, tuple)):
        array = _list_to_numpy(x, argument)
    else:
        try:
            array = np.asarray(x)
        except Exception as error:  # noqa: BLE001
            raise TypeError(f"{argument}: cannot convert {cls.__name__} to an mlx array ({error})") from None
        if array.dtype == object:
            raise TypeError(f"{argument}: cannot convert {cls.__name__} to an mlx array")
    if dtype is not None:
        array = array.astype(_dtypes.to_numpy_dtype(FROM_MX[dtype]), copy=False)
    return from_numpy(array, argument)


def _list_to_numpy(x: Any, argument: str) -> np.ndarray:
    """Nested lists: Python ints -> int32, floats -> floatx, complex -> complex64.

    Lists of NumPy values keep NumPy's dtype; lists of native arrays or Tensors keep theirs.
    """
    leaf = _first_leaf(x)
    if isinstance(leaf, A) or getattr(type(leaf), "__ember_tensor__", False):
        return np.asarray([_nested_to_numpy(item, argument) for item in x])
    if (type(leaf).__module__ or "").startswith(("torch", "jax", "tensorflow")):
        raise foreign_array_error(leaf, NAME)
    try:
        array = np.asarray(x)
    except ValueError as error:
        raise ValueError(f"{argument}: nested sequence is not rectangular ({error})") from None
    if array.dtype == object:
        raise TypeError(f"{argument}: cannot convert a list of {type(leaf).__name__} to an mlx array")
    if isinstance(leaf, (np.ndarray, np.generic)):
        return array
    kind = array.dtype.kind
    if kind == "f":
        return array.astype(_dtypes.to_numpy_dtype(_dtypes.floatx()), copy=False)
    if kind in "iu":
        return array.astype(np.int32, copy=False)
    if kind == "c":
        return array.astype(np.complex64, copy=False)
    return array


def _nested_to_numpy(item: Any, argument: str) -> Any:
    if isinstance(item, (list, tuple)):
        return [_nested_to_numpy(element, argument) for element in item]
    return to_numpy(to_mx(item, argument))


def _first_leaf(x: Any) -> Any:
    while isinstance(x, (list, tuple)) and len(x):
        x = x[0]
    return None if isinstance(x, (list, tuple)) else x


def from_numpy(array: np.ndarray, argument: str = "x") -> Any:
    """An ``mx.array`` with the values and dtype of a NumPy array."""
    dt = array.dtype
    if not array.flags.c_contiguous:
        # MLX's buffer import rejects negative strides (``a[::-1]``); copy to C order first.
        array = np.ascontiguousarray(array)
    if dt == np.float64:
        if DEVICE.gpu:
            raise TypeError(f"{argument}: {F64_GPU_ERROR}")
        return mx.array(array, dtype=mx.float64)
    if dt.name == "bfloat16":
        # ml_dtypes.bfloat16 has no buffer-protocol code MLX understands: move the bits.
        return mx.array(np.ascontiguousarray(array).view(np.uint16)).view(mx.bfloat16)
    if dt.name not in TO_MX or dt.kind not in "biufc":
        raise TypeError(f"{argument}: dtype {dt.name!r} is not supported on the mlx backend")
    if not dt.isnative:
        array = array.astype(dt.newbyteorder("="))
    return mx.array(array)


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of ``x`` (bfloat16 as ``ml_dtypes.bfloat16``)."""
    x = to_mx(x)
    if x.dtype == mx.bfloat16:
        import ml_dtypes

        return np.array(x.view(mx.uint16)).view(ml_dtypes.bfloat16)
    return np.array(x)


def is_scalar(x: Any) -> bool:
    return isinstance(x, _PY_SCALARS)


def binary(x1: Any, x2: Any) -> tuple[Any, Any]:
    """Both operands as ``mx.array``s that MLX combines into Ember's result dtype.

    Fast path: two native arrays whose dtypes have the same item size. Reading
    ``.dtype`` costs ~0.1 us per array on MLX (a new ``Dtype`` object each time), while
    ``.itemsize`` is cheap, and MLX's own promotion of two equally wide dtypes is exactly
    Ember's (checked over every pair) except among the 8-byte ones (int64 with uint64,
    float64 with complex64), which are compared by dtype. Everything else is cast here
    to ``ember.dtypes.result_type``.
    """
    if type(x1) is A and type(x2) is A:
        size = x1.itemsize
        if size == x2.itemsize and (size != 8 or x1.dtype == x2.dtype):
            return x1, x2
    return binary_slow(x1, x2)


def _keeps_dtype(array: Any, scalar: Any) -> bool:
    """True when ``array op scalar`` has the array's dtype: a float with a floating array,
    an int with an integer or floating array (Ember's weak-scalar rule)."""
    kind = type(scalar)
    if kind is float:
        return array.dtype in INEXACT
    if kind is int:
        dtype = array.dtype
        return dtype in INEXACT or dtype in INTEGERS
    return False


_INT_RANGE = {t: (int(np.iinfo(FROM_MX[t]).min), int(np.iinfo(FROM_MX[t]).max)) for t in INTEGERS}


def check_int_scalar(value: Any, dtype: Any) -> None:
    """A weak Python int out of range of the integer dtype it takes is an OverflowError (NumPy 2, JAX)."""
    bounds = _INT_RANGE.get(dtype)
    if bounds is not None and type(value) is int and not bounds[0] <= value <= bounds[1]:
        raise OverflowError(
            f"Python integer {value} is out of bounds for {FROM_MX[dtype]} (a Python scalar takes the "
            f"array's dtype); cast the array to a wider dtype first")


def binary_same(x1: Any, x2: Any) -> tuple[Any, Any]:
    """Both operands as ``mx.array``s of exactly the same dtype (Ember promotion, weak scalars)."""
    if type(x1) is A and type(x2) is A and x1.dtype == x2.dtype:
        return x1, x2
    return binary_slow(x1, x2)


def binary_slow(x1: Any, x2: Any) -> tuple[Any, Any]:
    # Common weak-scalar cases first (``x * 0.5``, ``x + 1``): the array's dtype wins.
    if type(x1) is A and _keeps_dtype(x1, x2):
        if type(x2) is int and not 0 <= x2 <= 127:  # (in range of every integer dtype: no check)
            check_int_scalar(x2, x1.dtype)
        return x1, mx.array(x2, dtype=x1.dtype)
    if type(x2) is A and _keeps_dtype(x2, x1):
        if type(x1) is int and not 0 <= x1 <= 127:
            check_int_scalar(x1, x2.dtype)
        return mx.array(x1, dtype=x2.dtype), x2
    s1 = isinstance(x1, _PY_SCALARS)
    s2 = isinstance(x2, _PY_SCALARS)
    if s1 and s2:
        target = mx_dtype(_dtypes.result_type(x1, x2))
        return mx.array(x1, dtype=target), mx.array(x2, dtype=target)
    if s2:
        a1 = to_mx(x1, "x1")
        target = mx_dtype(_dtypes.result_type(FROM_MX[a1.dtype], x2))
        check_int_scalar(x2, target)
        return (a1 if a1.dtype == target else a1.astype(target)), mx.array(x2, dtype=target)
    if s1:
        a2 = to_mx(x2, "x2")
        target = mx_dtype(_dtypes.result_type(x1, FROM_MX[a2.dtype]))
        check_int_scalar(x1, target)
        return mx.array(x1, dtype=target), (a2 if a2.dtype == target else a2.astype(target))
    a1 = to_mx(x1, "x1")
    a2 = to_mx(x2, "x2")
    if a1.dtype == a2.dtype:
        return a1, a2
    target = mx_dtype(_dtypes.result_type(FROM_MX[a1.dtype], FROM_MX[a2.dtype]))
    return (a1 if a1.dtype == target else a1.astype(target)), (a2 if a2.dtype == target else a2.astype(target))


def promote(values: Any, argument: str = "xs") -> list[Any]:
    """A sequence of inputs as ``mx.array`` of their common dtype."""
    arrays: list[Any] = []  # mx.arrays and weak Python scalars
    kinds: list[Any] = []  # dtype names and the weak scalars themselves (for result_type)
    for value in values:
        if isinstance(value, _PY_SCALARS):
            arrays.append(value)
            kinds.append(value)
        else:
            array = to_mx(value, argument)
            arrays.append(array)
            kinds.append(FROM_MX[array.dtype])
    if not arrays:
        return []
    target = mx_dtype(_dtypes.result_type(*kinds))
    out = []
    for array in arrays:
        if type(array) is A:
            out.append(array if array.dtype == target else array.astype(target))
        else:
            check_int_scalar(array, target)
            out.append(mx.array(array, dtype=target))
    return out


def inexact(x: Any) -> Any:
    """``x`` as an ``mx.array``; integers and bool cast to ``floatx()`` (for transcendental ops)."""
    if type(x) is not A:
        x = convert(x)
    if x.dtype in INEXACT:
        return x
    return x.astype(floatx())


def axes_of(axis: Any, ndim: int, argument: str = "axis") -> list[int] | None:
    """Validated reduction axes as a list (None for all)."""
    if axis is None:
        return None
    if type(axis) is int and -ndim <= axis < ndim:
        return [axis % ndim]
    return list(normalize_axes(axis, ndim, argument))


__all__ = [
    "A", "DEVICE", "FLOATS", "FROM_MX", "INEXACT", "INTEGERS", "NAME", "SIGNED", "SMALL_INTS", "TO_MX",
    "UNSIGNED", "axes_of", "binary", "binary_same", "check_device", "check_int_scalar", "convert", "floatx",
    "from_numpy", "gpu_available",
    "inexact", "is_scalar", "mx_dtype", "name_of", "normalize_axis", "promote", "stream_for", "to_mx",
    "to_numpy",
]
