"""The package version, importable from anywhere in the package without importing ``ember``.

Example:
    >>> from ember._version import __version__
    >>> isinstance(__version__, str)
    True
"""

__version__ = "0.1.0"
