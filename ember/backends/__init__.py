"""The backend registry: which backend is active, and switching between them.

A backend is a package under ``ember.backends`` (``numpy``, ``torch``, ``mlx``)
that implements the op protocol of :mod:`ember.backends._spec` on its native arrays.
Selection, in priority order:

1. ``ember.set_backend(name)`` (or the ``using_backend`` context manager);
2. the ``EMBER_BACKEND`` environment variable;
3. ``{"backend": ...}`` in ``$EMBER_HOME/config.json`` (``EMBER_HOME`` defaults
   to ``~/.ember``);
4. auto-detection: torch with CUDA, MLX on Apple silicon, torch with MPS,
   torch on CPU, MLX on CPU, NumPy.

Switching re-points every ``ember.ops`` namespace at the new backend's functions,
so code that did ``from ember import ops`` sees the switch; anything else that
caches backend state registers a listener with :func:`on_backend_change`.

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
from types import ModuleType
from typing import Callable, Iterator

BACKENDS = ("numpy", "torch", "mlx")
_EXTRA = {"torch": "torch", "mlx": "mlx", "numpy": None}
_IMPORT_NAME = {"numpy": "numpy", "torch": "torch", "mlx": "mlx.core"}


class BackendNotAvailableError(ImportError):
    """Raised when a backend is requested whose library is not installed."""


_active: ModuleType | None = None
_loaded: dict[str, ModuleType] = {}
_listeners: list[Callable[[ModuleType], None]] = []


def _check_name(name: object, argument: str = "name") -> str:
    if not isinstance(name, str) or name.lower() not in BACKENDS:
        raise ValueError(f"{argument}: unknown backend {name!r}; expected one of {BACKENDS}")
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


def set_backend(name: str) -> None:
    """Make ``name`` the active backend for every ``ember.ops`` call from now on.

    Args:
        name: ``"numpy"``, ``"torch"`` or ``"mlx"``.

    Raises:
        ValueError: unknown name. BackendNotAvailableError: not installed.
    """
    global _active
    module = load(name)
    if module is _active:
        return
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


def get_backend() -> str:
    """Name of the active backend."""
    return current().name


def current() -> ModuleType:
    """The active backend package (selecting one by the priority rules if needed)."""
    if _active is None:
        set_backend(_select_default())
    return _active  # type: ignore[return-value]


@contextlib.contextmanager
def using_backend(name: str) -> Iterator[ModuleType]:
    """Activate backend ``name`` inside a ``with`` block, restoring the previous one after.

    Example:
        >>> import ember
        >>> with ember.using_backend("numpy") as backend:
        ...     backend.name
        'numpy'
    """
    previous = current().name
    set_backend(name)
    try:
        yield current()
    finally:
        set_backend(previous)


def on_backend_change(listener: Callable[[ModuleType], None]) -> Callable[[ModuleType], None]:
    """Register ``listener(backend_module)`` to run on every switch (and now, if one is active)."""
    _listeners.append(listener)
    if _active is not None:
        listener(_active)
    return listener


def available_devices(backend: str | None = None) -> list[str]:
    """Devices the given (default: active) backend can place arrays on, e.g. ``["cpu", "cuda:0"]``."""
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


def _configured_backend() -> str | None:
    path = config_path()
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as error:
        raise ValueError(f"Ember config file {path} is not valid JSON: {error}") from None
    name = config.get("backend") if isinstance(config, dict) else None
    return None if name is None else _check_name(name, f"'backend' in {path}")


def _select_default() -> str:
    requested = os.environ.get("EMBER_BACKEND")
    if requested:
        return _check_name(requested, "EMBER_BACKEND")
    configured = _configured_backend()
    if configured:
        return configured
    return _auto_detect()


def _auto_detect() -> str:
    has_torch, has_mlx = is_installed("torch"), is_installed("mlx")
    apple_silicon = sys.platform == "darwin" and platform.machine() == "arm64"
    if has_torch:
        torch = importlib.import_module("torch")
        if torch.cuda.is_available():
            return "torch"
    if has_mlx and apple_silicon:
        return "mlx"
    if has_torch:
        return "torch"
    if has_mlx:
        return "mlx"
    return "numpy"
