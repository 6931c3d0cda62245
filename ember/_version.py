"""The one place Ember's version is written: ``pyproject.toml`` reads it (``dynamic = ["version"]``),
``ember.__version__`` re-exports it, and any module of the package can import it without importing
``ember``.

Example:
    >>> from ember._version import __version__
    >>> __version__.count(".")
    2
"""

__version__ = "0.1.0"
