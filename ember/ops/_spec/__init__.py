"""Compatibility path: the op protocol now lives in :mod:`ember.backends._spec`.

The protocol is what every backend implements, so it sits in the backends layer, below
:mod:`ember.ops` (which dispatches to it); see ARCHITECTURE.md. Every name is looked up
live in ``ember.backends._spec``; ember's own modules import that path.

Example:
    >>> import ember.backends._spec
    >>> from ember.ops import _spec
    >>> _spec.NAMESPACES is ember.backends._spec.NAMESPACES
    True
"""

from __future__ import annotations

from typing import Any

from ember.backends import _spec as _target


def __getattr__(name: str) -> Any:
    return getattr(_target, name)


def __dir__() -> list:
    return dir(_target)
