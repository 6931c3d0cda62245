"""``ember.models``: symbolic inputs, the functional ``Model`` and ``Sequential``, ``clone_model``,
``model_from_json`` and Keras's ``load_model``/``save_model`` (from :mod:`ember.saving`).

Names are loaded on first use (an eager import here would import the layers and the
training package with it; nothing below the models imports this package).

Example:
    >>> from ember.models import Model, Sequential
    >>> Sequential.__name__
    'Sequential'
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Input": "ember.layers.core.input_layer",
    "Model": "ember.models.model",
    "Sequential": "ember.models.sequential",
    "clone_model": "ember.models.cloning",
    "model_from_json": "ember.models.json_config",
    "load_model": "ember.saving.model_io",
    "save_model": "ember.saving.model_io",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'ember.models' has no attribute {name!r}")
