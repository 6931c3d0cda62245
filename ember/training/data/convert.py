"""Turning user data into native arrays of the active backend, and walking its structure.

User data is an array (NumPy, a backend's native array, ``ember.Tensor``, anything with
``__array__`` such as a torch tensor on another backend, nested Python lists of numbers),
or a list/tuple/dict of such arrays (multi-input or multi-output models). Floating data
is cast to ``floatx()`` (NumPy's float64 becomes float32, as in Keras); integer and
boolean data keep their dtype.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import ops
    >>> from ember.training.data.convert import to_native
    >>> ember.set_backend("numpy")
    >>> x = to_native({"a": np.zeros((2, 3)), "b": [1, 2]})
    >>> ops.dtype(x["a"]), ops.dtype(x["b"])
    ('float32', 'int64')
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ember import dtypes, ops


def is_array_like(value: Any) -> bool:
    """True for one array (of any kind Ember reads), False for a list/tuple/dict of arrays."""
    if isinstance(value, (dict, str, bytes)) or value is None:
        return False
    if getattr(type(value), "__ember_tensor__", False) or hasattr(value, "shape"):
        return True
    if isinstance(value, (list, tuple)):
        # A list of numbers (or nested lists of numbers) is one array; a list of arrays is a structure.
        return len(value) > 0 and all(_is_plain_nested(v) for v in value)
    return isinstance(value, (int, float, bool, np.number))


def _is_plain_nested(value: Any) -> bool:
    if isinstance(value, (int, float, bool, np.number)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_plain_nested(v) for v in value)
    return False


def map_structure(fn: Callable[[Any], Any], value: Any) -> Any:
    """Apply ``fn`` to every array of a (possibly nested) list/tuple/dict structure."""
    if value is None:
        return None
    if is_array_like(value):
        return fn(value)
    if isinstance(value, dict):
        return {k: map_structure(fn, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        mapped = [map_structure(fn, v) for v in value]
        return tuple(mapped) if isinstance(value, tuple) else mapped
    raise TypeError(f"expected arrays or lists/tuples/dicts of arrays, received {type(value).__name__}")


def flatten(value: Any) -> list:
    """Every array of a structure, in order (dicts in insertion order)."""
    out: list = []

    def visit(v: Any) -> None:
        if v is None:
            return
        if is_array_like(v):
            out.append(v)
        elif isinstance(v, dict):
            for item in v.values():
                visit(item)
        elif isinstance(v, (list, tuple)):
            for item in v:
                visit(item)
        else:
            raise TypeError(f"expected arrays or lists/tuples/dicts of arrays, received {type(v).__name__}")

    visit(value)
    return out


def to_numpy_host(value: Any) -> np.ndarray:
    """One array as a NumPy array on the host (used for data that is not yet native)."""
    if getattr(type(value), "__ember_tensor__", False):
        value = value._native
    if ops.is_array(value):
        return ops.to_numpy(value)
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor while another backend is active
        value = value.detach().cpu()
    return np.asarray(value)


def _target_dtype(dtype_name: str) -> str | None:
    if dtypes.is_float(dtype_name) and dtype_name != dtypes.floatx():
        return dtypes.floatx()
    return None


# The device data is converted on while ``converted_on`` is active (None: the backend's default device).
_staging: list[str | None] = [None]


@contextlib.contextmanager
def converted_on(device: str | None) -> Iterator[None]:
    """Within it, :func:`to_native` creates arrays on ``device`` (None: the default device): the data
    loop converts per-batch data on the host and sends it to an accelerator asynchronously
    (:mod:`ember.training.data.prefetch`)."""
    previous, _staging[0] = _staging[0], device
    try:
        yield
    finally:
        _staging[0] = previous


def to_native(value: Any, argument: str = "data") -> Any:
    """A structure of arrays as the active backend's native arrays (floats as ``floatx()``);
    ``TypeError`` naming ``argument`` (``"x"``, ``"y"``, ...) for strings or Python objects."""
    return map_structure(lambda leaf: _leaf_to_native(leaf, argument), value)


def _leaf_to_native(value: Any, argument: str) -> Any:
    if getattr(type(value), "__ember_tensor__", False):
        value = value._native
    if argument == "y":
        dtypes.check_numeric_labels(value, "fit", argument)
    if isinstance(value, np.ndarray) and value.dtype.kind not in "biufc":
        raise TypeError(f"{argument} must be numeric arrays, received dtype {value.dtype}")
    if ops.is_array(value):
        name = ops.dtype(value)
        if dtypes.is_complex(name):  # one rule on every backend (layers and losses are real-valued)
            raise TypeError(f"{argument} must be real numeric arrays, received dtype {name} (complex data is not "
                            "supported by fit/evaluate/predict)")
        target = _target_dtype(name)
        return _on_staging_device(value if target is None else ops.cast(value, target))
    array = to_numpy_host(value)
    if array.dtype == object:
        raise TypeError(f"{argument} must be numeric arrays, received an array of Python objects (shape {array.shape})")
    name = dtypes.standardize_dtype(array.dtype) if array.dtype.kind in "biuf" else None
    if name is None:
        detail = " (complex data is not supported by fit/evaluate/predict)" if array.dtype.kind == "c" else ""
        raise TypeError(f"{argument} must be real numeric arrays, received dtype {array.dtype}{detail}")
    target = _target_dtype(name)
    return ops.convert_to_tensor(array, dtype=target or name, device=_staging[0])


def _on_staging_device(array: Any) -> Any:
    """A native array on the device data is converted on (a torch DataLoader's CPU tensors go to the
    model's CUDA device, or stay on the host while :func:`converted_on` stages them there)."""
    device = _staging[0] if _staging[0] is not None else ops.get_device()
    return array if ops.get_device(array) == device else ops.to_device(array, device)


def num_samples(value: Any) -> int:
    """The leading (batch) dimension of one array."""
    if getattr(type(value), "__ember_tensor__", False):
        value = value._native
    if ops.is_array(value) or hasattr(value, "shape"):
        shape = tuple(value.shape) if not ops.is_array(value) else ops.shape(value)
    else:
        shape = np.shape(value)
    if len(shape) == 0:
        raise ValueError("data arrays need a batch dimension, received a scalar (shape ())")
    return int(shape[0])
