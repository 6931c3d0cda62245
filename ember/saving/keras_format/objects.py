"""Keras 3's serialized objects (initializers, regularizers, constraints, dtype policies,
tuples, functions) translated to Ember's registry form and back.

Keras writes a nested object as ``{"module": "keras.initializers", "class_name":
"GlorotUniform", "config": {...}, "registered_name": None}``; Ember's registry form is
``{"class_name": "ember>GlorotUniform", "config": {...}}``. Arguments Keras has and Ember
does not are dropped only when they hold Keras's "off" value (``None``/``False``); any other
value raises, naming the object and the argument, so nothing is silently ignored.
Every reference resolves as an ``.h5`` checkpoint's names do: :func:`ember.serialization.keras_key`
turns it into a registry key (Keras's own objects through the alias table, custom objects by their
``registered_name``) and :func:`ember.serialization.lookup` finds it (the registry, the scopes,
``custom_objects``): the name is looked up, no code is ever read from the file.

Example:
    >>> from ember.saving.keras_format import objects
    >>> keras_init = {"module": "keras.initializers", "class_name": "GlorotUniform",
    ...               "config": {"seed": None, "input_axes": None, "output_axes": None}, "registered_name": None}
    >>> objects.from_keras(keras_init, "dense.kernel_initializer")
    {'class_name': 'ember>GlorotUniform', 'config': {'seed': None}}
    >>> objects.to_keras({'class_name': 'ember>L2', 'config': {'l2': 0.5}}, "dense.kernel_regularizer")["module"]
    'keras.regularizers'
"""

from __future__ import annotations

import inspect
from typing import Any

from ember import activations, dtype_policies
from ember.serialization import (
    UnknownNameError,
    get_registered_class,
    is_builtin_key,
    keras_key,
    keras_name,
    keras_registered_name,
    lookup,
    unknown_name_error,
)

_OFF_VALUES = (None, False)


class KerasFormatError(ValueError):
    """A Keras file (or an Ember model bound for one) holds something the ``.keras`` bridge cannot
    translate; the message names the layer/object, the argument and what to do instead."""


def is_keras_object(value: Any) -> bool:
    """Whether ``value`` is a Keras serialized-object dict (``class_name`` + ``config``, Keras style)."""
    return isinstance(value, dict) and "class_name" in value and "config" in value and (
        "module" in value or "registered_name" in value or value["class_name"] == "__tuple__")


def accepted_arguments(cls: type) -> set[str] | None:
    """The keyword arguments ``cls(...)`` accepts (None: any, it takes ``**kwargs``)."""
    parameters = inspect.signature(cls).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def drop_unknown(config: dict, accepted: set[str] | None, where: str, ignorable: dict | None = None) -> dict:
    """``config`` without the keys Ember does not accept, which must hold an "off" value.

    Args:
        config: the Keras config.
        accepted: the argument names Ember accepts (None: all).
        where: the object's label for messages (``"layer 'dense' (Dense)"``).
        ignorable: ``{key: value}`` further values that mean "feature off" in Keras.

    Raises:
        KerasFormatError: a key Ember lacks holds a value that changes behaviour.
    """
    if accepted is None:
        return dict(config)
    kept = {}
    for key, value in config.items():
        if key in accepted:
            kept[key] = value
            continue
        off = (ignorable or {}).get(key, None)
        if value in _OFF_VALUES or (key in (ignorable or {}) and value == off):
            continue
        raise KerasFormatError(f"{where}: Keras argument {key}={value!r} has no Ember equivalent "
                               f"(Ember accepts {sorted(accepted)})")
    return kept


def resolve_key(value: dict, where: str, namespace: str | None = None) -> tuple[str, Any]:
    """``(registry key, class or function)`` of a Keras serialized object, by the one lookup.

    Args:
        value: the Keras object dict (``module``, ``class_name``, ``registered_name``).
        where: the object's label for messages.
        namespace: Keras's namespace it must belong to (a compile slot's), else its ``module``'s.

    Raises:
        KerasFormatError: nothing resolves it (the lookup's error: what to register), or Keras's object
            has no Ember equivalent.
    """
    try:
        key = keras_key(value.get("module"), str(value["class_name"]), value.get("registered_name"), namespace)
    except UnknownNameError as error:
        raise KerasFormatError(f"{where}: {error}") from None
    found = lookup(key)
    if found is None:
        raise KerasFormatError(f"{where}: {unknown_name_error(key)}")
    return key, found


