"""The backend registry: which backend is active, and switching between them.

A backend is a package under ``ember.backends`` (``numpy``, ``torch``, ``mlx``)
that implements the op protocol of :mod:`ember.backends._spec` on its native arrays.
Selection, in priority order:

1. ``ember.set_backend(name)`` (or the ``using_backend`` context manager);
2. the ``EMBER_BACKEND`` environment variable (``EMBER_ML_BACKEND``, its former
   name, is honoured too; ``EMBER_BACKEND`` wins when both are set);
3. ``{"backend": ...}`` in ``$EMBER_HOME/config.json`` (``EMBER_HOME`` defaults
   to ``~/.ember``), written by ``set_backend(name, persist=True)`` or
   ``python -m ember config backend NAME``;
4. auto-detection (:func:`auto_select`): torch with CUDA, MLX on Apple silicon,
   torch with MPS, torch on CPU, MLX on CPU, NumPy.

:func:`active_choice` says which of these chose the active backend.

Switching re-points every ``ember.ops`` namespace at the new backend's functions,
so code that did ``from ember import ops`` sees the switch; anything else that
caches backend state registers a listener with :func:`on_backend_change`.

The active backend is one per process, not per thread: :func:`set_backend` refuses
(a ``RuntimeError`` naming the busy thread and its call) to switch while another
thread is inside ``fit``/``predict``/``evaluate``/``*_on_batch`` of a model
(:mod:`ember.backends.busy`). Switch before starting the threads, or after joining them.

Example:
    >>> import ember
    >>> with ember.using_backend("numpy"):
    ...     ember.get_backend()
    'numpy'
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import platform
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import NamedTuple

from ember.backends import busy
from ember.validation import did_you_mean

BACKENDS = ("numpy", "torch", "mlx")
ENV_VARS = ("EMBER_BACKEND", "EMBER_ML_BACKEND")  # the current name first, then the former one
AUTO_ORDER = "torch with CUDA, MLX on Apple silicon, torch with MPS, torch on CPU, MLX on CPU, NumPy"
_EXTRA = {"torch": "torch", "mlx": "mlx", "numpy": None}
_IMPORT_NAME = {"numpy": "numpy", "torch": "torch", "mlx": "mlx.core"}


class BackendNotAvailableError(ImportError):
    """Raised when a backend is requested whose library is not installed.

    Example:
        >>> import ember
        >>> issubclass(ember.BackendNotAvailableError, ImportError)
        True
        >>> try:
        ...     ember.set_backend("jax")
        ... except ValueError as error:
        ...     print("unknown backend")
        unknown backend
    """


_active: ModuleType | None = None
_loaded: dict[str, ModuleType] = {}
_listeners: list[Callable[[ModuleType], None]] = []


class Choice(NamedTuple):
    """Which backend (and device) a selection rule picked, by which rule, and why.

    ``source`` is ``"call"`` (``set_backend``), ``"env"`` (an environment variable),
    ``"config"`` (the config file) or ``"auto"`` (auto-detection).

    Example:
        >>> from ember import backends
        >>> with backends.using_backend("numpy"):
        ...     choice = backends.active_choice()
        >>> isinstance(choice, backends.Choice), choice.backend, choice.source
        (True, 'numpy', 'call')
    """

    backend: str
    device: str
    source: str
    reason: str


_choice: Choice | None = None  # how the active backend was chosen


def _check_name(name: object, argument: str | None = None) -> str:
    """``name`` in lower case if it is a backend's; else a ValueError naming ``argument`` (where the name
    came from: an environment variable, the config file; nothing for an argument of a call)."""
    if not isinstance(name, str) or name.lower() not in BACKENDS:
        where = f"{argument}: " if argument else ""
        hint = did_you_mean(name, BACKENDS) if isinstance(name, str) else ""
        choices = ", ".join(repr(backend) for backend in BACKENDS)
        raise ValueError(f"{where}unknown backend {name!r}{hint}; expected one of {choices}")
    return name.lower()


def is_installed(name: str) -> bool:
    """True if the library behind backend ``name`` can be imported."""
    name = _check_name(name)
    if name in _loaded:
        return True
    try:
        return importlib.util.find_spec(_IMPORT_NAME[name].split(".")[0]) is not None and (
            importlib.util.find_spec(_IMPORT_NAME[name]) is not None
        )
    except (ImportError, ValueError):
        return False


def available() -> list[str]:
    """Names of the installed backends, in Ember's preference-free order."""
    return [name for name in BACKENDS if is_installed(name)]


