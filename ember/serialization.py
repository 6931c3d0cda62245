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

Keras's names for the same registry: :func:`register_keras_serializable`, :func:`get_custom_objects`
(a live view of the user's registrations), :class:`CustomObjectScope` / :func:`custom_object_scope`,
:func:`get_registered_name` and :func:`get_registered_object`, with Keras's semantics: Ember's own
classes count as built-ins (``get_registered_name(Dense)`` is ``"Dense"``, and they are not custom
objects), everything registered under another package is a custom object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
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
    Keras's name for it is :func:`register_keras_serializable`.

    Raises:
        TypeError: ``obj`` is neither a class nor a function.
        ValueError: a class without ``get_config()`` (as Keras refuses it), the name is already
            taken by another object, or a function without a usable name (a ``lambda``) is
            registered without ``name``.

    Example:
        >>> from ember import serialization
        >>> @serialization.register_serializable(package="demo_register", name="twice")
        ... def double(x):
        ...     return 2 * x
        >>> serialization.get_registered_name(double)
        'demo_register>twice'
    """

    def decorate(obj: Any) -> Any:
        if not isinstance(obj, type) and not callable(obj):
            raise TypeError(f"register_serializable: expected a class or a function, received {obj!r}")
        if isinstance(obj, type) and not hasattr(obj, "get_config"):
            raise ValueError(f"register_serializable: class {obj.__name__} has no get_config() method; "
                             "a registered class is saved as its get_config() and rebuilt from it")
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


# Keras's name (``keras.saving.register_keras_serializable``): the same registration, the same keys.
register_keras_serializable = register_serializable


def _is_function(value: Any) -> bool:
    """A plain callable (function, builtin, functools.partial), not a class or a config object."""
    return callable(value) and not isinstance(value, type) and not hasattr(value, "get_config")


def registered_function_name(function: Any) -> str | None:
    """The key ``function`` is registered under, or None when it is not registered."""
    key = getattr(function, "_ember_registered_name", None)
    return key if key is not None and _REGISTRY.get(key) is function else None


def registered_under(key: str) -> Any:
    """What is registered under exactly ``key`` (``"ember>Dense"``), or None: no scopes, no bare names.

    Example:
        >>> import ember
        >>> from ember import serialization
        >>> serialization.registered_under("ember>Dense") is ember.layers.Dense
        True
    """
    return _REGISTRY.get(key)


def is_builtin_key(key: str) -> bool:
    """Whether ``key`` names one of Ember's own classes or functions (package ``ember`` or
    ``ember.<...>``): Keras's built-ins, which are not "custom objects".

    Example:
        >>> from ember import serialization
        >>> serialization.is_builtin_key("ember>Dense"), serialization.is_builtin_key("my_package>Dense")
        (True, False)
    """
    package, separator, _ = key.partition(">")
    return bool(separator) and package.split(".", 1)[0] == "ember"


class CustomObjects(MutableMapping):
    """Keras's global custom-objects dict, as a live view of the registry's user entries.

    It lists every class and function registered under a package other than Ember's own
    (``"my_package>MyLayer"``); assigning ``view["MyLayer"] = MyLayer`` makes a name loadable
    without registering the class (its saved name stays its own), and deleting an entry unregisters
    it. Ember's own names cannot be replaced or removed through it.
    """

    def __getitem__(self, key: str) -> Any:
        if not isinstance(key, str) or is_builtin_key(key) or key not in _REGISTRY:
            raise KeyError(key)
        return _REGISTRY[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(f"get_custom_objects(): names are strings, received {key!r}")
        if is_builtin_key(key):
            raise ValueError(f"get_custom_objects(): {key!r} is one of Ember's own names; choose another package")
        _REGISTRY[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self:  # Ember's own names and unknown ones
            raise KeyError(key)
        del _REGISTRY[key]

    def __iter__(self) -> Iterator[str]:
        return iter([key for key in _REGISTRY if not is_builtin_key(key)])

    def __len__(self) -> int:
        return sum(1 for key in _REGISTRY if not is_builtin_key(key))

    def __repr__(self) -> str:
        return repr(dict(self.items()))


_CUSTOM_OBJECTS = CustomObjects()
_SCOPES: list[dict] = []


def get_custom_objects() -> CustomObjects:
    """Keras's global ``{name: class or function}`` dict: a live view of every object registered
    under a package other than Ember's own; add to it to make a name loadable without registering
    it, delete from it to unregister. Names in a :func:`custom_object_scope` are not in it.

    Example:
        >>> from ember import serialization
        >>> @serialization.register_keras_serializable(package="demo_custom_objects")
        ... def halve(x):
        ...     return x / 2
        >>> serialization.get_custom_objects()["demo_custom_objects>halve"] is halve
        True
        >>> "ember>Dense" in serialization.get_custom_objects()  # Ember's own: built-ins
        False
    """
    return _CUSTOM_OBJECTS


def _checked_scopes(objects: tuple) -> dict:
    merged: dict = {}
    for scope in objects:
        if scope is not None and not isinstance(scope, dict):
            raise TypeError(f"custom_objects: expected dicts of name -> class or function, received {scope!r}")
        merged.update(scope or {})
    return merged


class CustomObjectScope:
    """Resolve the names in the given dicts (``{"MyLayer": MyLayer}`` or ``{"pkg>MyLayer": ...}``) to
    those classes/functions while deserializing inside the block, without registering them globally
    (what ``load_model(custom_objects=...)`` uses). Keras's ``custom_object_scope`` is this class.
    Scopes nest: an inner scope's names come first, the outer ones stay visible.

    Args:
        custom_objects: a dict of ``{name: class or function}`` (None: nothing).
        *more: further dicts (Keras 2's form), merged after it in order.

    Raises:
        TypeError: an argument that is not a dict.

    Example:
        >>> from ember import serialization
        >>> class Thing:
        ...     def __init__(self, size=1):
        ...         self.size = size
        >>> with serialization.custom_object_scope({"Thing": Thing}) as scope:
        ...     serialization.deserialize({"class_name": "Custom>Thing", "config": {"size": 2}}).size
        2
        >>> scope.custom_objects == {"Thing": Thing}
        True
    """

    def __init__(self, custom_objects: dict | None = None, *more: dict | None) -> None:
        self.custom_objects = _checked_scopes((custom_objects, *more))

    def __enter__(self) -> CustomObjectScope:
        _SCOPES.append(dict(self.custom_objects))
        return self

    def __exit__(self, *exc_info: object) -> None:
        _SCOPES.pop()


# Keras's alias: ``with custom_object_scope({...}):``.
custom_object_scope = CustomObjectScope


def _scoped(key: str) -> Any:
    bare = key.split(">", 1)[-1]
    for scope in reversed(_SCOPES):
        for name in (key, bare):
            if name in scope:
                return scope[name]
    return None


def get_registered_class(key: str) -> Any:
    """The class (or function) registered as ``key`` (``"ember>Dense"``; a bare ``"Dense"`` also resolves).

    Looks in the active :func:`custom_object_scope` dicts (``key``, then its bare name), then the
    registry (``key``, then its bare name as added through :func:`get_custom_objects`, then a
    bare ``key`` as the one registered name ending in it).
    """
    scoped = _scoped(key) if _SCOPES else None
    if scoped is not None:
        return scoped
    bare = key.split(">", 1)[-1]
    for name in (key, bare):
        if name in _REGISTRY:
            return _REGISTRY[name]
    matches = [cls for k, cls in _REGISTRY.items() if k.split(">", 1)[-1] == key]
    if len(matches) == 1:
        return matches[0]
    raise ValueError(
        f"unknown class {key!r} in a saved config: register it with "
        f"@ember.saving.register_serializable() before loading (no code is ever loaded from files)"
    )


def find_custom_object(key: str) -> Any:
    """The class or function a custom object's saved name resolves to (Keras's ``registered_name``:
    ``"package>Name"``, or a bare ``"Name"`` for a class Keras saved unregistered), or None.

    Looks in the active :func:`custom_object_scope` dicts (``key``, then its bare name), then the
    registry: ``key`` exactly, then its bare name as added through :func:`get_custom_objects`. A
    bare name is never matched against the classes registered under a package (another package's
    class, or one of Ember's own, of the same name): that would load a different class.

    Example:
        >>> from ember import layers, serialization
        >>> @serialization.register_keras_serializable(package="demo_find")
        ... class Twice(layers.Layer):
        ...     pass
        >>> serialization.find_custom_object("demo_find>Twice") is Twice
        True
        >>> serialization.find_custom_object("Twice"), serialization.find_custom_object("Dense")
        (None, None)
    """
    scoped = _scoped(key) if _SCOPES else None
    if scoped is not None:
        return scoped
    for name in (key, key.split(">", 1)[-1]):
        if name in _REGISTRY:
            return _REGISTRY[name]
    return None


def get_registered_name(obj: Any) -> str:
    """The ``package>name`` a class or function was registered under; its ``__name__`` when it was not
    registered, or is one of Ember's own (Keras's built-ins).

    An unregistered subclass of a registered class has its own ``__name__`` (registration is not
    inherited).

    Raises:
        TypeError: ``obj`` is neither a class nor a named function.

    Example:
        >>> from ember import layers, serialization
        >>> @serialization.register_keras_serializable(package="demo_names")
        ... class Shift(layers.Layer):
        ...     pass
        >>> serialization.get_registered_name(Shift), serialization.get_registered_name(layers.Dense)
        ('demo_names>Shift', 'Dense')
    """
    key = vars(obj).get("_ember_registered_name") if isinstance(obj, type) else \
        getattr(obj, "_ember_registered_name", None)
    if isinstance(key, str) and not is_builtin_key(key):
        return key
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"get_registered_name: expected a class or a function, received {obj!r}")
    return name


def get_registered_object(name: str, custom_objects: dict | None = None, module_objects: dict | None = None) -> Any:
    """The class or function known as exactly ``name``, or None.

    Looks, in Keras's order, in the active :func:`custom_object_scope` dicts, the global custom
    objects (:func:`get_custom_objects`), then ``custom_objects`` and ``module_objects``. Ember's
    own classes are built-ins, not registered objects (as Keras's are).

    Example:
        >>> from ember import serialization
        >>> def swish2(x):
        ...     return x
        >>> with serialization.custom_object_scope({"swish2": swish2}):
        ...     serialization.get_registered_object("swish2") is swish2
        True
        >>> serialization.get_registered_object("swish2") is None
        True
    """
    for table in [*reversed(_SCOPES), _CUSTOM_OBJECTS, custom_objects or {}, module_objects or {}]:
        if name in table:
            return table[name]
    return None


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
