"""Seeds: how a build or call seed is checked and split into one seed per named sub-part.

A seed is an int, a 0-d integer array (the trainer's per-step seed on MLX, which must stay
an array inside ``mx.compile``), or None (draw from the global stream). Layers split their
build seed with :func:`sub_seed` (one per variable or child layer) and pick their call seed
with :func:`call_seed` (the ``rng`` given to ``apply``, else their own ``seed``).

Example:
    >>> from ember.seeds import sub_seed
    >>> sub_seed(None, "kernel") is None
    True
    >>> sub_seed(7, "kernel") == sub_seed(7, "kernel") != sub_seed(7, "bias")
    True
"""

from __future__ import annotations

import numbers
import zlib
from typing import Any

import numpy as np

from ember import dtypes, ops


def is_seed_array(value: Any) -> bool:
    """True for a native 0-d integer array used as a seed (the trainer's step seed on MLX,
    which must stay an array inside ``mx.compile`` instead of becoming a constant).

    Example:
        >>> import ember
        >>> from ember import ops
        >>> ember.set_backend("numpy")
        >>> is_seed_array(ops.convert_to_tensor(3, dtype="int32")), is_seed_array(3)
        (True, False)
    """
    if value is None or isinstance(value, (bool, int, np.integer)):
        return False

    return ops.is_array(value) and ops.ndim(value) == 0 and dtypes.is_integer(ops.dtype(value))


def _utf8(code: int) -> tuple[int, ...]:
    """The UTF-8 bytes of one code point, by arithmetic."""
    if code < 0x80:
        return (code,)
    if code < 0x800:
        return (0xC0 | code >> 6, 0x80 | code & 0x3F)
    if code < 0x10000:
        return (0xE0 | code >> 12, 0x80 | (code >> 6) & 0x3F, 0x80 | code & 0x3F)
    return (0xF0 | code >> 18, 0x80 | (code >> 12) & 0x3F, 0x80 | (code >> 6) & 0x3F, 0x80 | code & 0x3F)


def _crc32(text: str) -> int:
    """``zlib.crc32(text.encode())`` in plain Python, which ``torch.compile`` traces: a C builtin would
    break its graph, and iterating a ``bytes`` object is unsupported by some versions' Dynamo
    (torch 2.11), so the UTF-8 bytes come from the characters by arithmetic.

    Example:
        >>> _crc32("dense/dropout") == zlib.crc32(b"dense/dropout")
        True
        >>> _crc32("capa/día/层") == zlib.crc32("capa/día/层".encode())
        True
    """
    crc = 0xFFFFFFFF
    for char in text:
        for byte in _utf8(ord(char)):
            crc ^= byte
            for _ in range(8):
                crc = (crc >> 1) ^ (0xEDB88320 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def derive_seed(seed: Any, *names: Any) -> Any:
    """A stable seed for a named sub-part (same on every run and platform).

    ``seed`` is an int, or a 0-d integer array (:func:`is_seed_array`): then the child seed is
    computed with ops, without reading the array on the host, as
    ``(seed * 1000003 + crc32(names)) % 2**31`` in int64 (so an int seed and the same value as an
    array give different, but each reproducible, child seeds).

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.initializers import derive_seed
        >>> ember.set_backend("numpy")
        >>> derive_seed(7, "dense") == derive_seed(7, "dense")
        True
        >>> int(derive_seed(ops.convert_to_tensor(7, dtype="int64"), "dense")) < 2**31
        True
    """
    if isinstance(seed, int) or not is_seed_array(seed):
        text = "/".join(str(n) for n in (seed, *names)).encode()
        return zlib.crc32(text) & 0x7FFFFFFF

    salt = _crc32("/".join(str(n) for n in names)) & 0x7FFFFFFF
    wide = seed if ops.dtype(seed) == "int64" else ops.cast(seed, "int64")
    return ops.mod(ops.add(ops.multiply(wide, 1000003), salt), 2**31)


def sub_seed(seed: Any, *names: Any) -> Any:
    """:func:`derive_seed` for a sub-part, or None when there is no seed (the sub-part then
    draws from the global stream too).

    Example:
        >>> sub_seed(None, "bias") is None, sub_seed(3, "bias") == derive_seed(3, "bias")
        (True, True)
    """
    return None if seed is None else derive_seed(seed, *names)


def check_seed(value: Any, argument: str) -> Any:
    """An int seed or None; a 0-d integer array (a trainer's step seed) passes through.
    TypeError naming ``argument`` otherwise.

    Example:
        >>> check_seed(4, "dense: seed")
        4
        >>> check_seed("4", "dense: seed")
        Traceback (most recent call last):
        ...
        TypeError: dense: seed must be an int seed or None, received '4'
    """
    if value is None:
        return None

    if is_seed_array(value):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{argument} must be an int seed or None, received {value!r}")
    return int(value)


def call_seed(layer: Any, rng: Any) -> Any:
    """The seed of one call of ``layer``: the ``rng`` given to ``apply`` (checked), else the
    layer's own ``seed`` attribute (None when it has none).

    Example:
        >>> import types
        >>> call_seed(types.SimpleNamespace(name="drop", seed=1), None)
        1
        >>> call_seed(types.SimpleNamespace(name="drop", seed=1), 9)
        9
    """
    if rng is not None:
        return check_seed(rng, f"layer {layer.name!r}: rng")
    return getattr(layer, "seed", None)
