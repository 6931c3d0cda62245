"""Argument checks shared by the activation layers."""

from __future__ import annotations

import math
import numbers
from typing import Any


def real(layer: Any, field: str, minimum: float | None = None, allow_none: bool = False) -> float | None:
    """The field as a finite float (>= ``minimum`` when given); ValueError naming the layer otherwise."""
    value = getattr(layer, field)
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)) or (
            minimum is not None and float(value) < minimum):
        bound = "" if minimum is None else f" >= {minimum}"
        raise ValueError(f"{layer.name}: {field} must be a finite number{bound}, received {value!r}")
    return float(value)
