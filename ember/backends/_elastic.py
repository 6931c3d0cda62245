"""Joining torchrun's process group so that ``torchrun --max-restarts`` can restart it.

torchrun keeps one key-value store (its agent's) for the whole job. A group that a restart
re-creates on it finds the previous attempt's keys (each rank's gloo address) and connects to
ranks that no longer exist (``Gloo connectFullMesh failed ... Connection refused``). So under
torchelastic (``TORCHELASTIC_RESTART_COUNT`` set) each attempt joins on its own part of the
store, a :class:`torch.distributed.PrefixStore` named by the restart count; without it, the
usual ``env://`` initialization runs.

Both the torch engine and the NumPy backend's gloo engine join through :func:`init_torchrun_group`.

Example:
    >>> from ember.backends._elastic import store_prefix
    >>> store_prefix({"TORCHELASTIC_RESTART_COUNT": "2"}), store_prefix({})
    ('ember/restart2', None)
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any


def store_prefix(environ: Mapping[str, str]) -> str | None:
    """The store prefix of this restart attempt, or None outside torchelastic."""
    restart = environ.get("TORCHELASTIC_RESTART_COUNT")
    return None if restart is None else f"ember/restart{int(restart)}"


def init_torchrun_group(dist: Any, backend: str, timeout: datetime.timedelta, environ: Mapping[str, str]) -> None:
    """``dist.init_process_group`` for the group ``environ`` (torchrun's variables) describes.

    Args:
        dist: ``torch.distributed``.
        backend: ``"gloo"`` or ``"nccl"``.
        timeout: how long collectives (and joining) may wait for the other ranks.
        environ: the process's environment.
    """
    prefix = store_prefix(environ)
    if prefix is None:
        dist.init_process_group(backend=backend, timeout=timeout)
        return
    rank, world_size = int(environ["RANK"]), int(environ["WORLD_SIZE"])
    # torchrun's agent hosts the store (TORCHELASTIC_USE_AGENT_STORE); otherwise rank 0 does.
    hosts_store = rank == 0 and environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True"
    store = dist.TCPStore(environ["MASTER_ADDR"], int(environ["MASTER_PORT"]), world_size, is_master=hosts_store,
                          timeout=timeout)
    dist.init_process_group(backend=backend, store=dist.PrefixStore(prefix, store), rank=rank,
                            world_size=world_size, timeout=timeout)
