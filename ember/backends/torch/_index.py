"""Indexing, scatter/gather, sorting and segment ops of the torch backend (re-exported by :mod:`.core`).

Where torch's semantics differ from NumPy's the difference is bridged here:
negative-step slices (torch has none) become a ``flip`` plus a positive slice, and
negative indices of ``take``/``take_along_axis`` wrap as in NumPy.

Out-of-range integer indices raise ``IndexError`` (checked here on the CPU; on
CUDA/MPS the check would force a device sync per call, so torch's own device-side
check applies there).
"""

from __future__ import annotations

import builtins as _b
from typing import Any

import numpy as np
import torch

from ember.backends._common import normalize_axis, one_hot_depth, tensor_native
from ember.backends.torch import _base
from ember.backends.torch._base import (
    FLOATING,
    INTEGER,
    Tensor,
    along_axis,
    dtype_name,
    index_tensor,
    native,
    torch_dtype,
)
from ember.backends.torch._shape import _int_tuple

# ------------------------------------------------------------------------- indexing


def _simple(k) -> bool:
    t = type(k)
    if t is _b.slice:
        return k.step is None or (type(k.step) is int and k.step > 0)
    return t is int or k is None or k is Ellipsis


def _index_int(v):
    if v is None or type(v) is int:
        return v
    if isinstance(v, Tensor) or getattr(type(v), "__ember_tensor__", False) or isinstance(v, np.ndarray):
        v = native(v)
        if v.numel() != 1 or v.dtype not in INTEGER:
            raise IndexError(f"slice bounds must be integers or None, received {v!r}")
        return int(v.item())
    try:
        return v.__index__()
    except AttributeError:
        raise IndexError(f"slice bounds must be integers or None, received {v!r}") from None


def getitem(x, key):
    if type(x) is not Tensor:
        x = native(x)
    if _simple(key) or (type(key) is tuple and _b.all(_simple(k) for k in key)):
        return x[key]
    return _getitem_slow(x, key)


def _getitem_slow(x: Tensor, key):
    if not isinstance(key, tuple):
        key = (key,)
    items: list[Any] = []  # None, Ellipsis, slices, bools, ints and index tensors
    host_indices: dict[int, Tensor] = {}  # position in items: the index tensor's host copy (bounds checked)
    consumed = 0
    for k in key:
        if k is None or k is Ellipsis:
            items.append(k)
        elif isinstance(k, _b.slice):
            step = _index_int(k.step)
            if step == 0:
                raise ValueError("getitem: slice step cannot be zero")
            items.append(_b.slice(_index_int(k.start), _index_int(k.stop), step))
            consumed += 1
        elif isinstance(k, (bool, np.bool_)):
            items.append(bool(k))
        elif isinstance(k, (int, np.integer)):
            items.append(int(k))
            consumed += 1
        else:
            if getattr(type(k), "__ember_tensor__", False):
                k = tensor_native(k, "torch")
            t = native(k, "key", None if _on_accelerator(k) else _HOST)
            if t.dtype is torch.bool:
                consumed += t.ndim
            elif t.dtype in INTEGER:
                t = t.long()
                consumed += 1
            else:
                raise IndexError(
                    f"getitem: arrays used as indices must be integer or bool, received dtype {dtype_name(t.dtype)}"
                )
            if t.dtype is torch.int64 and t.device.type == "cpu" and t.numel():
                host_indices[len(items)] = t  # read on the host before it is sent: no device sync
            if t.device != x.device:
                t = t.to(x.device)
            items.append(t)
    if sum_ellipsis(items) > 1:
        raise IndexError("getitem: an index can only have a single ellipsis ('...')")
    if consumed > x.ndim:
        raise IndexError(f"getitem: too many indices for an array of rank {x.ndim}: {consumed} were indexed")
    # Negative-step slices: flip those axes and index the flipped array with a positive
    # step. Original index i is flipped index n-1-i, so slice(start, stop, -s) becomes
    # slice(n-1-start, ..., s) over the same elements, in the same order.
    flips: list[int] = []
    dim = 0
    for position, item in enumerate(items):
        if item is Ellipsis:
            dim += x.ndim - consumed
        elif item is None or type(item) is bool:
            continue
        elif isinstance(item, _b.slice):
            if item.step is not None and item.step < 0:
                n = x.shape[dim]
                start, stop, step = item.indices(n)
                count = len(range(start, stop, step))
                first = n - 1 - start
                items[position] = _b.slice(first, first + count * (-step), -step) if count else _b.slice(0, 0)
                flips.append(dim)
            dim += 1
        elif isinstance(item, Tensor) and item.dtype is torch.bool:
            dim += item.ndim
        else:
            if type(item) is int and not -x.shape[dim] <= item < x.shape[dim]:
                raise IndexError(f"getitem: index {item} is out of bounds for axis {dim} with size {x.shape[dim]}")
            if position in host_indices:
                _check_bounds(host_indices[position], x.shape[dim], "getitem", dim)
            dim += 1
    if flips:
        x = torch.flip(x, flips)
    return x[tuple(items)]


