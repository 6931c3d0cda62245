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

Every file format resolves a saved name through the one lookup here, :func:`lookup`: Ember's ``.h5``
configs by registry key, Keras's ``.keras`` files through :func:`keras_key`, which turns Keras's
reference (``module``, ``class_name``, ``registered_name``) into a registry key: Keras's own objects by
the alias table of Keras's names (:func:`add_keras_names`: ``keras.metrics>AUC`` is ``ember.metrics>AUC``),
a custom object by its registered name. An unknown name raises :class:`UnknownNameError`, whose message
names the class and how to register it, whichever format asked.

Keras's names for the same registry: :func:`register_keras_serializable`, :func:`get_custom_objects`
(a live view of the user's registrations), :class:`CustomObjectScope` / :func:`custom_object_scope`,
:func:`get_registered_name` and :func:`get_registered_object`, with Keras's semantics: Ember's own
classes count as built-ins (``get_registered_name(Dense)`` is ``"Dense"``, and they are not custom
objects), everything registered under another package is a custom object.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from typing import Any

_REGISTRY: dict[str, Any] = {}
# Keras's names of Ember's built-ins, the alias table inside the registry: "keras.metrics>AUC" ->
# "ember.metrics>AUC" (filled by add_keras_names), and each built-in's Keras name the other way.
_KERAS_ALIASES: dict[str, str] = {}
_KERAS_NAMES: dict[str, tuple[str, str]] = {}
_KERAS_NAMESPACES: set[str] = set()

# The package of a custom object registered without one (Keras's default too), and of a class saved
# unregistered (``"Custom>MyLayer"``; Keras writes its bare class name, ``"MyLayer"``: the same name).
DEFAULT_PACKAGE = "Custom"


class UnknownNameError(ValueError):
    """A saved name that resolves to nothing: the message names it and says how to make it loadable.

    Raised by :func:`get_registered_class` and :func:`keras_key` for every file format alike, so a
    ``.h5`` checkpoint and a ``.keras`` archive that name the same missing class fail with the same words.
    """


def registered_name(cls: type) -> str:
    """``package>ClassName`` under which ``cls`` is registered.

    Read from the class itself, not inherited: an unregistered subclass of a registered
    class is ``Custom>Subclass`` (and loading it asks for registration) instead of
    silently coming back as its parent.
    """
    return vars(cls).get("_ember_registered_name", f"{DEFAULT_PACKAGE}>{cls.__name__}")


def _origin(obj: Any) -> Any:
    """Where ``obj`` was defined: its module's file (one file imported under two module names is one
    origin), else its module's name (``__main__``)."""
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        return module
    return getattr(sys.modules.get(module), "__file__", None) or module


def _same_definition(first: Any, second: Any) -> bool:
    """Whether two objects are one definition run again (a module reloaded, a notebook cell re-run)."""
    return (getattr(first, "__qualname__", None) == getattr(second, "__qualname__", None)
            and _origin(first) == _origin(second))


def register_serializable(package: str = DEFAULT_PACKAGE, name: str | None = None) -> Callable[[Any], Any]:
    """Decorator: make a class or a function serializable under ``package>name``.

    ``name`` defaults to the class's or function's ``__name__``. A class needs
    ``get_config()`` and either ``from_config(config)`` or a constructor accepting the
    config as keyword arguments. A function is stored by name only (its code is never
    saved), so it must be registered again before a config that uses it is loaded.
    Keras's name for it is :func:`register_keras_serializable`.

    Raises:
        TypeError: ``obj`` is neither a class nor a function.
        ValueError: a class without ``get_config()`` (as Keras refuses it), the name is already
            taken by another object (one defined elsewhere: the same definition run again replaces
            its entry), or a function without a usable name (a ``lambda``) is registered without ``name``.

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
        if existing is not None and existing is not obj and not _same_definition(existing, obj):
            raise ValueError(f"register_serializable: {key!r} is already registered to {existing!r}; register "
                             f"{obj!r} under another package or name")
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


def _custom_names(key: str) -> tuple[str, ...]:
    """The names a custom object's saved name is looked up by: ``"pkg>Name"`` and its bare ``"Name"``;
    a bare ``"Name"`` and ``"Custom>Name"`` (the default package: Ember saves an unregistered class as
    ``"Custom>Name"``, Keras as ``"Name"``; either finds it)."""
    package, separator, name = key.partition(">")
    if not separator:
        return (key, f"{DEFAULT_PACKAGE}>{key}")
    return (key, name)


def _builtins_named(name: str) -> list[str]:
    """The keys of Ember's own objects whose name (after the package) is ``name``."""
    return [key for key in _REGISTRY if is_builtin_key(key) and key.partition(">")[2] == name]


def lookup(key: str, namespace: str | None = None) -> Any:
    """The class or function a saved name resolves to, or None: the one lookup of every file format.

    * Ember's own names (``"ember>Dense"``, ``"ember.metrics>AUC"``) resolve to Ember's own objects
      only: neither a :func:`custom_object_scope` nor :func:`get_custom_objects` replaces a built-in
      (Keras's rule for its own objects).
    * A custom name (``"my_package>Scale"``, or ``"Custom>Scale"`` for a class saved unregistered)
      resolves through the active scopes (innermost first), then the registry: the name, then its
      bare ``"Scale"`` (a scope entry, or one added through :func:`get_custom_objects`). A custom
      name never falls back to another package's class of the same bare name, nor to Ember's.
    * A bare name (``"Dense"``, as Keras-style configs write Ember's classes) resolves as a custom
      name first, then to Ember's own object of that name: Keras's ``namespace`` one when given
      (``"keras.metrics"``), else the only built-in of that name.

    Example:
        >>> import ember
        >>> from ember import serialization
        >>> serialization.lookup("ember>Dense") is ember.layers.Dense
        True
        >>> serialization.lookup("MeanSquaredError", namespace="keras.metrics") is ember.metrics.MeanSquaredError
        True
        >>> serialization.lookup("no_such_package>Scale") is None
        True
    """
    if not isinstance(key, str):
        return None
    if is_builtin_key(key):
        return _REGISTRY.get(key)
    names = _custom_names(key)
    for scope in reversed(_SCOPES):
        for name in names:
            if name in scope:
                return scope[name]
    for name in names:
        if name in _REGISTRY and not is_builtin_key(name):
            return _REGISTRY[name]
    if ">" in key:
        return None
    if namespace is not None:
        alias = _KERAS_ALIASES.get(f"{namespace}>{key}")
        if alias is not None:
            return _REGISTRY.get(alias)
    candidates = _builtins_named(key)
    return _REGISTRY[candidates[0]] if len(candidates) == 1 else None


def unknown_name_error(key: str) -> UnknownNameError:
    """The error for a saved name :func:`lookup` does not resolve: what the name is, and how to make it
    loadable (the same words for every file format).

    Example:
        >>> from ember import serialization
        >>> print(serialization.unknown_name_error("my_package>Scale"))  # doctest: +NORMALIZE_WHITESPACE
        unknown class or function 'my_package>Scale': it is not registered (no code is ever loaded from a
        file). Register it with @ember.saving.register_keras_serializable(package='my_package', name='Scale')
        before loading, or pass custom_objects={'my_package>Scale': Scale} to load_model
        >>> print(serialization.unknown_name_error("Custom>Scale"))  # doctest: +NORMALIZE_WHITESPACE
        unknown class or function 'Scale': it is not registered (no code is ever loaded from a file). Register
        it with @ember.saving.register_keras_serializable() before loading, or pass custom_objects={'Scale':
        Scale} to load_model
    """
    if is_builtin_key(key):
        return UnknownNameError(f"unknown class or function {key!r}: Ember has no built-in of that name (the "
                                "file may come from a newer Ember)")
    package, separator, name = key.partition(">")
    if not separator:
        package, name = DEFAULT_PACKAGE, key
        candidates = _builtins_named(name)
        if len(candidates) > 1:
            return UnknownNameError(f"the bare name {key!r} is ambiguous: Ember has {sorted(candidates)}; save or "
                                    "write the full registered name")
    shown = name if package == DEFAULT_PACKAGE else key
    arguments = "" if package == DEFAULT_PACKAGE else f"package={package!r}, name={name!r}"
    return UnknownNameError(
        f"unknown class or function {shown!r}: it is not registered (no code is ever loaded from a file). "
        f"Register it with @ember.saving.register_keras_serializable({arguments}) before loading, or pass "
        f"custom_objects={{{shown!r}: {name}}} to load_model")


def get_registered_class(key: str) -> Any:
    """The class (or function) saved as ``key``: :func:`lookup`, which every format uses, or its error.

    Raises:
        UnknownNameError: (a ``ValueError``) nothing resolves ``key``; the message says what to register.

    Example:
        >>> import ember
        >>> from ember import serialization
        >>> serialization.get_registered_class("ember>Dense") is serialization.get_registered_class("Dense")
        True
    """
    found = lookup(key)
    if found is None:
        raise unknown_name_error(key)
    return found


# ------------------------------------------------------------------------------ Keras's names
def add_keras_names(namespace: str, objects: Iterable[Any]) -> None:
    """Declare Ember's registered built-ins ``objects`` to be Keras's ``namespace.<Name>`` (the alias table).

    Each namespace module of Ember declares its own (``ember.initializers`` is ``keras.initializers``,
    every built-in layer is ``keras.layers``), so a ``.keras`` file's ``{"module": "keras.metrics",
    "class_name": "AUC"}`` resolves through :func:`keras_key` to the very key an ``.h5`` file saves.
    An object keeps the first namespace declared for it (a loss function Keras also lists as a metric).

    Raises:
        ValueError: ``namespace`` is not one of Keras's (``keras.<...>``), or an object is not registered
            under one of Ember's own keys.

    Example:
        >>> import ember
        >>> from ember import serialization
        >>> serialization.keras_name("ember.metrics>AUC")
        ('keras.metrics', 'AUC')
    """
    if not isinstance(namespace, str) or not namespace.startswith("keras."):
        raise ValueError(f"add_keras_names: namespace must be a Keras module name ('keras.layers'), "
                         f"received {namespace!r}")
    for obj in objects:
        key = vars(obj).get("_ember_registered_name") if isinstance(obj, type) else \
            getattr(obj, "_ember_registered_name", None)
        if not isinstance(key, str) or _REGISTRY.get(key) is not obj or not is_builtin_key(key):
            raise ValueError(f"add_keras_names: {obj!r} is not registered under one of Ember's own names")
        name = key.partition(">")[2]
        _KERAS_ALIASES[f"{namespace}>{name}"] = key
        _KERAS_NAMES.setdefault(key, (namespace, name))
        _KERAS_NAMESPACES.add(namespace)


def keras_name(key: str) -> tuple[str, str] | None:
    """``(Keras namespace, class name)`` of Ember's built-in saved as ``key``; None when Keras has none.

    Example:
        >>> from ember import serialization
        >>> serialization.keras_name("ember>Dense"), serialization.keras_name("ember>FullyConnected")
        (('keras.layers', 'Dense'), None)
    """
    return _KERAS_NAMES.get(key)


def keras_namespace(module: str) -> str:
    """Keras's public namespace of a ``.keras`` file's ``module`` field: ``"keras.layers"`` stays, a
    private module maps to its namespace (``"keras.src.backend.torch.optimizers.torch_adam"`` is
    ``"keras.optimizers"``, ``"keras.src.optimizers.schedules.learning_rate_schedule"``
    ``"keras.optimizers.schedules"``).

    Example:
        >>> from ember import serialization
        >>> serialization.keras_namespace("keras.src.backend.torch.optimizers.torch_adam")
        'keras.optimizers'
    """
    parts = module.split(".")
    if parts[:2] == ["keras", "src"]:
        parts = parts[2:]
        if parts[:1] == ["backend"]:
            parts = parts[2:]
        parts = ["keras", *parts]
    path = ".".join(parts)
    known = [ns for ns in _KERAS_NAMESPACES if path == ns or path.startswith(ns + ".")]
    return max(known, key=len) if known else path


def is_keras_own(module: Any, registered_name: Any) -> bool:
    """Whether a Keras reference names one of Keras's own objects (no ``registered_name``, or a module
    of Keras's: its private classes, such as a backend's ``Adam``, carry their class name), rather
    than a custom object."""
    return not registered_name or (isinstance(module, str) and (module == "keras" or module.startswith("keras.")))


def keras_key(module: Any, class_name: str, registered_name: Any = None, namespace: str | None = None) -> str:
    """The registry key a Keras reference resolves by: one of Keras's own objects through the alias
    table (in ``namespace``, else its ``module``'s; without either, its bare class name), a custom object
    by its registered name (a bare one, as Keras writes an unregistered class, in the default package
    ``Custom``). Look it up with :func:`lookup` / :func:`get_registered_class`, as an ``.h5`` file's key.

    Raises:
        UnknownNameError: one of Keras's own objects Ember has no equivalent of (named).

    Example:
        >>> from ember import serialization
        >>> serialization.keras_key("keras.metrics", "AUC")
        'ember.metrics>AUC'
        >>> serialization.keras_key("__main__", "Scale", "my_package>Scale")
        'my_package>Scale'
        >>> serialization.keras_key("__main__", "Scale", "Scale")  # Keras's name of an unregistered class
        'Custom>Scale'
    """
    if is_keras_own(module, registered_name):
        if namespace is None and not isinstance(module, str):
            return class_name  # no namespace to go by: the bare name (lookup's rule for bare names)
        where = namespace or keras_namespace(module)
        key = _KERAS_ALIASES.get(f"{where}>{class_name}")
        if key is None:
            raise UnknownNameError(f"Keras's {where}.{class_name} has no Ember equivalent")
        return key
    name = str(registered_name)
    return name if ">" in name else f"{DEFAULT_PACKAGE}>{name}"


def keras_registered_name(key: str) -> str:
    """The ``registered_name`` Keras writes for the custom object saved as ``key``: ``key`` when it is
    registered (or in a scope) under it, else its bare class name (``custom_objects={"Name": ...}``
    loads it, in Keras and in Ember).

    Example:
        >>> from ember import serialization
        >>> serialization.keras_registered_name("Custom>NotRegistered")
        'NotRegistered'
    """
    package, _, name = key.partition(">")
    if package == DEFAULT_PACKAGE and get_registered_object(key) is None:
        return name
    return key


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
