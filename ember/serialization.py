"""Config serialization by registered name: no pickle, no arbitrary code.

Objects that take part in a model's config (layers, initializers, regularizers,
losses, metrics, ...) serialize to ``{"class_name": "ember>Dense", "config": {...}}``
and come back only through the registry: an unknown name raises an error saying
what to register. ``@register_serializable()`` adds a user class, or a plain
function (a custom activation, a ``Lambda`` layer's function), which serializes as
``{"class_name": "Custom>my_fn", "config": None}`` and resolves back to the same
function object.

Example:
    >>> from ember import serialization
    >>> @serialization.register_serializable(package="demo")
    ... class Box:
    ...     def __init__(self, size=1):
    ...         self.size = size
    ...     def get_config(self):
    ...         return {"size": self.size}
    >>> data = serialization.serialize(Box(3))
    >>> data["class_name"]
    'demo>Box'
    >>> serialization.deserialize(data).size
    3
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

_REGISTRY: dict[str, type] = {}


def registered_name(cls: type) -> str:
    """``package>ClassName`` under which ``cls`` is registered.

    Read from the class itself, not inherited: an unregistered subclass of a registered
    class is ``Custom>Subclass`` (and loading it asks for registration) instead of
    silently coming back as its parent.
    """
    return vars(cls).get("_ember_registered_name", f"Custom>{cls.__name__}")


def register_serializable(package: str = "Custom", name: str | None = None) -> Callable[[Any], Any]:
    """Decorator: make a class or a function serializable under ``package>name``.

    ``name`` defaults to the class's or function's ``__name__``. A class needs
    ``get_config()`` and either ``from_config(config)`` or a constructor accepting the
    config as keyword arguments. A function is stored by name only (its code is never
    saved), so it must be registered again before a config that uses it is loaded.

    Raises:
        ValueError: the name is already taken by another object, or a function without
            a usable name (a ``lambda``) is registered without ``name``.
    """

    def decorate(obj: Any) -> Any:
        if not isinstance(obj, type) and not callable(obj):
            raise TypeError(f"register_serializable: expected a class or a function, received {obj!r}")
        base = name or getattr(obj, "__name__", None)
        if not base or base == "<lambda>":
            raise ValueError(f"register_serializable: give a name for {obj!r}, e.g. register_serializable(name=...)")
        key = f"{package}>{base}"
        existing = _REGISTRY.get(key)
        if existing is not None and existing is not obj and (
            getattr(existing, "__qualname__", None) != getattr(obj, "__qualname__", None)
        ):
            raise ValueError(f"register_serializable: {key!r} is already registered to {existing!r}")
        _REGISTRY[key] = obj
        obj._ember_registered_name = key
        return obj

    return decorate


def _is_function(value: Any) -> bool:
    """A plain callable (function, builtin, functools.partial), not a class or a config object."""
    return callable(value) and not isinstance(value, type) and not hasattr(value, "get_config")


def registered_function_name(function: Any) -> str | None:
    """The key ``function`` is registered under, or None when it is not registered."""
    key = getattr(function, "_ember_registered_name", None)
    return key if key is not None and _REGISTRY.get(key) is function else None


_SCOPES: list[dict] = []
# Keras's global custom-objects dict: ``{name: class or function}`` users may fill directly.
_CUSTOM_OBJECTS: dict[str, Any] = {}


def get_custom_objects() -> dict:
    """The global ``{name: class or function}`` dict consulted when deserializing (after any
    :func:`custom_object_scope`); add to it to make a name loadable without registering it.

    Example:
        >>> from ember import serialization
        >>> serialization.get_custom_objects() is serialization.get_custom_objects()
        True
    """
    return _CUSTOM_OBJECTS


@contextlib.contextmanager
def custom_object_scope(objects: dict | None) -> Iterator[None]:
    """Resolve the names in ``objects`` (``{"MyLayer": MyLayer}`` or ``{"Custom>MyLayer": ...}``) to
    those classes/functions while deserializing inside the block, without registering them globally
    (what ``load_model(custom_objects=...)`` uses).

    Example:
        >>> from ember import serialization
        >>> class Thing:
        ...     def __init__(self, size=1):
        ...         self.size = size
        >>> with serialization.custom_object_scope({"Thing": Thing}):
        ...     serialization.deserialize({"class_name": "Custom>Thing", "config": {"size": 2}}).size
        2
    """
    if objects is not None and not isinstance(objects, dict):
        raise TypeError(f"custom_objects must be a dict of name -> class or function, received {objects!r}")
    _SCOPES.append(dict(objects or {}))
    try:
        yield
    finally:
        _SCOPES.pop()


def _scoped(key: str) -> Any:
    bare = key.split(">", 1)[-1]
    for scope in [*reversed(_SCOPES), _CUSTOM_OBJECTS]:
        for name in (key, bare):
            if name in scope:
                return scope[name]
    return None


def get_registered_class(key: str) -> Any:
    """The class (or function) registered as ``key`` (``"ember>Dense"``; a bare ``"Dense"`` also resolves)."""
    scoped = _scoped(key) if _SCOPES or _CUSTOM_OBJECTS else None
    if scoped is not None:
        return scoped
    if key in _REGISTRY:
        return _REGISTRY[key]
    matches = [cls for k, cls in _REGISTRY.items() if k.split(">", 1)[-1] == key]
    if len(matches) == 1:
        return matches[0]
    raise ValueError(
        f"unknown class {key!r} in a saved config: register it with "
        f"@ember.saving.register_serializable() before loading (no code is ever loaded from files)"
    )


def serialize(value: Any) -> Any:
    """A JSON-compatible description of ``value`` (registered objects by name)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(serialize(v) for v in value)
    if isinstance(value, dict):
        return {str(k): serialize(v) for k, v in value.items()}
    if hasattr(value, "get_config") and not isinstance(value, type):
        return {"class_name": registered_name(type(value)), "config": value.get_config()}
    if _is_function(value):
        key = registered_function_name(value)
        if key is None:
            label = getattr(value, "__qualname__", None) or repr(value)
            raise TypeError(
                f"cannot serialize function {label}: only functions registered with "
                "@ember.saving.register_serializable() can be saved in a config (by name; no code is stored)"
            )
        return {"class_name": key, "config": None}
    raise TypeError(
        f"cannot serialize {type(value).__name__} {value!r}: config values must be JSON data or "
        "objects with get_config() registered via @ember.saving.register_serializable()"
    )


