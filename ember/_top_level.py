"""Keras's top-level names that are not namespaces: ``keras.version()``, ``keras.device(...)``.

Example:
    >>> import ember
    >>> isinstance(ember.version(), str)
    True
    >>> with ember.device("cpu"):
    ...     ember.backends.default_device()
    'cpu'
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ember import backends
from ember._version import __version__


def version() -> str:
    """Ember's version string (``ember.__version__``).

    Example:
        >>> import ember
        >>> ember.version() == ember.__version__
        True
    """
    return __version__


@contextlib.contextmanager
def device(device_name: str) -> Iterator[None]:
    """Inside the block, new arrays and weights go to ``device_name`` (``"cpu"``, ``"gpu"``, ``"cuda:0"``,
    ``"mps"`` ... as the active backend names them); the previous default comes back after.

    Raises:
        ValueError: a device the active backend does not have (``ember.available_devices()``).

    Example:
        >>> import ember
        >>> with ember.device("cpu"):
        ...     ember.backends.default_device()
        'cpu'
    """
    previous = backends.default_device()
    backends.set_default_device(device_name)
    try:
        yield
    finally:
        backends.set_default_device(previous)
