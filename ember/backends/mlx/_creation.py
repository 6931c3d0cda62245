"""Array creation ops of the MLX backend (re-exported by :mod:`.core`)."""

from __future__ import annotations

import builtins
import math

import mlx.core as mx
import numpy as np

from ember.backends.mlx._base import (
    DEVICE,
    FLOATS,
    INTEGERS,
    check_device,
    check_int_scalar,
    convert,
    floatx,
    mx_dtype,
    stream_for,
    to_mx,
)

# ---------------------------------------------------------------------------- creation


def _shape_arg(shape, op):
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    try:  # __index__: a str such as '3' or a float is not a dimension (int() would take them)
        shape = tuple(int(d.__index__()) for d in shape)
    except (TypeError, AttributeError):
        raise TypeError(f"{op}: shape must be an int or a sequence of ints, received {shape!r}") from None
    if builtins.any(d < 0 for d in shape):
        raise ValueError(f"{op}: shape must not have negative entries, received {shape}")
    return shape


def zeros(shape, dtype=None, device=None):
    name = check_device(device)
    return mx.zeros(_shape_arg(shape, "zeros"), dtype=mx_dtype(dtype, "zeros", name), stream=stream_for(name))


def ones(shape, dtype=None, device=None):
    name = check_device(device)
    return mx.ones(_shape_arg(shape, "ones"), dtype=mx_dtype(dtype, "ones", name), stream=stream_for(name))


def full(shape, fill_value, dtype=None, device=None):
    name = check_device(device)
    shape = _shape_arg(shape, "full")
    if dtype is None:
        value = to_mx(fill_value, "full: fill_value")
    else:
        target = mx_dtype(dtype, "full", name)
        check_int_scalar(fill_value, target)
        value = convert(fill_value, "full: fill_value", target)
    return mx.full(shape, value, dtype=value.dtype, stream=stream_for(name))


def zeros_like(x, dtype=None):
    x = to_mx(x)
    return mx.zeros(x.shape, dtype=x.dtype if dtype is None else mx_dtype(dtype, "zeros_like"))


def ones_like(x, dtype=None):
    x = to_mx(x)
    return mx.ones(x.shape, dtype=x.dtype if dtype is None else mx_dtype(dtype, "ones_like"))


def full_like(x, fill_value, dtype=None):
    x = to_mx(x)
    target = x.dtype if dtype is None else mx_dtype(dtype, "full_like")
    check_int_scalar(fill_value, target)
    return mx.full(x.shape, convert(fill_value, "full_like: fill_value", target), dtype=target)


def eye(N, M=None, k=0, dtype=None, device=None):
    name = check_device(device)
    target = mx_dtype(dtype, "eye", name)
    return mx.eye(int(N), None if M is None else int(M), int(k), dtype=target, stream=stream_for(name))


def _is_int_like(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _work_float(target):
    """Where float creation ops compute: float64 on the CPU (NumPy's precision), else float32."""
    return mx.float32 if DEVICE.gpu else mx.float64


def arange(start, stop=None, step=1, dtype=None, device=None):
    name = check_device(device)
    stream = stream_for(name)
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    all_ints = builtins.all(_is_int_like(v) for v in (start, stop, step))
    if dtype is None:
        target = mx.int32 if all_ints else floatx()
    else:
        target = mx_dtype(dtype, "arange", name)
    if all_ints and (target in INTEGERS or target in FLOATS):
        out = mx.arange(int(start), int(stop), int(step), dtype=mx.int64 if target is mx.int64 else mx.int32,
                        stream=stream)
        return out if out.dtype == target else out.astype(target)
    # NumPy's rule: start + i * step for i < ceil((stop - start) / step).
    length = builtins.max(0, math.ceil((float(stop) - float(start)) / float(step)))
    work = _work_float(target)
    out = float(start) + mx.arange(length, dtype=work, stream=stream) * float(step)
    return out if out.dtype == target else out.astype(target)


def linspace(start, stop, num=50, endpoint=True, dtype=None, device=None):
    name = check_device(device)
    num = int(num)
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, received {num}")
    target = mx_dtype(dtype, "linspace", name)
    work = _work_float(target)
    div = (num - 1) if endpoint else num
    start_f, stop_f = float(start), float(stop)
    index = mx.arange(num, dtype=work, stream=stream_for(name))
    if div > 0:
        out = start_f + index * ((stop_f - start_f) / div)
        if endpoint and num > 1:
            out = mx.where(index == num - 1, mx.array(stop_f, dtype=work), out)
    else:
        out = start_f + index * 0.0
    if target in INTEGERS:
        out = mx.floor(out)
    return out if out.dtype == target else out.astype(target)
