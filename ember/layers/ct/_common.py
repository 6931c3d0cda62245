"""Helpers shared by the continuous-time cells of :mod:`ember.layers.ct`."""

from __future__ import annotations

from typing import Any

from ember import ops


def motor_output(wiring: Any, h: Any) -> Any:
    """``h[:, :wiring.output_dim]`` (``h`` itself when every neuron is an output)."""
    if wiring.output_dim == wiring.units:
        return h
    return ops.getitem(h, (slice(None), slice(0, wiring.output_dim)))


def step_size(timespan: Any, unfolds: int) -> Any:
    """``timespan / unfolds`` (``1 / unfolds`` when the cell runs without a timespan)."""
    return 1.0 / unfolds if timespan is None else ops.divide(timespan, float(unfolds))