def load(name: str) -> ModuleType:
    """Import and return the backend package ``name`` without activating it.

    Raises:
        ValueError: ``name`` is not a backend Ember knows.
        BackendNotAvailableError: its library is not installed; the message
            names the extra to install.
    """
    name = _check_name(name)
    module = _loaded.get(name)
    if module is not None:
        return module
    if not is_installed(name):
        raise BackendNotAvailableError(
            f"Ember backend {name!r} is not installed: pip install \"ember[{_EXTRA[name]}]\""
        )
    module = importlib.import_module(f"ember.backends.{name}")
    _loaded[name] = module
    return module


def set_backend(name: str, persist: bool = False) -> None:
    """Make ``name`` the active backend for every ``ember.ops`` call from now on.

    Args:
        name: ``"numpy"``, ``"torch"`` or ``"mlx"``.
        persist: also remember the choice for later processes: write it to
            ``$EMBER_HOME/config.json`` (other keys in the file are kept). An
            ``EMBER_BACKEND`` environment variable still wins over the file.

    Raises:
        ValueError: unknown name, or an existing config file that is not a JSON object.
        BackendNotAvailableError: not installed.
        RuntimeError: another thread is inside a model call (``fit``, ``predict``, ...):
            the backend is one per process, so it is switched only when no model runs in
            another thread.

    Example:
        >>> import ember
        >>> previous = ember.get_backend()
        >>> ember.set_backend("numpy")
        >>> ember.get_backend()
        'numpy'
        >>> ember.set_backend(previous)
    """
    global _choice
    if not isinstance(persist, bool):
        raise TypeError(f"set_backend: persist must be True or False, received {persist!r}")
    if persist:
        _read_config()  # a damaged config file fails before anything changes
    _check_switch(name)
    previous = _choice
    active = _activate(name)
    _choice = Choice(active.name, active.default_device(), "call", f"ember.set_backend({active.name!r})")
    if persist:
        try:
            write_config(backend=active.name)
        except BaseException:
            _choice = previous
            raise


def _check_switch(name: str) -> None:
    """Refuse a switch to another backend while another thread runs a model (see :mod:`ember.backends.busy`)."""
    if _active is not None and _check_name(name) != _active.name:
        busy.refuse_switch(_active.name, name)


def _activate(name: str) -> ModuleType:
    """Make backend ``name`` the active one (listeners told; undone if one fails) and return it."""
    global _active
    module = load(name)
    if module is _active:
        return module
    previous = _active
    _active = module
    try:
        for listener in list(_listeners):
            listener(module)
    except BaseException:
        _active = previous
        if previous is not None:
            for listener in list(_listeners):
                listener(previous)
        raise
    return module


def get_backend() -> str:
    """Name of the active backend.

    Example:
        >>> import ember
        >>> with ember.using_backend("numpy"):
        ...     ember.get_backend()
        'numpy'
    """
    return current().name


def current() -> ModuleType:
    """The active backend package (selecting one by the priority rules if needed)."""
    if _active is None:
        return _select_and_activate()
    return _active


def _select_and_activate() -> ModuleType:
    global _choice
    name, source, reason = _select_default_with_reason()
    active = _activate(name)
    _choice = Choice(name, active.default_device(), source, reason)
    return active


def active_choice() -> Choice:
    """The active backend, its default device, and which rule chose it (selecting one if needed).

    Example:
        >>> import ember
        >>> with ember.using_backend("numpy"):
        ...     ember.backends.active_choice().source
        'call'
    """
    module = current()
    choice = _choice
    if choice is None or choice.backend != module.name:
        return Choice(module.name, module.default_device(), "call", f"ember.set_backend({module.name!r})")
    return choice._replace(device=module.default_device())


@contextlib.contextmanager
def using_backend(name: str) -> Iterator[ModuleType]:
    """Activate backend ``name`` inside a ``with`` block, restoring the previous one after.

    Example:
        >>> import ember
        >>> with ember.using_backend("numpy") as backend:
        ...     backend.name
        'numpy'
    """
    global _choice
    previous, previous_choice = current().name, _choice
    set_backend(name)
    try:
        yield current()
    finally:
        _activate(previous)  # restoring is never refused (a raise here would hide the block's own error)
        _choice = previous_choice


def on_backend_change(listener: Callable[[ModuleType], None]) -> Callable[[ModuleType], None]:
    """Register ``listener(backend_module)`` to run on every switch (and now, if one is active)."""
    _listeners.append(listener)
    if _active is not None:
        listener(_active)
    return listener


