"""Ember's model classes as the Keras bridge sees them: by registered name, not by import.

``ember.saving`` sits below ``ember.models`` in the import layers (ARCHITECTURE.md), so the
bridge reaches ``Model`` and ``Sequential`` through the serialization registry, as
``load_model`` rebuilds any model, and recognises models by class through the same lookup.

Example:
    >>> import ember
    >>> from ember.saving.keras_format import model_classes
    >>> model = ember.Sequential([ember.Input((2,))])
    >>> model_classes.is_model(model), model_classes.is_sequential(model)
    (True, True)
"""

from __future__ import annotations

from typing import Any

from ember.serialization import get_registered_class

MODEL = "ember>Model"
SEQUENTIAL = "ember>Sequential"


def model_class() -> type:
    """``ember.Model`` (the functional model)."""
    return get_registered_class(MODEL)


def sequential_class() -> type:
    """``ember.Sequential``."""
    return get_registered_class(SEQUENTIAL)


def is_model(value: Any) -> bool:
    """Whether ``value`` is an Ember model (functional or Sequential)."""
    return isinstance(value, model_class())


def is_sequential(value: Any) -> bool:
    """Whether ``value`` is an ``ember.Sequential``."""
    return isinstance(value, sequential_class())
