"""``model_from_json``: a model from the JSON of ``model.to_json()`` (Ember's config) or of
Keras 3's ``model.to_json()`` (translated by :mod:`ember.saving.keras_format`).

Only registered classes are rebuilt; no code is read from the JSON.

Example:
    >>> import ember
    >>> from ember import layers
    >>> from ember.models import model_from_json
    >>> model = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="d")], name="small")
    >>> twin = model_from_json(model.to_json())
    >>> twin.name, twin.layers[0].units
    ('small', 2)
"""

from __future__ import annotations

import json
from typing import Any

from ember.saving.keras_format.model_config import model_from_keras
from ember.serialization import custom_object_scope, deserialize

KERAS_MODEL_CLASSES = ("Sequential", "Functional", "Model")


def model_from_json(json_string: str, custom_objects: dict | None = None) -> Any:
    """The (unbuilt) model a JSON config describes.

    Raises:
        TypeError: ``json_string`` is not a string.
        ValueError: invalid JSON, not a model config, or an unknown class (named).

    Example:
        >>> import json
        >>> keras_json = json.dumps({"module": "keras", "class_name": "Sequential", "config": {"name": "k", "layers": [
        ...     {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [None, 2]}},
        ...     {"module": "keras.layers", "class_name": "Dense", "config": {"name": "out", "units": 1}}]}})
        >>> model = model_from_json(keras_json)  # Keras's to_json() output works too
        >>> model.name, model.layers[0].units
        ('k', 1)
    """
    if not isinstance(json_string, (str, bytes)):
        raise TypeError(f"model_from_json: expected a JSON string, received {type(json_string).__name__}")
    try:
        config = json.loads(json_string)
    except json.JSONDecodeError as error:
        raise ValueError(f"model_from_json: invalid JSON ({error})") from None
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("model_from_json: the JSON is not a model config (no class_name)")
    with custom_object_scope(custom_objects):
        if config["class_name"] in KERAS_MODEL_CLASSES and "module" in config:
            return model_from_keras(config)
        return deserialize({"class_name": config["class_name"], "config": config["config"]})
