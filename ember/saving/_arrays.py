"""Arrays crossing the checkpoint boundary: any backend's native arrays to NumPy (saving) and
NumPy to the active backend (loading), with shapes/dtypes read without copying data.

A model's state may hold arrays of a backend other than the active one (built on torch,
then ``ember.set_backend("mlx")``); saving works on them all, and loading always creates
arrays of the active backend on its default device.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember.saving import _arrays
    >>> ember.set_backend("numpy")
    >>> _arrays.info(np.zeros((2, 3), "float16"))
    ((2, 3), 'float16')
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ember import backends, dtypes, ops

_LIBRARIES = {"torch": "torch", "mlx": "mlx.core"}


def _imported(backend: str) -> bool:
    """Whether ``backend``'s library is imported (an array of it can only exist then)."""
    return _LIBRARIES.get(backend, backend) in sys.modules


def backend_of(value: Any) -> Any:
    """``(name, module)`` of the backend whose native array ``value`` is (NumPy arrays: numpy)."""
    if isinstance(value, np.ndarray):
        return "numpy", None
    active = backends.get_backend()
    for name in [active] + [n for n in backends.BACKENDS if n != active]:
        if name == "numpy" or not _imported(name) or not backends.is_installed(name):
            continue
        module = backends.load(name)
        if isinstance(value, module.array_types):
            return name, module.core
    raise TypeError(f"expected an array (NumPy, torch, MLX or ember.Tensor), received {type(value).__name__}")


def _unwrap(value: Any) -> Any:
    if getattr(type(value), "__ember_tensor__", False):
        return value._native
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return np.asarray(value)
    return value


def to_host(value: Any) -> tuple[np.ndarray, str, str]:
    """``(NumPy array, backend name, device)`` for a native array of any loaded backend, an
    ``ember.Tensor``, a NumPy array or a scalar (zero-copy where the backend allows)."""
    value = _unwrap(value)
    name, module = backend_of(value)
    if module is None:
        return value, "numpy", "cpu"
    if name == "mlx" and module.dtype(value) != "bfloat16":
        # MLX's buffer protocol gives a zero-copy view of the evaluated array (its to_numpy copies,
        # at well under 1 GB/s); bfloat16 has no buffer format, so it takes the copying path.
        host = np.asarray(value)
    else:
        host = np.asarray(module.to_numpy(value))
    return host, name, str(module.get_device(value))


def host_writable(shape: tuple, dtype: str) -> tuple[Any, np.ndarray] | None:
    """A new array of the active backend and a writable NumPy view of its memory, or None (see each
    backend's ``host_writable``): what the checkpoint reader reads into, so that loading holds one copy."""
    return backends.current().host_writable(shape, dtype)


def info(value: Any) -> tuple[tuple, str]:
    """``(shape, Ember dtype name)`` of an array of any backend, without copying its data."""
    value = _unwrap(value)
    name, module = backend_of(value)
    if module is None:
        return tuple(value.shape), dtypes.standardize_dtype(value.dtype)
    return tuple(module.shape(value)), module.dtype(value)


def to_native(array: Any, dtype: str) -> Any:
    """``array`` (NumPy, or already the active backend's) as a native array of the active backend with
    Ember dtype ``dtype`` (cast if needed)."""
    if not isinstance(array, np.ndarray):  # read straight into the active backend's memory
        return array if ops.dtype(array) == dtype else ops.cast(array, dtype)
    if array.dtype.name != dtype:
        array = array.astype(dtypes.to_numpy_dtype(dtype))
    return ops.convert_to_tensor(array, dtype=dtype)
