"""Keras's serialization helpers: registration, custom-object scopes, (de)serialization.

The registry is Ember's own (:mod:`ember.serialization`); Keras's names for it are
:func:`register_keras_serializable` (Ember's ``register_serializable``, the same ``package>name``
keys), :func:`get_custom_objects`, :class:`CustomObjectScope` / :func:`custom_object_scope`,
:func:`get_registered_name` and :func:`get_registered_object`, re-exported here and from
``ember.saving`` and ``ember.utils``, where Keras has them.

``deserialize_keras_object`` takes Ember's registry form (``{"class_name": "ember>Dense", "config":
...}``) and Keras 3's form (``{"module": "keras.layers", "class_name": "Dense", ...}``, custom
objects by their ``registered_name``); names resolve through the registry, the scopes and
:func:`get_custom_objects` only: no code is ever read from a config.

Example:
    >>> from ember import layers
    >>> from ember.saving import deserialize_keras_object, serialize_keras_object
    >>> data = serialize_keras_object(layers.Dense(2, name="d"))
    >>> data["class_name"], deserialize_keras_object(data).units
    ('ember>Dense', 2)
    >>> keras_data = {"module": "keras.layers", "class_name": "Dense", "registered_name": None,
    ...               "config": {"name": "k", "units": 3}}
    >>> deserialize_keras_object(keras_data).units
    3
"""

from __future__ import annotations

from typing import Any

from ember import serialization
from ember.saving.keras_format.layer_config import ember_layer_class, ember_layer_config
from ember.saving.keras_format.model_config import model_from_keras
from ember.saving.keras_format.objects import from_keras, is_keras_object
from ember.serialization import CustomObjectScope as CustomObjectScope
from ember.serialization import custom_object_scope as custom_object_scope
from ember.serialization import get_custom_objects as get_custom_objects
from ember.serialization import get_registered_name as get_registered_name
from ember.serialization import get_registered_object as get_registered_object
from ember.serialization import is_keras_own
from ember.serialization import register_keras_serializable as register_keras_serializable
from ember.serialization import register_serializable as register_serializable

MODEL_CLASSES = ("Sequential", "Functional", "Model")


def serialize_keras_object(obj: Any) -> Any:
    """JSON-compatible data for ``obj``: Ember's registry form, which :func:`deserialize_keras_object`
    (and ``ember.serialization.deserialize``) turns back into an equal object.

    Example:
        >>> from ember import initializers
        >>> from ember.saving import serialize_keras_object
        >>> serialize_keras_object(initializers.Constant(2.0))
        {'class_name': 'ember>Constant', 'config': {'value': 2.0}}
    """
    return serialization.serialize(obj)


def _is_keras_layer(config: dict) -> bool:
    """A Keras-form config of a layer: one of Keras's, or a custom class Ember knows as a layer."""
    if str(config.get("module", "")).startswith("keras.layers"):
        return True
    return not is_keras_own(config.get("module"), config.get("registered_name")) and \
        ember_layer_class(config) is not None


def deserialize_keras_object(config: Any, custom_objects: dict | None = None, safe_mode: bool = True,
                             **kwargs: Any) -> Any:
    """The object ``config`` describes (Ember's or Keras 3's serialized form).

    A string resolves as Keras resolves one (a function saved by name): the custom object of that
    name when there is one, else the string itself.

    Args:
        config: serialized data.
        custom_objects: extra ``{name: class or function}`` for this call.
        safe_mode: Keras's flag for ``lambda`` bytecode: Ember never executes code from a config
            whatever its value.
        **kwargs: none accepted (Keras's ``module_objects``/``printable_module_name`` have no use here).

    Raises:
        TypeError: unexpected keyword arguments.
        ValueError: an unknown name (the message says what to register).

    Example:
        >>> from ember.saving import deserialize_keras_object
        >>> def cube(x):
        ...     return x ** 3
        >>> deserialize_keras_object("cube", custom_objects={"cube": cube}) is cube
        True
    """
    del safe_mode  # nothing to relax: no code is read from configs
    if kwargs:
        raise TypeError(f"deserialize_keras_object: unexpected keyword argument(s) {sorted(kwargs)}")
    with serialization.custom_object_scope(custom_objects):
        if isinstance(config, str):
            found = get_registered_object(config)
            return config if found is None else found
        if is_keras_object(config) and "module" in config:
            if config["class_name"] in MODEL_CLASSES:
                return model_from_keras(config)
            if _is_keras_layer(config):
                return serialization.deserialize(ember_layer_config(config))
            return serialization.deserialize(from_keras(config, "deserialize_keras_object"))
        return serialization.deserialize(config)
