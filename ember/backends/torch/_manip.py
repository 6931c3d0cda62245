"""Shape manipulation and indexing ops of the torch backend (re-exported by :mod:`.core`).

Where torch's semantics differ from NumPy's the difference is bridged here:
negative-step slices (torch has none) become a ``flip`` plus a positive slice,
``pad``'s reflect/symmetric/edge/wrap modes are an ``index_select`` per padded
axis (torch's ``F.pad`` only handles some ranks and has no "symmetric"), and
negative indices of ``take``/``take_along_axis`` wrap as in NumPy.

Out-of-range integer indices raise ``IndexError`` (checked here on the CPU; on
CUDA/MPS the check would force a device sync per call, so torch's own device-side
check applies there).
"""

from __future__ import annotations

import builtins as _b

import numpy as np
import torch
import torch.nn.functional as F

from ember.backends._common import normalize_axes, normalize_axis, tensor_native
from ember.backends.torch._base import (
    FLOATING,
    INTEGER,
    Tensor,
    dtype_name,
    index_tensor,
    many,
    native,
    scalar_kind,
    torch_dtype,
)

# --------------------------------------------------------------------------- shape


def _int_tuple(value, argument: str) -> tuple[int, ...]:
    if isinstance(value, Tensor):
        value = value.tolist()
    elif isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (int, np.integer)):
        return (int(value),)
    try:
        return tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{argument}: expected an int or a sequence of ints, received {value!r}") from None


def reshape(x, newshape):
    if type(x) is not Tensor:
        x = native(x)
    shape_ = _int_tuple(newshape, "newshape")
    try:
        return torch.reshape(x, shape_)
    except RuntimeError as error:
        raise ValueError(f"reshape: cannot reshape an array of shape {tuple(x.shape)} into shape {shape_} ({error})") from None


def transpose(x, axes=None):
    if type(x) is not Tensor:
        x = native(x)
    if axes is None:
        return x.permute(tuple(range(x.ndim - 1, -1, -1)))
    perm = tuple(normalize_axis(a, x.ndim, "axes") for a in _int_tuple(axes, "axes"))
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes={tuple(axes)} is not a permutation of the {x.ndim} axes")
    return x.permute(perm)


def expand_dims(x, axis):
    if type(x) is not Tensor:
        x = native(x)
    axes = _int_tuple(axis, "axis")
    out_ndim = x.ndim + len(axes)
    positions = normalize_axes(list(axes), out_ndim)
    rest = iter(x.shape)
    new_shape = [1 if d in positions else next(rest) for d in range(out_ndim)]
    return x.reshape(new_shape)


def squeeze(x, axis=None):
    if type(x) is not Tensor:
        x = native(x)
    if axis is None:
        return torch.squeeze(x)
    axes = normalize_axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: cannot squeeze axis {a} of size {x.shape[a]} (shape {tuple(x.shape)})")
    return x.squeeze(axes) if axes else x


def concatenate(xs, axis=0):
    ts = many(xs)
    if axis is None:
        return torch.cat([t.reshape(-1) for t in ts])
    if ts[0].ndim == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    axis_ = normalize_axis(axis, ts[0].ndim)
    try:
        return torch.cat(ts, dim=axis_)
    except RuntimeError as error:
        shapes = [tuple(t.shape) for t in ts]
        raise ValueError(f"concatenate: shapes {shapes} do not match off axis {axis} ({error})") from None


def stack(xs, axis=0):
    ts = many(xs)
    axis_ = normalize_axis(axis, ts[0].ndim + 1)
    if _b.any(t.shape != ts[0].shape for t in ts):
        raise ValueError(f"stack: all arrays must have the same shape, received {[tuple(t.shape) for t in ts]}")
    return torch.stack(ts, dim=axis_)


