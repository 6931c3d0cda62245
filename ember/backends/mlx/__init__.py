"""The MLX backend: lazy arrays, unified memory, ``mx.compile`` for training."""

from __future__ import annotations

import mlx.core as mx

from ember.backends._common import build_op_tables
from ember.backends.mlx import core, linalg, nn, random, stats

name = "mlx"
version = getattr(mx, "__version__", "unknown")
array_types = (mx.array,)


def devices() -> list[str]:
    """``cpu``, plus ``gpu`` where MLX has a Metal (or CUDA) device."""
    found = ["cpu"]
    if core.gpu_available():
        found.append("gpu")
    return found


def default_device() -> str:
    return core.DEVICE.name


def set_default_device(device: str) -> None:
    core.DEVICE.set(device)


_tables = None


def op_tables() -> dict:
    global _tables
    if _tables is None:
        _tables = build_op_tables(name, {"core": core, "linalg": linalg, "nn": nn, "stats": stats, "random": random})
    return _tables
