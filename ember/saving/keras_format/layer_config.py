"""One layer's Keras 3 config translated to Ember's and back.

Ember's layers take Keras's argument names, so a layer translates argument for argument:
nested objects through :mod:`ember.saving.keras_format.objects`, sub-layers
(``Bidirectional``, ``TimeDistributed``) recursively, dtype policies to dtype names.
A layer entry resolves as every saved name does (:func:`ember.serialization.keras_key`, then
:func:`ember.serialization.lookup`): one of Keras's layers by the alias table (``keras.layers>Dense``
is ``ember>Dense``), a custom one by its registered name, the same lookup as an ``.h5`` checkpoint's.
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
    UnknownNameError,
    deserialize,
    is_builtin_key,
    keras_key,
    keras_name,
    keras_registered_name,
    lookup,
    registered_name,
    unknown_name_error,
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


def keras_layer_entries(entry: dict) -> list[dict]:
    """Every Keras layer entry a layer entry holds: itself, its sub-layers, a nested model's layers."""
    entries = [entry]
    config = entry.get("config") or {}
    for key in SUBLAYER_KEYS:
        if isinstance(config.get(key), dict):
            entries.extend(keras_layer_entries(config[key]))
    for child in config.get("layers", []) if entry.get("class_name") in MODEL_CLASSES else []:
        entries.extend(keras_layer_entries(child))
    return entries


def layer_key(entry: dict) -> str:
    """The registry key a Keras layer entry resolves by: one of Keras's layers (no ``registered_name``)
    through the ``keras.layers`` aliases, a custom one by its registered name.

    Raises:
        UnknownNameError: one of Keras's layers Ember has no class for.

    Example:
        >>> from ember.saving.keras_format.layer_config import layer_key
        >>> layer_key({"module": "keras.layers", "class_name": "Dense", "registered_name": None})
        'ember>Dense'
        >>> layer_key({"module": "custom", "class_name": "Scale", "registered_name": "my_package>Scale"})
        'my_package>Scale'
    """
    return keras_key(entry.get("module"), str(entry.get("class_name")), entry.get("registered_name"),
                     namespace="keras.layers")


def _layer_class(key: str) -> type | None:
    found = lookup(key)
    return found if isinstance(found, type) and issubclass(found, Layer) else None


def ember_layer_class(entry: dict) -> type | None:
    """The Ember layer class of a Keras layer entry (through the registry, the active
    :func:`ember.saving.custom_object_scope` and ``custom_objects``); None when nothing resolves it to
    a layer.

    Example:
        >>> from ember.saving.keras_format.layer_config import ember_layer_class
        >>> ember_layer_class({"module": "keras.layers", "class_name": "Dense"}).__name__
        'Dense'
        >>> ember_layer_class({"module": "custom", "class_name": "Scale", "registered_name": "no_such_package>Scale"})
    """
    try:
        return _layer_class(layer_key(entry))
    except UnknownNameError:
        return None


def _why_not_a_layer(key: str) -> str:
    """Why ``key`` gives no layer: the lookup's error, or what it resolves to instead."""
    found = lookup(key)
    return str(unknown_name_error(key)) if found is None else f"{key!r} resolves to {found!r}, which is not a layer"


def check_supported(entries: list[dict]) -> None:
    """Raise one error naming every Keras layer class Ember cannot rebuild.

    Raises:
        KerasFormatError: ``Lambda`` layers (bytecode is never executed), Keras's layers Ember lacks (by
            class name), custom ones that resolve to no layer (the lookup's error for each: what to register).
    """
    used = [e for entry in entries for e in keras_layer_entries(entry) if e.get("class_name") not in MODEL_CLASSES]
    if any(e.get("class_name") == "Lambda" for e in used):
        raise KerasFormatError("the file holds a Lambda layer, whose function is stored as Python bytecode: "
                               "Ember never executes code from a file (Keras's safe_mode semantics); "
                               "replace it with a registered custom layer")
    missing: list[str] = []
    problems: list[str] = []
    for entry in used:
        try:
            key = layer_key(entry)
        except UnknownNameError:
            missing.append(str(entry.get("class_name")))
            continue
        if _layer_class(key) is None:
            problems.append(_why_not_a_layer(key))
    if missing:
        problems.insert(0, f"the file uses Keras layer(s) Ember does not have: {sorted(set(missing))}")
    if problems:
        raise KerasFormatError("; ".join(dict.fromkeys(problems)))


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
    try:
        saved_as = layer_key(entry)
    except UnknownNameError as error:
        raise KerasFormatError(f"{where}: {error}") from None
    cls = _layer_class(saved_as)
    if cls is None:
        raise KerasFormatError(f"{where}: {_why_not_a_layer(saved_as)}")
    if issubclass(cls, InputLayer):
        return {"class_name": saved_as, "config": _input_layer_config(config, where)}
    converted: dict[str, Any] = {}
    for key, value in config.items():
        if key in SUBLAYER_KEYS and isinstance(value, dict):
            converted[key] = ember_layer_config(value)
        elif key == "dtype":
            converted[key] = dtype_from_policy(value, where)
        else:
            converted[key] = from_keras(value, f"{where}.{key}")
    converted = drop_unknown(converted, _fields(cls), where, KERAS_OFF_VALUES)
    return {"class_name": saved_as, "config": converted}


def _fields(cls: type) -> set[str] | None:
    """The config keys ``cls`` takes (None: any): its constructor's arguments, and for a dataclass
    layer its fields too (a custom layer's own ``__init__`` takes arguments that are not fields)."""
    accepted = accepted_arguments(cls)
    if accepted is None or not dataclasses.is_dataclass(cls):
        return accepted
    return accepted | {f.name for f in dataclasses.fields(cls)}


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
    """An Ember layer's registry dict as a Keras layer dict (``module``/``class_name``/``config``): one of
    Ember's layers under its Keras name (``keras.layers``), a custom one under Keras's ``registered_name``
    for it (:func:`ember.serialization.keras_registered_name`)."""
    key = layer_entry["class_name"]
    class_name = key.rpartition(">")[2]
    where = f"layer {layer_entry['config'].get('name')!r} ({class_name})"
    if class_name == "Lambda":
        raise KerasFormatError(f"{where}: Lambda layers cannot be written to a .keras file (Keras would need the "
                               "function's bytecode); use Ember's .h5 format")
    if not is_builtin_key(key):
        return {"module": "custom", "class_name": class_name, "config": _keras_config(layer_entry, where),
                "registered_name": keras_registered_name(key)}
    names = keras_name(key)
    if names is None or names[0] != "keras.layers":
        raise KerasFormatError(f"{where}: Ember's {key!r} is not a layer Keras names; use Ember's .h5 format")
    return {"module": names[0], "class_name": names[1], "config": _keras_config(layer_entry, where),
            "registered_name": None}


def layer_to_keras(layer: Layer) -> dict:
    """The Keras layer dict of an Ember layer (InputLayers: Keras's ``batch_shape`` form)."""
    if isinstance(layer, InputLayer):
        dtype = dtypes.standardize_dtype(layer.dtype) if layer.dtype else dtypes.floatx()
        return {"module": "keras.layers", "class_name": "InputLayer",
                "config": {"batch_shape": list(layer.batch_shape), "dtype": dtype, "sparse": False,
                           "ragged": False, "name": layer.name, "optional": False}, "registered_name": None}
    return keras_layer_entry({"class_name": registered_name(type(layer)), "config": layer.get_config()})
