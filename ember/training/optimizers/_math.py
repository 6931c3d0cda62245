"""Numeric helpers shared by the optimizers: argument checks and accurate powers of Python constants."""

from __future__ import annotations

import math
import numbers
from typing import Any

from ember import ops


def is_number(value: Any) -> bool:
    """A real number that is not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_number(owner: str, argument: str, value: Any, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False) -> float:
    """``value`` as a float, or ValueError naming ``owner``, ``argument``, the range and the value.

    Example:
        >>> from ember.training.optimizers._math import check_number
        >>> check_number("Adam", "beta_1", 0.9, 0.0, 1.0)
        0.9
    """
    ok = is_number(value) and not math.isnan(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        bounds = "a number"
        if low is not None or high is not None:
            left = ("(" if low_open else "[") + ("-inf" if low is None else repr(low))
            right = ("inf" if high is None else repr(high)) + (")" if high_open else "]")
            bounds = f"a number in {left}, {right}"
        raise ValueError(f"{owner}: `{argument}` must be {bounds}, received {argument}={value!r}")
    return float(value)


def one_minus_power(base: float, exponent: Any) -> Any:
    """``1 - base ** exponent`` for a Python ``base`` and an array ``exponent``, accurately.

    Computed as ``-expm1(exponent * log(base))`` with ``log(base)`` in double precision, so
    a float32 bias correction such as ``1 - 0.999 ** t`` keeps ~1e-7 relative accuracy
    (``1 - float32(0.999) ** t`` loses ~1e-5 at ``t = 1``).

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.training.optimizers._math import one_minus_power
        >>> ember.set_backend("numpy")
        >>> round(float(ops.to_numpy(one_minus_power(0.5, ops.convert_to_tensor(2.0)))), 6)
        0.75
    """
    if base == 0.0:
        return ops.ones_like(exponent)
    if base == 1.0:
        return ops.zeros_like(exponent)
    if base < 0.0:
        return ops.subtract(1.0, ops.power(base, exponent))
    return ops.negative(ops.expm1(ops.multiply(exponent, math.log(base))))


def power(base: float, exponent: Any) -> Any:
    """``base ** exponent`` for a Python ``base >= 0`` and an array ``exponent`` (``exp(exponent * log(base))``).

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.training.optimizers._math import power
        >>> ember.set_backend("numpy")
        >>> round(float(ops.to_numpy(power(0.5, ops.convert_to_tensor(3.0)))), 6)
        0.125
    """
    if base <= 0.0:
        return ops.power(base, exponent)
    return ops.exp(ops.multiply(exponent, math.log(base)))
