"""Compatibility path: symbolic tensors and nodes now live in :mod:`ember.symbolic`. Layers
record graph nodes on symbolic tensors, so these types sit below the layers at the
bottom of the import graph. Every name (private ones included) is looked up live in
``ember.symbolic``. Ember's own modules must import ``ember.symbolic`` (an import-
linter contract in ``pyproject.toml`` enforces it).

Example:
    >>> import ember.symbolic
    >>> from ember.models import symbolic
    >>> symbolic.SymbolicTensor is ember.symbolic.SymbolicTensor
    True
"""

from __future__ import annotations

from typing import Any

from ember import symbolic as _target


def __getattr__(name: str) -> Any:
    return getattr(_target, name)


def __dir__() -> list:
    return dir(_target)
