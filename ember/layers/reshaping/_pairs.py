"""``(before, after)`` pairs per spatial axis: the arguments of ``ZeroPadding*`` and ``Cropping*``."""

from __future__ import annotations

from typing import Any

from ember.layers.conv._args import is_int, standardize_data_format


def standardize_pairs(name: str, value: Any, n: int, argument: str) -> tuple[tuple[int, int], ...]:
    """``n`` pairs of non-negative ints from an int, ``n`` ints (symmetric) or ``n`` pairs.

    Example:
        >>> standardize_pairs("zero_padding2d", 1, 2, "padding")
        ((1, 1), (1, 1))
        >>> standardize_pairs("zero_padding2d", (1, (2, 0)), 2, "padding")
        ((1, 1), (2, 0))
    """
    expected = f"an int, a tuple of {n} ints or a tuple of {n} (before, after) pairs of non-negative ints"
    if is_int(value):
        items = [value] * n
    else:
        try:
            items = list(value)
        except TypeError:
            raise TypeError(f"{name}: {argument} must be {expected}, received {value!r}") from None
        if len(items) != n:
            raise ValueError(f"{name}: {argument} must be {expected}, received {value!r}")
    pairs = []
    for item in items:
        if is_int(item):
            pair = (item, item)
        else:
            try:
                pair = tuple(item)
            except TypeError:
                raise TypeError(f"{name}: {argument} must be {expected}, received {value!r}") from None
        if len(pair) != 2 or not all(is_int(v) and v >= 0 for v in pair):
            raise ValueError(f"{name}: {argument} must be {expected}, received {value!r}")
        pairs.append(pair)
    return tuple(pairs)


def standardize_pair(name: str, value: Any, argument: str) -> tuple[int, int]:
    """One ``(before, after)`` pair of non-negative ints from an int or two ints (the 1-d layers)."""
    expected = f"{name}: {argument} must be an int or a pair of non-negative ints, received {value!r}"
    try:
        pair = (value, value) if is_int(value) else tuple(value)
    except TypeError:
        raise TypeError(expected) from None
    if len(pair) != 2 or not all(is_int(v) and v >= 0 for v in pair):
        raise ValueError(expected)
    return pair


def normalize_spatial_fields(layer: Any, field: str) -> None:
    """Normalize ``layer.<field>`` (pairs; one pair in 1-d) and ``layer.data_format`` when present."""
    value = getattr(layer, field)
    if layer.rank == 1:
        layer._normalize(field, standardize_pair(layer.name, value, field))
    else:
        layer._normalize(field, standardize_pairs(layer.name, value, layer.rank, field))
    if hasattr(layer, "data_format"):
        layer._normalize("data_format", standardize_data_format(layer.name, layer.data_format))
