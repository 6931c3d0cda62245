"""Core ops of the MLX backend: conversion, dtypes, devices.

The core namespace is split the same way in every backend: conversion, dtypes and devices
here; promotion and converters in ``_base``; then ``_creation``, ``_elementwise``, ``_reduce``,
``_shape``, ``_index`` (indexing, scatter/gather, sorting, segments) and ``_products``. This
module serves their ops by name (its ``__getattr__``, for the op protocol's core names), so it is
the whole core namespace without an export list written here.

MLX is lazy: nothing here calls ``mx.eval`` except where a Python value is needed
(``nonzero``, boolean masks, ``segment_*`` without ``num_segments``).
"""

from __future__ import annotations

import mlx.core as mx

from ember.backends._common import core_ops_by_name
from ember.backends.mlx import _base, _creation, _elementwise, _index, _products, _reduce, _shape
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


# The protocol's other core ops live in these modules, by kind; this module serves them by name, so
# the op tables (``build_op_tables``) and ``core.<op>`` find them without a list written here.
OP_MODULES = (_creation, _elementwise, _index, _products, _reduce, _shape)
__getattr__ = core_ops_by_name(__name__, OP_MODULES)

