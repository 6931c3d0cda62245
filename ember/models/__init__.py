"""``ember.models``: symbolic inputs, the functional ``Model`` and ``Sequential``.

Names are loaded on first use: layers import :mod:`ember.models.symbolic`, and models
import layers, so eager imports here would be circular.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Input": "ember.layers.core.input_layer",
    "Model": "ember.models.model",
    "Sequential": "ember.models.sequential",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'ember.models' has no attribute {name!r}")
