"""``ember.Tensor``: the portable, immutable, user-facing eager tensor.

A Tensor wraps one native array (``numpy.ndarray``, ``torch.Tensor`` or
``mlx.core.array``) and records the Ember ``dtype``, ``backend`` and ``device`` it
was made with. Layers and the trainer work on native arrays; the Tensor is the
convenient face users hold, and every ``ember.ops`` function accepts one.

Rules:

* A Tensor is bound to the backend that made it. It *computes* (operators,
  indexing, iteration, ``.at``, ``astype``, ``to``) only while that backend is
  active, through ``ember.ops`` (so gradient tapes see the computation); otherwise
  it raises ``TypeError`` naming both backends. It can always be *inspected and
  converted* (``shape``, ``repr``, ``numpy()``, ``tolist()``, ``item()``,
  ``to_backend()``, pickling), whatever backend is active.
* Combining Tensors of two backends is a ``TypeError``; convert explicitly with
  :meth:`Tensor.to_backend`.
* Tensors are immutable: use ``t.at[key].set(v)`` / ``.add(v)``. Like JAX arrays
  they are unhashable (``==`` is element-wise).
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ember import backends, dtypes, ops
from ember._tensor_at import AtIndexer, update_native

__all__ = ["EmberTensor", "Tensor", "convert_to_tensor", "is_tensor", "tensor"]

_active_name: str | None = None


def _on_backend_change(module: Any) -> None:
    global _active_name
    _active_name = module.name


backends.on_backend_change(_on_backend_change)


def _active() -> str:
    return _active_name if _active_name is not None else backends.current().name


def _table(name: str) -> dict:
    """Backend ``name``'s own core ops: for inspection/conversion, never for computation."""
    return backends.load(name).op_tables()["core"]


def _new(native: Any, backend: str, dtype: str, device: str) -> Tensor:
    t = object.__new__(Tensor)
    _setattr(t, "_native", native)
    _setattr(t, "backend", backend)
    _setattr(t, "dtype", dtype)
    _setattr(t, "device", device)
    return t


def _adopt(t: Tensor, source: Tensor) -> None:
    for name in ("_native", "backend", "dtype", "device"):
        _setattr(t, name, getattr(source, name))


def _wrap(native: Any) -> Tensor:
    """A Tensor for the result of an ``ember.ops`` call on the active backend."""
    return _new(native, _active(), ops.dtype(native), ops.get_device(native))


_setattr = object.__setattr__
_OPERAND_TYPES = (numbers.Number, np.ndarray, np.generic, list, tuple)
_FRAMEWORKS = ("numpy", "torch", "mlx", "ml_dtypes")


def _foreign_backend(x: Any) -> str | None:
    """The backend owning native array ``x`` when it is a torch/MLX array, else None."""
    root = type(x).__module__.split(".", 1)[0]
    if root in ("torch", "mlx") and backends.is_installed(root) and _table(root)["is_array"](x):
        return root
    return None


# The operator methods: each calls ``ember.ops.<op>`` looked up at call time (backend
# switches and gradient tapes re-bind those names) and wraps the native result.
def _binary(op: str, symbol: str,
            logical: bool = False) -> tuple[Callable[[Tensor, Any], Any], Callable[[Tensor, Any], Any]]:
    def forward(self: Tensor, other: Any) -> Any:
        other = self._operand(other, symbol)
        if other is NotImplemented:
            return NotImplemented
        if logical:
            _check_bool(symbol, self.dtype, other)
        return _wrap(getattr(ops, op)(self._native, other))

    def reverse(self: Tensor, other: Any) -> Any:
        other = self._operand(other, symbol)
        if other is NotImplemented:
            return NotImplemented
        if logical:
            _check_bool(symbol, self.dtype, other)
        return _wrap(getattr(ops, op)(other, self._native))

    return forward, reverse


def _unary(op: str, symbol: str, logical: bool = False) -> Callable[[Tensor], Tensor]:
    def method(self: Tensor) -> Tensor:
        if logical:
            _check_bool(symbol, self.dtype, True)
        if self.backend != _active_name:
            self._require_active(symbol)
        return _wrap(getattr(ops, op)(self._native))

    return method


