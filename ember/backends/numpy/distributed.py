"""The NumPy data-parallel engine: ``torch.distributed`` gloo on zero-copy buffers, else mpi4py.

With torch installed, NumPy arrays are summed over the ranks by gloo through
``torch.from_numpy`` views (no copy): launch with ``torchrun``. Without torch, ``mpi4py``
(``pip install "ember[mpi]"``) sums them with ``MPI.Allreduce``: launch with ``mpirun``.
With neither, :func:`make_engine` raises an error naming both extras.

Example:
    >>> from ember.backends.numpy import distributed
    >>> distributed.available_transports({"torch": True, "mpi4py": False})
    ['torch.distributed']
"""

from __future__ import annotations

import datetime
import importlib
import importlib.util
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ember.backends._elastic import init_torchrun_group

MISSING_ENGINE = ("data-parallel training on the numpy backend needs an engine: install torch "
                  "(pip install \"ember[torch]\", then launch with torchrun) or mpi4py (pip install "
                  "\"ember[mpi]\", then launch with mpirun)")


def available_transports(installed: Mapping[str, bool] | None = None) -> list[str]:
    """The engines this process can use, best first (``installed`` overrides the import check)."""
    if installed is None:
        installed = {name: importlib.util.find_spec(name) is not None for name in ("torch", "mpi4py")}
    names = []
    if installed.get("torch"):
        names.append("torch.distributed")
    if installed.get("mpi4py"):
        names.append("mpi4py")
    return names


class NumpyTorchEngine:
    """gloo collectives on ``torch.from_numpy`` views of NumPy arrays.

    torch is imported here, lazily (only when a NumPy strategy is created with torch installed),
    and this engine drives ``torch.distributed`` itself: the backends stay independent packages.
    """

    name = "torch.distributed (gloo, NumPy buffers)"
    has_timeout = True

    def __init__(self, environ: Mapping[str, str], timeout: float) -> None:
        launched_by_torchrun = "RANK" in environ and "WORLD_SIZE" in environ
        if "MLX_RANK" in environ and not launched_by_torchrun:
            raise RuntimeError("the numpy backend trains data-parallel on torch.distributed (gloo), but this "
                               "process was started by mlx.launch; launch with `torchrun --nproc-per-node N ...`")
        self._torch = importlib.import_module("torch")
        self._dist = importlib.import_module("torch.distributed")
        dist = self._dist
        self.owns_group = not dist.is_initialized()
        if self.owns_group:
            missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if v not in os.environ]
            if missing:
                raise RuntimeError(f"torch.distributed: the environment lacks {missing}; launch with "
                                   "`torchrun --nproc-per-node N script.py` (or call "
                                   "torch.distributed.init_process_group first)")
            init_torchrun_group(dist, "gloo", datetime.timedelta(seconds=float(timeout)), os.environ)
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()

    def all_sum(self, array: Any, donate: bool = False) -> np.ndarray:
        """The element-wise sum of ``array`` over the ranks: a new array; with ``donate`` (an array nothing
        else uses) summed in place where it can be (C-contiguous, writable) and returned."""
        donated = (donate and isinstance(array, np.ndarray) and array.flags.c_contiguous and array.flags.writeable
                   and array.dtype != np.bool_)
        buffer = array if donated else np.array(array, copy=True, order="C")
        if buffer.dtype == np.bool_:
            raise TypeError("all_sum: boolean arrays cannot be summed; cast to an integer dtype first")
        self._dist.all_reduce(self._torch.from_numpy(buffer), op=self._dist.ReduceOp.SUM)  # gloo sums in place
        return buffer

    def barrier(self) -> None:
        self._dist.barrier()

    def shutdown(self) -> None:
        if self.owns_group and self._dist.is_initialized():
            self._dist.destroy_process_group()


class NumpyMPIEngine:
    """``mpi4py`` collectives on NumPy arrays (``MPI.COMM_WORLD``)."""

    name = "mpi4py"
    has_timeout = False  # MPI has no per-call timeout: the strategy's watchdog enforces it

    def __init__(self) -> None:
        self._mpi = importlib.import_module("mpi4py.MPI")
        self._comm = self._mpi.COMM_WORLD
        self.rank = self._comm.Get_rank()
        self.world_size = self._comm.Get_size()

    def all_sum(self, array: Any, donate: bool = False) -> np.ndarray:
        """The element-wise sum of ``array`` over the ranks (a new array; ``donate`` changes nothing here)."""
        source = np.ascontiguousarray(array)
        result = np.empty_like(source)
        self._comm.Allreduce(source, result, op=self._mpi.SUM)
        return result

    def barrier(self) -> None:
        self._comm.Barrier()

    def shutdown(self) -> None:
        """Nothing to destroy: mpi4py finalizes MPI at exit."""


def make_engine(environ: Mapping[str, str], timeout: float, installed: Mapping[str, bool] | None = None) -> Any:
    """The NumPy engine: gloo when torch is installed, else mpi4py.

    Raises:
        ImportError: neither torch nor mpi4py is installed (the message names both extras).
    """
    transports = available_transports(installed)
    if not transports:
        raise ImportError(MISSING_ENGINE)
    if transports[0] == "torch.distributed":
        return NumpyTorchEngine(environ, timeout)
    return NumpyMPIEngine()
