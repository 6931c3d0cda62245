"""Batches to a torch device and outputs back to the host, without making the host wait.

``fit``/``evaluate``/``predict`` move each batch the data gives on the host (a generator, an
``ember.data.Dataset``, a ``DataLoader``, CPU tensors) to the device the model lives on. On a
CUDA device a plain ``tensor.to("cuda")`` from pageable memory is a blocking copy; here:

* the batch is converted on the host (``staging_device``), copied into page-locked (pinned)
  memory, and sent with ``non_blocking=True`` on a side stream of its own, so the copy of
  batch ``i + 1`` runs while step ``i`` computes (the data loop issues it before it hands
  out batch ``i``: :func:`ember.training.data.prefetch.on_device`);
* before a batch is used, the compute stream waits for the copy stream (an event, no host
  wait) and the batch's memory is recorded as used there (``Tensor.record_stream``), so the
  caching allocator does not reuse it while a step may still read it;
* ``predict`` copies each batch's outputs into pinned host memory with ``non_blocking=True``
  and waits once, after the last batch (:meth:`BatchTransfer.host_ready`).

On the CPU nothing of this applies: :func:`for_device` returns None and the data loop does
exactly what it did before. On MPS the copies stay blocking (unified memory; torch's
non-blocking MPS copies are not needed for correctness there). Which of these a device gets is
decided by one pure function, :func:`transfer_plan`.

Example:
    >>> from ember.backends.torch.transfer import for_device, transfer_plan
    >>> transfer_plan("cuda:0")
    TransferPlan(staging_device='cpu', pin_memory=True, non_blocking=True, copy_stream=True, prefetch=True)
    >>> transfer_plan("cpu").prefetch, for_device("cpu")
    (False, None)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch


class TransferPlan(NamedTuple):
    """How batches reach a device.

    Attributes:
        staging_device: the device per-batch data is converted on before the copy (None: straight
            onto the target, as arrays created by ``ember.ops`` are).
        pin_memory: copy host tensors into page-locked memory first (what makes a copy asynchronous).
        non_blocking: the copy returns before it completes (ordered on its stream).
        copy_stream: issue the copies on a side stream, overlapping the compute stream.
        prefetch: convert and send batch ``i + 1`` before batch ``i`` is handed to the step.
    """

    staging_device: str | None
    pin_memory: bool
    non_blocking: bool
    copy_stream: bool
    prefetch: bool


_NOTHING_EXTRA = TransferPlan(None, False, False, False, False)
_ASYNCHRONOUS = TransferPlan("cpu", True, True, True, True)


def transfer_plan(device: Any) -> TransferPlan:
    """The plan for batches bound for ``device`` (a name such as ``"cuda:0"`` or a ``torch.device``):
    everything asynchronous on CUDA, nothing extra elsewhere (CPU, MPS)."""
    kind = torch.device(device).type
    return _ASYNCHRONOUS if kind == "cuda" else _NOTHING_EXTRA


def for_device(device: Any) -> BatchTransfer | None:
    """The :class:`BatchTransfer` for ``device``, or None where batches need nothing extra (the CPU)."""
    plan = transfer_plan(device)
    if plan == _NOTHING_EXTRA:
        return None
    return BatchTransfer(device, plan)


class BatchTransfer:
    """Sends flat lists of tensors to one device following a :class:`TransferPlan` (module docstring).

    Args:
        device: the target device (name or ``torch.device``).
        plan: from :func:`transfer_plan`.

    Example:
        >>> import torch
        >>> from ember.backends.torch.transfer import BatchTransfer, TransferPlan
        >>> transfer = BatchTransfer("meta", TransferPlan(None, False, False, False, False))
        >>> moved = transfer.ready(transfer.issue([torch.ones(2), None]))
        >>> moved[0].device.type, moved[1]
        ('meta', None)
    """

    def __init__(self, device: Any, plan: TransferPlan) -> None:
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.plan = plan
        self.staging_device = plan.staging_device
        self.prefetch = plan.prefetch
        self._stream = torch.cuda.Stream(self.device) if plan.copy_stream else None

    def _move(self, value: Any) -> Any:
        if not isinstance(value, torch.Tensor) or value.device == self.device:
            return value
        if self.plan.pin_memory and value.device.type == "cpu" and not value.is_pinned():
            value = value.pin_memory()  # a copy: the caller's host array is free once this returns
        return value.to(self.device, non_blocking=self.plan.non_blocking)

    def issue(self, leaves: list) -> list:
        """Start the copies of ``leaves`` (tensors already on the device, and non-tensors, pass as they are).

        With a copy stream, the copies are issued on it and the thread's current stream is put back
        by torch's C setter, which no KeyboardInterrupt can enter half-way: the exit of a
        ``torch.cuda.stream`` context is Python, and a Ctrl-C landing there left the copy stream
        current, so the next reads of the weights raced the step's kernels.
        """
        if self._stream is None:
            return [self._move(leaf) for leaf in leaves]
        previous = torch.cuda.current_stream(self.device)
        try:
            torch.cuda.set_stream(self._stream)
            return [self._move(leaf) for leaf in leaves]
        finally:
            torch._C._cuda_setStream(stream_id=previous.stream_id, device_index=previous.device_index,
                                     device_type=previous.device_type)

    def ready(self, moved: list) -> list:
        """``moved`` (from :meth:`issue`), safe to use on the current stream (which waits on the device
        for the copies issued so far; the host does not wait)."""
        if self._stream is None:
            return moved
        current = torch.cuda.current_stream(self.device)
        current.wait_stream(self._stream)
        for leaf in moved:
            if isinstance(leaf, torch.Tensor) and leaf.device == self.device:
                leaf.record_stream(current)  # allocated on the copy stream, read on this one
        return moved

    def fetch(self, leaves: list) -> list:
        """Start copying device tensors to pinned host memory; valid after :meth:`host_ready`."""
        if not self.plan.non_blocking:
            return [leaf.cpu() if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
        fetched = []
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor) and leaf.device.type != "cpu":
                host = torch.empty(leaf.shape, dtype=leaf.dtype, device="cpu", pin_memory=self.plan.pin_memory)
                host.copy_(leaf.detach(), non_blocking=True)
                leaf = host
            fetched.append(leaf)
        return fetched

    def host_ready(self) -> None:
        """Wait once for every copy :meth:`fetch` started (the one host sync of a ``predict``)."""
        if self.plan.non_blocking and self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()
