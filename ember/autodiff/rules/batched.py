"""Which VJP rules take a batch of cotangents at once (a leading batch axis on ``g``).

A Jacobian on NumPy is one backward pass with a batch of cotangents (one per output
row) instead of one pass per row: the engine's ``batched_vjp`` hands each node's rule a
cotangent of shape ``(batch, *out.shape)`` and expects ``(batch, *arg.shape)`` back.

* Rules in :data:`BATCH_SAFE` are already correct that way: they combine ``g`` with
  values of the output's shape by broadcasting (``g * (1 - out**2)``) and reduce only
  through :func:`~ember.autodiff.rules.unbroadcast` / ``expand_reduced``, which keep
  the batch axis while the engine runs a batched pass.
* Rules in :data:`BATCHED_RULES` are batch-aware versions of rules that name axes or
  shapes (``reshape``, ``transpose``, ``matmul``, ``softmax``, ``getitem``,
  ``concatenate``, ``stack``).
* Every other rule (and every ``custom_gradient``) is applied once per cotangent of
  the batch at that node by the engine and the results are stacked: correct, only
  slower. :func:`batched_rule` tells the engine which case applies.

Example:
    >>> import numpy as np
    >>> from ember.autodiff.rules.batched import batched_rule
    >>> batched_rule("tanh") is not None, batched_rule("linalg.svd")
    (True, None)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember import ops
from ember.autodiff import rules as _rules
from ember.autodiff.rules import index_map, needs, plain
from ember.autodiff.rules.indexing import _is_basic, _plain_key

BATCH_SAFE = frozenset({
    # element-wise (with broadcasting through unbroadcast)
    "to_device", "cast", "negative", "abs", "sqrt", "rsqrt", "square", "reciprocal", "exp", "log",
    "log1p", "expm1", "sin", "cos", "sinh", "cosh", "tanh", "nn.tanh", "arctan", "erf",
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "where", "clip", "broadcast_to",
    # reductions through expand_reduced
    "sum", "mean", "stats.mean",
    # activations: g times a mask/derivative of the output's shape
    "nn.relu", "nn.relu6", "nn.leaky_relu", "nn.elu", "nn.selu", "nn.gelu", "nn.silu", "nn.sigmoid",
    "nn.hard_sigmoid", "nn.softplus", "nn.softsign", "nn.lecun_tanh",
})

BATCHED_RULES: dict[str, Callable] = {}


def _batched(*names: str) -> Callable[[Callable], Callable]:
    def decorate(rule: Callable) -> Callable:
        for name in names:
            BATCHED_RULES[name] = rule
        return rule

    return decorate


def batched_rule(name: str) -> Callable | None:
    """The rule to run on a batch of cotangents for op ``name``, or None (loop per cotangent)."""
    rule = BATCHED_RULES.get(name)
    if rule is None and name in BATCH_SAFE:
        rule = _rules.RULES.get(name)
    return rule


@_batched("convert_to_tensor", "asarray")
def convert_to_tensor(g: Any, out: Any, x: Any, dtype: Any = None, device: Any = None) -> tuple:
    if isinstance(x, (list, tuple)):
        return ([ops.getitem(g, (slice(None), i)) if hasattr(v, "shape") else None for i, v in enumerate(x)],)
    return (g,)


@_batched("reshape", "expand_dims", "squeeze", "ravel")
def reshape(g: Any, out: Any, x: Any, *args: Any, **kwargs: Any) -> tuple:
    return (ops.reshape(g, (g.shape[0],) + tuple(x.shape)),)


@_batched("transpose")
def transpose(g: Any, out: Any, x: Any, axes: Any = None) -> tuple:
    ndim = x.ndim
    inverse = np.arange(ndim)[::-1] if axes is None else np.argsort([int(a) % ndim for a in axes])
    return (ops.transpose(g, (0,) + tuple(1 + int(i) for i in inverse)),)


def _mh(x: Any) -> Any:
    swapped = ops.swapaxes(x, -1, -2)
    return ops.conj(swapped) if _rules.is_complex(x) else swapped


@_batched("matmul", "linalg.matmul")
def matmul(g: Any, out: Any, x1: Any, x2: Any) -> tuple:
    batch = g.shape[0]
    a = ops.reshape(x1, (1, -1)) if x1.ndim == 1 else x1
    b = ops.reshape(x2, (-1, 1)) if x2.ndim == 1 else x2
    lead = tuple(np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    m, n = a.shape[-2], b.shape[-1]
    gm = ops.reshape(g, (batch,) + lead + (m, n))
    da = db = None
    if needs(0):
        if b.ndim == 2:  # one GEMM over every row of every cotangent
            flat = ops.matmul(ops.reshape(gm, (-1, n)), _mh(b))
            product = ops.reshape(flat, (batch,) + lead + (m, a.shape[-1]))
        else:
            product = ops.matmul(gm, _mh(b))
        da = ops.reshape(_rules.unbroadcast(product, a), (batch,) + tuple(x1.shape))
    if needs(1):
        db = ops.reshape(_rules.unbroadcast(ops.matmul(_mh(a), gm), b), (batch,) + tuple(x2.shape))
    return (da, db)


@_batched("nn.softmax")
def softmax(g: Any, out: Any, x: Any, axis: int = -1) -> tuple:
    batched_axis = 1 + int(axis) % out.ndim
    weighted = ops.sum(ops.multiply(g, out), axis=batched_axis, keepdims=True)
    return (ops.multiply(out, ops.subtract(g, weighted)),)


@_batched("nn.log_softmax")
def log_softmax(g: Any, out: Any, x: Any, axis: int = -1) -> tuple:
    total = ops.sum(g, axis=1 + int(axis) % out.ndim, keepdims=True)
    return (ops.subtract(g, ops.multiply(ops.exp(out), total)),)


@_batched("getitem")
def getitem(g: Any, out: Any, x: Any, key: Any) -> tuple:
    key = _plain_key(key)
    batch, shape = g.shape[0], tuple(x.shape)
    if _is_basic(key):
        # zeros of (batch, *shape) with each cotangent written where the key reads: a view
        # of a zero array assigned in place (the batched pass never records, see engine)
        placed = np.zeros((batch,) + shape, dtype=plain(g).dtype)
        placed[(slice(None),) + (key if isinstance(key, tuple) else (key,))] = plain(g)
        return (placed, None)
    flat = index_map(shape)[key].reshape(-1)  # source position of every output element
    rows = ops.transpose(ops.reshape(g, (batch, -1)))  # (n_out, batch): segments on axis 0
    summed = ops.segment_sum(rows, flat, num_segments=int(np.prod(shape, dtype=np.int64)))
    return (ops.reshape(ops.transpose(summed), (batch,) + shape), None)


@_batched("concatenate")
def concatenate(g: Any, out: Any, xs: Any, axis: Any = 0) -> tuple:
    batch = g.shape[0]
    shapes = [tuple(x.shape) if hasattr(x, "shape") else np.shape(x) for x in xs]
    if axis is None:
        sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
        pieces = ops.split(ops.reshape(g, (batch, -1)), [int(i) for i in np.cumsum(sizes)[:-1]], axis=1)
        return ([ops.reshape(p, (batch,) + s) for p, s in zip(pieces, shapes)],)
    axis = int(axis) % (g.ndim - 1)
    if len(xs) == 1:
        return ([g],)
    cuts = [int(i) for i in np.cumsum([s[axis] for s in shapes])[:-1]]
    return (list(ops.split(g, cuts, axis=axis + 1)),)


@_batched("stack")
def stack(g: Any, out: Any, xs: Any, axis: int = 0) -> tuple:
    axis = 1 + int(axis) % (g.ndim - 1)
    index: list = [slice(None)] * g.ndim
    pieces = []
    for i in range(len(xs)):
        index[axis] = i
        pieces.append(ops.getitem(g, tuple(index)))
    return (pieces,)


__all__ = ["BATCH_SAFE", "BATCHED_RULES", "batched_rule"]
