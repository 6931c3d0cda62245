"""``ember.models``: symbolic inputs, the functional ``Model`` and ``Sequential``, ``clone_model``,
``model_from_json`` and Keras's ``load_model``/``save_model`` (from :mod:`ember.saving`).

Example:
    >>> from ember.models import Model, Sequential
    >>> Sequential.__name__
    'Sequential'
"""

from __future__ import annotations

# Re-exported names (``as`` marks them public for linters and type checkers).
from ember.layers.core.input_layer import Input as Input
from ember.models.cloning import clone_model as clone_model
from ember.models.json_config import model_from_json as model_from_json
from ember.models.model import Model as Model
from ember.models.sequential import Sequential as Sequential
from ember.saving.model_io import load_model as load_model
from ember.saving.model_io import save_model as save_model

__all__ = sorted(["Input", "Model", "Sequential", "clone_model", "model_from_json", "load_model", "save_model"])
