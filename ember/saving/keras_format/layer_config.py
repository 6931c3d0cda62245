"""One layer's Keras 3 config translated to Ember's and back.

Ember's layers take Keras's argument names, so a layer translates argument for argument:
nested objects through :mod:`ember.saving.keras_format.objects`, sub-layers
(``Bidirectional``, ``TimeDistributed``) recursively, dtype policies to dtype names.
Keras layers without an Ember class, and ``Lambda`` layers (their Python bytecode is never
run), are refused with an error naming them.

Example:
    >>> from ember.saving.keras_format import layer_config
    >>> entry = {"module": "keras.layers", "class_name": "Dense", "registered_name": None,
    ...          "config": {"name": "out", "units": 3, "activation": "relu", "quantization_config": None,
    ...                     "dtype": {"module": "keras", "class_name": "DTypePolicy",
    ...                               "config": {"name": "float32"}, "registered_name": None}}}
    >>> layer = layer_config.layer_from_keras(entry)
    >>> type(layer).__name__, layer.name, layer.units, layer.activation
    ('Dense', 'out', 3, 'relu')
    >>> layer_config.layer_to_keras(layer)["config"]["units"]
    3
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember import dtypes
from ember.layers.core.input_layer import InputLayer
from ember.layers.layer import Layer
from ember.saving.keras_format.objects import (
    KerasFormatError,
    accepted_arguments,
    drop_unknown,
    dtype_from_policy,
    from_keras,
    keras_dtype_policy,
    to_keras,
)
from ember.serialization import (
    deserialize,
    get_registered_class,
    registered_name,
)

# Keras arguments Ember's layers lack, with the value that means "feature off" (besides None/False).
# (data_format: an Ember layer without the argument works channels-last, Keras's default.)
KERAS_OFF_VALUES = {"renorm_momentum": 0.99, "data_format": "channels_last"}
# Ember arguments Keras's layers lack: left out of a .keras file when they hold their "off" value.
EMBER_ONLY = {"time_major": False, "cell": None}
# (Keras 3.15's SpatialDropout1D takes neither data_format nor trainable.)
EMBER_ONLY_BY_CLASS = {"SpatialDropout1D": {"data_format": "channels_last", "trainable": True}}
# Model classes Keras writes (handled by the model converter).
MODEL_CLASSES = ("Sequential", "Functional", "Model")
# Sub-layer arguments (a Keras layer dict in Keras's config, a registry dict in Ember's).
SUBLAYER_KEYS = ("layer", "backward_layer")


def keras_layer_classes(entry: dict) -> list[Any]:
    """Every Keras layer class a layer entry uses (itself, sub-layers, nested models' layers), as the
    file's JSON gives them (class names; None where an entry has none)."""
    names = [entry.get("class_name")]
    config = entry.get("config") or {}
    for key in SUBLAYER_KEYS:
        if isinstance(config.get(key), dict):
            names.extend(keras_layer_classes(config[key]))
    for child in config.get("layers", []) if entry.get("class_name") in MODEL_CLASSES else []:
        names.extend(keras_layer_classes(child))
    return names


def ember_layer_class(class_name: str, registered: Any = None) -> type | None:
    """The Ember layer class for a Keras class name (None when Ember has none)."""
    for key in [registered] if registered else [f"ember>{class_name}"]:
        try:
            cls = get_registered_class(key)
        except ValueError:
            continue
        if isinstance(cls, type) and issubclass(cls, Layer):
            return cls
    return None


def check_supported(entries: list[dict]) -> None:
    """Raise one error naming every Keras layer class Ember cannot rebuild.

    Raises:
        KerasFormatError: ``Lambda`` layers (bytecode is never executed) or classes Ember lacks.
    """
    used = [name for entry in entries for name in keras_layer_classes(entry)]
    if "Lambda" in used:
        raise KerasFormatError("the file holds a Lambda layer, whose function is stored as Python bytecode: "
                               "Ember never executes code from a file (Keras's safe_mode semantics); "
                               "replace it with a registered custom layer")
    missing = sorted({n for n in used if n not in MODEL_CLASSES and ember_layer_class(n) is None})
    if missing:
        raise KerasFormatError(f"the file uses Keras layer(s) Ember does not have: {missing}; register an Ember "
                               "layer under each name (ember.utils.register_keras_serializable) to load it")


def _input_layer_config(config: dict, where: str) -> dict:
    batch_shape = config.get("batch_shape")
    if batch_shape is None:
        raise KerasFormatError(f"{where}: an InputLayer without batch_shape")
    dtype = dtype_from_policy(config.get("dtype"), where)
    for flag in ("sparse", "ragged", "optional"):
        if config.get(flag):
            raise KerasFormatError(f"{where}: {flag} inputs are not supported by Ember")
    return {"name": config.get("name"), "shape": tuple(batch_shape[1:]), "batch_size": batch_shape[0],
            "dtype": dtype}


def ember_layer_config(entry: dict) -> dict:
    """A Keras layer dict as Ember's registry dict ``{"class_name": "ember>...", "config": ...}``."""
    class_name = entry["class_name"]
    config = dict(entry.get("config") or {})
    where = f"layer {config.get('name')!r} ({class_name})"
    cls = ember_layer_class(class_name, entry.get("registered_name"))
    if cls is None:
        raise KerasFormatError(f"{where}: Ember has no {class_name} layer")
    if issubclass(cls, InputLayer):
        return {"class_name": registered_name(cls), "config": _input_layer_config(config, where)}
    converted: dict[str, Any] = {}
    for key, value in config.items():
        if key in SUBLAYER_KEYS and isinstance(value, dict):
            converted[key] = ember_layer_config(value)
        elif key == "dtype":
            converted[key] = dtype_from_policy(value, where)
        else:
            converted[key] = from_keras(value, f"{where}.{key}")
    converted = drop_unknown(converted, _fields(cls), where, KERAS_OFF_VALUES)
    return {"class_name": registered_name(cls), "config": converted}


def _fields(cls: type) -> set[str] | None:
    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls)}
    return accepted_arguments(cls)


