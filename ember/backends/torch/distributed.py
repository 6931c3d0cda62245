"""The torch data-parallel engine: ``torch.distributed`` (gloo on CPU, NCCL on CUDA).

:func:`make_engine` joins the process group that ``torchrun`` describes (``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), or adopts one the user already
initialized. Collectives wait at most ``timeout`` seconds: a rank that died or hangs makes
the others raise instead of waiting forever. ``shutdown`` destroys the group (torch 2.13's
gloo aborts at interpreter exit without it).

The NumPy backend drives ``torch.distributed`` the same way on zero-copy ``torch.from_numpy``
views (:mod:`ember.backends.numpy.distributed`).

Example:
    >>> from ember.backends.torch import distributed
    >>> distributed.launched_by_torchrun({"RANK": "0", "WORLD_SIZE": "2"})
    True
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from typing import Any

import torch
import torch.distributed as dist

from ember.backends._elastic import init_torchrun_group
from ember.backends.torch import fsdp

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def launched_by_torchrun(environ: Mapping[str, str]) -> bool:
    """Whether the environment holds a torchrun rank (``RANK`` and ``WORLD_SIZE``)."""
    return "RANK" in environ and "WORLD_SIZE" in environ


def _default_backend() -> str:
    return "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"


class TorchEngine:
    """Collectives of one process group on torch tensors (see the module docstring).

    Args:
        timeout: seconds a collective may wait for the other ranks.
        backend: ``"gloo"`` or ``"nccl"`` (default: NCCL when CUDA is available, else gloo).
    """

    name = "torch.distributed"
    has_timeout = True  # collectives raise after the process group's timeout

    def __init__(self, timeout: float, backend: str | None = None) -> None:
        if not dist.is_available():
            raise RuntimeError("torch.distributed is not available in this torch build; install a torch "
                               "wheel with distributed support")
        self.owns_group = not dist.is_initialized()
        if self.owns_group:
            missing = [v for v in TORCHRUN_VARIABLES if v not in os.environ]
            if missing:
                raise RuntimeError(f"torch.distributed: the environment lacks {missing}; launch with "
                                   "`torchrun --nproc-per-node N script.py` (or call "
                                   "torch.distributed.init_process_group first)")
            init_torchrun_group(dist, backend or _default_backend(), datetime.timedelta(seconds=float(timeout)),
                                os.environ)
        self.backend = dist.get_backend()
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()
        self.device = torch.device("cuda", torch.cuda.current_device()) if self.backend == "nccl" \
            else torch.device("cpu")

    def all_sum(self, tensor: Any, donate: bool = False) -> Any:
        """The element-wise sum of ``tensor`` over the ranks: a new tensor, the input unchanged; with
        ``donate`` (a buffer nothing else uses) summed in place where it can be (contiguous, on the
        group's device) and returned."""
        with torch.no_grad():
            if donate and tensor.device == self.device and tensor.is_contiguous() and not tensor.requires_grad:
                buffer = tensor
            else:
                buffer = tensor.detach().to(self.device, copy=True).contiguous()
            dist.all_reduce(buffer, op=dist.ReduceOp.SUM)
            return buffer.to(tensor.device)

    def barrier(self) -> None:
        """Wait until every rank arrives (within the timeout)."""
        if self.backend == "nccl":
            dist.barrier(device_ids=[self.device.index])
        else:
            dist.barrier()

    def shutdown(self) -> None:
        """Destroy the process group if this engine created it."""
        if self.owns_group and dist.is_initialized():
            dist.destroy_process_group()


def make_fully_sharded_steps(core: Any, jit: Any = "auto") -> Any:
    """``fit``'s steps under ``DataParallel(fully_shard=True)``: torch's FSDP2 (:mod:`.fsdp`)."""
    return fsdp.make_steps(core, jit)


def make_engine(environ: Mapping[str, str], timeout: float) -> TorchEngine:
    """The engine for this process: torchrun's environment, or an initialized process group.

    Raises:
        RuntimeError: launched by ``mlx.launch`` (that is MLX's engine: use torchrun for torch).
    """
    if not dist.is_initialized() and not launched_by_torchrun(environ) and "MLX_RANK" in environ:
        raise RuntimeError("the torch backend trains data-parallel on torch.distributed, but this process was "
                           "started by mlx.launch (MLX_RANK is set); launch with `torchrun --nproc-per-node N "
                           "...`, or use the mlx backend with mlx.launch")
    return TorchEngine(timeout)
