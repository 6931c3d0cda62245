"""Shared machinery of the torch backend: devices, dtypes, input conversion, promotion.

Every op module funnels its inputs through the helpers here:

* :func:`native` turns anything an op accepts (a ``torch.Tensor``, an
  ``ember.Tensor`` of this backend, a NumPy array or scalar, a Python scalar or a
  nested list) into a ``torch.Tensor`` on the default device. A native tensor is
  returned untouched (first test: ``type(x) is torch.Tensor``).
* :func:`binary` promotes two operands by :func:`ember.dtypes.result_type`.
  torch's own promotion differs from Ember's (``int32 tensor + 1.5`` gives torch's
  default dtype rather than ``floatx()``, ``bool + 1`` gives ``int64`` rather than
  ``int32``), so the slow path casts to Ember's dtype first and only then calls the
  torch op; weak Python scalars are passed through as Python numbers where the cast
  operand already has the result dtype, which keeps torch from widening anything.
* :data:`DEVICE` is the default device every creation op places arrays on.

torch has no general uint16/uint32/uint64 arithmetic, so those dtypes raise
``TypeError`` naming the backend and the dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ember import dtypes as _dt
from ember.backends._common import foreign_array_error, normalize_axis, tensor_native

BACKEND = "torch"
Tensor = torch.Tensor

# --------------------------------------------------------------------------- dtypes

TO_TORCH = {
    "bool": torch.bool,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
}
NAME = {value: key for key, value in TO_TORCH.items()}
UNSUPPORTED = ("uint16", "uint32", "uint64")

FLOATING = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64))
COMPLEX = frozenset((torch.complex64, torch.complex128))
INEXACT = FLOATING | COMPLEX
INTEGER = frozenset((torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8))
HALF = frozenset((torch.float16, torch.bfloat16))
# sum/prod/cumsum accumulate bool and small integers in int32 (Ember's rule; torch
# would pick int64), int64 stays int64; floats keep their dtype (None).
ACCUMULATE = {
    torch.bool: torch.int32,
    torch.int8: torch.int32,
    torch.int16: torch.int32,
    torch.uint8: torch.int32,
    torch.int32: torch.int32,
    torch.int64: torch.int64,
}
COMPLEX_OF = {
    torch.float16: torch.complex64,
    torch.bfloat16: torch.complex64,
    torch.float32: torch.complex64,
    torch.float64: torch.complex128,
    torch.complex64: torch.complex64,
    torch.complex128: torch.complex128,
}
REAL_OF = {torch.complex64: torch.float32, torch.complex128: torch.float64}

_dtype_cache: dict[Any, torch.dtype] = {}


def unsupported_dtype(name: str, argument: str = "dtype") -> TypeError:
    return TypeError(
        f"{argument}: dtype {name!r} is not supported by the torch backend (torch has no "
        f"general {name} arithmetic); use a signed integer dtype such as 'int32' or 'int64'"
    )


def torch_dtype(dtype: Any, argument: str = "dtype") -> torch.dtype:
    """The ``torch.dtype`` for any dtype-like (``None`` means ``floatx()``)."""
    if dtype is None:
        return TO_TORCH[_dt.floatx()]
    try:
        return _dtype_cache[dtype]
    except (KeyError, TypeError):
        pass
    name = _dt.standardize_dtype(dtype, argument)
    if name in UNSUPPORTED:
        raise unsupported_dtype(name, argument)
    result = TO_TORCH[name]
    try:
        _dtype_cache[dtype] = result
    except TypeError:
        pass
    return result


def dtype_name(dtype: torch.dtype) -> str:
    try:
        return NAME[dtype]
    except KeyError:
        raise TypeError(f"torch dtype {dtype} has no Ember equivalent; expected one of {tuple(TO_TORCH)}") from None


def floatx() -> torch.dtype:
    return TO_TORCH[_dt.floatx()]


# -------------------------------------------------------------------------- devices


def _accelerators() -> list[str]:
    found = []
    if torch.cuda.is_available():
        found += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found


def host_reads_free(device: torch.device) -> bool:
    """Whether reading a tensor on ``device`` on the host costs no wait for queued kernels: the CPU.

    The ops that check values eagerly (index bounds) or hand kernels Python-float scalars do so only
    where this holds; on CUDA/MPS they stay on the device, so a training step never synchronises.
    """
    return device.type == "cpu"


def valid_devices() -> list[str]:
    return ["cpu"] + _accelerators()


def device_name(device: torch.device) -> str:
    """Ember's name of a ``torch.device``: ``"cpu"``, ``"cuda:0"``, ``"mps"``."""
    kind = device.type
    if kind == "cuda":
        return f"cuda:{0 if device.index is None else device.index}"
    return kind


