"""The NumPy backend: Ember's reference semantics, CPU only.

Gradients on this backend come from Ember's own reverse-mode engine
(:mod:`ember.autodiff`), since NumPy has none.
"""

from __future__ import annotations

import numpy as np

from ember.backends._common import cached_op_tables
from ember.backends.numpy import core, linalg, nn, random, stats
from ember.backends.numpy import distributed as distributed
from ember.backends.numpy import optim as optim
from ember.backends.numpy import training as training

name = "numpy"
version = np.__version__
array_types = (np.ndarray,)

# The parts every backend package names (ARCHITECTURE.md, "Backend parts"): training (make_steps),
# autodiff (the tape engine), optim (fused updates), distributed, remat, export, cuda_graphs. Callers
# ask the loaded backend for them; None where this backend has no such part.
autodiff = None  # Ember's own engine differentiates NumPy (ember.autodiff.numpy_engine)
cuda_graphs = export = remat = None


def devices() -> list[str]:
    """NumPy only has the CPU."""
    return ["cpu"]


def default_device() -> str:
    return "cpu"


def set_default_device(device: str) -> None:
    core.check_device(device)


def host_writable(shape: tuple, dtype: str) -> tuple[np.ndarray, np.ndarray] | None:
    """A new ``shape``/``dtype`` array on the default device and a writable NumPy view of its memory:
    fill the view, then use the array (no host copy to convert). None where the array's memory is
    not host memory (bfloat16: NumPy has no native type for it).

    Example:
        >>> import ember
        >>> backend = ember.backends.load("numpy")
        >>> array, view = backend.host_writable((2,), "float32")
        >>> view is array  # a NumPy array is its own host view
        True
    """
    if dtype == "bfloat16":
        return None
    array = np.empty(shape, dtype=np.dtype(dtype))
    return array, array


class AttributeArray(np.ndarray):
    """An ndarray view that takes attributes (Keras's ``_keras_mask``); other arrays read None."""

    _keras_mask = None


def attribute_carrier(array: np.ndarray) -> np.ndarray:
    """``array`` as an object that takes attributes (``out._keras_mask = mask``): a view, no copy.

    Example:
        >>> import ember, numpy as np
        >>> backend = ember.backends.load("numpy")
        >>> carrier = backend.attribute_carrier(np.zeros(2))
        >>> carrier._keras_mask = np.array([True, False])
        >>> carrier._keras_mask.tolist()
        [True, False]
    """
    return array if isinstance(array, AttributeArray) else array.view(AttributeArray)


op_tables = cached_op_tables(name, {"core": core, "linalg": linalg, "nn": nn, "stats": stats, "random": random})