def split(x, indices_or_sections, axis=0):
    if type(x) is not Tensor:
        x = native(x)
    axis_ = normalize_axis(axis, x.ndim)
    n = x.shape[axis_]
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(indices_or_sections, bool):
        sections = int(indices_or_sections)
        if sections <= 0 or n % sections:
            raise ValueError(f"split: {sections} sections do not divide axis {axis} of size {n} equally")
        return list(torch.split(x, n // sections, dim=axis_)) if n else [x] * sections
    points = [0] + list(_int_tuple(indices_or_sections, "indices_or_sections")) + [n]
    lead = (_b.slice(None),) * axis_
    # Python slicing per piece gives NumPy's exact semantics for negative/out-of-range points.
    return [x[lead + (_b.slice(points[i], points[i + 1]),)] for i in range(len(points) - 1)]


def tile(x, repeats):
    if type(x) is not Tensor:
        x = native(x)
    repeats = _int_tuple(repeats, "repeats")
    if any(r < 0 for r in repeats):  # torch raises a RuntimeError from deep inside
        raise ValueError(f"tile: repeats must be non-negative, received {repeats}")
    return torch.tile(x, repeats)


def repeat(x, repeats, axis=None):
    if type(x) is not Tensor:
        x = native(x)
    if axis is None:
        x = x.reshape(-1)
        axis_ = 0
    else:
        axis_ = normalize_axis(axis, x.ndim)
    if isinstance(repeats, (int, np.integer)):
        return torch.repeat_interleave(x, int(repeats), dim=axis_)
    counts = index_tensor(repeats, x.device, "repeats").reshape(-1)
    if counts.numel() == 1:
        return torch.repeat_interleave(x, int(counts.item()), dim=axis_)
    if counts.numel() != x.shape[axis_]:
        raise ValueError(f"repeat: {counts.numel()} repeats given for an axis of size {x.shape[axis_]}")
    return torch.repeat_interleave(x, counts, dim=axis_)


_PAD_MODES = ("constant", "reflect", "symmetric", "edge", "wrap")


def _pad_pairs(pad_width, ndim: int) -> list[tuple[int, int]]:
    if isinstance(pad_width, Tensor):
        pad_width = pad_width.tolist()
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu":
        raise TypeError(f"pad: pad_width must be integers, received {pad_width!r}")
    try:
        widths = np.broadcast_to(widths, (ndim, 2))
    except ValueError:
        raise ValueError(f"pad: pad_width {pad_width!r} does not fit an array of rank {ndim}") from None
    if (widths < 0).any():
        raise ValueError(f"pad: pad_width must be non-negative, received {pad_width!r}")
    return [(int(a), int(b)) for a, b in widths]


def _pad_index(n: int, before: int, after: int, mode: str, device) -> torch.Tensor:
    i = torch.arange(-before, n + after, device=device)
    if mode == "edge" or (mode == "reflect" and n == 1):
        return i.clamp(0, n - 1)
    if mode == "wrap":
        return torch.remainder(i, n)
    if mode == "reflect":  # period 2n-2: ... 2 1 | 0 1 2 .. n-1 | n-2 ...
        m = torch.remainder(i, 2 * n - 2)
        return torch.where(m >= n, 2 * n - 2 - m, m)
    m = torch.remainder(i, 2 * n)  # symmetric, period 2n: ... 1 0 | 0 1 .. n-1 | n-1 ...
    return torch.where(m >= n, 2 * n - 1 - m, m)


def pad(x, pad_width, mode="constant", constant_values=0):
    if type(x) is not Tensor:
        x = native(x)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: unknown mode {mode!r}; expected one of {_PAD_MODES}")
    pairs = _pad_pairs(pad_width, x.ndim)
    if not _b.any(a or b for a, b in pairs):
        return x.clone()
    if mode == "constant":
        value = constant_values
        if isinstance(value, (Tensor, np.ndarray, np.generic)) and np.size(value) == 1:
            value = value.item()
        if scalar_kind(value) is not None:
            # F.pad takes (before, after) pairs starting from the LAST axis.
            flat = [w for pair in reversed(pairs) for w in pair]
            return F.pad(x, flat, mode="constant", value=value)
        values = np.broadcast_to(np.asarray(value if not isinstance(value, Tensor) else value.tolist()), (x.ndim, 2))
        out = x
        for axis, (before, after) in enumerate(pairs):
            shape_ = list(out.shape)
            parts = []
            if before:
                shape_[axis] = before
                parts.append(torch.full(shape_, values[axis][0].item(), dtype=x.dtype, device=x.device))
            parts.append(out)
            if after:
                shape_[axis] = after
                parts.append(torch.full(shape_, values[axis][1].item(), dtype=x.dtype, device=x.device))
            out = torch.cat(parts, dim=axis)
        return out
    out = x
    for axis, (before, after) in enumerate(pairs):
        if not (before or after):
            continue
        n = out.shape[axis]
        if n == 0:
            raise ValueError(f"pad: cannot pad empty axis {axis} in mode {mode!r}")
        out = torch.index_select(out, axis, _pad_index(n, before, after, mode, x.device))
    return out


def flip(x, axis=None):
    if type(x) is not Tensor:
        x = native(x)
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(axis, x.ndim)
    return torch.flip(x, axes) if axes else x


def broadcast_to(x, shape):
    if type(x) is not Tensor:
        x = native(x)
    target = _int_tuple(shape, "shape")
    try:
        return torch.broadcast_to(x, target)
    except RuntimeError:
        raise ValueError(f"broadcast_to: cannot broadcast shape {tuple(x.shape)} to {target}") from None


def moveaxis(x, source, destination):
    if type(x) is not Tensor:
        x = native(x)
    src = [normalize_axis(a, x.ndim, "source") for a in _int_tuple(source, "source")]
    dst = [normalize_axis(a, x.ndim, "destination") for a in _int_tuple(destination, "destination")]
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source!r} and destination {destination!r} differ in length")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: repeated axis in source or destination")
    return torch.movedim(x, src, dst)


