"""``fit``'s whole torch step replayed from one CUDA graph (``compile(..., cuda_graphs=True)``).

For a small model a training step is dozens of tiny kernels, and the time goes into launching
them from Python. A CUDA graph records the kernels of one step once (stream capture) and
replays them with a single launch. :class:`GraphedFitStep` wraps the torch steps' update
(forward, ``torch.autograd.grad``, the fused optimizer kernels, the metric updates), following
torch's recipe for whole-network capture (``torch.cuda.graphs``):

* **static tensors**: the graph reads and writes fixed addresses. The step's state (params,
  optimizer slots and step counter, buffers, metrics) is held in tensors of its own, updated in
  place: inside the graph, the step's results are copied back into them. Each batch is copied
  into static input tensors before the replay; a value a callback changed between steps (the
  learning rate, reset metrics, new weights) is copied in the same way.
* **warm-up on a side stream**: the first :data:`WARMUP_STEPS` steps run eagerly on a side
  stream (they are real training steps, on real batches); then the step is captured on that same
  stream and replayed for the batch at hand (capture itself runs nothing).
* **shapes**: a batch of another shape (an epoch's last, smaller batch) runs the same step
  eagerly on the static tensors; the graph is kept. A change of the state's structure, shapes or
  Python values, or new model tensors (a new ``fit``, weights replaced by a callback), adopts the
  new tensors as the static ones and records the graph again (after one warm-up step); new
  optimizer or metric values (a learning rate set by a callback, metrics reset each epoch) are
  copied into the static tensors.
* **what cannot be graphed** raises ``NotImplementedError`` before the first step is taken: random
  layers in training (Dropout, noise, augmentation: the step seeds them from a host integer that a
  replay would freeze), ``ember.distribute`` and ``LossScaleOptimizer`` (see
  :func:`ember.training.trainer.check_cuda_graphs`).

Nothing in the step reads a value on the host (see :mod:`ember.backends.torch.transfer` and
``tests/training/test_host_syncs.py``), which stream capture requires.

Example:
    >>> from ember.backends.torch.cuda_graphs import WARMUP_STEPS
    >>> WARMUP_STEPS
    3
"""

from __future__ import annotations

from typing import Any

import optree
import torch

from ember.backends._steps import advance_rng

# Eager steps on the side stream before the capture (torch's examples use a few: lazy
# initialisation such as cuBLAS handles and autograd's streams must happen outside the capture).
WARMUP_STEPS = 3


def draws_randomness(core: Any, state: dict, batch: tuple) -> bool:
    """Whether the model's training forward pass depends on the step's random seed (Dropout and
    the like): the outputs of two forward passes with different seeds are compared."""
    x = batch[0]
    model_state = state["model"]
    params, buffers = model_state["params"], model_state["buffers"]
    with torch.no_grad():
        first, _, _ = core.forward(params, buffers, x, True, 12345)
        second, _, _ = core.forward(params, buffers, x, True, 67890)
    pairs = zip(optree.tree_leaves(first), optree.tree_leaves(second))
    return not all([torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b for a, b in pairs])


def _signature(leaves: list) -> tuple:
    """What a graph depends on beyond tensor values: shapes, dtypes, devices, and Python values."""
    return tuple((tuple(leaf.shape), leaf.dtype, leaf.device, leaf.requires_grad) if isinstance(leaf, torch.Tensor)
                 else ("value", leaf) for leaf in leaves)


def _own_storage(leaves: list) -> list:
    """``leaves`` with a private copy of any tensor whose memory another leaf already uses (a graph
    writes each static tensor on its own; an expanded view would alias its own elements)."""
    seen: set = set()
    owned = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            pointer = leaf.untyped_storage().data_ptr()
            if pointer in seen or not leaf.is_contiguous():
                leaf = leaf.detach().clone(memory_format=torch.contiguous_format).requires_grad_(leaf.requires_grad)
            seen.add(pointer)
        owned.append(leaf)
    return owned


