"""``layers.serialize`` / ``layers.deserialize``: a layer to and from its ``{"class_name", "config"}`` dict.

Example:
    >>> from ember import layers
    >>> config = layers.serialize(layers.Dense(3, name="d"))
    >>> config["class_name"], layers.deserialize(config).units
    ('ember>Dense', 3)
"""

from __future__ import annotations

from ember import serialization
from ember.layers.layer import Layer


def serialize(layer: Layer) -> dict:
    """``{"class_name": registered name, "config": layer.get_config()}``.

    Raises:
        TypeError: ``layer`` is not a Layer.

    Example:
        >>> from ember import layers
        >>> layers.serialize(layers.ReLU(name="r"))["class_name"]
        'ember>ReLU'
    """
    if not isinstance(layer, Layer):
        raise TypeError(f"layers.serialize: expected a Layer, received {type(layer).__name__}")
    return serialization.serialize(layer)


def deserialize(config: dict, custom_objects: dict | None = None) -> Layer:
    """The layer described by ``config`` (``class_name`` registered, or bare as Keras writes it: ``"Dense"``).

    Raises:
        ValueError: a config without ``class_name``/``config`` or naming an unknown class.

    Example:
        >>> from ember import layers
        >>> layers.deserialize({"class_name": "LeakyReLU", "config": {"negative_slope": 0.1}}).negative_slope
        0.1
    """
    if not isinstance(config, dict) or "class_name" not in config or "config" not in config:
        raise ValueError(f"layers.deserialize: expected a dict with 'class_name' and 'config', received {config!r}")
    with serialization.custom_object_scope(custom_objects):
        layer = serialization.deserialize({"class_name": config["class_name"], "config": config["config"]})
    if not isinstance(layer, Layer):
        raise ValueError(f"layers.deserialize: {config['class_name']!r} is not a layer class")
    return layer
