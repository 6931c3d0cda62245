"""Compatibility path: the serialization registry now lives in :mod:`ember.serialization`.
The registry is a foundation concept (initializers, layers, losses and the saving code
all register into it), so it sits at the bottom of the import graph. Every name (private
ones included) is looked up live in ``ember.serialization``, so code and registrations
made through either path are shared. Ember's own modules must import
``ember.serialization`` (an import-linter contract in ``pyproject.toml`` enforces it).

Example:
    >>> import ember.serialization
    >>> from ember.saving import serialization
    >>> serialization.register_serializable is ember.serialization.register_serializable
    True
"""

from __future__ import annotations

from typing import Any

from ember import serialization as _target


def __getattr__(name: str) -> Any:
    return getattr(_target, name)


def __dir__() -> list:
    return dir(_target)