def normalize_device(device: Any, argument: str = "device") -> str:
    """A validated Ember device name; ``ValueError`` naming the device and the valid list."""
    if isinstance(device, torch.device):
        text = device_name(device)
    elif isinstance(device, str):
        text = device.strip().lower()
    else:
        raise ValueError(f"{argument}: expected a device name such as 'cpu', received {device!r}")
    if text in ("cpu:0",):
        text = "cpu"
    elif text in ("cuda", "gpu"):
        accel = _accelerators()
        text = accel[0] if accel else text
    elif text == "mps:0":
        text = "mps"
    elif text.startswith("gpu:"):
        text = "cuda:" + text[4:]
    valid = valid_devices()
    if text not in valid:
        raise ValueError(f"{argument}: unknown device {device!r} for the torch backend; expected one of {valid}")
    return text


class _Device:
    """The default device: ``name`` (Ember's string) and ``torch`` (the ``torch.device``)."""

    __slots__ = ("name", "torch", "is_cpu")

    def __init__(self) -> None:
        accel = _accelerators()
        cuda = [d for d in accel if d.startswith("cuda")]
        self._assign(cuda[0] if cuda else ("mps" if "mps" in accel else "cpu"))

    def _assign(self, name: str) -> None:
        self.name = name
        self.torch = torch.device(name)
        self.is_cpu = name == "cpu"

    def set(self, name: Any) -> None:
        """Make ``name`` the default device (``"cuda"`` means ``"cuda:0"``)."""
        self._assign(normalize_device(name))

    def __repr__(self) -> str:
        return f"Device({self.name!r})"


DEVICE = _Device()


def resolve_device(device: Any) -> torch.device:
    """``torch.device`` for a creation op's ``device=`` argument (None: the default)."""
    if device is None:
        return DEVICE.torch
    return torch.device(normalize_device(device))


# ----------------------------------------------------------------------- conversion

_SCALAR_KIND = {bool: "bool", int: "int", float: "float", complex: "complex"}
_FOREIGN = ("mlx", "jax", "jaxlib", "tensorflow", "cupy", "paddle")


def _place(t: torch.Tensor, device: torch.device | None) -> torch.Tensor:
    target = DEVICE.torch if device is None else device
    if t.device != target:
        t = t.to(target)
    return t


def from_numpy(a: np.ndarray, device: torch.device | None = None, argument: str = "x") -> torch.Tensor:
    """NumPy array -> tensor on ``device`` (default device), keeping the dtype."""
    kind = a.dtype
    if kind.name == "bfloat16":
        # torch cannot read ml_dtypes' bfloat16: reinterpret the bits as int16 and view back.
        t = torch.from_numpy(_torch_readable(a.view(np.int16))).view(torch.bfloat16)
        return _place(t, device)
    if kind.name not in NAME_SET:
        if kind.name in UNSUPPORTED:
            raise unsupported_dtype(kind.name, argument)
        raise TypeError(f"{argument}: cannot convert a NumPy array of dtype {kind} to a torch tensor")
    return _place(torch.from_numpy(_torch_readable(a)), device)


NAME_SET = frozenset(TO_TORCH)