def sum_ellipsis(items) -> int:
    return len([i for i in items if i is Ellipsis])


_HOST = torch.device("cpu")


def _on_accelerator(indices: Any) -> bool:
    """Whether ``indices`` are a tensor on an accelerator (reading them would wait for its queue)."""
    if getattr(type(indices), "__ember_tensor__", False):
        indices = tensor_native(indices, "torch")
    return isinstance(indices, Tensor) and not _base.host_reads_free(indices.device)


def _checked_indices(indices: Any, device: torch.device, bounds: Any) -> Tensor:
    """Integer ``indices`` as an int64 tensor on ``device``, bounds checked where that needs no device sync.

    Host data (NumPy arrays, lists, CPU tensors) is converted and checked on the host, then sent;
    indices already on an accelerator are not read there (that would wait for every queued kernel
    in each step): an out-of-range one trips torch's device-side assert instead.
    ``bounds(host_indices)`` runs the checks.
    """
    if _on_accelerator(indices):
        return index_tensor(indices, device)
    host = index_tensor(indices, _HOST)
    bounds(host)
    return host if host.device == device else host.to(device)


def _check_bounds(idx: Tensor, n: int, name: str, axis: int) -> None:
    # Model.export and torch.compile trace values they cannot read: the compiled kernels check
    # indirect indices themselves (and fit checks an Embedding's inputs before its steps).
    if torch.compiler.is_exporting() or torch.compiler.is_compiling():
        return
    if idx.numel() == 0:
        return
    low, high = torch.aminmax(idx)
    lo, hi = int(low), int(high)
    if lo < -n or hi >= n:
        bad = hi if hi >= n else lo
        raise IndexError(f"{name}: index {bad} is out of bounds for axis {axis} with size {n}")


def _wrap(idx: Tensor, n: int) -> Tensor:
    return torch.where(idx < 0, idx + n, idx)


def take(x, indices, axis=None):
    x, axis_ = along_axis(x, axis)
    n = x.shape[axis_]
    idx = _checked_indices(indices, x.device, lambda host: _check_bounds(host, n, "take", axis_))
    flat = _wrap(idx, n).reshape(-1)
    out = torch.index_select(x, axis_, flat)
    return out.reshape(x.shape[:axis_] + idx.shape + x.shape[axis_ + 1 :])


def take_along_axis(x, indices, axis):
    x, axis_ = along_axis(x, axis)
    n = x.shape[axis_]
    idx = _checked_indices(indices, x.device, lambda host: _check_bounds(host, n, "take_along_axis", axis_))
    if idx.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices of rank {idx.ndim} do not match an array of rank {x.ndim}")
    return torch.take_along_dim(x, _wrap(idx, n), dim=axis_)


def _nd_index(indices, x: Tensor, name: str) -> tuple[Tensor, ...]:
    def bounds(host: Tensor) -> None:
        if host.ndim == 0 or host.shape[-1] > x.ndim:
            raise ValueError(f"{name}: indices of shape {tuple(host.shape)} cannot index an array of rank {x.ndim}")
        for axis_, part in enumerate(host.unbind(-1)):
            _check_bounds(part, x.shape[axis_], name, axis_)

    idx = _checked_indices(indices, x.device, bounds)
    if idx.ndim == 0 or idx.shape[-1] > x.ndim:
        raise ValueError(f"{name}: indices of shape {tuple(idx.shape)} cannot index an array of rank {x.ndim}")
    return tuple(idx.unbind(-1))


def gather(x, indices):
    if type(x) is not Tensor:
        x = native(x)
    return x[_nd_index(indices, x, "gather")]


def scatter(indices, updates, shape):
    values = native(updates, "updates")
    dims = _int_tuple(shape, "shape")
    base = torch.zeros(dims, dtype=values.dtype, device=values.device)
    return torch.index_put(base, _nd_index(indices, base, "scatter"), values, accumulate=True)


def scatter_update(x, indices, updates):
    x = native(x)
    values = native(updates, "updates", x.device).to(device=x.device, dtype=x.dtype)
    return torch.index_put(x, _nd_index(indices, x, "scatter_update"), values, accumulate=False)


def scatter_add(x, indices, updates):
    x = native(x)
    values = native(updates, "updates", x.device).to(device=x.device, dtype=x.dtype)
    return torch.index_put(x, _nd_index(indices, x, "scatter_add"), values, accumulate=True)


def _block(x: Tensor, start_indices, sizes, name: str) -> tuple:
    starts = _int_tuple(start_indices, "start_indices")
    if len(starts) != x.ndim or len(sizes) != x.ndim:
        raise ValueError(f"{name}: expected {x.ndim} start indices and sizes, received {starts} and {tuple(sizes)}")
    key = []
    for axis_, (s, length) in enumerate(zip(starts, sizes)):
        n = x.shape[axis_]
        s = s + n if s < 0 else s
        if s < 0 or s + length > n:
            raise ValueError(f"{name}: block of size {length} at {starts[axis_]} does not fit axis {axis_} of size {n}")
        key.append(_b.slice(s, s + length))
    return tuple(key)