def install(steps: Any) -> GraphedFitStep:
    """Make ``steps.fit_step`` (the torch steps') a :class:`GraphedFitStep`, released when each ``fit``
    ends (``steps.finish_fit``)."""
    graphed = GraphedFitStep(steps)
    finish = steps.finish_fit

    def finish_fit() -> None:
        graphed.release()
        finish()

    steps.fit_step = graphed
    steps.finish_fit = finish_fit
    return graphed


class CudaRuntime:
    """The three CUDA calls :class:`GraphedFitStep` makes, kept apart so that its bookkeeping can be
    tested on a machine without a GPU (with a stand-in that runs the recorded function on replay)."""

    @staticmethod
    def stream() -> Any:
        """A side stream (warm-up and capture run on it)."""
        return torch.cuda.Stream()

    @staticmethod
    def run_on(stream: Any, fn: Any) -> None:
        """``fn()`` on ``stream``, ordered after and before the current stream's work."""
        current = torch.cuda.current_stream()
        stream.wait_stream(current)
        with torch.cuda.stream(stream):
            fn()
        current.wait_stream(stream)

    @staticmethod
    def record(stream: Any, fn: Any) -> Any:
        """A ``torch.cuda.CUDAGraph`` of ``fn()``'s kernels, captured on ``stream`` (nothing runs);
        ``torch.cuda.graph`` synchronises and collects garbage before capturing."""
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            fn()
        return graph


