"""Ember: one model definition, three backends (NumPy, PyTorch, MLX).

Example:
    >>> import ember
    >>> from ember import ops
    >>> ember.set_backend("numpy")
    >>> ops.shape(ops.zeros((2, 3)))
    (2, 3)
"""

from __future__ import annotations

__version__ = "0.1.0"

from ember import backends, dtypes, ops  # noqa: E402
from ember.backends import (  # noqa: E402
    BackendNotAvailableError,
    available_devices,
    get_backend,
    set_backend,
    using_backend,
)
from ember.ops import random  # noqa: E402

__all__ = [
    "BackendNotAvailableError",
    "available_devices",
    "backends",
    "dtypes",
    "get_backend",
    "ops",
    "random",
    "set_backend",
    "using_backend",
]
