"""Which module holds each backend's tape engine (looked up by name, imported on first use).

Example:
    >>> from ember.autodiff.engines import engine_module
    >>> engine_module("numpy").__name__
    'ember.autodiff.numpy_engine'
"""

from __future__ import annotations

import importlib
from typing import Any

ENGINES = {
    "numpy": "ember.autodiff.numpy_engine",
    "torch": "ember.backends.torch.autodiff",
    "mlx": "ember.backends.mlx.autodiff",
}
_engine_modules: dict[str, Any] = {}


def engine_module(backend_name: str) -> Any:
    """The module holding ``backend_name``'s tape engine."""
    module = _engine_modules.get(backend_name)
    if module is None:  # import_module costs microseconds even when loaded: cache it
        module = _engine_modules[backend_name] = importlib.import_module(ENGINES[backend_name])
    return module
