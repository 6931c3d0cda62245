"""NumPy backend: array creation ops (re-exported by ``core``).

``dtype=None`` gives ``floatx()``, except where the data decides: ``full`` takes
the dtype of ``fill_value`` and ``arange`` gives ``int32`` for integer arguments.
Floating ranges are computed in float64 and rounded once to the target dtype.
"""

from __future__ import annotations

import builtins

import numpy as np

from ember.backends.numpy._base import (
    F64,
    I32,
    ND,
    check_device,
    check_int_scalar,
    dtype_arg,
    floatx,
    shape_arg,
    to_native,
)

_nd = ND



def _creation_dtype(dtype, default):
    return default if dtype is None else dtype_arg(dtype)


def zeros(shape, dtype=None, device=None):
    if device is not None:
        check_device(device)
    return np.zeros(shape_arg(shape), _creation_dtype(dtype, floatx()))


def ones(shape, dtype=None, device=None):
    if device is not None:
        check_device(device)
    return np.ones(shape_arg(shape), _creation_dtype(dtype, floatx()))


def full(shape, fill_value, dtype=None, device=None):
    if device is not None:
        check_device(device)
    value = to_native(fill_value, "fill_value")
    target = value.dtype if dtype is None else dtype_arg(dtype)
    check_int_scalar(fill_value, target)
    return np.full(shape_arg(shape), value, dtype=target)


def zeros_like(x, dtype=None):
    x = to_native(x)
    return np.zeros(x.shape, x.dtype if dtype is None else dtype_arg(dtype))


def ones_like(x, dtype=None):
    x = to_native(x)
    return np.ones(x.shape, x.dtype if dtype is None else dtype_arg(dtype))


def full_like(x, fill_value, dtype=None):
    x = to_native(x)
    target = x.dtype if dtype is None else dtype_arg(dtype)
    check_int_scalar(fill_value, target)
    return np.full(x.shape, to_native(fill_value, "fill_value"), target)


def eye(N, M=None, k=0, dtype=None, device=None):
    if device is not None:
        check_device(device)
    return np.eye(int(N), None if M is None else int(M), k=int(k), dtype=_creation_dtype(dtype, floatx()))


def _python_number(value, argument):
    if isinstance(value, _nd) or getattr(type(value), "__ember_tensor__", False):
        value = to_native(value).item()
    elif isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (int, float)):
        raise TypeError(f"{argument}: expected a real number, received {value!r}")
    return value


def arange(start, stop=None, step=1, dtype=None, device=None):
    if device is not None:
        check_device(device)
    start = _python_number(start, "start")
    stop = None if stop is None else _python_number(stop, "stop")
    step = _python_number(step, "step")
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    is_float = builtins.any(isinstance(v, float) for v in (start, stop, step))
    if dtype is None:
        target = floatx() if is_float else I32
    else:
        target = dtype_arg(dtype)
    if target.kind in "fcV":
        # Values computed in float64 and rounded once, whatever the target precision.
        return np.arange(start, stop, step, dtype=F64).astype(target)
    if target.kind == "b":  # NumPy refuses bool ranges longer than 2; cast the numbers, as torch/MLX
        return np.arange(start, stop, step).astype(target)
    return np.arange(start, stop, step, dtype=target)


def linspace(start, stop, num=50, endpoint=True, dtype=None, device=None):
    if device is not None:
        check_device(device)
    target = floatx() if dtype is None else dtype_arg(dtype)
    start = np.asarray(to_native(start, "start"), dtype=F64)
    stop = np.asarray(to_native(stop, "stop"), dtype=F64)
    if int(num) < 0:
        raise ValueError(f"linspace: num must be >= 0, received {num}")
    if target.kind in "fcV":
        return np.linspace(start, stop, int(num), endpoint=endpoint, dtype=F64).astype(target)
    return np.linspace(start, stop, int(num), endpoint=endpoint, dtype=target)
