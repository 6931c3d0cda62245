"""Which VJP rules take a batch of cotangents at once (a leading batch axis on ``g``).

A Jacobian on NumPy is one backward pass with a batch of cotangents (one per output
row) instead of one pass per row: the engine's ``batched_vjp`` hands each node's rule a
cotangent of shape ``(batch, *out.shape)`` and expects ``(batch, *arg.shape)`` back.

* Rules in :data:`BATCH_SAFE` are already correct that way: they combine ``g`` with
  values of the output's shape by broadcasting (``g * (1 - out**2)``) and reduce only
  through :func:`~ember.autodiff.rules.unbroadcast` / ``expand_reduced``, which keep
  the batch axis while the engine runs a batched pass.
* Rules in :data:`BATCHED_RULES` are batch-aware versions of rules that name axes or
  shapes (``reshape``, ``transpose``, ``matmul``, ``softmax``).
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

from typing import Any, Callable

import numpy as np

from ember import ops
from ember.autodiff import rules as _rules
from ember.autodiff.rules import needs

BATCH_SAFE = frozenset({
    # element-wise (with broadcasting through unbroadcast)
    "to_device", "cast", "negative", "abs", "sqrt", "rsqrt", "square", "reciprocal", "exp", "log",
    "log1p", "expm1", "sin", "cos", "sinh", "cosh", "tanh", "nn.tanh", "arctan", "erf",
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "where", "clip",
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


__all__ = ["BATCH_SAFE", "BATCHED_RULES", "batched_rule"]
