"""``ember.ops``: the backend-agnostic op namespace.

Every name here is a copy of the active backend's own function, bound directly into
this module's namespace, so a call costs one Python call over the native op. Switching
backends re-binds the names; code that did ``from ember import ops`` and calls
``ops.add`` sees the switch, and a function taken earlier (``from ember.ops import add``)
forwards its calls to the new backend's op from then on (:mod:`ember.ops._binding`), so
it never computes on a backend that is no longer active.

The protocol (names, signatures, semantics) is :mod:`ember.backends._spec`.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.to_numpy(ops.add(ops.ones((2,)), 1.0)).tolist()
    [2.0, 2.0]
"""

from __future__ import annotations

import pkgutil as _pkgutil
import sys as _sys

from ember import backends as _backends
from ember.ops import _binding
from ember.recorded.op_namespace import OPS as _OPS


def _install(tables: dict) -> None:
    """Bind ``{namespace: {name: function}}`` into the ``ember.ops`` namespaces."""
    for namespace, table in tables.items():
        vars(_MODULES[namespace]).update(table)


# The sub-modules of ``ember.ops``: ``from ember.ops import extra`` asks this module for ``extra`` before
# importing it, which must not select a backend (that would import torch on ``import ember``).
_SUBMODULES = frozenset(info.name for info in _pkgutil.iter_modules(__path__))


def _select_on_first_use(namespace: str, name: str):
    """Module ``__getattr__``: the first op looked up before any backend is active selects one."""
    if name.startswith("_") or name in _SUBMODULES:  # dunders, and sub-modules being imported
        raise AttributeError(name)
    if _backends._active is None:
        _backends.current()  # binds the default backend's functions into every namespace
        module = _MODULES[namespace]
        if name in vars(module):
            return vars(module)[name]
    qualified = "ember.ops" + ("" if namespace == "core" else f".{namespace}")
    raise AttributeError(f"module {qualified!r} has no attribute {name!r}; the op protocol is ember.backends._spec")


# The namespace sub-modules import ``_select_on_first_use``, so they come after it; the
# module ``__getattr__`` comes after them, so importing them selects no backend.
from ember.ops import linalg, nn, random, stats  # noqa: E402  (namespaces filled below)

_THIS = _sys.modules[__name__]
_MODULES = {"core": _THIS, "linalg": linalg, "nn": nn, "stats": stats, "random": random}
_binding.set_namespaces(_MODULES)


def __getattr__(name: str):
    return _select_on_first_use("core", name)


def _on_backend_change(backend) -> None:
    _install(_binding.bind(backend, _composites.bound_tables(backend)))


def _rebind(backend) -> None:
    """Bind ``backend``'s plain (unrecorded) functions again, e.g. after the last tape stops."""
    _install(_binding.bind(backend, _composites.bound_tables(backend)))


# The ops written once over the namespaces above (they call ``ember.ops`` at call time): the
# composites of the protocol ops a backend may leave out, the top-level forwarders to ``nn``/
# ``linalg``/``stats`` ops, and the Keras ops composed from the protocol.
from ember.ops import extra as _extra  # noqa: E402
from ember.ops.extra import composites as _composites  # noqa: E402
from ember.ops.extra import forward as _forward  # noqa: E402

vars(_THIS).update(_forward.forwarders())
vars(_THIS).update(_extra.EXPORTS)

vars(random).update(_extra.RANDOM_EXPORTS)

from ember.ops import image  # noqa: E402, F401  (Keras's image ops, written over the namespace above)

_backends.on_backend_change(_on_backend_change)
# Code below ember.ops that must call an op as a user would (the MLX backend's mx.array
# operator patches, while a tape records) finds this module through the hook, not an import.
_OPS.install(_THIS)

from ember.ops import numpy  # noqa: E402,F401  (Keras's path keras.ops.numpy: the ops above)
