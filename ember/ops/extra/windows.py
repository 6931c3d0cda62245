"""Window functions of ``keras.ops`` (Bartlett, Blackman, Hamming, Hann, Kaiser).

A window is a constant: it is computed in float64 on the host with NumPy's formulas and
returned on the active backend in ``floatx()``.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.to_numpy(ops.hanning(3)).tolist()
    [0.0, 1.0, 0.0]
"""

from __future__ import annotations

import numpy as np

from ember import dtypes, ops

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _window(op: str, x, values) -> object:
    return ops.convert_to_tensor(np.asarray(values, dtype=np.float64), dtype=dtypes.floatx())


def _length(op: str, x) -> int:
    if not isinstance(x, (int, np.integer)) or isinstance(x, bool):
        raise TypeError(f"{op}: x must be the window length (an int), received {x!r}")
    return int(x)


def bartlett(x):
    """Bartlett (triangular) window of length ``x``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.bartlett(5)).astype(float).round(4).tolist()
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    return _window("bartlett", x, np.bartlett(_length("bartlett", x)))


def blackman(x):
    """Blackman window of length ``x``.

    Example:
        >>> from ember import ops
        >>> window = ops.to_numpy(ops.blackman(5))
        >>> window.shape, window[1:4].astype(float).round(4).tolist()
        ((5,), [0.34, 1.0, 0.34])
    """
    return _window("blackman", x, np.blackman(_length("blackman", x)))


def hamming(x):
    """Hamming window of length ``x``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.hamming(3)).astype(float).round(4).tolist()
        [0.08, 1.0, 0.08]
    """
    return _window("hamming", x, np.hamming(_length("hamming", x)))


def hanning(x):
    """Hann window of length ``x``.

    Example:
        >>> from ember import ops
        >>> window = ops.to_numpy(ops.hanning(5))
        >>> window.shape, window[1:4].astype(float).round(4).tolist()
        ((5,), [0.5, 1.0, 0.5])
    """
    return _window("hanning", x, np.hanning(_length("hanning", x)))


def kaiser(x, beta):
    """Kaiser window of length ``x`` and shape ``beta``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.kaiser(3, 5.0)).astype(float).round(4).tolist()
        [0.0367, 1.0, 0.0367]
    """
    return _window("kaiser", x, np.kaiser(_length("kaiser", x), beta))