def available_devices(backend: str | None = None) -> list[str]:
    """Devices the given (default: active) backend can place arrays on, e.g. ``["cpu", "cuda:0"]``.

    Example:
        >>> import ember
        >>> "cpu" in ember.available_devices("numpy")
        True
    """
    module = current() if backend is None else load(backend)
    return module.devices()


def default_device(backend: str | None = None) -> str:
    """The device creation and random ops of the backend place new arrays on."""
    module = current() if backend is None else load(backend)
    return module.default_device()


def set_default_device(device: str, backend: str | None = None) -> None:
    """Set where the backend creates new arrays (``"cpu"``, ``"cuda:0"``, ``"mps"``, ``"gpu"``).

    Raises:
        ValueError: the device is not one of :func:`available_devices`.
    """
    module = current() if backend is None else load(backend)
    module.set_default_device(device)


def config_path() -> str:
    """Location of Ember's config file: ``$EMBER_HOME/config.json`` (default ``~/.ember``)."""
    home = os.environ.get("EMBER_HOME") or os.path.join(os.path.expanduser("~"), ".ember")
    return os.path.join(home, "config.json")


def _read_config() -> dict:
    """The config file's content (``{}`` when there is none); ValueError naming the file if damaged."""
    path = config_path()
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as error:
        raise ValueError(f"Ember config file {path} is not valid JSON: {error}") from None
    if not isinstance(config, dict):
        raise ValueError(f"Ember config file {path} must hold a JSON object, found {type(config).__name__}")
    return config


def write_config(**values: object) -> str:
    """Merge ``values`` into ``$EMBER_HOME/config.json`` (created if needed, replaced atomically).

    Returns:
        The path written.

    Raises:
        ValueError: the existing file is not a JSON object (it is left untouched).
    """
    path = config_path()
    config = _read_config()
    config.update(values)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(config, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return path


def _configured_backend() -> str | None:
    config = _read_config()
    name = config.get("backend")
    return None if name is None else _check_name(name, f"'backend' in {config_path()}")


def _env_backend() -> tuple[str, str] | None:
    """``(name, variable)`` from the first non-empty of EMBER_BACKEND, EMBER_ML_BACKEND."""
    for variable in ENV_VARS:
        requested = os.environ.get(variable)
        if requested:
            return _check_name(requested, variable), variable
    return None


def _select_default() -> str:
    return _select_default_with_reason()[0]


def _select_default_with_reason() -> tuple[str, str, str]:
    """``(name, source, reason)`` by the priority rules (explicit calls aside)."""
    from_env = _env_backend()
    if from_env is not None:
        name, variable = from_env
        shadowed = [v for v in ENV_VARS if v != variable and os.environ.get(v)]
        return name, "env", f"{variable}={os.environ[variable]}" + (
            f" (ignoring {shadowed[0]}={os.environ[shadowed[0]]})" if shadowed else "")
    configured = _configured_backend()
    if configured:
        return configured, "config", f"'backend' in {config_path()}"
    choice = auto_select()
    return choice.backend, "auto", choice.reason


def _auto_detect() -> str:
    return auto_select().backend


def auto_select() -> Choice:
    """The backend and device auto-detection picks on this machine, and why (activates nothing).

    The order is: torch with CUDA, MLX on Apple silicon, torch with MPS, torch on CPU,
    MLX on CPU, NumPy (the first whose library is installed and whose device is present).

    Example:
        >>> import ember
        >>> choice = ember.backends.auto_select()
        >>> choice.source, choice.backend in ember.backends.available()
        ('auto', True)
    """
    has_torch, has_mlx = is_installed("torch"), is_installed("mlx")
    apple_silicon = sys.platform == "darwin" and platform.machine() == "arm64"
    missing = [name for name, present in (("torch", has_torch), ("mlx", has_mlx)) if not present]
    note = f"; not installed: {', '.join(missing)}" if missing else ""
    order = f" (order: {AUTO_ORDER})"
    if has_torch:
        torch = importlib.import_module("torch")
        if torch.cuda.is_available():
            return Choice("torch", "cuda:0", "auto", f"torch sees a CUDA GPU{note}{order}")
    if has_mlx and apple_silicon:
        return Choice("mlx", "gpu", "auto", f"MLX on Apple silicon{note}{order}")
    if has_torch:
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return Choice("torch", "mps", "auto", f"torch sees an MPS device{note}{order}")
        return Choice("torch", "cpu", "auto", f"torch installed, no CUDA/MPS device and not Apple silicon"
                                              f"{note}{order}")
    if has_mlx:
        return Choice("mlx", "cpu", "auto", f"MLX installed (CPU), torch not installed{order}")
    return Choice("numpy", "cpu", "auto", f"neither torch nor MLX is installed{order}")
