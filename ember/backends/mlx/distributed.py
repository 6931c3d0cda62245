"""The MLX data-parallel engine: ``mx.distributed`` (ring over TCP, or MPI).

``mlx.launch`` starts the ranks and describes them with ``MLX_RANK`` and ``MLX_HOSTFILE``
(ring); :func:`make_engine` joins that group. ``mx.distributed.all_sum`` also works under
``mx.compile``, so the gradient all-reduce runs inside the compiled training step.

MLX collectives have no timeout of their own: a rank that died is reported by the ring
("connection to a peer was lost"); a rank that hangs is caught by the strategy's watchdog.

Example:
    >>> from ember.backends.mlx import distributed
    >>> distributed.launched_by_mlx({"MLX_RANK": "0", "MLX_HOSTFILE": "hosts.json"})
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mlx.core as mx


def launched_by_mlx(environ: Mapping[str, str]) -> bool:
    """Whether ``mlx.launch`` (or an equivalent environment) started this process."""
    return "MLX_RANK" in environ or "OMPI_COMM_WORLD_RANK" in environ


class MLXEngine:
    """Collectives of the global ``mx.distributed`` group on MLX arrays."""

    name = "mlx.distributed"
    has_timeout = False  # no timeout of its own: the strategy's watchdog enforces it

    def __init__(self, backend: str = "any") -> None:
        self.group = mx.distributed.init(strict=True, backend=backend)
        self.rank = self.group.rank()
        self.world_size = self.group.size()
        self.backend = backend

    def all_sum(self, array: Any, donate: bool = False) -> Any:
        """The element-wise sum over the ranks (lazy; traceable under ``mx.compile``; MLX arrays are
        immutable, so ``donate`` changes nothing)."""
        return mx.distributed.all_sum(array, group=self.group)

    def barrier(self) -> None:
        """Wait for every rank: a one-element all-sum, evaluated."""
        mx.eval(mx.distributed.all_sum(mx.zeros((1,), dtype=mx.float32), group=self.group))

    def shutdown(self) -> None:
        """A last barrier (MLX frees its group at exit; there is nothing to destroy)."""


def make_engine(environ: Mapping[str, str], timeout: float) -> MLXEngine:
    """The engine for this process (``timeout`` is enforced by the strategy's watchdog).

    Raises:
        RuntimeError: launched by torchrun (that is torch's engine), or not launched at all.
    """
    del timeout
    if not launched_by_mlx(environ):
        if "RANK" in environ and "WORLD_SIZE" in environ:
            raise RuntimeError("the mlx backend trains data-parallel on mx.distributed, but this process was "
                               "started by torchrun; launch with `mlx.launch -n N script.py`, or use the torch "
                               "or numpy backend with torchrun")
        raise RuntimeError("mx.distributed: no launcher environment (MLX_RANK/MLX_HOSTFILE); launch with "
                           "`mlx.launch -n N script.py`")
    backend = "ring" if "MLX_HOSTFILE" in environ else "any"
    return MLXEngine(backend)