def _check_bool(symbol: str, dtype: str, other: Any) -> None:
    """``& | ^ ~`` are logical ops on bool tensors (Ember has no bitwise integer ops)."""
    other_dtype = "bool" if isinstance(other, bool) else ops.dtype(ops.convert_to_tensor(other))
    if dtype != "bool" or other_dtype != "bool":
        received = dtype if symbol == "~" else f"{dtype} and {other_dtype}"
        raise TypeError(f"'{symbol}' on ember.Tensor is a logical op on bool tensors; received {received}")


class Tensor:
    """An immutable eager tensor bound to one backend; see :mod:`ember._tensor`.

    ``Tensor(data, dtype=None, device=None)`` converts ``data`` like
    :func:`convert_to_tensor` (without copying where the backend can share
    memory); :func:`tensor` always copies.

    Attributes:
        dtype: Ember dtype name (``"float32"``, ``"bfloat16"``, ...).
        backend: name of the backend that owns the data.
        device: device string (``"cpu"``, ``"cuda:0"``, ``"gpu"``, ...).

    Example:
        >>> import ember
        >>> ember.set_backend("numpy")
        >>> t = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> t.shape, t.dtype, t.backend, t.device
        ((2, 2), 'float32', 'numpy', 'cpu')
        >>> (t * 2 + 1)[0]
        Tensor([3., 5.], dtype=float32, backend='numpy', device='cpu')
        >>> [row.tolist() for row in t]
        [[1.0, 2.0], [3.0, 4.0]]
        >>> t.at[0, 0].set(9.0).numpy()
        array([[9., 2.],
               [3., 4.]], dtype=float32)
        >>> t[1, 0].item(), float(t[0, 1]), t.astype("int32").dtype
        (3.0, 2.0, 'int32')
        >>> t.to("cpu") is t, t.to_backend("numpy") is t
        (True, True)
    """

    __slots__ = ("_native", "backend", "dtype", "device", "__weakref__")
    # The slots' types (set once, through object.__setattr__, by _new/_adopt).
    _native: Any
    backend: str
    dtype: str
    device: str
    __ember_tensor__ = True
    # NumPy defers ``ndarray <op> Tensor`` to the Tensor's reflected operator.
    __array_priority__ = 1000
    __array_ufunc__ = None
    # Unhashable, like JAX arrays: ``==`` is element-wise, so a hash could not agree with it.
    __hash__ = None  # type: ignore[assignment]  # unhashable on purpose (the comment above)

    def __init__(self, data: Any, dtype: Any = None, device: str | None = None):
        _adopt(self, convert_to_tensor(data, dtype=dtype, device=device))

    # ----------------------------------------------------------------- immutability
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"ember.Tensor is immutable: cannot set attribute {name!r}; "
            "make a new tensor instead, e.g. t.at[index].set(value) or t.astype(dtype)"
        )

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"ember.Tensor is immutable: cannot delete attribute {name!r}")

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError(
            "ember.Tensor is immutable and does not support item assignment; "
            "use t = t.at[index].set(value) (or .add(value)) instead"
        )

    def __copy__(self) -> Tensor:
        return self

    def __deepcopy__(self, memo: dict) -> Tensor:
        return self

    # -------------------------------------------------------------------- inspection
    @property
    def shape(self) -> tuple[int, ...]:
        """Shape as a tuple of Python ints."""
        return tuple(_table(self.backend)["shape"](self._native))

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(_table(self.backend)["size"](self._native))

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d ember.Tensor")
        return shape[0]

    def _require_active(self, what: str) -> None:
        active = _active()
        if self.backend != active:
            raise TypeError(
                f"{what}: this ember.Tensor lives on backend {self.backend!r} but the active "
                f"backend is {active!r}; convert it with tensor.to_backend({active!r}) or switch back "
                f"with ember.set_backend({self.backend!r})"
            )

    def _operand(self, other: Any, what: str) -> Any:
        """``other`` ready for an op next to this Tensor, or NotImplemented."""
        if isinstance(other, Tensor):
            if other.backend != self.backend:
                raise TypeError(
                    f"{what}: cannot combine an ember.Tensor on backend {self.backend!r} with one on "
                    f"backend {other.backend!r}; convert one explicitly, e.g. other.to_backend({self.backend!r})"
                )
            other = other._native
        elif not (isinstance(other, _OPERAND_TYPES) or type(other).__module__.split(".", 1)[0] in _FRAMEWORKS):
            return NotImplemented
        if self.backend != _active_name:
            self._require_active(what)
        return other

    def _unwrap_key(self, key: Any) -> Any:
        if isinstance(key, tuple):
            return tuple(self._operand(k, "indexing") if isinstance(k, Tensor) else k for k in key)
        return self._operand(key, "indexing") if isinstance(key, Tensor) else key

    # ------------------------------------------------------------------ conversion
    def _values(self) -> np.ndarray:
        return np.asarray(_table(self.backend)["to_numpy"](self._native))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """The values as NumPy; a read-only zero-copy view where the backend allows."""
        array = self._values()
        if copy or (dtype is not None and np.dtype(dtype) != array.dtype):
            if copy is False:
                raise ValueError(f"cannot convert an ember.Tensor of dtype {self.dtype} to {dtype} without a copy")
            return np.array(array, dtype=dtype, copy=True)
        view = array.view(np.ndarray)
        view.flags.writeable = False
        return view

    def numpy(self) -> np.ndarray:
        """A writable NumPy copy of the values (bfloat16 as ``ml_dtypes.bfloat16``)."""
        return np.array(self._values(), copy=True)

    def tolist(self) -> Any:
        """The values as (nested lists of) Python scalars."""
        return self._values().tolist()

    def item(self) -> Any:
        """The single value of a size-1 tensor as a Python scalar.

        Raises:
            ValueError: the tensor has more (or fewer) than one element.
        """
        array = self._values()
        if array.size != 1:
            raise ValueError("item(): only a Tensor with one element converts to a Python scalar; "
                             f"this one has shape {array.shape}")
        return array.reshape(()).item()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        # Only complex tensors: MLX converts an operand that offers ``__complex__`` to a complex
        # scalar before trying ``__mlx_array__``, so ``mlx_array + size1_real_tensor`` would
        # silently turn complex. ``complex(float(t))`` converts a real one.
        if "complex" not in self.dtype:
            raise TypeError(f"complex() of an ember.Tensor of dtype {self.dtype}: use complex(float(t))")
        return complex(self.item())

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"the truth value of an ember.Tensor with {self.size} elements is ambiguous; "
                "use ops.any(t) or ops.all(t)"
            )
        return bool(self.item())

    def __index__(self) -> int:
        if self.shape != () or not dtypes.is_integer(self.dtype):
            raise TypeError("only 0-d integer Tensors can be used as an index; "
                            f"this one is {self.dtype} of shape {self.shape}")
        return int(self.item())

    def __repr__(self) -> str:
        array = self._values()
        if array.size == 0:
            body = f"[], shape={array.shape}"
        else:
            body = np.array2string(array, separator=", ", prefix="Tensor(")
        return f"Tensor({body}, dtype={self.dtype}, backend={self.backend!r}, device={self.device!r})"

    def __format__(self, spec: str) -> str:
        if spec and self.shape == ():
            return format(self.item(), spec)
        return format(repr(self), spec)

    def astype(self, dtype: Any) -> Tensor:
        """A copy cast to ``dtype`` (this tensor itself when the dtype already matches)."""
        name = dtypes.standardize_dtype(dtype, argument="Tensor.astype: dtype")
        if name == self.dtype:
            return self
        self._require_active("Tensor.astype")
        return _wrap(ops.cast(self._native, name))

    def to(self, device: str) -> Tensor:
        """This tensor on ``device`` of its backend (itself if already there)."""
        if device == self.device:
            return self
        self._require_active("Tensor.to")
        return _wrap(ops.to_device(self._native, device))

    def to_backend(self, name: str, device: str | None = None) -> Tensor:
        """The same values and dtype as a Tensor of backend ``name`` (explicit conversion).

        Works whatever backend is active; the new tensor lands on ``device`` or the
        target backend's default device.

        Raises:
            ValueError: unknown backend name. BackendNotAvailableError: not installed.
        """
        target = backends.load(name).name
        if target == self.backend:
            return self if device is None or device == self.device else self.to(device)
        array = self._values()
        return _native_on(target, array, self.dtype, device)

    # ------------------------------------------------------------------- operators
    __add__, __radd__ = _binary("add", "+")
    __sub__, __rsub__ = _binary("subtract", "-")
    __mul__, __rmul__ = _binary("multiply", "*")
    __truediv__, __rtruediv__ = _binary("divide", "/")
    __floordiv__, __rfloordiv__ = _binary("floor_divide", "//")
    __mod__, __rmod__ = _binary("mod", "%")
    __pow__, __rpow__ = _binary("power", "**")
    __matmul__, __rmatmul__ = _binary("matmul", "@")
    __and__, __rand__ = _binary("logical_and", "&", logical=True)
    __or__, __ror__ = _binary("logical_or", "|", logical=True)
    __xor__, __rxor__ = _binary("logical_xor", "^", logical=True)
    __eq__ = _binary("equal", "==")[0]
    __ne__ = _binary("not_equal", "!=")[0]
    __lt__ = _binary("less", "<")[0]
    __le__ = _binary("less_equal", "<=")[0]
    __gt__ = _binary("greater", ">")[0]
    __ge__ = _binary("greater_equal", ">=")[0]
    __neg__ = _unary("negative", "unary -")
    __abs__ = _unary("abs", "abs()")
    __invert__ = _unary("logical_not", "~", logical=True)

    def __pos__(self) -> Tensor:
        return self

    # -------------------------------------------------------------------- indexing
    def __getitem__(self, key: Any) -> Tensor:
        if self.backend != _active_name:
            self._require_active("indexing")
        return _wrap(ops.getitem(self._native, self._unwrap_key(key)))

    def __iter__(self) -> Iterator[Tensor]:
        shape = self.shape
        if not shape:
            raise TypeError("iteration over a 0-d ember.Tensor")
        self._require_active("iteration")
        return (self[i] for i in range(shape[0]))

    def __contains__(self, value: Any) -> bool:
        value = self._operand(value, "in")
        if value is NotImplemented:
            return False
        return bool(ops.any(ops.equal(self._native, value)))

    @property
    def at(self) -> AtIndexer:
        """Functional updates: ``t.at[key].set(v)``, ``.add(v)``, ``.get()`` (see :mod:`ember._tensor_at`)."""
        return AtIndexer(self)

    def _apply_at(self, key: Any, values: Any, mode: str) -> Tensor:
        what = f"Tensor.at[...].{mode}"
        self._require_active(what)
        native_values = self._operand(values, what)
        if native_values is NotImplemented:
            raise TypeError(f"{what}: expected array-like values, received {type(values).__name__}")
        return _wrap(update_native(self._native, self._unwrap_key(key), native_values, mode))

    # ------------------------------------------------------------------- pickling
    def __getstate__(self) -> dict:
        array = np.ascontiguousarray(self._values())
        return {
            "data": array.tobytes(),
            "dtype": self.dtype,
            "shape": tuple(int(n) for n in array.shape),
            "backend": self.backend,
            "device": self.device,
        }

    def __setstate__(self, state: dict) -> None:
        dtype, backend, device = state["dtype"], state["backend"], state["device"]
        array = np.frombuffer(state["data"], dtype=dtypes.to_numpy_dtype(dtype)).reshape(state["shape"]).copy()
        if not _is_installed(backend):
            active = backends.current().name
            message = f"backend {backend!r}, which is not installed; restoring it on the active backend {active!r}"
            warnings.warn(f"this ember.Tensor was pickled on {message}", RuntimeWarning, stacklevel=2)
            backend, device = active, None
        elif device not in backends.available_devices(backend):
            message = (f"device {device!r}, which backend {backend!r} does not have here; "
                       f"restoring it on {backends.default_device(backend)!r}")
            warnings.warn(f"this ember.Tensor was pickled on {message}", RuntimeWarning, stacklevel=2)
            device = None
        _adopt(self, _native_on(backend, array, dtype, device))

    def __mlx_array__(self) -> Any:
        # Lets ``mx.array(t)`` and ``mlx_array + t`` work (MLX has no reflected-operator hook).
        if self.backend != "mlx":
            raise TypeError(f"cannot use an ember.Tensor on backend {self.backend!r} as an MLX array; "
                            "convert it with tensor.to_backend('mlx')")
        return self._native