class GraphedFitStep:
    """``fit_step(state, batch) -> state`` of the torch steps, replayed from a CUDA graph (module docstring).

    Args:
        steps: the torch backend's steps (``ember.backends.torch.training``).
        runtime: the CUDA calls (:class:`CudaRuntime`).
    """

    def __init__(self, steps: Any, runtime: Any = None) -> None:
        self.steps = steps
        self.runtime = CudaRuntime() if runtime is None else runtime
        self.graph: Any = None
        self.warmups_left = WARMUP_STEPS
        self._checked = False
        self._spec: Any = None
        self._static: list = []  # the state's leaves the graph reads and writes
        self._static_model: list = []  # those under "model" (params, buffers)
        self._state_signature: tuple | None = None
        self._batch_spec: Any = None
        self._batch_signature: tuple | None = None
        self._static_batch: list = []
        self._stream: Any = None
        self._rng: Any = None  # the step's seed (a host int, kept out of the graph)

    # --- the step the graph records ----------------------------------------------------------
    def _run(self, batch: tuple) -> None:
        """One step on the static state, its results copied back into the static tensors."""
        state = self._spec.unflatten(self._static)
        state["rng"] = self._rng
        new = self.steps._step(state, batch, None)
        new.pop("rng")
        targets, sources = [], []
        for static, value in zip(self._static, self._spec.flatten_up_to(new)):
            if value is static:
                continue
            if not isinstance(static, torch.Tensor) or not isinstance(value, torch.Tensor):
                raise NotImplementedError(
                    f"cuda_graphs: the training step changes a Python value of its state ({static!r} -> {value!r}), "
                    "which a CUDA graph cannot replay; use cuda_graphs=False")
            targets.append(static)
            sources.append(value.detach())
        if targets:
            with torch.no_grad():
                torch._foreach_copy_(targets, sources)

    # --- fit_step ------------------------------------------------------------------------------
    def __call__(self, state: dict, batch: tuple) -> dict:
        grad_mode = torch.is_grad_enabled()
        try:
            return self._step(state, batch)
        finally:
            torch._C._set_grad_enabled(grad_mode)  # as the eager fit_step: however the step ends

    def _step(self, state: dict, batch: tuple) -> dict:
        rest = {key: value for key, value in state.items() if key != "rng"}
        self._rng = state["rng"]
        leaves: list[Any]
        batch_leaves: list[Any]
        leaves, spec = optree.tree_flatten(rest, none_is_leaf=True)
        batch_leaves, batch_spec = optree.tree_flatten(tuple(batch), none_is_leaf=True)
        if not self._checked:
            self._check(state, batch)
        signature = _signature(leaves)
        model_leaves = optree.tree_leaves(rest["model"], none_is_leaf=True)
        if (signature != self._state_signature or spec != self._spec
                or any([a is not b for a, b in zip(model_leaves, self._static_model)])):
            self._adopt(leaves, spec, signature)
        else:
            self._copy_in(leaves)
        batch_signature = (batch_spec, _signature(batch_leaves))
        if self.graph is not None and batch_signature == self._batch_signature:
            self._replay(batch_leaves)
        elif self.graph is not None or self.warmups_left > 0:
            self._eager(batch)
        else:
            self._capture(batch_leaves, batch_spec, batch_signature)
            self._replay(batch_leaves)
        new = self._spec.unflatten(list(self._static))
        new["rng"] = advance_rng(self._rng)
        return new

    def release(self) -> None:
        """Forget the static tensors, the graph and its inputs (at the end of each ``fit``): the weights
        then belong to the model handle alone, and the next ``fit`` may adopt them without a copy."""
        self.graph = None
        self._spec = None
        self._static, self._static_model, self._static_batch = [], [], []
        self._state_signature = self._batch_signature = None

    def _check(self, state: dict, batch: tuple) -> None:
        if draws_randomness(self.steps.core, state, batch):
            raise NotImplementedError(
                "cuda_graphs=True: the model draws random numbers in training (Dropout, noise or augmentation "
                "layers), seeded per step from the host, which a CUDA graph would replay unchanged; use "
                "cuda_graphs=False for this model")
        self._checked = True

    def _adopt(self, leaves: list, spec: Any, signature: tuple) -> None:
        """New static tensors (the state's own, de-aliased); any recorded graph is dropped.

        Called for a new structure or new Python values, and for new model tensors: a new ``fit``
        (whose ``own`` copies the weights) or weights a callback replaced. The previous static
        tensors are never written again, so a model state published before stays as it was.
        """
        self.graph = None
        self.warmups_left = max(self.warmups_left, 1)
        self._spec = spec
        self._static = _own_storage(leaves)
        self._static_model = optree.tree_leaves(self._spec.unflatten(self._static)["model"],
                                                none_is_leaf=True)
        self._state_signature = signature

    def _copy_in(self, leaves: list) -> None:
        """Values changed since the last step (callbacks, reset metrics) copied into the static tensors."""
        targets, sources = [], []
        for static, value in zip(self._static, leaves):
            if value is not static and isinstance(static, torch.Tensor):
                targets.append(static)
                sources.append(value.detach())
        if targets:
            with torch.no_grad():
                torch._foreach_copy_(targets, sources)

    def _eager(self, batch: tuple) -> None:
        """A warm-up step on the side stream (before the capture), or a step of another batch shape."""
        if self.graph is not None:
            self._run(batch)
            return
        self.warmups_left -= 1
        self.runtime.run_on(self._side_stream(), lambda: self._run(batch))

    def _side_stream(self) -> Any:
        if self._stream is None:
            self._stream = self.runtime.stream()
        return self._stream

    def _capture(self, batch_leaves: list, batch_spec: Any, batch_signature: tuple) -> None:
        """Record one step into a CUDA graph, reading the batch from static input tensors."""
        self._static_batch = [leaf.detach().clone() if isinstance(leaf, torch.Tensor) else leaf
                              for leaf in batch_leaves]
        self._batch_spec = batch_spec
        self._batch_signature = batch_signature
        static_batch = tuple(batch_spec.unflatten(self._static_batch))
        self.graph = self.runtime.record(self._side_stream(), lambda: self._run(static_batch))

    def _replay(self, batch_leaves: list) -> None:
        with torch.no_grad():
            for static, leaf in zip(self._static_batch, batch_leaves):
                if isinstance(static, torch.Tensor):
                    static.copy_(leaf, non_blocking=True)
        self.graph.replay()
