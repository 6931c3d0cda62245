"""Top-level ``ember.ops`` names for the protocol ops that live in ``ops.nn``, ``ops.linalg`` and ``ops.stats``.

``keras.ops`` puts ``relu``, ``softmax``, ``solve``, ``median`` ... at its top level; Ember's
backends implement them in sub-namespaces. Each name here forwards to the active
backend's function at call time (so a backend switch or a recording tape is seen) and
carries the protocol's signature and docstring. ``one_hot`` also takes Keras's
``num_classes`` for the protocol's ``depth``.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.to_numpy(ops.one_hot(ops.convert_to_tensor([1]), num_classes=3)).tolist()
    [[0.0, 1.0, 0.0]]
"""

from __future__ import annotations

import inspect
from typing import Callable

from ember import backends, ops
from ember.backends import _spec

_SKIP = {"conv", "conv_transpose", "lstm", "gru", "avg_pool"}  # names Keras does not have at the top


def _forwarder(namespace: str, name: str) -> Callable:
    stub = getattr(_spec.NAMESPACES[namespace], name)

    def forward(*args, **kwargs):
        return getattr(getattr(ops, namespace), name)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = stub.__doc__
    forward.__signature__ = inspect.signature(stub)
    return forward


def forwarders() -> dict[str, Callable]:
    """``{name: forwarder}`` for every ``nn``/``linalg``/``stats`` op absent from the core namespace."""
    core = set(_spec.op_names("core"))
    table = {}
    for namespace in ("nn", "linalg", "stats"):
        for name in _spec.op_names(namespace):
            if name not in core and name not in table:
                table[name] = _forwarder(namespace, name)
    table["conv"] = _forwarder("nn", "conv")
    table["conv_transpose"] = _forwarder("nn", "conv_transpose")
    return table


def one_hot(x=None, num_classes=None, axis=-1, dtype=None, sparse=False, *, indices=None, depth=None):
    """One-hot encoding of integer ``x`` into ``num_classes`` classes (Keras's arguments).

    The protocol's names ``indices``/``depth`` are accepted too, so existing callers of
    ``ops.one_hot(indices, depth)`` keep working.

    Raises:
        ValueError: the class count missing or given twice, or ``sparse=True``.
    """
    if sparse:
        raise ValueError("one_hot: sparse=True is not supported (Ember has no sparse arrays)")
    if (x is None) == (indices is None):
        raise ValueError("one_hot: give the class indices once, as x (or indices)")
    if num_classes is not None and depth is not None:
        raise ValueError("one_hot: give num_classes or depth, not both")
    classes = num_classes if num_classes is not None else depth
    if classes is None:
        raise ValueError("one_hot: num_classes is required")
    native = backends.current().op_tables()["core"]["one_hot"]
    return native(x if indices is None else indices, classes, dtype=dtype, axis=axis)


OVERRIDES = {"one_hot": one_hot}
