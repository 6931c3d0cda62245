"""The PyTorch backend: native autograd, CUDA/MPS/CPU devices.

Loading it sets torch's CPU thread count unless the user chose one (:mod:`ember.backends.torch.threads`).
"""

from __future__ import annotations

import numpy as np
import torch

from ember.backends._common import cached_op_tables
from ember.backends.torch import autodiff as autodiff
from ember.backends.torch import core, linalg, nn, random, stats, threads, transfer
from ember.backends.torch import cuda_graphs as cuda_graphs
from ember.backends.torch import distributed as distributed
from ember.backends.torch import export as export
from ember.backends.torch import optim as optim
from ember.backends.torch import remat as remat
from ember.backends.torch import training as training

name = "torch"
version = torch.__version__
array_types = (torch.Tensor,)

# The parts every backend package names (ARCHITECTURE.md, "Backend parts"): training (make_steps),
# autodiff (the tape engine), optim (fused updates), distributed, remat, export, cuda_graphs. Callers
# ask the loaded backend for them: torch has them all.

threads.configure()


def devices() -> list[str]:
    """``cpu`` plus every visible CUDA device (``cuda:0``, ...) and ``mps`` where present."""
    found = ["cpu"]
    if torch.cuda.is_available():
        found += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        found.append("mps")
    return found


def build_info() -> dict:
    """What the installed torch was built for: ``{"cuda_build": "12.4" or None, "cuda_available": bool}``."""
    return {"cuda_build": torch.version.cuda, "cuda_available": bool(torch.cuda.is_available())}


def cpu_threads() -> dict:
    """torch's CPU (intra-op) thread count and the rule that chose it: ``{"threads": 1, "source": "default"}``
    (see :mod:`ember.backends.torch.threads`)."""
    return threads.describe()


def batch_transfer(device: str) -> transfer.BatchTransfer | None:
    """How ``fit``/``evaluate``/``predict`` send batches to ``device`` (None on the CPU: nothing extra);
    see :mod:`ember.backends.torch.transfer`."""
    return transfer.for_device(device)


def default_device() -> str:
    return core.DEVICE.name


def set_default_device(device: str) -> None:
    core.DEVICE.set(device)


def host_writable(shape: tuple, dtype: str) -> tuple[torch.Tensor, np.ndarray] | None:
    """A new ``shape``/``dtype`` array on the default device and a writable NumPy view of its memory:
    fill the view, then use the array (no host copy to convert). None where the array's memory is
    not host memory (a CUDA or MPS default device) or NumPy has no such dtype (bfloat16).

    Example:
        >>> import ember
        >>> backend = ember.backends.load("torch")
        >>> array, view = backend.host_writable((2,), "float32")
        >>> view[:] = 1.5
        >>> backend.core.to_numpy(array).tolist()
        [1.5, 1.5]
    """
    if dtype == "bfloat16" or core.DEVICE.name != "cpu":
        return None
    tensor = torch.empty(shape, dtype=core.torch_dtype(dtype))
    return tensor, tensor.numpy()


def attribute_carrier(array: torch.Tensor) -> torch.Tensor:
    """``array`` itself: a torch tensor takes attributes (``out._keras_mask = mask``) as it is.

    Example:
        >>> import ember, torch
        >>> backend = ember.backends.load("torch")
        >>> t = torch.zeros(2)
        >>> backend.attribute_carrier(t) is t
        True
    """
    return array


op_tables = cached_op_tables(name, {"core": core, "linalg": linalg, "nn": nn, "stats": stats, "random": random})
