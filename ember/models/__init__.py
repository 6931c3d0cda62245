"""``ember.models``: the functional ``Model``, ``Sequential`` and (re-exported) ``Input``.

Symbolic tensors live in :mod:`ember.symbolic` (below the layers), so the layers never
import this package and its names load eagerly.

Example:
    >>> from ember.models import Input, Model, Sequential
    >>> Sequential.__name__
    'Sequential'
"""

from __future__ import annotations

from ember.layers.core.input_layer import Input
from ember.models.model import Model
from ember.models.sequential import Sequential

__all__ = ["Input", "Model", "Sequential"]
