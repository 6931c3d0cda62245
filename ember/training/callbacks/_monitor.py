"""Shared by the callbacks that watch a logged quantity: mode resolution and comparisons."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import optree

_MAX_HINTS = ("acc", "auc", "precision", "recall", "f1", "r2", "accuracy")


def resolve_mode(owner: str, monitor: str, mode: str) -> str:
    """``"min"`` or ``"max"``; ``"auto"`` picks max for accuracy-like names (Keras's rule), else min."""
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"{owner}: mode must be 'auto', 'min' or 'max', received {mode!r}")
    if mode != "auto":
        return mode
    name = monitor[4:] if monitor.startswith("val_") else monitor
    return "max" if any(hint in name for hint in _MAX_HINTS) else "min"


def improvement(mode: str, min_delta: float) -> Callable[[float, float], bool]:
    """``better(current, reference)``: strictly better by more than ``min_delta``."""
    delta = abs(float(min_delta))
    if mode == "max":
        return lambda current, reference: current - delta > reference
    return lambda current, reference: current + delta < reference


def read_monitor(owner: str, logs: Any, monitor: str) -> float | None:
    """The monitored value as a float, or None (with a warning naming the available logs)."""
    logs = logs or {}
    value = logs.get(monitor)
    if value is None:
        warnings.warn(
            f"{owner}: the monitored quantity {monitor!r} is not in the logs; available: {sorted(logs)}",
            RuntimeWarning, stacklevel=3)
        return None
    value = float(value)
    return value if not math.isnan(value) else None


def copy_state(state: Any) -> Any:
    """A snapshot of a model state whose arrays later in-place updates cannot change."""
    def copy(leaf: Any) -> Any:
        if hasattr(leaf, "clone") and hasattr(leaf, "detach"):  # torch (trained in place)
            return leaf.detach().clone()
        if hasattr(leaf, "copy") and hasattr(leaf, "__array_interface__"):  # NumPy
            return leaf.copy()
        return leaf  # immutable arrays (MLX)

    return optree.tree_map(copy, state)
