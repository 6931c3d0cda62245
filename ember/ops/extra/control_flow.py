"""Control flow of ``keras.ops`` (``cond``, ``switch``, loops, ``scan``, ``map``), run eagerly.

Ember executes eagerly on every backend, so these are the plain Python forms of JAX's
structured control flow: the predicate or index is read as a Python value and the
loop runs in Python. Inside a :class:`~ember.GradientTape` the ops the bodies call are
recorded, so gradients flow through every iteration. Loop state may be any pytree.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.fori_loop(0, 4, lambda i, total: total + i, 0)
    6
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import optree

from ember import ops

__all__ = ["cond", "switch", "fori_loop", "while_loop", "scan", "associative_scan", "map", "vectorized_map",
           "vectorize"]


def _truth(value: Any) -> bool:
    return bool(ops.to_numpy(value)) if ops.is_array(value) else bool(value)


def cond(pred, true_fn, false_fn):
    """``true_fn()`` if ``pred`` else ``false_fn()``.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor(2.0)
        >>> ops.to_numpy(ops.cond(ops.greater(x, 0.0), lambda: ops.multiply(x, 3.0), lambda: x)).tolist()
        6.0
    """
    return true_fn() if _truth(pred) else false_fn()


def switch(index, branches, *operands):
    """``branches[index](*operands)``, ``index`` clamped to the valid range (as JAX and Keras).

    Example:
        >>> from ember import ops
        >>> ops.switch(1, [lambda v: v + 1, lambda v: v * 10], 3)
        30
    """
    if not branches:
        raise ValueError("switch: branches must be a non-empty sequence of functions")
    position = int(ops.to_numpy(index)) if ops.is_array(index) else int(index)
    return branches[min(max(position, 0), len(branches) - 1)](*operands)


def fori_loop(lower, upper, body_fun, init_val):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``; the final ``val``.

    Example:
        >>> from ember import ops
        >>> ops.fori_loop(0, 4, lambda i, total: total + i, 0)
        6
    """
    value = init_val
    for i in range(int(lower), int(upper)):
        value = body_fun(i, value)
    return value


def while_loop(cond, body, loop_vars, maximum_iterations=None):
    """``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` (at most ``maximum_iterations`` times).

    A tuple or list of ``loop_vars`` is unpacked into ``cond`` and ``body``; any other value is
    passed as one argument (Keras's convention).

    Example:
        >>> from ember import ops
        >>> ops.while_loop(lambda i, total: i < 3, lambda i, total: (i + 1, total + i), (0, 10))
        (3, 13)
    """
    is_sequence = isinstance(loop_vars, (tuple, list))
    values = tuple(loop_vars) if is_sequence else (loop_vars,)
    count = 0
    while (maximum_iterations is None or count < maximum_iterations) and _truth(cond(*values)):
        result = body(*values)
        values = tuple(result) if is_sequence else (result,)
        count += 1
    return type(loop_vars)(values) if is_sequence else values[0]


def _slice_tree(xs: Any, i: int) -> Any:
    return optree.tree_map(lambda leaf: ops.getitem(leaf, i), xs)