def _torch_readable(a: np.ndarray) -> np.ndarray:
    # torch.from_numpy needs native byte order and non-negative strides, and warns on
    # read-only arrays (which it would otherwise share writable): copy in those cases.
    if not a.flags.writeable or not a.dtype.isnative or any(s < 0 for s in a.strides):
        a = np.array(a, dtype=a.dtype.newbyteorder("="))
    return a


def _scalar_tensor(x: Any, device: torch.device | None, dtype: torch.dtype | None = None) -> torch.Tensor:
    if dtype is None:
        dtype = TO_TORCH[_dt.result_type(x)]
    return torch.tensor(x, dtype=dtype, device=DEVICE.torch if device is None else device)


def native(x: Any, argument: str = "x", device: torch.device | None = None) -> torch.Tensor:
    """``x`` as a ``torch.Tensor``; new tensors go to ``device`` (default: the default device)."""
    if type(x) is Tensor:
        return x
    if isinstance(x, Tensor):
        if dtype_name(x.dtype):
            return x
    if getattr(type(x), "__ember_tensor__", False):
        out = tensor_native(x, BACKEND)
        return out if isinstance(out, Tensor) else native(out, argument, device)
    if isinstance(x, np.ndarray):
        return from_numpy(x, device, argument)
    if isinstance(x, np.generic):
        return from_numpy(np.asarray(x), device, argument)
    kind = _SCALAR_KIND.get(type(x))
    if kind is None and isinstance(x, (bool, int, float, complex)):
        kind = _dt._scalar_kind(x)
    if kind is not None:
        return _scalar_tensor(x, device)
    if isinstance(x, (list, tuple)):
        return _from_sequence(x, device, argument)
    module = type(x).__module__.split(".")[0]
    if module in _FOREIGN:
        raise foreign_array_error(x, BACKEND)
    if hasattr(x, "__array__") and not isinstance(x, (str, bytes)):
        return from_numpy(np.asarray(x), device, argument)
    raise TypeError(f"{argument}: expected an array, a scalar or a nested list, received {type(x).__name__}")


def _from_sequence(x: Any, device: torch.device | None, argument: str) -> torch.Tensor:
    if any(not (type(e) in _SCALAR_KIND or isinstance(e, (list, tuple))) for e in x):
        # A sequence of arrays/tensors: convert each (keeping its dtype) and stack.
        items = [native(e, argument, device) for e in x]
        target = TO_TORCH[_dt.result_type(*[NAME[i.dtype] for i in items])]
        place = items[0].device if device is None else device
        return torch.stack([i.to(device=place, dtype=target) for i in items])
    try:
        a = np.asarray(x)
    except ValueError as error:
        raise ValueError(f"{argument}: cannot convert a ragged nested sequence to a tensor ({error})") from None
    kind = a.dtype.kind
    if kind == "f":
        a = a.astype(_dt.to_numpy_dtype(_dt.floatx()))
    elif kind in "iu":
        if a.size and (a.max() > 2**31 - 1 or a.min() < -(2**31)):
            raise OverflowError(
                f"{argument}: Python integers out of range for the default int32 dtype; pass dtype='int64'"
            )
        a = a.astype(np.int32)
    elif kind == "c":
        a = a.astype(np.complex64)
    elif kind != "b":
        raise TypeError(f"{argument}: cannot convert a sequence of {a.dtype} values to a tensor")
    return from_numpy(a, device, argument)


def convert(x: Any, dtype: Any = None, device: Any = None, argument: str = "x") -> torch.Tensor:
    """``convert_to_tensor`` semantics: optional dtype and device, same object when possible."""
    target = None if dtype is None else torch_dtype(dtype)
    place = None if device is None else torch.device(normalize_device(device))
    if isinstance(x, Tensor) or getattr(type(x), "__ember_tensor__", False):
        t = native(x, argument)
    elif target is not None and (type(x) in _SCALAR_KIND or isinstance(x, (list, tuple))) and not _has_arrays(x):
        # Python data with an explicit dtype: let NumPy do the cast (bfloat16 via ml_dtypes).
        a = np.asarray(x, dtype=_dt.to_numpy_dtype(NAME[target]))
        return from_numpy(a, place)
    else:
        t = native(x, argument, place)
    if target is not None and t.dtype is not target:
        t = t.to(target)
    if place is not None and t.device != place:
        t = t.to(place)
    return t


