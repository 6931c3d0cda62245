"""NumPy backend, ``ember.ops`` core namespace: conversion.

The core namespace is split the same way in every backend: conversion, dtypes and devices
here; promotion and converters in ``_base``; then ``_creation``, ``_elementwise``, ``_reduce``,
``_shape``, ``_index`` (indexing, scatter/gather, sorting, segments) and ``_products``, all
re-exported here so this module is the whole core namespace.

NumPy returns scalars (``numpy.float32``) rather than 0-d arrays from ufuncs and
reductions on 0-d inputs; every op returns an ``ndarray`` (see ``_base.out``).
"""

from __future__ import annotations

import numpy as np

from ember.backends.numpy._base import (  # noqa: F401  (check_device is a device hook)
    BF16,
    BOOL,
    F32,
    F64,
    I32,
    ND,
    binary,
    check_device,
    check_int_scalar,
    dtype_arg,
    float_operands,
    floatx,
    name_of,
    operands,
    out,
    to_float,
    to_native,
)
from ember.backends.numpy._creation import (  # noqa: F401  (re-exported ops)
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
from ember.backends.numpy._elementwise import (  # noqa: F401  (re-exported ops)
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
from ember.backends.numpy._index import (  # noqa: F401  (re-exported ops)
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
from ember.backends.numpy._products import dot, einsum, matmul, outer, tensordot  # noqa: F401
from ember.backends.numpy._reduce import (  # noqa: F401
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
from ember.backends.numpy._shape import (  # noqa: F401
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

_nd = ND

# --------------------------------------------------------------------------- conversion


def convert_to_tensor(x, dtype=None, device=None):
    if device is not None:
        check_device(device)
    if dtype is None:
        return to_native(x)
    target = dtype_arg(dtype)
    if type(x) is list or type(x) is tuple:
        # Convert straight to the target so int64-range values are not squeezed through int32.
        array = np.asarray(x)
        return array if array.dtype == target else array.astype(target)
    array = to_native(x)
    return array if array.dtype == target else array.astype(target)


def asarray(x, dtype=None, device=None):
    return convert_to_tensor(x, dtype=dtype, device=device)


def to_numpy(x):
    return np.asarray(to_native(x))


def is_array(x):
    return isinstance(x, _nd)


def cast(x, dtype):
    x = to_native(x)
    target = dtype_arg(dtype)
    return x if x.dtype == target else x.astype(target)


def dtype(x):
    if type(x) is _nd:
        return name_of(x.dtype)
    return name_of(to_native(x).dtype)


def shape(x):
    if type(x) is _nd:
        return x.shape
    return to_native(x).shape


def ndim(x):
    if type(x) is _nd:
        return x.ndim
    return to_native(x).ndim


def size(x):
    if type(x) is _nd:
        return x.size
    return int(to_native(x).size)


def get_device(x=None):
    if x is not None:
        to_native(x)
    return "cpu"


def to_device(x, device):
    check_device(device)
    return to_native(x)


def stop_gradient(x):
    # A plain ndarray view: it carries no autodiff subclass, so nothing flows back.
    x = to_native(x)
    return x if type(x) is _nd else x.view(_nd)