def _is_installed(name: str) -> bool:
    try:
        return backends.is_installed(name)
    except ValueError:  # a backend this Ember version does not know
        return False


def _native_on(backend: str, array: np.ndarray, dtype: str, device: str | None) -> Tensor:
    """A Tensor of ``backend`` (active or not) holding NumPy ``array`` as ``dtype``."""
    table = _table(backend)
    native = table["convert_to_tensor"](array, dtype=dtype, device=device)
    return _new(native, backend, table["dtype"](native), table["get_device"](native))


EmberTensor = Tensor


# ------------------------------------------------------------------ constructors
def is_tensor(x: Any) -> bool:
    """True if ``x`` is an :class:`ember.Tensor` (native arrays are not: see ``ops.is_array``).

    Example:
        >>> import ember
        >>> ember.set_backend("numpy")
        >>> ember.is_tensor(ember.tensor([1])), ember.is_tensor([1])
        (True, False)
    """
    return isinstance(x, Tensor)


def convert_to_tensor(x: Any, dtype: Any = None, device: str | None = None) -> Tensor:
    """``x`` as a Tensor of the active backend; ``x`` itself when no conversion is needed.

    ``x`` may be a Tensor, a native array of any installed backend, a NumPy array,
    a Python scalar or nested lists. A Tensor or native array of another backend
    is converted explicitly (copied through NumPy). The result may share memory
    with a NumPy ``x`` (use :func:`tensor` for a copy).

    Args:
        x: the data.
        dtype: Ember dtype name (or dtype-like); None keeps ``x``'s dtype
            (``floatx()`` for Python floats, ``int32`` for Python ints).
        device: a device of the active backend; None keeps ``x``'s device or uses
            the default device.

    Raises:
        TypeError: unknown dtype name or data that cannot become an array.

    Example:
        >>> import ember
        >>> ember.set_backend("numpy")
        >>> t = ember.convert_to_tensor([1.0, 2.0])
        >>> ember.convert_to_tensor(t) is t
        True
        >>> ember.convert_to_tensor(t, dtype="float16").dtype
        'float16'
    """
    if dtype is not None:
        dtype = dtypes.standardize_dtype(dtype, argument="convert_to_tensor: dtype")
    active = _active()
    if isinstance(x, Tensor):
        if x.backend != active:
            x = x.to_backend(active, device=device)
        if dtype is not None and dtype != x.dtype:
            x = x.astype(dtype)
        if device is not None and device != x.device:
            x = x.to(device)
        return x
    owner = _foreign_backend(x)
    if owner is not None and owner != active:
        x = _table(owner)["to_numpy"](x)
    return _wrap(ops.convert_to_tensor(x, dtype=dtype, device=device))


def tensor(data: Any, dtype: Any = None, device: str | None = None) -> Tensor:
    """A new Tensor of the active backend holding a copy of ``data``.

    Like :func:`convert_to_tensor`, but never shares memory with a mutable input
    (NumPy or native array), as ``torch.tensor`` / ``np.array``. Gradients do not
    flow from a native input into the copy.

    Example:
        >>> import ember
        >>> ember.set_backend("numpy")
        >>> ember.tensor([[1, 2], [3, 4]], dtype="float32")
        Tensor([[1., 2.],
                [3., 4.]], dtype=float32, backend='numpy', device='cpu')
    """
    if isinstance(data, Tensor):
        source = convert_to_tensor(data, dtype=dtype, device=device)
        return _new(source._native, source.backend, source.dtype, source.device)
    if isinstance(data, np.ndarray):
        data = np.array(data, copy=True)
    else:
        owner = _foreign_backend(data)
        if owner is None and _table(_active())["is_array"](data):
            owner = _active()
        if owner is not None:
            if device is None and owner == _active():
                device = ops.get_device(data)
            data = np.array(_table(owner)["to_numpy"](data), copy=True)
    return convert_to_tensor(data, dtype=dtype, device=device)