def _has_arrays(x: Any) -> bool:
    if isinstance(x, (list, tuple)):
        return any(_has_arrays(e) for e in x)
    return type(x) not in _SCALAR_KIND


def to_numpy(x: Any) -> np.ndarray:
    """NumPy copy/view of ``x``: detached, on the CPU, bfloat16 as ``ml_dtypes.bfloat16``."""
    t = native(x)
    if t.requires_grad:
        t = t.detach()
    if not host_reads_free(t.device):
        t = t.cpu()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    if t.dtype is torch.bfloat16:
        return t.view(torch.int16).numpy().view(_dt.to_numpy_dtype("bfloat16"))
    return t.numpy()


# ------------------------------------------------------------------------ promotion

_pair_cache: dict[tuple, torch.dtype] = {}
_weak_cache: dict[tuple, torch.dtype] = {}


def promote(d1: torch.dtype, d2: torch.dtype) -> torch.dtype:
    """Ember's result dtype of two tensor dtypes."""
    if d1 is d2:
        return d1
    key = (d1, d2)
    try:
        return _pair_cache[key]
    except KeyError:
        result = TO_TORCH[_dt.result_type(dtype_name(d1), dtype_name(d2))]
        _pair_cache[key] = result
        return result


def promote_weak(d: torch.dtype, kind: str) -> torch.dtype:
    """Ember's result dtype of a tensor dtype with a weak Python scalar of ``kind``."""
    key = (d, kind, _dt.floatx())
    try:
        return _weak_cache[key]
    except KeyError:
        result = TO_TORCH[_dt._with_weak(dtype_name(d), kind)]
        _weak_cache[key] = result
        return result


def promote_all(values: list) -> torch.dtype:
    """Result dtype of tensors and Python scalars together."""
    return TO_TORCH[_dt.result_type(*[NAME[v.dtype] if isinstance(v, Tensor) else v for v in values])]


def scalar_kind(x: Any) -> str | None:
    """``"bool"/"int"/"float"/"complex"`` for a Python scalar (weak), else None."""
    kind = _SCALAR_KIND.get(type(x))
    if kind is None and isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        kind = _dt._scalar_kind(x)
    return kind


_INT_RANGE = {t: (int(torch.iinfo(t).min), int(torch.iinfo(t).max)) for t in INTEGER}


def check_int_scalar(value: int, dtype: torch.dtype) -> None:
    """A weak Python int out of range of the integer dtype it takes is an OverflowError (NumPy 2, JAX)."""
    bounds = _INT_RANGE.get(dtype)
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise OverflowError(
            f"Python integer {value} is out of bounds for {dtype_name(dtype)} (a Python scalar takes the "
            f"array's dtype); cast the array to a wider dtype first")


def binary(x1: Any, x2: Any) -> tuple[Any, Any]:
    """Two operands with Ember's result dtype; a weak Python scalar ``x2`` may stay a number."""
    if type(x1) is Tensor and type(x2) is Tensor and x1.dtype is x2.dtype:
        return x1, x2
    return binary_slow(x1, x2)


