"""Core ops of the torch backend: conversion, dtypes, devices.

The core namespace is split the same way in every backend: conversion, dtypes and devices
here; promotion and converters in ``_base``; then ``_creation``, ``_elementwise``, ``_reduce``,
``_shape``, ``_index`` (indexing, scatter/gather, sorting, segments) and ``_products``. This
module serves their ops by name (its ``__getattr__``, for the op protocol's core names), so it is
the whole core namespace without an export list written here.

Hot-path pattern: every op first tests ``type(x) is torch.Tensor`` (and, for two
operands, identical dtypes) and only otherwise calls the slow converter, so an op
on native tensors costs one Python call plus a few attribute checks over torch.
"""

from __future__ import annotations

import torch

from ember.backends._common import core_ops_by_name
from ember.backends.torch import _base, _creation, _elementwise, _index, _products, _reduce, _shape
from ember.backends.torch._base import (
    DEVICE,
    Tensor,
    dtype_name,
    native,
    torch_dtype,
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


# The protocol's other core ops live in these modules, by kind; this module serves them by name, so
# the op tables (``build_op_tables``) and ``core.<op>`` find them without a list written here.
OP_MODULES = (_creation, _elementwise, _index, _products, _reduce, _shape)
__getattr__ = core_ops_by_name(__name__, OP_MODULES)