def swapaxes(x, axis1, axis2):
    if type(x) is not Tensor:
        x = native(x)
    return torch.swapaxes(x, normalize_axis(axis1, x.ndim, "axis1"), normalize_axis(axis2, x.ndim, "axis2"))


def ravel(x):
    if type(x) is not Tensor:
        x = native(x)
    return torch.ravel(x)


# ------------------------------------------------------------------------- indexing


def _simple(k) -> bool:
    t = type(k)
    return t is int or k is None or k is Ellipsis or (t is _b.slice and (k.step is None or (type(k.step) is int and k.step > 0)))


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
    items = []
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
            t = native(k, "key", x.device)
            if t.dtype is torch.bool:
                consumed += t.ndim
            elif t.dtype in INTEGER:
                t = t.long()
                consumed += 1
            else:
                raise IndexError(f"getitem: arrays used as indices must be integer or bool, received dtype {dtype_name(t.dtype)}")
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
    flips = []
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
            if isinstance(item, Tensor) and x.device.type == "cpu" and item.numel():
                _check_bounds(item, x.shape[dim], "getitem", dim)
            dim += 1
    if flips:
        x = torch.flip(x, flips)
    return x[tuple(items)]


def sum_ellipsis(items) -> int:
    return len([i for i in items if i is Ellipsis])


def _check_bounds(idx: Tensor, n: int, name: str, axis: int) -> None:
    if idx.numel() == 0:
        return
    lo, hi = torch.aminmax(idx)
    lo, hi = int(lo), int(hi)
    if lo < -n or hi >= n:
        bad = hi if hi >= n else lo
        raise IndexError(f"{name}: index {bad} is out of bounds for axis {axis} with size {n}")


def _wrap(idx: Tensor, n: int) -> Tensor:
    return torch.where(idx < 0, idx + n, idx)


def take(x, indices, axis=None):
    if type(x) is not Tensor:
        x = native(x)
    idx = index_tensor(indices, x.device)
    if axis is None:
        x = x.reshape(-1)
        axis_ = 0
    else:
        axis_ = normalize_axis(axis, x.ndim)
    n = x.shape[axis_]
    if x.device.type == "cpu":
        _check_bounds(idx, n, "take", axis_)
    flat = _wrap(idx, n).reshape(-1)
    out = torch.index_select(x, axis_, flat)
    return out.reshape(x.shape[:axis_] + idx.shape + x.shape[axis_ + 1 :])


def take_along_axis(x, indices, axis):
    if type(x) is not Tensor:
        x = native(x)
    idx = index_tensor(indices, x.device)
    if axis is None:
        x = x.reshape(-1)
        axis_ = 0
    else:
        axis_ = normalize_axis(axis, x.ndim)
    if idx.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices of rank {idx.ndim} do not match an array of rank {x.ndim}")
    n = x.shape[axis_]
    if x.device.type == "cpu":
        _check_bounds(idx, n, "take_along_axis", axis_)
    return torch.take_along_dim(x, _wrap(idx, n), dim=axis_)


def _nd_index(indices, x: Tensor, name: str) -> tuple[Tensor, ...]:
    idx = index_tensor(indices, x.device)
    if idx.ndim == 0 or idx.shape[-1] > x.ndim:
        raise ValueError(f"{name}: indices of shape {tuple(idx.shape)} cannot index an array of rank {x.ndim}")
    parts = idx.unbind(-1)
    if x.device.type == "cpu":
        for axis_, part in enumerate(parts):
            _check_bounds(part, x.shape[axis_], name, axis_)
    return tuple(parts)


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


def one_hot(indices, depth, dtype=None, axis=-1):
    idx = native(indices, "indices")
    if idx.dtype in FLOATING or idx.dtype is torch.bool or idx.is_complex():
        raise TypeError(f"one_hot: indices must be integers, received dtype {dtype_name(idx.dtype)}")
    idx = index_tensor(idx, idx.device)
    depth = int(depth)
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