def binary_slow(x1: Any, x2: Any) -> tuple[Any, Any]:
    k1, k2 = scalar_kind(x1), scalar_kind(x2)
    if k2 is not None and k1 is None:
        a = native(x1, "x1")
        target = promote_weak(a.dtype, k2)
        if k2 == "bool" and target is not torch.bool:
            x2 = int(x2)  # torch refuses e.g. ``int8_tensor - True``; NumPy treats True as 1
        elif k2 == "int":
            check_int_scalar(x2, target)
        return (a if a.dtype is target else a.to(target)), x2
    if k1 is not None and k2 is None:
        b = native(x2, "x2")
        target = promote_weak(b.dtype, k1)
        if k1 == "int":
            check_int_scalar(x1, target)
        if b.dtype is not target:
            b = b.to(target)
        return torch.tensor(x1, dtype=target, device=b.device), b
    if k1 is not None:  # two Python scalars
        target = TO_TORCH[_dt.result_type(x1, x2)]
        return _scalar_tensor(x1, None, target), _scalar_tensor(x2, None, target)
    a = native(x1, "x1", _device_of(x2))
    b = native(x2, "x2", a.device)
    target = promote(a.dtype, b.dtype)
    if a.dtype is not target:
        a = a.to(target)
    if b.dtype is not target:
        b = b.to(target)
    if a.device != b.device:
        a, b = same_device(a, b)
    return a, b


def _device_of(x: Any) -> torch.device | None:
    return x.device if isinstance(x, Tensor) else None


def same_device(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Operands on one device: a 0-d CPU tensor may join any device; else the default device."""
    if a.ndim == 0 and a.device.type == "cpu":
        return a.to(b.device), b
    if b.ndim == 0 and b.device.type == "cpu":
        return a, b.to(a.device)
    return a.to(DEVICE.torch), b.to(DEVICE.torch)


def binary_tensors(x1: Any, x2: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Like :func:`binary`, but both results are tensors (for torch ops that refuse numbers)."""
    if type(x1) is Tensor and type(x2) is Tensor and x1.dtype is x2.dtype:
        return x1, x2
    a, b = binary_slow(x1, x2)
    if not isinstance(b, Tensor):
        b = torch.tensor(b, dtype=a.dtype, device=a.device)
    return a, b


def many(xs: Any, argument: str = "xs") -> list[torch.Tensor]:
    """A sequence of operands as tensors of one dtype on one device."""
    if isinstance(xs, Tensor) or getattr(type(xs), "__ember_tensor__", False) or isinstance(xs, np.ndarray):
        xs = list(native(xs, argument).unbind(0))
    elif not isinstance(xs, (list, tuple)):
        raise TypeError(f"{argument}: expected a sequence of arrays, received {type(xs).__name__}")
    if not xs:
        raise ValueError(f"{argument}: need at least one array")
    ts = [native(x, argument) for x in xs]
    first = ts[0]
    if all(t.dtype is first.dtype for t in ts):
        target = first.dtype
    else:
        kinds = [x if scalar_kind(x) else t for x, t in zip(xs, ts)]
        target = promote_all(kinds)
    device = first.device
    return [t if (t.dtype is target and t.device == device) else t.to(device=device, dtype=target) for t in ts]


def to_float(x: Any, argument: str = "x") -> torch.Tensor:
    """Tensor of ``x``; integer and bool inputs cast to ``floatx()``."""
    if type(x) is not Tensor:
        x = native(x, argument)
    if x.dtype in INEXACT:
        return x
    return x.to(floatx())


def along_axis(x: Any, axis: int | None) -> tuple[torch.Tensor, int]:
    """``x`` as a tensor and ``axis`` normalized to ``[0, ndim)``; ``axis=None`` means the flattened
    array's axis 0, as NumPy's ``take``, ``cumsum`` and ``repeat`` read it."""
    if type(x) is not Tensor:
        x = native(x)
    if axis is None:
        return x.reshape(-1), 0
    return x, normalize_axis(axis, x.ndim)


def index_tensor(indices: Any, device: torch.device, argument: str = "indices") -> torch.Tensor:
    """Integer index data as an int64 tensor on ``device``."""
    t = native(indices, argument, device)
    if t.dtype not in INTEGER:
        raise TypeError(f"{argument}: expected integer indices, received dtype {dtype_name(t.dtype)}")
    if t.dtype is not torch.int64:
        t = t.long()
    if t.device != device:
        t = t.to(device)
    return t
