"""``ember.ops.numpy``: Keras's path (``keras.ops.numpy``) to the NumPy-style ops of :mod:`ember.ops`.

Each name is looked up in ``ember.ops`` when it is read, so it is always the active backend's op.

Example:
    >>> import ember
    >>> from ember.ops import numpy as enp
    >>> with ember.using_backend("numpy"):
    ...     ember.ops.to_numpy(enp.add(enp.ones((2,)), 1.0)).tolist()
    [2.0, 2.0]
"""

from __future__ import annotations

import sys as _sys


def __getattr__(name: str) -> object:
    ops = _sys.modules["ember.ops"]
    if name.startswith("_") or name in ops._SUBMODULES:
        raise AttributeError(f"module 'ember.ops.numpy' has no attribute {name!r}")
    try:
        return getattr(ops, name)
    except AttributeError:
        raise AttributeError(f"module 'ember.ops.numpy' has no attribute {name!r}") from None


def __dir__() -> list[str]:
    ops = _sys.modules["ember.ops"]
    return sorted(n for n in dir(ops) if not n.startswith("_") and n not in ops._SUBMODULES)
