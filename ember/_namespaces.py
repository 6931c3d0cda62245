"""Keras's namespaces at Ember's top level, each with one home in ``ember.training``.

``ember.losses``, ``ember.metrics``, ``ember.optimizers``, ``ember.callbacks`` and ``ember.data``
(Keras's ``keras.losses`` and the rest) are the very module objects ``ember.training.losses`` and so
on: DESIGN.md's layout puts losses, metrics, optimizers, callbacks and data adapters in ``training``,
and a namespace has one module, not a forwarding copy. :func:`install` puts each one in
``sys.modules`` under its public name too, so ``import ember.losses`` and ``from ember.losses import
MeanSquaredError`` find it, and puts :class:`SubmoduleAliases` first on ``sys.meta_path`` so that a
submodule reached through the public name (``import ember.optimizers.schedules``) is the same module
object as under its home name, never a second copy of its file. Type checkers and IDEs read the stubs
``ember/losses.pyi`` and the others, which say the same.

Example:
    >>> import ember
    >>> import ember.losses
    >>> ember.losses is ember.training.losses
    True
    >>> import ember.optimizers.schedules
    >>> ember.optimizers.schedules is ember.training.optimizers.schedules
    True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence

from ember.training import callbacks, data, losses, metrics, optimizers

# Each public namespace and its one module object (named by its home, ``ember.training.<name>``).
NAMESPACES: dict[str, types.ModuleType] = {
    "ember.callbacks": callbacks,
    "ember.data": data,
    "ember.losses": losses,
    "ember.metrics": metrics,
    "ember.optimizers": optimizers,
}


def home_name(fullname: str) -> str | None:
    """The home of a module reached through a public namespace (``"ember.optimizers.schedules"`` is
    ``"ember.training.optimizers.schedules"``); None for any other name.

    Example:
        >>> from ember._namespaces import home_name
        >>> home_name("ember.optimizers.schedules"), home_name("ember.layers")
        ('ember.training.optimizers.schedules', None)
    """
    for public, module in NAMESPACES.items():
        if fullname == public or fullname.startswith(public + "."):
            return module.__name__ + fullname[len(public):]
    return None


class SubmoduleAliases(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The import hook that gives ``ember.<namespace>.<submodule>`` the module object of
    ``ember.training.<namespace>.<submodule>`` (importing it under that home name first if need be).

    Example:
        >>> import sys
        >>> from ember._namespaces import SubmoduleAliases
        >>> any(isinstance(finder, SubmoduleAliases) for finder in sys.meta_path)  # once ember is imported
        True
    """

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        """A spec whose loader returns the home module for a name under a public namespace; else None."""
        home = home_name(fullname)
        return None if home is None else importlib.machinery.ModuleSpec(fullname, self, loader_state=home)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        """The home module itself; its own spec is kept for :meth:`exec_module` to put back."""
        module = importlib.import_module(spec.loader_state)
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing runs again: give the module back its home spec (the import system set the alias's)."""
        alias_spec = module.__spec__
        module.__spec__ = alias_spec.loader_state if alias_spec is not None else None


def install() -> None:
    """Register the public namespaces in ``sys.modules`` and the submodule hook (idempotent).

    Example:
        >>> import sys
        >>> from ember import _namespaces
        >>> _namespaces.install()
        >>> sys.modules["ember.metrics"] is sys.modules["ember.training.metrics"]
        True
    """
    sys.modules.update(NAMESPACES)
    if not any(isinstance(finder, SubmoduleAliases) for finder in sys.meta_path):
        sys.meta_path.insert(0, SubmoduleAliases())
