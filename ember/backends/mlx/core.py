"""Core ops of the MLX backend: conversion, dtypes, devices.

The core namespace is split the same way in every backend: conversion, dtypes and devices
here; promotion and converters in ``_base``; then ``_creation``, ``_elementwise``, ``_reduce``,
``_shape``, ``_index`` (indexing, scatter/gather, sorting, segments) and ``_products``, all
re-exported here so this module is the whole core namespace.

MLX is lazy: nothing here calls ``mx.eval`` except where a Python value is needed
(``nonzero``, boolean masks, ``segment_*`` without ``num_segments``).
"""

from __future__ import annotations

import mlx.core as mx

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
from ember.backends.mlx._creation import (  # noqa: F401  (re-exported ops)
    arange,
    eye,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
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
from ember.backends.mlx._index import (  # noqa: F401  (re-exported ops)
    argsort,
    gather,
    getitem,
    nonzero,
    one_hot,
    scatter,
    scatter_add,
    scatter_update,
    segment_max,
    segment_sum,
    slice,
    slice_update,
    sort,
    take,
    take_along_axis,
    top_k,
)
from ember.backends.mlx._products import dot, einsum, matmul, outer, tensordot  # noqa: F401
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
from ember.backends.mlx._shape import (  # noqa: F401  (re-exported ops)
    broadcast_to,
    concatenate,
    expand_dims,
    flip,
    moveaxis,
    pad,
    ravel,
    repeat,
    reshape,
    split,
    squeeze,
    stack,
    swapaxes,
    tile,
    transpose,
)

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
