"""Array creation ops of the torch backend (re-exported by :mod:`.core`)."""

from __future__ import annotations

import builtins as _b
from typing import Any

import numpy as np
import torch

from ember import dtypes as _dt
from ember.backends.torch._base import (
    COMPLEX,
    FLOATING,
    INTEGER,
    Tensor,
    check_int_scalar,
    floatx,
    native,
    resolve_device,
    scalar_kind,
    torch_dtype,
)

# ---------------------------------------------------------------------------- creation


def _shape_arg(shape, argument: str = "shape") -> tuple:
    dims: tuple
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        dims = (int(shape),)
    else:
        if isinstance(shape, Tensor):
            shape = shape.tolist()
        try:  # __index__: a str such as '3' or a float is not a dimension (int() would take them)
            # A SymInt (a size Model.export traces as dynamic) stays symbolic.
            dims = tuple(s if isinstance(s, torch.SymInt) else int(s.__index__()) for s in shape)
        except (TypeError, AttributeError):
            raise TypeError(f"{argument}: expected an int or a sequence of ints, received {shape!r}") from None
    if _b.any(d < 0 for d in dims):
        raise ValueError(f"{argument}: dimensions must be non-negative, received {dims}")
    return dims


def zeros(shape, dtype=None, device=None):
    return torch.zeros(_shape_arg(shape), dtype=torch_dtype(dtype), device=resolve_device(device))


def ones(shape, dtype=None, device=None):
    return torch.ones(_shape_arg(shape), dtype=torch_dtype(dtype), device=resolve_device(device))


def full(shape, fill_value, dtype=None, device=None):
    dims = _shape_arg(shape)
    place = resolve_device(device)
    if scalar_kind(fill_value) is not None:
        target = torch_dtype(_dt.result_type(fill_value) if dtype is None else dtype)
        if type(fill_value) is int:
            check_int_scalar(fill_value, target)
        return torch.full(dims, fill_value, dtype=target, device=place)
    value = native(fill_value, "fill_value", place)
    target = value.dtype if dtype is None else torch_dtype(dtype)
    return torch.broadcast_to(value.to(device=place, dtype=target), dims).contiguous()


def zeros_like(x, dtype=None):
    x = native(x)
    return torch.zeros_like(x, dtype=x.dtype if dtype is None else torch_dtype(dtype))


def ones_like(x, dtype=None):
    x = native(x)
    return torch.ones_like(x, dtype=x.dtype if dtype is None else torch_dtype(dtype))


def full_like(x, fill_value, dtype=None):
    x = native(x)
    target = x.dtype if dtype is None else torch_dtype(dtype)
    if scalar_kind(fill_value) is not None:
        if type(fill_value) is int:
            check_int_scalar(fill_value, target)
        return torch.full_like(x, fill_value, dtype=target)
    value = native(fill_value, "fill_value", x.device).to(device=x.device, dtype=target)
    return torch.broadcast_to(value, x.shape).contiguous()


def eye(N, M=None, k=0, dtype=None, device=None):
    rows = int(N)
    cols = rows if M is None else int(M)
    place = resolve_device(device)
    target = torch_dtype(dtype)
    if k == 0:
        return torch.eye(rows, cols, dtype=target, device=place)
    r = torch.arange(rows, device=place)[:, None]
    c = torch.arange(cols, device=place)[None, :]
    return (c - r == int(k)).to(target)


def _number(value: Any, argument: str):
    if isinstance(value, Tensor) or isinstance(value, np.ndarray) or isinstance(value, np.generic):
        value = value.item()
    elif getattr(type(value), "__ember_tensor__", False):
        value = native(value).item()
    if scalar_kind(value) is None:
        raise TypeError(f"{argument}: expected a number, received {value!r}")
    return value


_ARANGE_DIRECT = (torch.int32, torch.int64, torch.float32, torch.float64)


def arange(start, stop=None, step=1, dtype=None, device=None):
    start = _number(start, "start")
    if stop is None:
        start, stop = 0, start
    stop = _number(stop, "stop")
    step = _number(step, "step")
    if step == 0:
        raise ValueError("arange: step must be non-zero")
    place = resolve_device(device)
    if dtype is None:
        integral = _b.all(isinstance(v, int) for v in (start, stop, step))
        target = torch.int32 if integral else floatx()
    else:
        target = torch_dtype(dtype)
    if (stop - start) / step <= 0:  # NumPy gives an empty array; torch raises
        return torch.empty((0,), dtype=target, device=place)
    if target in _ARANGE_DIRECT:
        return torch.arange(start, stop, step, dtype=target, device=place)
    compute = torch.float32 if target in FLOATING or target in COMPLEX else torch.int64
    return torch.arange(start, stop, step, dtype=compute, device=place).to(target)


def linspace(start, stop, num=50, endpoint=True, dtype=None, device=None):
    num = int(num)
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, received {num}")
    place = resolve_device(device)
    target = torch_dtype(dtype)
    compute = torch.float32 if place.type == "mps" else torch.float64
    steps = num + (0 if endpoint else 1)
    if scalar_kind(start) is not None and scalar_kind(stop) is not None:
        out = torch.linspace(start, stop, steps, dtype=compute, device=place)
        if not endpoint:
            out = out[:num]
    else:
        lo = native(start, "start", place).to(compute)
        hi = native(stop, "stop", place).to(compute)
        lo, hi = torch.broadcast_tensors(lo, hi)
        div = (steps - 1) if steps > 1 else 1
        t = torch.arange(num, dtype=compute, device=place) / div
        t = t.reshape((num,) + (1,) * lo.ndim)
        out = lo + (hi - lo) * t
        if endpoint and num > 1:
            out[-1] = hi
    if target in INTEGER:
        out = torch.floor(out)
    return out.to(target)
