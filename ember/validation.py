"""Argument and shape checks shared by every layer, loss, metric and data adapter.

Each check returns the value normalized (``numbers.Integral`` → ``int``, ``numbers.Real`` →
``float``) or raises a ValueError/TypeError that names the owner (a layer name or a class
name), the argument, what was expected and what was received. Pure Python: no ops, so any
package may use them.

Example:
    >>> from ember.validation import check_positive_int
    >>> check_positive_int("dense", "units", 4)
    4
    >>> check_positive_int("dense", "units", 0)
    Traceback (most recent call last):
    ...
    ValueError: dense: units must be a positive int, received 0
"""

from __future__ import annotations

import contextlib
import difflib
import numbers
import threading
from collections.abc import Iterable, Iterator
from typing import Any


def is_int(value: Any) -> bool:
    """True for an integer that is not a bool (``True`` is not a count)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


# A suggestion: similar (difflib's ratio, 0 to 1) at least this much, and at most this much less
# similar than the best one (mean_sqared_error: mean_squared_error 0.97, not mean_absolute_error 0.73).
_SIMILAR = 0.6
_BEST_MARGIN = 0.1


def _ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def _plain(name: str) -> str:
    """``name`` without case or underscores: ``MeanSquaredError`` and ``mean_squared_error`` are one name."""
    return name.lower().replace("_", "")


def close_matches(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The names of ``choices`` closest to a misspelt ``name`` (``difflib``'s ratio, ignoring case and
    underscores), best first; of names that differ only in case or underscores, the one spelt most like
    ``name``.

    Example:
        >>> close_matches("mean_sqared_error", ["mae", "mean_squared_error", "MeanSquaredError", "mse"])
        ['mean_squared_error']
        >>> close_matches("adamm", ["adam", "adamw", "nadam", "sgd"])
        ['adam', 'adamw', 'nadam']
        >>> close_matches("zzz", ["relu", "tanh"])
        []
    """
    if not isinstance(name, str):
        return []
    plain = _plain(name)
    scored = sorted((-_ratio(_plain(choice), plain), -_ratio(choice, name), choice)
                    for choice in dict.fromkeys(choices))  # ties: the closer spelling first (accuracy, Accuracy)
    if not scored or -scored[0][0] < _SIMILAR:
        return []
    floor = max(_SIMILAR, -scored[0][0] - _BEST_MARGIN)
    matches: dict[str, str] = {}
    for ratio, _, choice in scored:
        if -ratio >= floor:
            matches.setdefault(_plain(choice), choice)
    return list(matches.values())[:n]


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'a' or 'b'?)"`` for the closest ``choices`` to ``name``, ``""`` when none is
    close: for an "unknown name" error, after the received name.

    Example:
        >>> "unknown loss 'hubr'" + did_you_mean("hubr", ["huber", "hinge", "mse"]) + "; expected one of ..."
        "unknown loss 'hubr' (did you mean 'huber'?); expected one of ..."
    """
    matches = close_matches(name, choices)
    if not matches:
        return ""
    quoted = [repr(match) for match in matches]
    text = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f" (did you mean {text}?)"


def check_positive_int(owner: str, argument: str, value: Any) -> int:
    """``value`` as an int > 0; ValueError naming ``owner`` and ``argument`` otherwise.

    Example:
        >>> check_positive_int("repeat", "n", 3)
        3
    """
    if not is_int(value) or value <= 0:
        raise ValueError(f"{owner}: {argument} must be a positive int, received {value!r}")
    return int(value)


def check_rate(owner: str, argument: str, value: Any) -> float:
    """``value`` as a float in ``[0, 1)`` (a dropout rate); ValueError naming the argument.

    Example:
        >>> check_rate("drop", "rate", 0.5)
        0.5
        >>> check_rate("drop", "rate", 1)
        Traceback (most recent call last):
        ...
        ValueError: drop: rate must be a number in [0, 1), received 1
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= float(value) < 1.0:
        raise ValueError(f"{owner}: {argument} must be a number in [0, 1), received {value!r}")
    return float(value)


def check_bool(owner: str, argument: str, value: Any) -> bool:
    """``value`` if it is a Python bool; TypeError naming the argument otherwise.

    Example:
        >>> check_bool("mha", "use_causal_mask", True)
        True
    """
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {argument} must be a bool, received {value!r}")
    return value


def check_last_dim(layer: Any, input_shape: Any, expected: int | None = None, min_rank: int = 2) -> int:
    """The (known) last dimension of ``input_shape``; ValueError naming the layer otherwise.

    Example:
        >>> import types
        >>> check_last_dim(types.SimpleNamespace(name="dense"), (None, 3))
        3
        >>> check_last_dim(types.SimpleNamespace(name="dense"), (None, 3), expected=4)
        Traceback (most recent call last):
        ...
        ValueError: layer 'dense' expects a last dimension of 4, received shape (None, 3)
    """
    if not isinstance(input_shape, tuple) or len(input_shape) < min_rank:
        raise ValueError(f"layer {layer.name!r} expects inputs of rank >= {min_rank}, received shape {input_shape}")
    last = input_shape[-1]
    if last is None:
        raise ValueError(f"layer {layer.name!r} needs a known last dimension, received shape {input_shape}")
    if expected is not None and last != expected:
        raise ValueError(f"layer {layer.name!r} expects a last dimension of {expected}, received shape {input_shape}")
    return last


_unchecked = threading.local()  # per thread: a fit in one thread leaves another thread's checks on


@contextlib.contextmanager
def unchecked_values() -> Iterator[None]:
    """Skip the host-side checks of array *values* while the block runs in this thread.

    The checks that read a value on the host (sparse class indices in range, an ``Embedding``'s
    indices in ``[0, input_dim)``) would synchronise a GPU on every step, and a compiled step
    cannot read at all: ``fit`` checks its first batch eagerly, then runs its steps in this block
    (shapes and dtypes are still checked; they cost no sync).

    Example:
        >>> from ember.validation import unchecked_values, values_checked
        >>> with unchecked_values():
        ...     values_checked()
        False
        >>> values_checked()
        True
    """
    _unchecked.depth = getattr(_unchecked, "depth", 0) + 1
    try:
        yield
    finally:
        _unchecked.depth -= 1


def values_checked() -> bool:
    """False inside :func:`unchecked_values` (in this thread)."""
    return getattr(_unchecked, "depth", 0) == 0
