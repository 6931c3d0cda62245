"""Core ops of the MLX backend: conversion, dtypes, devices and array creation.

Element-wise math lives in :mod:`._elementwise`, reductions in :mod:`._reduce`, shape
and indexing ops in :mod:`._shape`, products in :mod:`.linalg`; they are re-exported
here because ``ember.ops`` reads the core namespace from this module.

MLX is lazy: nothing here calls ``mx.eval`` except where a Python value is needed
(``nonzero``, boolean masks, ``segment_*`` without ``num_segments``).
"""

from __future__ import annotations

import builtins
import math

import mlx.core as mx
import numpy as np

from ember.backends.mlx import _base
from ember.backends.mlx._base import (  # noqa: F401  (gpu_available: a device hook of the package)
    DEVICE,
    FLOATS,
    FROM_MX,
    INTEGERS,
    A,
    check_device,
    check_int_scalar,
    convert,
    floatx,
    gpu_available,
    mx_dtype,
    stream_for,
    to_mx,
)
from ember.backends.mlx._shape import (  # noqa: F401  (re-exported ops)
    argsort,
    broadcast_to,
    concatenate,
    expand_dims,
    flip,
    gather,
    getitem,
    moveaxis,
    nonzero,
    one_hot,
    pad,
    ravel,
    repeat,
    reshape,
    scatter,
    scatter_add,
    scatter_update,
    segment_max,
    segment_sum,
    slice,
    slice_update,
    sort,
    split,
    squeeze,
    stack,
    swapaxes,
    take,
    take_along_axis,
    tile,
    top_k,
    transpose,
)
from ember.backends.mlx._elementwise import (  # noqa: F401  (re-exported ops)
    abs,
    add,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    ceil,
    clip,
    conj,
    cos,
    cosh,
    divide,
    equal,
    erf,
    erfinv,
    exp,
    expm1,
    floor,
    floor_divide,
    greater,
    greater_equal,
    imag,
    isclose,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    power,
    real,
    reciprocal,
    round,
    rsqrt,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    where,
)
from ember.backends.mlx._reduce import (  # noqa: F401  (re-exported ops)
    all,
    any,
    argmax,
    argmin,
    count_nonzero,
    cumprod,
    cumsum,
    logsumexp,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)
from ember.backends.mlx.linalg import dot, einsum, matmul, outer, tensordot  # noqa: F401

__all__ = ["DEVICE", "gpu_available"]

# --------------------------------------------------------------- conversion, dtype, device


def convert_to_tensor(x, dtype=None, device=None):
    name = check_device(device)
    if dtype is None:
        if type(x) is A:
            return x
        return convert(x, "convert_to_tensor: x")
    target = mx_dtype(dtype, "convert_to_tensor", name)
    if type(x) is A and x.dtype == target:
        return x
    return convert(x, "convert_to_tensor: x", target)


def asarray(x, dtype=None, device=None):
    return convert_to_tensor(x, dtype=dtype, device=device)


def to_numpy(x):
    return _base.to_numpy(x)


def is_array(x):
    return isinstance(x, A)


def cast(x, dtype):
    x = to_mx(x)
    target = mx_dtype(dtype, "cast")
    return x if x.dtype == target else x.astype(target)


def dtype(x):
    return FROM_MX[to_mx(x).dtype]


def shape(x):
    if type(x) is A:
        return tuple(x.shape)
    return tuple(to_mx(x).shape)


def ndim(x):
    return to_mx(x).ndim


def size(x):
    return to_mx(x).size


def get_device(x=None):
    if x is not None:
        to_mx(x)
    return DEVICE.name


def to_device(x, device):
    name = DEVICE.normalize(device, "to_device: device")
    x = to_mx(x)
    if name == "gpu" and x.dtype == mx.float64:
        raise TypeError(f"to_device: {_base.F64_GPU_ERROR}")
    return x  # MLX arrays live in unified memory: nothing to move.


def stop_gradient(x):
    return mx.stop_gradient(to_mx(x))


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
