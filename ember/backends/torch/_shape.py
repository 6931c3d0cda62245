"""Shape manipulation ops of the torch backend (re-exported by :mod:`.core`).

``pad``'s reflect/symmetric/edge/wrap modes are an ``index_select`` per padded axis (torch's
``F.pad`` only handles some ranks and has no "symmetric").
"""

from __future__ import annotations

import builtins as _b

import numpy as np
import torch
import torch.nn.functional as F

from ember.backends._common import normalize_axes, normalize_axis
from ember.backends.torch._base import (
    Tensor,
    along_axis,
    index_tensor,
    many,
    native,
    scalar_kind,
)

# --------------------------------------------------------------------------- shape


def _int_tuple(value, argument: str) -> tuple:
    if isinstance(value, Tensor):
        value = value.tolist()
    elif isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (int, np.integer)):
        return (int(value),)
    try:
        # A SymInt (a size Model.export traces as dynamic) stays symbolic.
        return tuple(v if isinstance(v, torch.SymInt) else int(v) for v in value)
    except TypeError:
        raise TypeError(f"{argument}: expected an int or a sequence of ints, received {value!r}") from None


def reshape(x, newshape):
    if type(x) is not Tensor:
        x = native(x)
    shape_ = _int_tuple(newshape, "newshape")
    try:
        return torch.reshape(x, shape_)
    except RuntimeError as error:
        raise ValueError(
            f"reshape: cannot reshape an array of shape {tuple(x.shape)} into shape {shape_} ({error})"
        ) from None


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
    sizes = [b - a for a, b in zip(points, points[1:])]
    if _b.all(0 <= point <= n for point in points) and _b.all(size >= 0 for size in sizes):
        # The usual case: one autograd node whose backward is one concatenation (slices each
        # scatter their gradient into a zero tensor the size of ``x``, then sum the pieces).
        return list(torch.split(x, sizes, dim=axis_))
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
    x, axis_ = along_axis(x, axis)
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