def _stack_tree(items: list) -> Any:
    if not items:
        return None
    leaves0, treedef = optree.tree_flatten(items[0], none_is_leaf=False)
    columns = [optree.tree_flatten(item, none_is_leaf=False)[0] for item in items]
    return optree.tree_unflatten(treedef, [ops.stack([c[j] for c in columns], axis=0) for j in range(len(leaves0))])


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns ``(carry, stacked ys)``.

    Raises:
        ValueError: neither ``xs`` nor ``length`` given, or a ``length`` that disagrees with ``xs``.

    Example:
        >>> from ember import ops
        >>> carry, ys = ops.scan(lambda c, x: (ops.add(c, x), ops.add(c, x)), ops.convert_to_tensor(0), ops.arange(4))
        >>> ops.to_numpy(carry).tolist(), ops.to_numpy(ys).tolist()
        (6, [0, 1, 3, 6])
    """
    if xs is None and length is None:
        raise ValueError("scan: give xs or length")
    leaves = optree.tree_leaves(xs) if xs is not None else []
    steps = ops.shape(leaves[0])[0] if leaves else length
    if length is not None and steps != length:
        raise ValueError(f"scan: length={length} does not match the leading axis of xs ({steps})")
    carry, ys = init, []
    for i in (range(steps - 1, -1, -1) if reverse else range(steps)):
        carry, y = f(carry, _slice_tree(xs, i) if leaves else None)
        ys.append(y)
    if reverse:
        ys.reverse()
    return carry, (_stack_tree(ys) if ys and ys[0] is not None else None)


def associative_scan(f, elems, reverse=False, axis=0):
    """Inclusive prefix scan of ``elems`` along ``axis`` with the associative ``f`` (sequential order).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.associative_scan(ops.add, ops.arange(1, 5))).tolist()
        [1, 3, 6, 10]
    """
    leaves, treedef = optree.tree_flatten(elems)
    moved = [ops.moveaxis(leaf, axis, 0) for leaf in leaves]
    steps = ops.shape(moved[0])[0]
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    outputs, running = [], None
    for i in order:
        current = optree.tree_unflatten(treedef, [ops.getitem(leaf, i) for leaf in moved])
        running = current if running is None else f(running, current)
        outputs.append(running)
    if reverse:
        outputs.reverse()
    stacked = _stack_tree(outputs)
    return optree.tree_map(lambda leaf: ops.moveaxis(leaf, 0, axis), stacked)


def map(f, xs):
    """``f`` applied to each slice along the leading axis of ``xs``, results stacked.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.map(ops.sum, ops.convert_to_tensor([[1, 2], [3, 4]]))).tolist()
        [3, 7]
    """
    leaves = optree.tree_leaves(xs)
    return _stack_tree([f(_slice_tree(xs, i)) for i in range(ops.shape(leaves[0])[0])])


def vectorized_map(function, elements):
    """Alias of :func:`map` (Ember runs the function per slice).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.vectorized_map(ops.max, ops.convert_to_tensor([[1, 2], [4, 3]]))).tolist()
        [2, 4]
    """
    return map(function, elements)


def vectorize(pyfunc: Callable, *, excluded=None, signature=None) -> Callable:
    """``pyfunc`` applied elementwise (over the leading axes given by ``signature``), as ``numpy.vectorize``.

    Without ``signature`` the function is called on scalar slices of its broadcast array
    arguments; with a signature such as ``"(n),(n)->()"`` the core dimensions are kept.

    Raises:
        ValueError: a malformed ``signature``.

    Example:
        >>> from ember import ops
        >>> dot = ops.vectorize(lambda a, b: ops.sum(ops.multiply(a, b)), signature='(n),(n)->()')
        >>> ops.to_numpy(dot(ops.convert_to_tensor([[1, 2], [3, 4]]), ops.convert_to_tensor([1, 1]))).tolist()
        [3, 7]
    """
    excluded = set(excluded or ())
    core_ranks = None
    if signature is not None:
        try:
            inputs, _ = signature.replace(" ", "").split("->")
            groups = [g for g in inputs.split(")") if g]
            core_ranks = [len([d for d in g.lstrip(",(").split(",") if d]) for g in groups]
        except ValueError as error:
            raise ValueError(f"vectorize: malformed signature {signature!r}") from error

    def vectorized(*args, **kwargs):
        arrays = [i for i, a in enumerate(args) if i not in excluded]
        converted = list(args)
        for i in arrays:
            converted[i] = args[i] if ops.is_array(args[i]) else ops.convert_to_tensor(args[i])
        ranks = core_ranks or [0] * len(args)
        batch = [ops.shape(converted[i])[:ops.ndim(converted[i]) - ranks[n]] for n, i in enumerate(arrays)]
        shape = max(batch, key=len)

        def call(index):
            sliced = list(converted)
            for n, i in enumerate(arrays):
                if batch[n]:
                    sliced[i] = ops.getitem(converted[i], index[len(shape) - len(batch[n]):])
            return pyfunc(*sliced, **kwargs)

        if not shape:
            return call(())
        results = [call(index) for index in itertools.product(*(range(d) for d in shape))]
        stacked = _stack_tree(results)
        return optree.tree_map(lambda leaf: ops.reshape(leaf, tuple(shape) + tuple(ops.shape(leaf)[1:])), stacked)

    return vectorized
