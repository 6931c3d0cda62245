"""Core ops of the torch backend: conversion, dtypes, devices.

The core namespace is split the same way in every backend: conversion, dtypes and devices
here; promotion and converters in ``_base``; then ``_creation``, ``_elementwise``, ``_reduce``,
``_shape``, ``_index`` (indexing, scatter/gather, sorting, segments) and ``_products``, all
re-exported here so this module is the whole core namespace.

Hot-path pattern: every op first tests ``type(x) is torch.Tensor`` (and, for two
operands, identical dtypes) and only otherwise calls the slow converter, so an op
on native tensors costs one Python call plus a few attribute checks over torch.
"""

from __future__ import annotations

import torch

from ember.backends.torch import _base
from ember.backends.torch._base import (
    DEVICE,
    Tensor,
    dtype_name,
    native,
    torch_dtype,
)
from ember.backends.torch._creation import (  # noqa: F401  (re-exported ops)
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
from ember.backends.torch._elementwise import (  # noqa: F401  (re-exported ops)
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
from ember.backends.torch._index import (  # noqa: F401  (re-exported ops)
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
from ember.backends.torch._products import dot, einsum, matmul, outer, tensordot  # noqa: F401
from ember.backends.torch._reduce import (  # noqa: F401  (re-exported ops)
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
from ember.backends.torch._shape import (  # noqa: F401  (re-exported ops)
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

__all__ = ["DEVICE"]

# ------------------------------------------------------------ conversion, dtype, device


def convert_to_tensor(x, dtype=None, device=None):
    if type(x) is Tensor and dtype is None and device is None:
        return x
    return _base.convert(x, dtype, device)


def asarray(x, dtype=None, device=None):
    if type(x) is Tensor and dtype is None and device is None:
        return x
    return _base.convert(x, dtype, device)


def to_numpy(x):
    return _base.to_numpy(x)


def is_array(x):
    return isinstance(x, Tensor)


def cast(x, dtype):
    target = torch_dtype(dtype)
    if type(x) is not Tensor:
        x = native(x)
    return x if x.dtype is target else x.to(target)


def dtype(x):
    if type(x) is not Tensor:
        x = native(x)
    return dtype_name(x.dtype)


def shape(x):
    if type(x) is not Tensor:
        x = native(x)
    return tuple(x.shape)


def ndim(x):
    if type(x) is not Tensor:
        x = native(x)
    return x.ndim


def size(x):
    if type(x) is not Tensor:
        x = native(x)
    return x.numel()


def get_device(x=None):
    if x is None:
        return DEVICE.name
    if type(x) is not Tensor:
        x = native(x)
    return _base.device_name(x.device)


def to_device(x, device):
    target = torch.device(_base.normalize_device(device))
    x = native(x)
    return x if x.device == target else x.to(target)


def stop_gradient(x):
    if type(x) is not Tensor:
        x = native(x)
    return x.detach()
