"""The ``ember.ops`` namespace as seen from below it: a hook that ``ember.ops`` fills in at import.

Code under ``ember.ops`` in the import layers sometimes has to call the op a user would
call, looked up in ``ember.ops`` at call time (so the recorder a tape bound there runs):
the MLX backend re-binds ``mx.array``'s Python operators to ``ember.ops`` functions while
a tape records (:mod:`ember.backends.mlx._operators`). It must not import ``ember.ops``
(a backend imports nothing above the op protocol), so ``ember.ops`` installs itself in
:data:`OPS` when it is imported and such code reads :meth:`OpNamespace.module`.

Example:
    >>> import ember.ops
    >>> from ember.recorded.op_namespace import OPS
    >>> OPS.module() is ember.ops
    True
"""

from __future__ import annotations

from types import ModuleType


class OpNamespace:
    """Holds the ``ember.ops`` module once it is imported (one instance: :data:`OPS`)."""

    __slots__ = ("_module",)

    def __init__(self) -> None:
        self._module: ModuleType | None = None

    def install(self, module: ModuleType) -> None:
        """Called once by ``ember.ops`` with itself."""
        self._module = module

    def module(self) -> ModuleType:
        """The ``ember.ops`` module; RuntimeError before ``ember.ops`` is imported."""
        if self._module is None:
            raise RuntimeError("ember.ops is not imported yet: import ember (or ember.ops) before recording ops")
        return self._module


OPS = OpNamespace()
