"""The NumPy backend: Ember's reference semantics, CPU only.

Gradients on this backend come from Ember's own reverse-mode engine
(:mod:`ember.autodiff`), since NumPy has none.
"""

from __future__ import annotations

import numpy as np

from ember.backends._common import build_op_tables
from ember.backends.numpy import core, linalg, nn, random, stats

name = "numpy"
version = np.__version__
array_types = (np.ndarray,)


def devices() -> list[str]:
    """NumPy only has the CPU."""
    return ["cpu"]


def default_device() -> str:
    return "cpu"


def set_default_device(device: str) -> None:
    core.check_device(device)


_tables = None


def op_tables() -> dict:
    global _tables
    if _tables is None:
        _tables = build_op_tables(name, {"core": core, "linalg": linalg, "nn": nn, "stats": stats, "random": random})
    return _tables