def deserialize(data: Any) -> Any:
    """Inverse of :func:`serialize`."""
    if isinstance(data, dict) and set(data) == {"class_name", "config"}:
        cls = get_registered_class(data["class_name"])
        config = data["config"]
        if not isinstance(cls, type):  # a registered function: stored by name only
            return cls
        if hasattr(cls, "from_config"):
            return cls.from_config(config)
        return cls(**{k: deserialize(v) for k, v in config.items()})
    if isinstance(data, list):
        return [deserialize(v) for v in data]
    if isinstance(data, tuple):
        return tuple(deserialize(v) for v in data)
    if isinstance(data, dict):
        return {k: deserialize(v) for k, v in data.items()}
    return data


def resolve(identifier: Any, *, kind: str, base: type, names: dict, argument: str,
            suggest: Callable[[str, list[str]], str] | None = None) -> Any:
    """Shared ``get`` for name-resolvable callables (regularizers, constraints).

    Accepts None, an instance of ``base``, a name in ``names``, a ``{"class_name", "config"}``
    dict, a ``base`` subclass, or any callable; anything else is an error naming ``argument``.
    ``suggest(name, valid_names)``: text put after an unknown name in the error (a "did you mean",
    :func:`ember.validation.did_you_mean`).
    """
    title = base.__name__
    if identifier is None or isinstance(identifier, base):
        return identifier
    if isinstance(identifier, str):
        factory = names.get(identifier)
        if factory is None:
            valid = sorted(k for k in names if k.islower())
            hint = suggest(identifier, list(names)) if suggest is not None else ""
            raise ValueError(f"{argument}: unknown {kind} {identifier!r}{hint}; expected one of {valid}, "
                             f"a {title}, a config dict or a function")
        return factory()
    if isinstance(identifier, dict):
        if set(identifier) != {"class_name", "config"}:
            raise ValueError(f"{argument}: a {kind} config must have keys 'class_name' and 'config', "
                             f"received {identifier!r}")
        obj = deserialize(identifier)
        if not callable(obj):
            raise ValueError(f"{argument}: the config {identifier!r} does not describe a {kind}")
        return obj
    if isinstance(identifier, type):
        if issubclass(identifier, base):
            return identifier()
        raise TypeError(f"{argument}: expected a {title} subclass, received class {identifier.__name__}")
    if callable(identifier):
        return identifier
    raise TypeError(f"{argument}: expected a {kind} name, a {title}, a config dict or a function, "
                    f"received {identifier!r}")