def function_reference(name: str, where: str, namespace: str | None = None) -> Any:
    """The function a Keras function reference names (``"my_package>my_fn"``, a bare ``"my_fn"``, or
    Ember's own ``"mean_squared_error"``), by the one lookup.

    Raises:
        KerasFormatError: nothing resolves it (the lookup's error: what to register).
    """
    found = lookup(name, namespace)
    if found is None:
        raise KerasFormatError(f"{where}: {unknown_name_error(name)}")
    return found


def from_keras(value: Any, where: str) -> Any:
    """A Keras config value in Ember's registry form (recursively)."""
    if isinstance(value, list):
        return [from_keras(v, where) for v in value]
    if not isinstance(value, dict):
        return value
    if not is_keras_object(value):
        return {k: from_keras(v, f"{where}.{k}") for k, v in value.items() if k != "shared_object_id"}
    class_name = value["class_name"]
    config = value["config"]
    if class_name == "__tuple__":
        return tuple(from_keras(v, where) for v in config["value"])
    if class_name in ("DTypePolicy", "FloatDTypePolicy", "QuantizedDTypePolicy", "QuantizedFloat8DTypePolicy"):
        return dtype_from_policy(value, where)
    if class_name == "function" or value.get("module") in ("keras.activations", "builtins"):
        name = config if isinstance(config, str) else class_name
        if name in activations.NAMES:
            return name  # a built-in activation, by name
        function = function_reference(name, where)
        return {"class_name": getattr(function, "_ember_registered_name", name), "config": None}
    if str(value.get("module", "")).startswith("keras.layers") or value.get("module") in ("keras", "keras.models"):
        raise KerasFormatError(f"{where}: a nested {class_name} here is translated by the layer converter")
    key, cls = resolve_key(value, where)
    label = f"{where} ({class_name})"
    config = {k: from_keras(v, label) for k, v in (config or {}).items()}
    config = drop_unknown(config, accepted_arguments(cls), label)
    return {"class_name": key, "config": config}


def dtype_from_policy(value: Any, where: str) -> str | None:
    """The policy name of a Keras dtype (a name or a ``DTypePolicy`` dict): a dtype name, or
    ``"mixed_float16"``/``"mixed_bfloat16"`` (Ember layers take the same policies)."""
    if value is None or isinstance(value, str):
        return value
    config = value.get("config") or {}
    if value.get("class_name") in ("QuantizedDTypePolicy", "QuantizedFloat8DTypePolicy") and "mode" in config:
        return dtype_policies.get(value, where).name  # "int8_from_float32"
    return config.get("name")


def keras_dtype_policy(dtype: str) -> dict:
    """Keras's ``DTypePolicy`` dict for one dtype (``QuantizedDTypePolicy``'s for ``"int8_from_float32"``)."""
    if dtype.startswith(dtype_policies.QUANTIZATION_MODES) and "_from_" in dtype:
        return dtype_policies.serialize(dtype_policies.get(dtype, "dtype"))
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": dtype}, "registered_name": None}


def to_keras(value: Any, where: str) -> Any:
    """An Ember config value (registry form) in Keras's serialized form (recursively).

    Raises:
        KerasFormatError: an Ember object Keras has no class for.
    """
    if isinstance(value, (list, tuple)):  # layer configs hold plain JSON lists (Keras reads them back)
        return [to_keras(v, where) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) != {"class_name", "config"}:
        return {k: to_keras(v, f"{where}.{k}") for k, v in value.items()}
    key = value["class_name"]
    class_name = key.rpartition(">")[2]
    cls = get_registered_class(key)
    if value["config"] is None and not isinstance(cls, type):  # a registered function
        return {"module": "builtins", "class_name": "function", "config": key, "registered_name": "function"}
    if not is_builtin_key(key):
        return {"module": getattr(cls, "__module__", None), "class_name": class_name,
                "config": to_keras(value["config"], where), "registered_name": keras_registered_name(key)}
    names = keras_name(key)
    if names is None or names[0] == "keras.layers":  # layers nest through the layer converter only
        raise KerasFormatError(f"{where}: Ember's {class_name} has no Keras counterpart in a .keras file")
    return {"module": names[0], "class_name": names[1], "config": to_keras(value["config"], where),
            "registered_name": None}
