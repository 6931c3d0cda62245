"""Seeds and factor ranges shared by the random preprocessing layers."""

from __future__ import annotations

import numbers
from typing import Any

from ember.seeds import call_seed
from ember.seeds import check_seed as check_seed_value


def seed_for(layer: Any, rng: Any) -> Any:
    """The seed of one call: the ``rng`` given to ``apply``, else the layer's ``seed``, else None (global stream)."""
    return call_seed(layer, rng)


def check_seed(layer: Any) -> None:
    layer._normalize("seed", check_seed_value(layer.seed, f"{layer.name}: seed"))


def factor_range(layer: Any, argument: str, value: Any, low: float | None = None, high: float | None = None,
                 symmetric: bool = True) -> list[float]:
    """A ``[lower, upper]`` range from a number ``f`` (``[-f, f]``, or ``[0, f]`` when not ``symmetric``)
    or a pair; each end within ``[low, high]``."""
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"{layer.name}: {argument} must be a number or a (lower, upper) pair, received {value!r}")
        lower, upper = value
    else:
        lower, upper = (-value, value) if symmetric else (0.0, value)
    for end in (lower, upper):
        if isinstance(end, bool) or not isinstance(end, numbers.Real):
            raise ValueError(f"{layer.name}: {argument} must be numbers, received {value!r}")
    lower, upper = float(lower), float(upper)
    if lower > upper or (low is not None and lower < low) or (high is not None and upper > high):
        bounds = f" within [{low}, {high}]" if low is not None or high is not None else ""
        raise ValueError(f"{layer.name}: {argument} must give lower <= upper{bounds}, received {value!r}")
    return [lower, upper]
