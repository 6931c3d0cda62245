"""Keras's serialization helpers: registration, custom-object scopes, (de)serialization.

``register_keras_serializable`` is Ember's ``register_serializable`` under Keras's name (same
``package>name`` keys). ``deserialize_keras_object`` takes Ember's registry form
(``{"class_name": "ember>Dense", "config": ...}``) and Keras 3's form (``{"module":
"keras.layers", "class_name": "Dense", ...}``); names resolve through the registry, the scopes
and :func:`get_custom_objects` only: no code is ever read from a config.

Example:
    >>> from ember import layers
    >>> from ember.utils import deserialize_keras_object, serialize_keras_object
    >>> data = serialize_keras_object(layers.Dense(2, name="d"))
    >>> data["class_name"], deserialize_keras_object(data).units
    ('ember>Dense', 2)
    >>> keras_data = {"module": "keras.layers", "class_name": "Dense", "registered_name": None,
    ...               "config": {"name": "k", "units": 3}}
    >>> deserialize_keras_object(keras_data).units
    3
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ember import serialization
from ember.saving.keras_format.layer_config import ember_layer_config
from ember.saving.keras_format.model_config import model_from_keras
from ember.saving.keras_format.objects import from_keras, is_keras_object

get_custom_objects = serialization.get_custom_objects
register_serializable = serialization.register_serializable
MODEL_CLASSES = ("Sequential", "Functional", "Model")


def register_keras_serializable(package: str = "Custom", name: str | None = None) -> Any:
    """Keras's name for :func:`ember.saving.register_serializable`: make a class or function
    loadable from configs as ``package>name``."""
    return serialization.register_serializable(package=package, name=name)


@contextlib.contextmanager
def custom_object_scope(*objects: dict | None) -> Iterator[None]:
    """Resolve the names in the given dicts while deserializing inside the block.

    Example:
        >>> from ember.utils import custom_object_scope, get_registered_object
        >>> def swish2(x):
        ...     return x
        >>> with custom_object_scope({"swish2": swish2}):
        ...     get_registered_object("swish2") is swish2
        True
    """
    merged: dict = {}
    for scope in objects:
        if scope is not None and not isinstance(scope, dict):
            raise TypeError(f"custom_object_scope: expected dicts of name -> object, received {scope!r}")
        merged.update(scope or {})
    with serialization.custom_object_scope(merged):
        yield


def get_registered_name(obj: Any) -> str:
    """The ``package>name`` key of a registered class or function (its ``__name__`` otherwise)."""
    key = getattr(obj, "_ember_registered_name", None)
    return key if key is not None else getattr(obj, "__name__", type(obj).__name__)


def get_registered_object(name: str, custom_objects: dict | None = None, module_objects: dict | None = None) -> Any:
    """The class or function registered (or in scope) under ``name``, or None."""
    for table in (custom_objects, module_objects):
        if table and name in table:
            return table[name]
    try:
        return serialization.get_registered_class(name)
    except ValueError:
        return None


def serialize_keras_object(obj: Any) -> Any:
    """JSON-compatible data for ``obj`` (Ember's registry form; see :func:`ember.saving.serialization.serialize`)."""
    return serialization.serialize(obj)


def deserialize_keras_object(config: Any, custom_objects: dict | None = None, safe_mode: bool = True,
                             **kwargs: Any) -> Any:
    """The object ``config`` describes (Ember's or Keras 3's serialized form).

    Args:
        config: serialized data.
        custom_objects: extra ``{name: class or function}`` for this call.
        safe_mode: Keras's flag for ``lambda`` bytecode: Ember never executes code from a config
            whatever its value.
        **kwargs: none accepted (Keras's ``module_objects``/``printable_module_name`` have no use here).

    Raises:
        TypeError: unexpected keyword arguments.
        ValueError: an unknown name (the message says what to register).
    """
    del safe_mode  # nothing to relax: no code is read from configs
    if kwargs:
        raise TypeError(f"deserialize_keras_object: unexpected keyword argument(s) {sorted(kwargs)}")
    with serialization.custom_object_scope(custom_objects):
        if is_keras_object(config) and "module" in config:
            if config["class_name"] in MODEL_CLASSES:
                return model_from_keras(config)
            if str(config.get("module", "")).startswith("keras.layers"):
                return serialization.deserialize(ember_layer_config(config))
            return serialization.deserialize(from_keras(config, "deserialize_keras_object"))
        return serialization.deserialize(config)
