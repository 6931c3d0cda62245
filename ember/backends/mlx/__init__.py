"""The MLX backend: lazy arrays, unified memory, ``mx.compile`` for training."""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from ember.backends._common import cached_op_tables
from ember.backends.mlx import autodiff as autodiff
from ember.backends.mlx import core, linalg, nn, random, stats
from ember.backends.mlx import distributed as distributed
from ember.backends.mlx import export as export
from ember.backends.mlx import remat as remat
from ember.backends.mlx import training as training

name = "mlx"
version = getattr(mx, "__version__", "unknown")
array_types = (mx.array,)

# The parts every backend package names (ARCHITECTURE.md, "Backend parts"): training (make_steps),
# autodiff (the tape engine), optim (fused updates), distributed, remat, export, cuda_graphs. Callers
# ask the loaded backend for them; None where this backend has no such part.
cuda_graphs = optim = None


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


def host_writable(shape: tuple, dtype: str) -> tuple[mx.array, np.ndarray] | None:
    """A new ``shape``/``dtype`` array on the default device and a writable NumPy view of its memory:
    fill the view, then use the array (no host copy to convert). None where the array's memory is
    not host memory or NumPy has no such dtype (bfloat16).

    Example:
        >>> import ember
        >>> backend = ember.backends.load("mlx")
        >>> array, view = backend.host_writable((2,), "float32")
        >>> view[:] = 1.5
        >>> backend.core.to_numpy(array).tolist()
        [1.5, 1.5]
    """
    if dtype == "bfloat16":
        return None
    try:
        array = mx.zeros(shape, dtype=core.mx_dtype(dtype, "host_writable"))
        mx.eval(array)
        view = np.array(array, copy=False)  # MLX's buffer protocol: the evaluated array's memory
    except (ValueError, RuntimeError, TypeError):  # a dtype this device lacks (float64 on a GPU)
        return None
    if not (view.flags.writeable and view.flags.c_contiguous and view.shape == tuple(shape)):
        return None
    return array, view


class AttributeArray(mx.array):
    """An MLX array that takes attributes (Keras's ``_keras_mask``); MLX's own arrays take none."""

    _keras_mask = None


def attribute_carrier(array: mx.array) -> mx.array:
    """``array`` as an object that takes attributes (``out._keras_mask = mask``): the same lazy
    value in a subclass (MLX arrays are immutable, so nothing is shared that could change).

    Example:
        >>> import ember, mlx.core as mx
        >>> backend = ember.backends.load("mlx")
        >>> carrier = backend.attribute_carrier(mx.zeros(2))
        >>> carrier._keras_mask = mx.array([True, False])
        >>> carrier._keras_mask.tolist()
        [True, False]
    """
    return array if isinstance(array, AttributeArray) else AttributeArray(array)


op_tables = cached_op_tables(name, {"core": core, "linalg": linalg, "nn": nn, "stats": stats, "random": random})