def slice(x, start_indices, shape):
    if type(x) is not Tensor:
        x = native(x)
    return x[_block(x, start_indices, _int_tuple(shape, "shape"), "slice")]


def slice_update(x, start_indices, updates):
    x = native(x)
    values = native(updates, "updates", x.device).to(device=x.device, dtype=x.dtype)
    out = x.clone()
    out[_block(x, start_indices, tuple(values.shape), "slice_update")] = values
    return out


def one_hot(indices, depth=None, dtype=None, axis=-1, *, num_classes=None):
    idx = native(indices, "indices")
    depth = one_hot_depth(depth, num_classes)
    if idx.dtype in FLOATING:  # Keras casts float class ids (toward zero); non-finite ids match no class
        finite = torch.isfinite(idx)
        idx = torch.where(finite, torch.nan_to_num(idx).trunc().clamp(-1, depth), -1).to(torch.int64)
    if idx.dtype is torch.bool or idx.is_complex():
        raise TypeError(f"one_hot: indices must be integers or floats, received dtype {dtype_name(idx.dtype)}")
    idx = index_tensor(idx, idx.device)
    # Out-of-range (incl. negative) indices match no column: an all-zero row.
    out = (idx.unsqueeze(-1) == torch.arange(depth, device=idx.device)).to(torch_dtype(dtype))
    axis_ = normalize_axis(axis, out.ndim)
    return out if axis_ == out.ndim - 1 else torch.movedim(out, -1, axis_)


def top_k(x, k, sorted=True):
    if type(x) is not Tensor:
        x = native(x)
    if x.ndim == 0:
        raise ValueError("top_k: input must have at least one axis")
    k = int(k)
    if not 0 <= k <= x.shape[-1]:
        raise ValueError(f"top_k: k={k} is out of range for a last axis of size {x.shape[-1]}")
    # A stable descending sort keeps the lower index first among ties, as TensorFlow does.
    values, indices = torch.sort(x, dim=-1, descending=True, stable=True)
    return values[..., :k], indices[..., :k].to(torch.int32)


def sort(x, axis=-1):
    if type(x) is not Tensor:
        x = native(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    return torch.sort(x, dim=normalize_axis(axis, x.ndim), stable=True).values


def argsort(x, axis=-1):
    if type(x) is not Tensor:
        x = native(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    return torch.sort(x, dim=normalize_axis(axis, x.ndim), stable=True).indices.to(torch.int32)


def nonzero(x):
    if type(x) is not Tensor:
        x = native(x)
    if x.ndim == 0:
        raise ValueError("nonzero: not defined for 0-d arrays; use atleast_1d / reshape(x, (1,)) first")
    return tuple(i.to(torch.int32) for i in torch.nonzero(x, as_tuple=True))


def _segments(data, segment_ids, num_segments, name):
    data = native(data, "data")
    ids = index_tensor(segment_ids, data.device, "segment_ids")
    if data.ndim == 0 or ids.ndim != 1 or ids.shape[0] != data.shape[0]:
        raise ValueError(
            f"{name}: segment_ids must be 1-D with one id per row of data; received shapes "
            f"{tuple(ids.shape)} and {tuple(data.shape)}"
        )
    if num_segments is None:
        num = int(ids.max().item()) + 1 if ids.numel() else 0
    else:
        num = int(num_segments)
    # Ids outside [0, num) go to an extra scratch row that is dropped at the end.
    ids = torch.where((ids >= 0) & (ids < num), ids, num)
    return data, ids, num


def segment_sum(data, segment_ids, num_segments=None):
    data, ids, num = _segments(data, segment_ids, num_segments, "segment_sum")
    work = data.to(torch.int32) if data.dtype is torch.bool else data
    out = torch.zeros((num + 1,) + tuple(data.shape[1:]), dtype=work.dtype, device=data.device)
    return out.index_add(0, ids, work)[:num]


def segment_max(data, segment_ids, num_segments=None):
    data, ids, num = _segments(data, segment_ids, num_segments, "segment_max")
    work = data.to(torch.uint8) if data.dtype is torch.bool else data
    if work.dtype in FLOATING:
        lowest = torch.finfo(work.dtype).min  # the lowest finite value, as TensorFlow
    else:
        lowest = torch.iinfo(work.dtype).min
    out = torch.full((num + 1,) + tuple(data.shape[1:]), lowest, dtype=work.dtype, device=data.device)
    index = ids.reshape((-1,) + (1,) * (data.ndim - 1)).expand_as(work)
    out = out.scatter_reduce(0, index, work, reduce="amax", include_self=True)[:num]
    return out.to(torch.bool) if data.dtype is torch.bool else out
