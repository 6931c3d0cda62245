"""NumPy backend, ``ember.ops`` core namespace: conversion.

The core namespace is split the same way in every backend: conversion, dtypes and devices
here; promotion and converters in ``_base``; then ``_creation``, ``_elementwise``, ``_reduce``,
``_shape``, ``_index`` (indexing, scatter/gather, sorting, segments) and ``_products``. This
module serves their ops by name (its ``__getattr__``, for the op protocol's core names), so it is
the whole core namespace without an export list written here.

NumPy returns scalars (``numpy.float32``) rather than 0-d arrays from ufuncs and
reductions on 0-d inputs; every op returns an ``ndarray`` (see ``_base.out``).
"""

from __future__ import annotations

import numpy as np

from ember.backends._common import core_ops_by_name
from ember.backends.numpy import _creation, _elementwise, _index, _products, _reduce, _shape
from ember.backends.numpy._base import (  # noqa: F401  (check_device is a device hook)
    ND,
    check_device,
    dtype_arg,
    name_of,
    to_native,
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


# The protocol's other core ops live in these modules, by kind; this module serves them by name, so
# the op tables (``build_op_tables``) and ``core.<op>`` find them without a list written here.
OP_MODULES = (_creation, _elementwise, _index, _products, _reduce, _shape)
__getattr__ = core_ops_by_name(__name__, OP_MODULES)

