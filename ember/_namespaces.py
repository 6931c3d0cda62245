"""Keras's namespaces at Ember's top level, each with one home in ``ember.training``.

``ember.losses``, ``ember.metrics``, ``ember.optimizers``, ``ember.callbacks`` and ``ember.data``
(Keras's ``keras.losses`` and the rest) are the very module objects ``ember.training.losses`` and so
on: DESIGN.md's layout puts losses, metrics, optimizers, callbacks and data adapters in ``training``,
and a namespace has one module, not a forwarding copy. :func:`install` puts each one in
``sys.modules`` under its public name too, with every submodule of theirs (``import ember`` loads them
all), so ``import ember.losses``, ``from ember.losses import MeanSquaredError`` and ``import
ember.optimizers.schedules`` find the home module object, never a second copy of its file. Nothing
is looked up by a string and no import hook is installed: the aliases are entries for modules that
are already loaded (``tests/test_namespaces.py`` checks that every submodule is). Type checkers and
IDEs read the stubs ``ember/losses.pyi`` and the others, which say the same.

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

import sys
import types

from ember.training import callbacks, data, losses, metrics, optimizers

# Each public namespace and its one module object (named by its home, ``ember.training.<name>``).
NAMESPACES: dict[str, types.ModuleType] = {
    "ember.callbacks": callbacks,
    "ember.data": data,
    "ember.losses": losses,
    "ember.metrics": metrics,
    "ember.optimizers": optimizers,
}


def aliases() -> dict[str, types.ModuleType]:
    """Each public name and its module: the namespaces and every loaded submodule of theirs.

    Example:
        >>> import ember
        >>> from ember._namespaces import aliases
        >>> aliases()["ember.optimizers.schedules"].__name__
        'ember.training.optimizers.schedules'
    """
    found = {}
    for public, module in NAMESPACES.items():
        home = module.__name__
        found[public] = module
        for name, submodule in list(sys.modules.items()):
            if name.startswith(home + ".") and submodule is not None:
                found[public + name[len(home):]] = submodule
    return found


def install() -> None:
    """Register the public namespaces and their submodules in ``sys.modules`` (idempotent).

    Example:
        >>> import sys
        >>> from ember import _namespaces
        >>> _namespaces.install()
        >>> sys.modules["ember.metrics"] is sys.modules["ember.training.metrics"]
        True
    """
    sys.modules.update(aliases())
