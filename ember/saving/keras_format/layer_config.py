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
    find_custom_object,
    get_registered_class,
    get_registered_object,
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


def keras_layer_classes(entry: dict) -> list[tuple[Any, Any]]:
    """Every Keras layer class a layer entry uses (itself, sub-layers, nested models' layers), as the
    file's JSON gives them: ``(class_name, registered_name)`` pairs (None where an entry has none;
    Keras writes ``registered_name`` for custom classes only, ``"package>Name"`` when registered)."""
    classes = [(entry.get("class_name"), entry.get("registered_name"))]
    config = entry.get("config") or {}
    for key in SUBLAYER_KEYS:
        if isinstance(config.get(key), dict):
            classes.extend(keras_layer_classes(config[key]))
    for child in config.get("layers", []) if entry.get("class_name") in MODEL_CLASSES else []:
        classes.extend(keras_layer_classes(child))
    return classes


def _custom_key(class_name: Any, registered: Any) -> str | None:
    """The name a custom layer resolves by (its ``registered_name``: ``"package>Name"``, or the class
    name of a class Keras saved unregistered); None for Keras's own layers, which write none."""
    if not registered or class_name in MODEL_CLASSES:
        return None
    return str(registered)


def _resolve(key: str) -> Any:
    try:
        return get_registered_class(key)
    except ValueError:
        return None


def ember_layer_class(class_name: str, registered: Any = None) -> type | None:
    """The Ember layer class for a Keras layer: a custom one by its registered name (through the
    registry, :func:`ember.saving.custom_object_scope` and ``custom_objects``), one of Keras's by its
    class name. None when Ember has none.

    Example:
        >>> from ember.saving.keras_format.layer_config import ember_layer_class
        >>> ember_layer_class("Dense").__name__, ember_layer_class("Scale", "no_such_package>Scale")
        ('Dense', None)
    """
    custom = _custom_key(class_name, registered)
    cls = _resolve(f"ember>{class_name}") if custom is None else find_custom_object(custom)
    return cls if isinstance(cls, type) and issubclass(cls, Layer) else None


def _config_key(cls: type, class_name: str, registered: Any) -> str:
    """The name Ember's registry dict gives ``cls`` so that it deserializes back to ``cls``: its
    registered name, else the name it was found by (a ``custom_objects`` entry)."""
    own = registered_name(cls)
    if _resolve(own) is cls:
        return own
    return _custom_key(class_name, registered) or f"ember>{class_name}"


def check_supported(entries: list[dict]) -> None:
    """Raise one error naming every Keras layer class Ember cannot rebuild.

    Raises:
        KerasFormatError: ``Lambda`` layers (bytecode is never executed) or classes Ember lacks: Keras's
            own by class name, custom ones by the registered name to give an Ember class.
    """
    used = [pair for entry in entries for pair in keras_layer_classes(entry)]
    if any(name == "Lambda" for name, _ in used):
        raise KerasFormatError("the file holds a Lambda layer, whose function is stored as Python bytecode: "
                               "Ember never executes code from a file (Keras's safe_mode semantics); "
                               "replace it with a registered custom layer")
    unknown = [(name, registered) for name, registered in used
               if name not in MODEL_CLASSES and ember_layer_class(name, registered) is None]
    custom = sorted({str(_custom_key(n, r)) for n, r in unknown if _custom_key(n, r) is not None})
    missing = sorted({str(n) for n, r in unknown if _custom_key(n, r) is None})
    problems = []
    if missing:
        problems.append(f"the file uses Keras layer(s) Ember does not have: {missing}")
    if custom:
        problems.append(f"the file uses custom layer(s) {custom} that resolve to no Ember layer: register an Ember "
                        "layer class under each of these names (@ember.saving.register_keras_serializable("
                        "package=..., name=...)) or pass custom_objects={name: class} to load it")
    if problems:
        raise KerasFormatError("; ".join(problems))


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
    registered = entry.get("registered_name")
    cls = ember_layer_class(class_name, registered)
    if cls is None:
        custom = _custom_key(class_name, registered)
        raise KerasFormatError(f"{where}: Ember has no {class_name} layer" if custom is None else
                               f"{where}: the custom layer {custom!r} resolves to no Ember layer: register one "
                               "under that name (@ember.saving.register_keras_serializable) or pass custom_objects")
    saved_as = _config_key(cls, class_name, registered)
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
    """An Ember layer's registry dict as a Keras layer dict (``module``/``class_name``/``config``)."""
    package, _, class_name = layer_entry["class_name"].rpartition(">")
    where = f"layer {layer_entry['config'].get('name')!r} ({class_name})"
    if class_name == "Lambda":
        raise KerasFormatError(f"{where}: Lambda layers cannot be written to a .keras file (Keras would need the "
                               "function's bytecode); use Ember's .h5 format")
    return {"module": "keras.layers" if package == "ember" else "custom", "class_name": class_name,
            "config": _keras_config(layer_entry, where),
            "registered_name": None if package == "ember" else _keras_registered_name(layer_entry["class_name"])}


def _keras_registered_name(key: str) -> str:
    """The ``registered_name`` Keras writes for a custom layer: its ``package>Name`` key when it is
    registered (or in a scope under that key), else its class name (``custom_objects={"Name": ...}``
    loads it, in Keras and in Ember)."""
    package, _, class_name = key.rpartition(">")
    if package == "Custom" and get_registered_object(key) is None:  # "Custom>Name": an unregistered class
        return class_name
    return key


def layer_to_keras(layer: Layer) -> dict:
    """The Keras layer dict of an Ember layer (InputLayers: Keras's ``batch_shape`` form)."""
    if isinstance(layer, InputLayer):
        dtype = dtypes.standardize_dtype(layer.dtype) if layer.dtype else dtypes.floatx()
        return {"module": "keras.layers", "class_name": "InputLayer",
                "config": {"batch_shape": list(layer.batch_shape), "dtype": dtype, "sparse": False,
                           "ragged": False, "name": layer.name, "optional": False}, "registered_name": None}
    return keras_layer_entry({"class_name": registered_name(type(layer)), "config": layer.get_config()})
