"""``ember.ops``: the backend-agnostic op namespace.

Every name here is the active backend's own function, bound directly into this
module's namespace, so a call costs one Python call over the native op. Switching
backends re-binds the names; code that did ``from ember import ops`` and calls
``ops.add`` sees the switch. (``from ember.ops import add`` binds one backend's
function for good: prefer ``ops.add``.)

The protocol (names, signatures, semantics) is :mod:`ember.ops._spec`.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.to_numpy(ops.add(ops.ones((2,)), 1.0)).tolist()
    [2.0, 2.0]
"""

from __future__ import annotations

import sys

from ember.ops import linalg, nn, random, stats  # noqa: F401  (namespaces filled below)

_THIS = sys.modules[__name__]
_MODULES = {"core": _THIS, "linalg": linalg, "nn": nn, "stats": stats, "random": random}


def _install(tables: dict) -> None:
    """Bind ``{namespace: {name: function}}`` into the ``ember.ops`` namespaces."""
    for namespace, table in tables.items():
        vars(_MODULES[namespace]).update(table)


def _on_backend_change(backend) -> None:
    _install(backend.op_tables())


from ember import backends as _backends  # noqa: E402

_backends.on_backend_change(_on_backend_change)
