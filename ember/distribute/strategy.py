"""``DataParallel``: the strategy that makes ``fit``/``evaluate``/``predict`` run on N processes.

The strategy joins the process group of the launcher that started this process, through the
active backend's engine (``ember/backends/<name>/distributed.py``):

============  ======================================================  =====================
backend       engine                                                  launcher
============  ======================================================  =====================
torch         ``torch.distributed`` (gloo on CPU, NCCL on CUDA)        ``torchrun``
numpy         ``torch.distributed`` gloo on ``torch.from_numpy``       ``torchrun``
              buffers; else ``mpi4py``                                 (``mpirun``)
mlx           ``mx.distributed`` (ring over TCP, or MPI)               ``mlx.launch``
============  ======================================================  =====================

While a strategy is active (:func:`set_strategy` or ``with strategy.scope():``), ``fit``,
``evaluate`` and ``predict`` shard every global batch over the ranks and sum gradients and
metric states inside the training step.

Faults: every collective waits at most ``timeout`` seconds. torch's engine enforces it
itself (the collective raises); for engines without a timeout (MLX, MPI) a watchdog thread
ends the process with a message naming the collective when one waits longer (a C call
blocked on a socket cannot be interrupted by an exception).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import optree

from ember import backends, ops
from ember.distribute.sharding import shard_rows

_REDUCE_OPS = ("sum", "mean")


class RankFailureError(RuntimeError):
    """A collective failed: another rank died, hangs past the timeout, or left the group.

    Example:
        >>> from ember import distribute
        >>> try:
        ...     raise distribute.RankFailureError("rank 1 stopped answering")
        ... except RuntimeError as error:
        ...     print(type(error).__name__, error)
        RankFailureError rank 1 stopped answering
    """


# Messages by which the engines report a lost or silent peer (gloo, NCCL, MLX ring).
_PEER_FAILURE_MARKERS = ("connection", "timed out", "timeout", "gloo", "nccl", "[ring]", "peer", "closed")


def _is_peer_failure(error: BaseException) -> bool:
    text = str(error).lower()
    return isinstance(error, RuntimeError) and any(marker in text for marker in _PEER_FAILURE_MARKERS)


class _Watchdog:
    """Ends the process when one guarded section outlives the timeout (engines without a timeout)."""

    def __init__(self, timeout: float, rank: int) -> None:
        self.timeout = timeout
        self.rank = rank
        self._deadline: float | None = None
        self._what = ""
        self._thread = threading.Thread(target=self._watch, name="ember-distribute-watchdog", daemon=True)
        self._stop = threading.Event()
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(min(0.5, self.timeout / 4)):
            deadline = self._deadline
            if deadline is not None and time.monotonic() > deadline:
                sys.stderr.write(f"ember.distribute: rank {self.rank}: {self._what} waited more than "
                                 f"{self.timeout:g} s for the other ranks (a rank died or hangs); exiting\n")
                sys.stderr.flush()
                os._exit(70)

    @contextlib.contextmanager
    def guard(self, what: str) -> Iterator[None]:
        self._what = what
        self._deadline = time.monotonic() + self.timeout
        try:
            yield
        finally:
            self._deadline = None

    def stop(self) -> None:
        self._stop.set()


class DataParallel:
    """Data parallelism over the processes a launcher started (see the module docstring).

    Args:
        timeout: seconds any collective may wait for the other ranks (default 300).
        environ: the launcher's variables (default ``os.environ``): ``RANK``/``WORLD_SIZE``/
            ``MASTER_ADDR``/``MASTER_PORT`` from torchrun, ``MLX_RANK``/``MLX_HOSTFILE`` from mlx.launch.
        shard_optimizer: ZeRO-1/2 sharding (:mod:`ember.distribute.zero`): each rank keeps and updates
            the optimizer state of about ``1/world_size`` of the trainable variables, and the updated
            variables are gathered after each step. The weights equal the unsharded run's. An attribute:
            it may be changed between fits (a full optimizer state is then sharded; a sharded one moves to
            another layout through ``ember.saving.save_sharded``/``load_sharded``).
        fully_shard: fully sharded parameters on the torch backend, through torch's own FSDP2
            (``torch.distributed.fsdp.fully_shard``; ``ember/backends/torch/fsdp.py``): each rank keeps its
            rows of every trainable variable, their gradients (reduce-scattered) and their optimizer
            state; implies ``shard_optimizer``. NumPy and MLX have no such engine: NotImplementedError.

    Raises:
        ValueError: ``timeout`` not a positive number.
        TypeError: ``shard_optimizer`` or ``fully_shard`` not a bool.
        NotImplementedError: ``fully_shard=True`` on NumPy or MLX (the message names the alternative).
        ImportError: no engine is installed for the active backend (the message names the extra).
        RuntimeError: the launcher does not match the backend's engine (the message names the right one).

    Example:
        >>> import ember
        >>> from ember import distribute
        >>> distribute.get_strategy() is None   # one process: nothing is distributed
        True
        >>> distribute.rank(), distribute.world_size(), distribute.is_main_process()
        (0, 1, True)
    """

    def __init__(self, timeout: float = 300.0, environ: Mapping[str, str] | None = None, *,
                 shard_optimizer: bool = False, fully_shard: bool = False) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"DataParallel: timeout must be a positive number of seconds, received {timeout!r}")
        for argument, value in (("shard_optimizer", shard_optimizer), ("fully_shard", fully_shard)):
            if not isinstance(value, bool):
                raise TypeError(f"DataParallel: {argument} must be a bool, received {value!r}")
        self.backend = backends.get_backend()
        if fully_shard and self.backend != "torch":
            raise NotImplementedError(fully_shard_unsupported(self.backend))
        self.timeout = float(timeout)
        self.fully_shard = fully_shard
        self.shard_optimizer = shard_optimizer or fully_shard  # FSDP2 shards the optimizer state with the params
        environ = os.environ if environ is None else environ
        self.engine = backends.current().distributed.make_engine(environ, self.timeout)
        self.rank = int(self.engine.rank)
        self.world_size = int(self.engine.world_size)
        self._watchdog = None if self.engine.has_timeout else _Watchdog(self.timeout, self.rank)
        self.closed = False
        atexit.register(self._release_at_exit)  # torch's gloo aborts at exit with a live process group

    def __repr__(self) -> str:
        return (f"DataParallel(backend={self.backend!r}, engine={self.engine.name!r}, rank={self.rank}, "
                f"world_size={self.world_size}, shard_optimizer={self.shard_optimizer}, "
                f"fully_shard={self.fully_shard})")

    # --- facts --------------------------------------------------------------------------------
    @property
    def is_main_process(self) -> bool:
        """Whether this is rank 0 (the process that writes files and prints)."""
        return self.rank == 0

    def shard(self, total: int) -> tuple[int, int]:
        """``(offset, count)`` of this rank's rows in a global batch of ``total`` rows."""
        return shard_rows(total, self.rank, self.world_size)

    # --- collectives -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def guard(self, what: str) -> Iterator[None]:
        """A section of collectives: bounded by the timeout (the engine's own, else the watchdog's), and a
        lost peer reported as a :class:`RankFailureError` naming this rank, the section and the timeout."""
        self._check_open()
        try:
            if self._watchdog is None:
                yield
            else:
                with self._watchdog.guard(what):
                    yield
        except RuntimeError as error:
            if isinstance(error, RankFailureError) or not _is_peer_failure(error):
                raise
            raise RankFailureError(
                f"ember.distribute: rank {self.rank} of {self.world_size}: {what} failed: another rank died, hangs "
                f"(timeout {self.timeout:g} s) or left the process group ({self.engine.name}: {error})") from error

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("DataParallel: the strategy was shut down; create a new one")

    def all_sum(self, array: Any, donate: bool = False) -> Any:
        """The sum over the ranks of one native array of the active backend (traceable on MLX).

        ``donate``: ``array`` is a buffer nothing else uses, which the engine may sum in place and
        return (torch and NumPy over gloo), instead of a copy."""
        return self.engine.all_sum(array, donate=donate)

    def barrier(self) -> None:
        """Wait until every rank arrives here (within the timeout)."""
        with self.guard("barrier"):
            self.engine.barrier()

    def all_reduce(self, tree: Any, op: str = "sum") -> Any:
        """Sum (``op="sum"``) or average (``"mean"``) every array of ``tree`` over the ranks.

        Leaves may be native arrays, NumPy arrays or Python numbers; results are native arrays of
        the active backend. Every rank must call it with the same structure and shapes.

        Raises:
            ValueError: an unknown ``op``.
        """
        if op not in _REDUCE_OPS:
            raise ValueError(f"all_reduce: op must be one of {_REDUCE_OPS}, received {op!r}")
        leaves, spec = optree.tree_flatten(tree)
        with self.guard("all_reduce"):
            out = []
            for leaf in leaves:
                value = self.engine.all_sum(ops.convert_to_tensor(leaf))
                if op == "mean":
                    value = ops.divide(value, float(self.world_size))
                if self.backend == "mlx":  # lazy: evaluate inside the guarded section
                    value = ops.convert_to_tensor(ops.to_numpy(value))
                out.append(value)
        return spec.unflatten(out)

    def gather_slots(self, row: np.ndarray) -> np.ndarray:
        """Every rank's ``row`` (a 1-d float64 vector of one common length), stacked by rank."""
        row = np.asarray(row, dtype=np.float64).reshape(-1)
        table = np.zeros((self.world_size, row.shape[0]), dtype=np.float64)
        table[self.rank] = row
        dtype = "float32" if self.backend == "mlx" else "float64"  # MLX has no float64 collectives
        with self.guard("gather"):
            summed = self.engine.all_sum(ops.convert_to_tensor(table, dtype=dtype))
            return np.asarray(ops.to_numpy(summed), dtype=np.float64)

    # --- lifetime -------------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Leave the process group (a last barrier, then the engine's cleanup); idempotent.

        Without it the group is released at interpreter exit (without the barrier)."""
        if self.closed:
            return
        try:
            self.barrier()
        finally:
            self.closed = True
            global _active
            if _active is self:
                _active = None
            if self._watchdog is not None:
                self._watchdog.stop()
            self.engine.shutdown()

    def _release_at_exit(self) -> None:
        """At interpreter exit, without ``shutdown``: release the engine without a barrier (the other
        ranks may be gone already)."""
        if not self.closed:
            self.closed = True
            self.engine.shutdown()

    @contextlib.contextmanager
    def scope(self) -> Iterator[DataParallel]:
        """Make this strategy the active one inside the ``with`` block."""
        global _active
        previous = _active
        _active = self
        try:
            yield self
        finally:
            _active = previous


def fully_shard_unsupported(backend: str) -> str:
    """Why ``fully_shard=True`` (sharded parameters, torch's FSDP2) is refused on ``backend``.

    Example:
        >>> "shard_optimizer=True" in fully_shard_unsupported("numpy")
        True
    """
    return (f"DataParallel(fully_shard=True): fully sharded parameters are not implemented on the {backend} backend: "
            f"its engine has no fully sharded data parallelism (FSDP2 is torch.distributed's, used by the torch "
            "backend). Use shard_optimizer=True (ZeRO-1/2: the optimizer state sharded over the ranks, on every "
            "backend), or the torch backend")


_active: DataParallel | None = None


def set_strategy(strategy: DataParallel | None) -> None:
    """Make ``strategy`` active for ``fit``/``evaluate``/``predict`` (None: back to one process)."""
    global _active
    if strategy is not None and not isinstance(strategy, DataParallel):
        raise TypeError(f"set_strategy: expected an ember.distribute.DataParallel or None, received "
                        f"{type(strategy).__name__}")
    _active = strategy


def get_strategy() -> DataParallel | None:
    """The active strategy, or None when training runs in one process."""
    return _active
