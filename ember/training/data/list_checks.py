"""Python lists given as data: a clear error for the ones NumPy would turn into a raw traceback.

``fit``/``evaluate``/``predict`` accept nested Python lists of numbers as arrays. Two mistakes
used to surface deep inside NumPy or as a misleading message:

* a *ragged* list (rows of different lengths): NumPy's "setting an array element with a
  sequence ... inhomogeneous shape" — :func:`ragged_at` finds the first row whose length
  differs, and :func:`check_list_data` names it;
* rows holding strings, ``None`` or other objects: not numbers, so the list was taken for a
  generator of batches ("x is a generator") — :func:`non_number_at` finds the first such
  element, and :func:`check_list_data` says what was found.

Example:
    >>> ragged_at([[1, 2, 3], [4, 5]])
    ('[1]', 2, 3)
    >>> non_number_at([[1.0, None], [2.0, 3.0]])
    ('[0][1]', None)
    >>> try:
    ...     check_list_data("fit", "x", [[1, 2], [3]])
    ... except ValueError as error:
    ...     print(str(error)[:70])
    fit: x is a ragged nested list: x[1] has 1 element(s) where x[0] has 2
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

_NUMBER = (numbers.Number, np.number, np.bool_)


def ragged_at(value: Any, path: str = "") -> tuple[str, int, int] | None:
    """``(path, length, expected)`` of the first nested list whose length differs from its first
    sibling's (or that is a list where its sibling is a number), None for a rectangular list."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    first = value[0]
    first_is_list = isinstance(first, (list, tuple))
    expected = len(first) if first_is_list else -1
    for i, item in enumerate(value):
        item_is_list = isinstance(item, (list, tuple))
        if item_is_list != first_is_list:
            return f"{path}[{i}]", len(item) if item_is_list else -1, expected
        if item_is_list and len(item) != expected:
            return f"{path}[{i}]", len(item), expected
    if first_is_list:
        for i, item in enumerate(value):
            found = ragged_at(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def non_number_at(value: Any, path: str = "") -> tuple[str, Any] | None:
    """``(path, element)`` of the first element of a nested list that is neither a number nor a list."""
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = non_number_at(item, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if isinstance(value, _NUMBER):
        return None
    return path, value


def looks_like_rows(value: Any) -> bool:
    """A non-empty list/tuple nesting only lists/tuples and scalars (no arrays, no dicts): meant as
    one array of rows, not a structure of arrays (the inputs of a multi-input model)."""
    if not isinstance(value, (list, tuple)) or not value:
        return False
    return _scalars_only(value)


def _scalars_only(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_scalars_only(v) for v in value)
    return not (hasattr(value, "shape") or isinstance(value, dict) or getattr(type(value), "__ember_tensor__", False))


def _length(count: int) -> str:
    return "a number" if count < 0 else f"{count} element(s)"


def check_list_data(caller: str, name: str, value: Any) -> None:
    """Raise a clear error for a nested list ``value`` (argument ``name``) that is ragged or holds
    something other than numbers; a no-op for anything else."""
    if not isinstance(value, (list, tuple)):
        return
    found = non_number_at(value)
    if found is not None:
        where, element = found
        raise TypeError(
            f"{caller}: {name} is a list of rows, but {name}{where} is {element!r} ({type(element).__name__}), "
            "not a number; data must be numeric: convert it first (strings: map them to numbers, e.g. with "
            "a vocabulary; None: fill in a value) and pass a NumPy array")
    ragged = ragged_at(value)
    if ragged is not None:
        where, length, expected = ragged
        first = where[:where.rindex("[")] + "[0]"
        raise ValueError(
            f"{caller}: {name} is a ragged nested list: {name}{where} has {_length(length)} where {name}{first} "
            f"has {_length(expected)}; every row must have the same length: pad the rows to one length "
            "(and mask the padding), or give a generator that yields batches of equal-length rows")


__all__ = ["check_list_data", "looks_like_rows", "non_number_at", "ragged_at"]
