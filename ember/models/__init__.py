"""``ember.models``: symbolic inputs, the functional ``Model`` and ``Sequential``, ``clone_model``,
``model_from_json`` and Keras's ``load_model``/``save_model`` (from :mod:`ember.saving`).

Names are loaded on first use. Nothing in ember below the models imports this package any
more (symbolic tensors live in :mod:`ember.symbolic`), but code written against the old
layout may still import the compatibility path ``ember.models.symbolic`` from a layer
module, and that import runs this ``__init__``: an eager one would import the layers
while they are being imported.

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
