"""Top-level ``ember.ops`` names for the protocol ops that live in ``ops.nn``, ``ops.linalg`` and ``ops.stats``.

``keras.ops`` puts ``relu``, ``softmax``, ``solve``, ``median`` ... at its top level; Ember's
backends implement them in sub-namespaces. Each name here forwards to the active
backend's function at call time (so a backend switch or a recording tape is seen) and
carries the protocol's signature and docstring.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.to_numpy(ops.relu(ops.convert_to_tensor([-1.0, 1.0]))).tolist()
    [0.0, 1.0]
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from ember import ops
from ember.backends import _spec

_SKIP = {"conv", "conv_transpose", "lstm", "gru", "avg_pool"}  # names Keras does not have at the top


def _forwarder(namespace: str, name: str) -> Callable:
    stub = getattr(_spec.NAMESPACES[namespace], name)

    def forward(*args, **kwargs):
        return getattr(getattr(ops, namespace), name)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = stub.__doc__
    forward.__signature__ = inspect.signature(stub)  # type: ignore[attr-defined]  # read by inspect.signature
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
