"""Vector-Jacobian product rules of the NumPy engine, one module per op family.

``RULES`` maps a qualified op name (``"add"``, ``"nn.softmax"``, ``"linalg.inv"``) to its
rule. A rule has the op's signature with the cotangent and the output in front::

    @register("add")
    def add(g, out, x1, x2):
        return (unbroadcast(g, x1) if needs(0) else None,
                unbroadcast(g, x2) if needs(1) else None)

and returns one cotangent (or ``None``) per *positional* argument: a list of them for
a list argument (``concatenate``/``stack``). Keyword arguments are passed through as
keywords. The engine normalises calls first: a tracked array passed by keyword
(``ops.matmul(x1=a, x2=b)``) is moved into its positional place, so rules only ever
return positional cotangents. For an op with several outputs (``svd``, ``top_k``,
``split``, ``moments`` ...) ``g`` is a tuple/list with ``None`` for outputs that got no
cotangent (:func:`fill_zeros` replaces them where a rule needs arrays).

:func:`needs` tells a rule which arguments need a cotangent (tracked, floating and on
a path from a requested source), so it can skip work such as the input gradient of a
first-layer ``matmul``.

Every rule computes with ``ember.ops`` (looked up at call time), never with raw NumPy
on values that carry gradients, so when an outer tape records, the backward pass is
itself recorded and nested tapes give higher-order derivatives. NumPy is used only
for constants: shapes, index maps, masks and permutations derived from values.

The rules are the NumPy engine's: they may read NumPy metadata (``x.shape``,
``x.dtype``) directly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ember import ops

RULES: dict[str, Callable] = {}
# Op name -> (positions of array arguments whose *values* the rule never reads, whether it
# reads the output's values). The engine keeps only shape/dtype for those, so memory the
# rule does not need (e.g. a matmul result that only fed a bias add) is freed early.
SAVES: dict[str, tuple[frozenset, bool]] = {}


class _RuleContext(threading.local):
    """What the engine tells the rule running now *in this thread* (set around each rule call).

    Per thread: two threads may run backward passes at once (a tape each, on one model), and
    a module global set by one thread's engine would be read by the other thread's rule
    (``needs`` answering for another op: a missing cotangent, a None gradient). The class
    attributes are each thread's defaults (no rule running): every argument needed, no batch.

    Attributes:
        needed: per positional argument, whether it needs a cotangent (see :func:`needs`);
            empty outside a rule call.
        batched: True while a batch-aware rule runs on cotangents with a leading batch axis
            (see :mod:`ember.autodiff.rules.batched`): the helpers below then keep that axis.
    """

    needed: tuple = ()
    batched: bool = False


_context = _RuleContext()


def register(*names: str, unread_args: tuple = (), reads_out: bool = True) -> Callable[[Callable], Callable]:
    """Register the decorated function as the VJP rule of each qualified op name.

    Args:
        unread_args: positions of arguments whose values (not just shape and dtype) the
            rule never reads.
        reads_out: False when the rule never reads the output's values.
    """

    def decorate(rule: Callable) -> Callable:
        for name in names:
            RULES[name] = rule
            if unread_args or not reads_out:
                SAVES[name] = (frozenset(unread_args), reads_out)
        return rule

    return decorate


def needs(position: int) -> bool:
    """Whether positional argument ``position`` of the op being differentiated needs a cotangent.

    Outside the engine (a rule called directly) every argument is assumed needed.
    """
    needed = _context.needed
    if not needed:
        return True
    return position < len(needed) and needed[position]


# ------------------------------------------------------------------------- helpers
def plain(x: Any) -> Any:
    """``x``'s values as a plain ndarray (for constants: masks, indices, shapes)."""
    if isinstance(x, np.ndarray):
        if type(x) is np.ndarray:
            return x
        inner = getattr(x, "_plain", None)
        return x.view(np.ndarray) if inner is None else inner
    return np.asarray(x)


def shape_of(x: Any) -> tuple:
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else np.shape(x)


class Meta:
    """Shape and dtype standing in for an array whose values a rule does not read."""

    __slots__ = ("shape", "dtype", "ndim")

    def __init__(self, array: np.ndarray) -> None:
        self.shape, self.dtype, self.ndim = array.shape, array.dtype, array.ndim

    def __repr__(self) -> str:
        return f"Meta(shape={self.shape}, dtype={self.dtype})"


