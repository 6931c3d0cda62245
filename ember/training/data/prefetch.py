"""Batches on the model's device, the copy of the next one issued before the current one is used.

The data loop of ``fit``/``evaluate``/``predict`` asks the backend's steps for a *batch
transfer* for the device the model lives on (``steps.batch_transfer(device)``; the torch
backend's is :mod:`ember.backends.torch.transfer`). None (every backend on the CPU, NumPy, MLX)
means nothing extra: :func:`on_device` hands the batches on untouched. Otherwise (torch on
CUDA) each batch the data gives is converted on the host (``transfer.staging_device``), its
copy to the device is issued asynchronously (``transfer.issue``), and batch ``i`` is handed to
the step only after the copy of batch ``i + 1`` has been issued, so the next copy (and the
host's work of producing the next batch) overlaps step ``i``'s computation, which the loop
never waits for. ``transfer.ready`` makes a batch safe to use on the compute stream (a
device-side wait, not a host one).

With a one-shot generator this reads one batch ahead of the step being trained on, as
``tf.data``'s prefetch does; array data already lives on the device and is only gathered there.

Example:
    >>> from ember.training.data.prefetch import on_device
    >>> list(on_device(iter([(1, 2, None)]), None))  # no transfer: the batches as they are
    [(1, 2, None)]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ember.training.data.convert import converted_on, is_array_like


def _leaves(value: Any, out: list) -> None:
    if value is None or is_array_like(value):
        out.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _leaves(item, out)
    else:
        for item in value:
            _leaves(item, out)


def _rebuild(value: Any, leaves: Iterator) -> Any:
    if value is None or is_array_like(value):
        return next(leaves)
    if isinstance(value, dict):
        return {k: _rebuild(v, leaves) for k, v in value.items()}
    parts = [_rebuild(v, leaves) for v in value]
    return tuple(parts) if isinstance(value, tuple) else parts


def _with_parts(batch: tuple, parts: list) -> tuple:
    """``batch`` (a tuple, or a tuple subclass carrying attributes such as a shard's window) with new parts."""
    if type(batch) is tuple:
        return tuple(parts)
    rebuilt = tuple.__new__(type(batch), parts)
    rebuilt.__dict__.update(getattr(batch, "__dict__", {}))
    return rebuilt


def _issue(transfer: Any, batch: tuple) -> tuple:
    leaves: list = []
    for part in batch:
        _leaves(part, leaves)
    return batch, transfer.issue(leaves)


def _ready(transfer: Any, issued: tuple) -> tuple:
    batch, moved = issued
    leaves = iter(transfer.ready(moved))
    return _with_parts(batch, [_rebuild(part, leaves) for part in batch])


def _on_host(batches: Iterable, device: str | None) -> Iterator:
    """``batches`` with every conversion done while producing them creating arrays on ``device``."""
    iterator = iter(batches)
    while True:
        with converted_on(device):
            try:
                batch = next(iterator)
            except StopIteration:
                return
        yield batch


def on_device(batches: Iterable, transfer: Any) -> Iterator[tuple]:
    """``(x, y, sample_weight)`` batches moved to the device by ``transfer`` (None: unchanged), with
    batch ``i + 1``'s copy issued before batch ``i`` is yielded (see the module docstring)."""
    if transfer is None:
        yield from batches
        return
    source = _on_host(batches, transfer.staging_device)
    if not transfer.prefetch:
        for batch in source:
            yield _ready(transfer, _issue(transfer, batch))
        return
    pending = None
    for batch in source:
        issued = _issue(transfer, batch)  # batch i + 1's copy starts before batch i is handed out
        if pending is not None:
            yield _ready(transfer, pending)
        pending = issued
    if pending is not None:
        yield _ready(transfer, pending)
