"""VJP rules of indexing, gathering and scattering.

Most rules apply the forward indexing to an *index map* (``arange(size)`` in ``x``'s
shape) to learn where every output element came from, then add the cotangent back
there with ``ops.segment_sum``: repeated indices accumulate, boolean masks, integer
arrays, slices with steps, ``None`` and ``Ellipsis`` all work the same way.

``scatter_update`` with duplicate indices keeps one of the duplicates in the forward
pass (NumPy's assignment order); its rule gives each duplicate update the cotangent of
the position it targets.
"""

from __future__ import annotations

import numpy as np

from ember import ops
from ember.autodiff.rules import index_map, needs, plain, register, scatter_flat


def _plain_key(key):
    if isinstance(key, tuple):
        return tuple(_plain_key(k) for k in key)
    if isinstance(key, np.ndarray) and type(key) is not np.ndarray:
        return plain(key)
    if isinstance(key, list):
        return np.asarray([plain(k) if isinstance(k, np.ndarray) else k for k in key])
    return key


def _is_basic(key) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice)) and not isinstance(k, bool)
               for k in parts)


@register("getitem")
def getitem(g, out, x, key):
    key = _plain_key(key)
    if _is_basic(key):
        # Basic indexing selects a strided box: place the cotangent there with a
        # static pad (cheaper than an index map for large x).
        placed = _place_basic(g, x.shape, key)
        if placed is not None:
            return (placed, None)
    return (scatter_flat(g, x.shape, index_map(x.shape)[key]), None)


def _place_basic(g, shape, key):
    """Zeros of ``shape`` with ``g`` at the basic index ``key``; None if not a unit-step box."""
    parts = list(key) if isinstance(key, tuple) else [key]
    if Ellipsis in parts:
        at = parts.index(Ellipsis)
        explicit = sum(1 for k in parts if k is not None and k is not Ellipsis)
        parts[at:at + 1] = [slice(None)] * (len(shape) - explicit)
    explicit = sum(1 for k in parts if k is not None)
    parts += [slice(None)] * (len(shape) - explicit)
    widths = []
    box = []
    axis = 0
    for k in parts:
        if k is None:
            continue
        n = shape[axis]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step != 1:
                return None
            stop = max(stop, start)
            widths.append((start, n - stop))
            box.append(stop - start)
        else:
            i = int(k) % n if n else 0
            widths.append((i, n - i - 1))
            box.append(1)
        axis += 1
    g_box = ops.reshape(g, tuple(box))
    if any(b or a for b, a in widths):
        return ops.pad(g_box, widths)
    return g_box


@register("take")
def take(g, out, x, indices, axis=None):
    idx = np.asarray(plain(indices))
    if axis is None:
        flat = np.take(index_map(x.shape).reshape(-1), idx)
        return (scatter_flat(g, x.shape, flat), None)
    axis = int(axis) % x.ndim
    n = x.shape[axis]
    k = idx.ndim
    # g: x.shape[:axis] + idx.shape + x.shape[axis+1:] -> (idx.size, rest) rows summed per index.
    perm = list(range(axis, axis + k)) + list(range(axis)) + list(range(axis + k, g.ndim))
    moved = ops.transpose(g, perm) if perm != list(range(g.ndim)) else g
    rest = tuple(x.shape[:axis]) + tuple(x.shape[axis + 1:])
    rows = ops.reshape(moved, (idx.size,) + rest)
    summed = ops.segment_sum(rows, (idx.reshape(-1) % n) if n else idx.reshape(-1), num_segments=n)
    return (ops.moveaxis(summed, 0, axis) if axis else summed, None)


@register("take_along_axis")
def take_along_axis(g, out, x, indices, axis):
    idx = np.asarray(plain(indices))
    if axis is None:
        flat = np.take_along_axis(index_map(x.shape).reshape(-1), idx, axis=0)
    else:
        flat = np.take_along_axis(index_map(x.shape), idx, axis=axis)
    return (scatter_flat(g, x.shape, flat), None)


@register("gather")
def gather(g, out, x, indices):
    return (ops.scatter(plain(indices), g, x.shape), None)


@register("scatter")
def scatter(g, out, indices, updates, shape):
    return (None, ops.gather(g, plain(indices)) if needs(1) else None, None)


@register("scatter_add")
def scatter_add(g, out, x, indices, updates):
    return (g if needs(0) else None, None, ops.gather(g, plain(indices)) if needs(2) else None)


@register("scatter_update")
def scatter_update(g, out, x, indices, updates):
    idx = plain(indices)
    dx = None
    if needs(0):
        dx = ops.scatter_update(g, idx, np.zeros(np.shape(updates), dtype=plain(g).dtype))
    return (dx, None, ops.gather(g, idx) if needs(2) else None)


def _starts(start_indices):
    return [int(s) for s in np.asarray(plain(start_indices)).reshape(-1)]


@register("slice")
def slice_(g, out, x, start_indices, shape):
    starts = _starts(start_indices)
    widths = [(s, n - s - k) for s, n, k in zip(starts, x.shape, out.shape)]
    return (ops.pad(g, widths), None, None)


@register("slice_update")
def slice_update(g, out, x, start_indices, updates):
    starts = _starts(start_indices)
    dx = None
    if needs(0):
        dx = ops.slice_update(g, starts, np.zeros(np.shape(updates), dtype=plain(g).dtype))
    du = ops.slice(g, starts, tuple(np.shape(updates))) if needs(2) else None
    return (dx, None, du)


@register("top_k")
def top_k(g, out, x, k, sorted=True):
    g_values = g[0]
    if g_values is None:
        return (None, None, None)
    indices = np.asarray(plain(out[1]), dtype=np.intp)
    n = x.shape[-1]
    rows = int(np.prod(x.shape[:-1], dtype=np.int64))
    offsets = (np.arange(rows, dtype=np.intp) * n).reshape(tuple(x.shape[:-1]) + (1,))
    return (scatter_flat(g_values, x.shape, indices + offsets), None, None)


@register("sort")
def sort(g, out, x, axis=-1):
    if axis is None:
        order = np.argsort(plain(x).reshape(-1), kind="stable")
        return (ops.reshape(ops.take(g, np.argsort(order, kind="stable")), x.shape),)
    order = np.argsort(plain(x), axis=axis, kind="stable")
    inverse = np.argsort(order, axis=axis, kind="stable")
    return (ops.take_along_axis(g, inverse, axis=axis),)


@register("segment_sum")
def segment_sum(g, out, data, segment_ids, num_segments=None):
    return (ops.take(g, np.asarray(plain(segment_ids)).reshape(-1), axis=0), None, None)


@register("segment_max")
def segment_max(g, out, data, segment_ids, num_segments=None):
    ids = np.asarray(plain(segment_ids)).reshape(-1)
    values = plain(data)
    mask = np.asarray(values == np.take(plain(out), ids, axis=0), dtype=plain(g).dtype)
    counts = np.zeros(plain(out).shape, dtype=mask.dtype)
    np.add.at(counts, ids, mask)
    scale = mask / np.maximum(np.take(counts, ids, axis=0), 1)
    return (ops.multiply(ops.take(g, ids, axis=0), scale), None, None)