def is_complex(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and dtype.kind == "c"


def conj(x: Any) -> Any:
    """Complex conjugate for complex arrays; ``x`` itself otherwise (no copy)."""
    return ops.conj(x) if is_complex(x) else x


def axes_of(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, int or sequence) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(int(a) % ndim for a in axis)) if ndim else ()
    return (int(axis) % ndim,) if ndim else ()


def count_of(shape: tuple, axes: tuple) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def unbroadcast(g: Any, x: Any) -> Any:
    """Sum ``g`` (the cotangent of a broadcast result) down to ``x``'s shape.

    In a batched backward pass (``g`` has a leading batch axis) the batch axis is kept.
    """
    shape = shape_of(x)
    if _context.batched:
        return _unbroadcast_batched(g, shape)
    g_shape = g.shape
    if g_shape == shape:
        return g
    lead = len(g_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g_shape[lead + i] != 1
    )
    if axes:
        g = ops.sum(g, axis=axes)
    return ops.reshape(g, shape) if g.shape != shape else g


def _unbroadcast_batched(g: Any, shape: tuple) -> Any:
    """:func:`unbroadcast` of a cotangent ``(batch, *broadcast_shape)`` to ``(batch, *shape)``."""
    g_shape = tuple(g.shape)
    target = g_shape[:1] + tuple(shape)
    if g_shape == target:
        return g
    lead = len(g_shape) - 1 - len(shape)
    axes = tuple(range(1, 1 + lead)) + tuple(
        1 + lead + i for i, n in enumerate(shape) if n == 1 and g_shape[1 + lead + i] != 1
    )
    if axes:
        g = ops.sum(g, axis=axes)
    return ops.reshape(g, target) if g.shape != target else g


def keep_reduced(g: Any, shape: tuple, axis: Any, keepdims: bool) -> Any:
    """``g`` (the cotangent of a reduction over ``axis``) reshaped with the reduced axes as 1s.

    In a batched backward pass the leading batch axis of ``g`` is kept in front.
    """
    if keepdims:
        return g
    axes = axes_of(axis, len(shape))
    kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
    if _context.batched:
        kept = (g.shape[0],) + kept
    return ops.reshape(g, kept) if g.shape != kept else g


def expand_reduced(g: Any, shape: tuple, axis: Any, keepdims: bool) -> Any:
    """``g`` broadcast back over the axes a reduction removed (keeping a batch axis, see above)."""
    kept = keep_reduced(g, shape, axis, keepdims)
    return ops.broadcast_to(kept, ((g.shape[0],) if _context.batched else ()) + tuple(shape))


def fill_zeros(g: Any, like: Any) -> Any:
    """``g``, or zeros shaped like the output ``like`` when it got no cotangent."""
    if g is not None:
        return g
    return np.zeros(shape_of(like), dtype=plain(like).dtype)


def scatter_flat(g: Any, shape: tuple, flat_index: np.ndarray) -> Any:
    """An array of ``shape`` with ``g``'s entries added at ``flat_index`` (same shape as ``g``)."""
    size = int(np.prod(shape, dtype=np.int64))
    summed = ops.segment_sum(ops.reshape(g, (-1,)), np.asarray(flat_index, dtype=np.intp).reshape(-1),
                             num_segments=size)
    return ops.reshape(summed, shape)


def index_map(shape: tuple) -> np.ndarray:
    """``arange(size).reshape(shape)``: applying an indexing op to it gives flat source indices."""
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.intp).reshape(shape)


def as_dtype(mask: np.ndarray, like: Any) -> np.ndarray:
    return np.asarray(mask, dtype=plain(like).dtype)


# Each family registers its rules on import; they use the helpers above, so they come last.
from ember.autodiff.rules import batched as batched_rules  # noqa: E402
from ember.autodiff.rules import elementwise as elementwise_rules  # noqa: E402
from ember.autodiff.rules import indexing as indexing_rules  # noqa: E402
from ember.autodiff.rules import linalg as linalg_rules  # noqa: E402
from ember.autodiff.rules import nn as nn_rules  # noqa: E402
from ember.autodiff.rules import reductions as reduction_rules  # noqa: E402
from ember.autodiff.rules import rnn as rnn_rules  # noqa: E402
from ember.autodiff.rules import shape as shape_rules  # noqa: E402

RULE_FAMILIES = (elementwise_rules, reduction_rules, shape_rules, indexing_rules, linalg_rules, nn_rules, rnn_rules,
                 batched_rules)
