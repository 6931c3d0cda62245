"""Compatibility path: the backend check of a model's state now lives in
:mod:`ember.training.backend_check` (the training API uses it, and ``training`` sits
below ``models`` in the import graph). Every name (private ones included) is looked up
live in that module.

Example:
    >>> import ember.training.backend_check
    >>> from ember.models import backend_check
    >>> backend_check.move_model is ember.training.backend_check.move_model
    True
"""

from __future__ import annotations

from typing import Any

from ember.training import backend_check as _target


def __getattr__(name: str) -> Any:
    return getattr(_target, name)


def __dir__() -> list:
    return dir(_target)