def layer_from_keras(entry: dict) -> Layer:
    """The Ember layer for one Keras layer dict (not a model)."""
    return deserialize(ember_layer_config(entry))


def _keras_config(layer_entry: dict, where: str) -> dict:
    """An Ember registry dict (a layer's) as Keras's config dict values."""
    config = {}
    ember_only = {**EMBER_ONLY, **EMBER_ONLY_BY_CLASS.get(layer_entry["class_name"].rpartition(">")[2], {})}
    for key, value in layer_entry["config"].items():
        if key in ember_only and value == ember_only[key]:
            continue
        if key in ember_only:
            raise KerasFormatError(f"{where}: Ember's {key}={value!r} cannot be expressed in a Keras file")
        if key in SUBLAYER_KEYS and isinstance(value, dict) and "class_name" in value:
            config[key] = keras_layer_entry(value)
        elif key == "dtype":
            config[key] = keras_dtype_policy(value or dtypes.floatx())
        else:
            config[key] = to_keras(value, f"{where}.{key}")
    return config


def keras_layer_entry(layer_entry: dict) -> dict:
    """An Ember layer's registry dict as a Keras layer dict (``module``/``class_name``/``config``)."""
    package, _, class_name = layer_entry["class_name"].rpartition(">")
    where = f"layer {layer_entry['config'].get('name')!r} ({class_name})"
    if class_name == "Lambda":
        raise KerasFormatError(f"{where}: Lambda layers cannot be written to a .keras file (Keras would need the "
                               "function's bytecode); use Ember's .h5 format")
    return {"module": "keras.layers" if package == "ember" else "custom", "class_name": class_name,
            "config": _keras_config(layer_entry, where),
            "registered_name": None if package == "ember" else layer_entry["class_name"]}


def layer_to_keras(layer: Layer) -> dict:
    """The Keras layer dict of an Ember layer (InputLayers: Keras's ``batch_shape`` form)."""
    if isinstance(layer, InputLayer):
        dtype = dtypes.standardize_dtype(layer.dtype) if layer.dtype else dtypes.floatx()
        return {"module": "keras.layers", "class_name": "InputLayer",
                "config": {"batch_shape": list(layer.batch_shape), "dtype": dtype, "sparse": False,
                           "ragged": False, "name": layer.name, "optional": False}, "registered_name": None}
    return keras_layer_entry({"class_name": registered_name(type(layer)), "config": layer.get_config()})
