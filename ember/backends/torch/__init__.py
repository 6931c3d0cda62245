"""The PyTorch backend: native autograd, CUDA/MPS/CPU devices."""

from __future__ import annotations

import torch

from ember.backends._common import build_op_tables
from ember.backends.torch import core, linalg, nn, random, stats

name = "torch"
version = torch.__version__
array_types = (torch.Tensor,)


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
