"""How many threads torch's CPU operators use (intra-op), chosen once when the torch backend loads.

torch starts one OpenMP thread per core. On small models (the tutorials, the demo) those threads
spend most of their time spinning and waiting for each other, and on a machine that other work
shares they are many times slower than one thread. Measured with ``tutorials/01_quickstart.py
--backend torch`` (30 epochs of a 64-64-10 MLP, batch 32) on a shared 2-core Xeon with a load
average of 7: 5.6-6.0 s with one thread, 17.8-18.7 s with two, 18-36 s with torch's default (two
here); ``tutorials/04_cnn_digits.py``: 6.3 s with one thread, 57 s with two. So, unless the user
says otherwise, Ember takes :func:`default_threads`: half the CPUs this process may run on (a
core's second hardware thread, and the data pipeline or other work, keep the rest), at least
one, at most four (small models gain little past four threads; larger ones should set the count).

Who decides, first match wins:

1. ``EMBER_NUM_THREADS`` (a positive integer): Ember calls ``torch.set_num_threads`` with it;
2. ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS``: torch already follows it, Ember changes nothing;
3. otherwise Ember's default, :func:`default_threads`.

``torch.set_num_threads`` called by the user after Ember loaded the backend wins as well (Ember sets
the count only once); one called before is replaced, as Ember cannot tell it from torch's default
(set ``EMBER_NUM_THREADS`` instead). ``python -m ember info`` prints the count and which rule chose it.

Example:
    >>> from ember.backends.torch import threads
    >>> threads.choose({"EMBER_NUM_THREADS": "3"}, cpus=8)
    ThreadChoice(threads=3, source='EMBER_NUM_THREADS')
    >>> threads.choose({"OMP_NUM_THREADS": "2"}, cpus=8)
    ThreadChoice(threads=None, source='OMP_NUM_THREADS')
    >>> threads.choose({}, cpus=2)
    ThreadChoice(threads=1, source='default')
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NamedTuple

import torch

ENV_VAR = "EMBER_NUM_THREADS"
USER_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # torch reads these itself
MAX_DEFAULT = 4


class ThreadChoice(NamedTuple):
    """The intra-op thread count Ember sets (None: it leaves torch's own) and the rule that decided:
    ``"EMBER_NUM_THREADS"``, ``"OMP_NUM_THREADS"``, ``"MKL_NUM_THREADS"`` or ``"default"``."""

    threads: int | None
    source: str


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def default_threads(cpus: int) -> int:
    """Ember's thread count for ``cpus`` usable CPUs: ``cpus // 2``, at least 1, at most ``MAX_DEFAULT``.

    Example:
        >>> [default_threads(n) for n in (1, 2, 4, 8, 64)]
        [1, 1, 2, 4, 4]
    """
    return max(1, min(MAX_DEFAULT, cpus // 2))


def _parse(value: str) -> int:
    """``EMBER_NUM_THREADS``'s value as a positive integer."""
    try:
        count = int(value.strip())
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"{ENV_VAR} must be a positive integer (the number of torch CPU threads), "
                         f"received {ENV_VAR}={value!r}")
    return count


def choose(environ: Mapping[str, str], cpus: int) -> ThreadChoice:
    """Which thread count to set for the environment ``environ`` on ``cpus`` usable CPUs (module docstring).

    Raises:
        ValueError: ``EMBER_NUM_THREADS`` is set but is not a positive integer.
    """
    value = environ.get(ENV_VAR, "")
    if value.strip():
        return ThreadChoice(_parse(value), ENV_VAR)
    for variable in USER_VARS:
        if environ.get(variable, "").strip():
            return ThreadChoice(None, variable)
    return ThreadChoice(default_threads(cpus), "default")


_choice: ThreadChoice | None = None


def configure(environ: Mapping[str, str] | None = None) -> ThreadChoice:
    """Choose and set torch's intra-op thread count (called once, when the backend loads)."""
    global _choice
    choice = choose(os.environ if environ is None else environ, usable_cpus())
    if choice.threads is not None:
        torch.set_num_threads(choice.threads)
    _choice = choice
    return choice


def describe() -> dict:
    """torch's CPU thread count now and how it was chosen: ``{"threads": int, "source": str}`` with
    ``source`` the deciding rule, or ``"torch.set_num_threads"`` when the count changed since."""
    threads = torch.get_num_threads()
    if _choice is None:
        return {"threads": threads, "source": "torch"}
    if _choice.threads is not None and threads != _choice.threads:
        return {"threads": threads, "source": "torch.set_num_threads"}
    return {"threads": threads, "source": _choice.source}
