"""Each backend's tape engine: the loaded backend's ``autodiff`` part, or Ember's own engine for NumPy.

torch and MLX differentiate natively; their engines live in their backend packages
(``ember/backends/<name>/autodiff.py``) and the backend names them as its ``autodiff`` part.
NumPy has no autograd: Ember's reverse-mode engine (:mod:`ember.autodiff.numpy_engine`, above the
op protocol, since it records ``ember.ops`` calls) registers itself here when it is imported.

Example:
    >>> from ember.autodiff.engines import engine_module
    >>> engine_module("numpy").__name__
    'ember.autodiff.numpy_engine'
"""

from __future__ import annotations

from types import ModuleType

from ember import backends

_own: dict[str, ModuleType] = {}  # engines Ember implements itself, by backend name (NumPy's)
_engine_modules: dict[str, ModuleType] = {}


def register_own_engine(backend_name: str, module: ModuleType) -> None:
    """Called by :mod:`ember.autodiff.numpy_engine` at import: it is the ``backend_name`` engine."""
    _own[backend_name] = module


def engine_module(backend_name: str) -> ModuleType:
    """The module holding ``backend_name``'s ``TapeEngine`` (loading the backend if needed)."""
    module = _engine_modules.get(backend_name)
    if module is None:
        module = _own.get(backend_name) or backends.load(backend_name).autodiff
        _engine_modules[backend_name] = module
    return module
