"""VJP rules of shape ops: the cotangent is moved back the way the values moved."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops
from ember.autodiff.rules import fill_zeros, plain, register, shape_of, unbroadcast


@register("reshape", "expand_dims", "squeeze", "ravel", unread_args=(0,), reads_out=False)
def reshape(g, out, x, *args, **kwargs):
    return (ops.reshape(g, x.shape),)


@register("transpose", unread_args=(0,), reads_out=False)
def transpose(g, out, x, axes=None):
    if axes is None:
        return (ops.transpose(g),)
    ndim = x.ndim
    inverse = np.argsort([int(a) % ndim for a in axes])
    return (ops.transpose(g, tuple(int(i) for i in inverse)),)


@register("moveaxis", unread_args=(0,), reads_out=False)
def moveaxis(g, out, x, source, destination):
    return (ops.moveaxis(g, destination, source),)


@register("swapaxes", unread_args=(0,), reads_out=False)
def swapaxes(g, out, x, axis1, axis2):
    return (ops.swapaxes(g, axis1, axis2),)


@register("flip", unread_args=(0,), reads_out=False)
def flip(g, out, x, axis=None):
    return (ops.flip(g, axis=axis),)


@register("broadcast_to", unread_args=(0,), reads_out=False)
def broadcast_to(g, out, x, shape):
    return (unbroadcast(g, x),)


@register("concatenate")
def concatenate(g, out, xs, axis=0):
    shapes = [shape_of(x) for x in xs]
    if axis is None:
        sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
        pieces = ops.split(ops.reshape(g, (-1,)), list(np.cumsum(sizes)[:-1]), axis=0)
        return ([ops.reshape(p, s) for p, s in zip(pieces, shapes)],)
    axis = int(axis) % g.ndim
    sizes = [s[axis] for s in shapes]
    if len(xs) == 1:
        return ([g],)
    pieces = ops.split(g, [int(i) for i in np.cumsum(sizes)[:-1]], axis=axis)
    return (list(pieces),)


@register("stack")
def stack(g, out, xs, axis=0):
    axis = int(axis) % g.ndim
    index: list[Any] = [slice(None)] * g.ndim
    pieces = []
    for i in range(len(xs)):
        index[axis] = i
        pieces.append(ops.getitem(g, tuple(index)))
    return (pieces,)


def _split_spans(n: int, indices_or_sections: Any) -> list[tuple[int, int]]:
    """``(start, stop)`` of each piece of ``split`` along an axis of size ``n`` (NumPy's slicing rules)."""
    if np.ndim(indices_or_sections) == 0:
        size = n // int(indices_or_sections)
        return [(i * size, (i + 1) * size) for i in range(int(indices_or_sections))]
    points = [0, *(int(p) for p in plain(indices_or_sections).reshape(-1)), n]
    spans = []
    for a, b in zip(points, points[1:]):
        start, stop, _ = slice(a, b).indices(n)
        spans.append((start, max(start, stop)))
    return spans


@register("split")
def split(g, out, x, indices_or_sections, axis=0):
    parts = [fill_zeros(c, o) for c, o in zip(g, out)]
    axis = int(axis) % x.ndim
    n = x.shape[axis]
    spans = _split_spans(n, indices_or_sections)
    if all(stop == next_start for (_, stop), (next_start, _) in zip(spans, spans[1:])) and spans[-1][1] == n:
        return (ops.concatenate(parts, axis=axis),)  # the pieces tile x in order
    # Points out of order or out of range: pieces overlap or skip cells; each adds onto its span.
    total = None
    for part, (start, stop) in zip(parts, spans):
        widths = [(0, 0)] * x.ndim
        widths[axis] = (start, n - stop)
        placed = ops.pad(part, widths)
        total = placed if total is None else ops.add(total, placed)
    return (total,)


@register("tile")
def tile(g, out, x, repeats):
    reps = (int(repeats),) if np.ndim(repeats) == 0 else tuple(int(r) for r in plain(repeats).reshape(-1))
    ndim = max(x.ndim, len(reps))
    shape = (1,) * (ndim - x.ndim) + tuple(x.shape)
    reps = (1,) * (ndim - len(reps)) + reps
    interleaved = []
    for r, n in zip(reps, shape):
        interleaved += [r, n]
    summed = ops.sum(ops.reshape(g, tuple(interleaved)), axis=tuple(range(0, 2 * ndim, 2)))
    return (ops.reshape(summed, x.shape),)


@register("repeat")
def repeat(g, out, x, repeats, axis=None):
    source = ops.reshape(x, (-1,)) if axis is None else x
    ax = 0 if axis is None else int(axis) % x.ndim
    n = source.shape[ax]
    counts = plain(repeats).reshape(-1)
    if counts.size == 1:
        r = int(counts[0])
        shape = tuple(g.shape[:ax]) + (n, r) + tuple(g.shape[ax + 1:])
        grad = ops.sum(ops.reshape(g, shape), axis=ax + 1)
    else:
        ids = np.repeat(np.arange(n), counts)
        moved = ops.moveaxis(g, ax, 0)
        grad = ops.moveaxis(ops.segment_sum(moved, ids, num_segments=n), 0, ax)
    return (ops.reshape(grad, x.shape) if axis is None else grad,)


@register("pad")
def pad(g, out, x, pad_width, mode="constant", constant_values=0):
    widths = np.asarray(plain(pad_width), dtype=np.int64)
    if widths.size == 1:
        widths = np.full((1, 2), widths.reshape(-1)[0])
    widths = np.broadcast_to(widths.reshape(-1, 2), (x.ndim, 2))
    if mode == "constant":
        index = tuple(slice(int(b), int(b) + n) for (b, _), n in zip(widths, x.shape))
        return (ops.getitem(g, index), None)
    grad = g
    for axis, ((before, after), n) in enumerate(zip(widths, x.shape)):
        if not before and not after:
            continue
        try:
            ids = np.pad(np.arange(n), (int(before), int(after)), mode=mode)
        except (TypeError, ValueError):
            raise NotImplementedError(f"ember.ops.pad: no gradient for mode={mode!r}") from None
        moved = ops.moveaxis(grad, axis, 0)
        grad = ops.moveaxis(ops.segment_sum(moved, ids, num_segments=n), 0, axis)
    return (grad, None)
