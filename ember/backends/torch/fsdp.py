"""Fully sharded data parallelism: ``fit``'s step through torch's FSDP2 (``DataParallel(fully_shard=True)``).

torch's ``fully_shard`` shards the parameters of an ``nn.Module``. Ember's params are a tree of
plain tensors used by a functional forward, so :class:`ShardedParams` holds the trainable ones as
module parameters ``p0, p1, ...`` (a 0-d one as one element) and its ``forward(run)`` calls
``run`` with them; ``fully_shard`` is applied to it (one FSDP unit for the whole model). Each
rank then keeps chunk ``rank`` of every variable's first axis (a ``Shard(0)`` DTensor), its
gradient and its optimizer state: the optimizer is the trainer's ``ShardedOptimizer`` in the
``rows`` layout (:func:`ember.distribute.zero.row_pieces`, the same cut).

One step of ``fit`` (:meth:`FullyShardedSteps.fit_step`), on every rank:

1. the module's ``forward`` runs the model's objective on this rank's rows of the global batch
   with the gathered (unsharded) params, and ``backward`` of the loss times ``N * count / total``:
   FSDP2's reduce-scatter averages over the ``N`` ranks, so each rank receives its rows of the
   gradient of the global batch's mean loss, as one process computes it;
2. the metric states are summed and the buffers averaged over the ranks (``StepSync``);
3. with the signals held, the optimizer updates this rank's rows in place
   (``ShardedOptimizer.update_pieces``: torch's fused kernels write the sharded params and
   ``fit``'s own copy of the optimizer state), and every rank's rows are all-gathered into the
   gathered params in place (:meth:`FullyShardedSteps._gather`: one all-gather per dtype).

The gathered params stay gathered, in the same tensors, for the whole fit
(``reshard_after_forward=False``, ``set_reshard_after_backward(False)``, and no ``reshard``,
which would free their storage: a NumPy view of the weights forbids that): the next forward and
backward use them without another all-gather, so a step costs one reduce-scatter and one
all-gather, the traffic of data parallelism's all-reduce. ``model.state`` shows them (views: the
weights callbacks, validation, ``evaluate`` and ``predict`` see are the trained ones after every
step). The memory that is
divided by ``N`` is the optimizer state, the gradients and the sharded copy of the params; the
gathered params are whole on every rank, as with FSDP2 applied to the root module alone.

A rank without rows in a small last batch runs the same graph on one row of zeros with weight 0
(every rank must join FSDP2's reduce-scatter with the same parameters).

Refused at the first ``fit`` (NotImplementedError naming the alternative): ``jit_compile=True``, a
``LossScaleOptimizer`` (its overflow check needs every gradient), constraints (they act on whole
variables) and optimizers whose update is not element-wise (``ShardedOptimizer(rows=True)``).

Example:
    >>> import torch
    >>> holder = ShardedParams([torch.ones(2, 3), torch.tensor(2.0)])
    >>> [tuple(p.shape) for p in holder.parameters()]
    [(2, 3), (1,)]
    >>> holder(lambda params: [tuple(p.shape) for p in params])
    [(2, 3), ()]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optree
import torch
import torch.distributed as dist
import torch.nn as nn

from ember.backends._steps import advance_rng
from ember.backends.torch.training import TorchSteps, _clone, _detach, _keeps_grad_mode


class ShardedParams(nn.Module):
    """The trainable variables as module parameters ``p0, p1, ...`` for ``fully_shard`` (module docstring).

    Args:
        leaves: the variables (copied; a 0-d one is held as shape ``(1,)``).
    """

    def __init__(self, leaves: list) -> None:
        super().__init__()
        self.shapes = [tuple(leaf.shape) for leaf in leaves]
        for i, leaf in enumerate(leaves):
            data = leaf.detach().clone().reshape(leaf.shape or (1,))
            self.register_parameter(f"p{i}", nn.Parameter(data))

    def held(self) -> list:
        """The parameters as the module holds them now (sharded, or gathered inside a step)."""
        return [getattr(self, f"p{i}") for i in range(len(self.shapes))]

    def forward(self, run: Callable[[list], Any]) -> Any:
        return run([p.reshape(shape) for p, shape in zip(self.held(), self.shapes)])


def _one_row(value: Any, fill: float) -> Any:
    """One row of ``fill`` shaped like a row of ``value`` (a tensor with a batch axis); others as they are."""
    if isinstance(value, torch.Tensor) and value.ndim:
        return torch.full((1, *value.shape[1:]), fill, dtype=value.dtype, device=value.device)
    return value


class FullyShardedSteps(TorchSteps):
    """``fit``'s steps with the trainable params sharded by FSDP2 (see the module docstring).

    ``train_step`` (``train_on_batch``, and ``fit`` when a callback keeps the previous state for a
    rollback) is the data-parallel step of :class:`TorchSteps` with the optimizer's rows gathered
    after the update: the same weights, without FSDP2's memory split for that step.
    """

    def __init__(self, core: Any) -> None:
        super().__init__(core)
        self._module: Any = None  # the ShardedParams of this fit, made an FSDPModule by fully_shard
        self._sharded: list = []  # the module's sharded params (DTensors), in the order of `_moving`
        self._gathered: list = []  # the module's gathered params (their storage), in the same order
        self._moving: list[int] = []  # the trainable leaves in the module: those with elements
        self._published: list = []  # every trainable leaf as fit shows it (views of the gathered params)

    # --- state ownership ------------------------------------------------------------------
    def own(self, state: dict, donated: frozenset = frozenset()) -> dict:
        """``state`` with its trainable params sharded by a new FSDP2 module (gathered once, and shown as
        views of the gathered params) and a copy of its optimizer state; the caller's tensors are never
        written. Every rank calls it at the same point (it all-gathers)."""
        core = self.core
        params = state["model"]["params"]
        core.prepare_mask(params)
        trainable, frozen = core.split(params)
        leaves, spec = optree.tree_flatten(trainable)
        self._module = None  # the previous fit's module: its gathered params stay with the views shown
        self._moving = [i for i, leaf in enumerate(leaves) if leaf.numel()]
        self._published = [_detach(leaf) for leaf in leaves]
        if self._moving:
            # ~0.5 s to import after torch: only a fit under fully_shard=True pays it (ARCHITECTURE.md)
            from torch.distributed.fsdp import fully_shard

            module: Any = ShardedParams([leaves[i] for i in self._moving])
            fully_shard(module, reshard_after_forward=False)  # the module is now also an FSDPModule
            module.set_reshard_after_backward(False)  # gathered between steps: one all-gather per step
            self._sharded = module.held()
            module.unshard()
            self._gathered = [param.detach() for param in module.held()]  # kept gathered for the whole fit
            for i, param, shape in zip(self._moving, self._gathered, module.shapes):
                self._published[i] = param.reshape(shape)
            self._module = module
        published = core.merge(spec.unflatten(self._published), frozen)
        return {"model": {"params": published, "buffers": state["model"]["buffers"]},
                "optimizer": optree.tree_map(_clone, state["optimizer"]), "metrics": state["metrics"],
                "rng": state["rng"]}

    def finish_fit(self) -> None:
        super().finish_fit()
        self._module, self._sharded, self._gathered = None, [], []  # the shown weights keep the gathered memory

    # --- the step ----------------------------------------------------------------------------
    @_keeps_grad_mode
    def fit_step(self, state: dict, batch: tuple) -> dict:
        """One step of ``fit`` on this rank's rows of a global batch (module docstring)."""
        self._held.release()  # nothing is held unless the loop skipped a publish
        window = getattr(batch, "window", None)
        if window is None or self.sync is None:
            raise RuntimeError("FullyShardedSteps.fit_step runs one rank's rows of a global batch under an "
                               "ember.distribute strategy (fit); use train_step for a batch of your own")
        core = self.core
        model_state = state["model"]
        params = model_state["params"]
        trainable, frozen = core.split(params)
        leaves, spec = optree.tree_flatten(trainable)
        if len(leaves) != len(self._published) or any([leaves[i] is not self._published[i] for i in self._moving]):
            raise RuntimeError("FullyShardedSteps.fit_step needs the state made by own(state)")
        _, count, total = window
        if not self._moving:  # nothing to train: the loss and metrics only
            aux = None
            if count:
                with self.sync.global_batch(batch), torch.no_grad():
                    x, y, sw = batch
                    _, aux = core.objective(trainable, frozen, model_state["buffers"], x, y, sw, state["rng"])
            new_buffers, metrics = self.sync.state_after(core, state, batch, aux)
            return {"model": {"params": params, "buffers": new_buffers}, "optimizer": state["optimizer"],
                    "metrics": metrics, "rng": advance_rng(state["rng"])}
        if count:
            with self.sync.global_batch(batch):
                aux = self._backward(state, batch, spec, frozen, count / total * self.sync.world_size)
        else:  # the same graph on one row of zeros, weight 0: this rank takes part in the reduce-scatter
            empty = optree.tree_map(lambda v: _one_row(v, 0.0), tuple(batch[:2])) + (None,)
            self._backward(state, empty, spec, frozen, 0.0)
            aux = None
        torch._C._set_grad_enabled(False)  # a C call: the steps' wrapper restores the mode
        new_buffers, metrics = self.sync.state_after(core, state, batch, aux)
        opt_state = self._update(state["optimizer"], leaves, spec)
        return {"model": {"params": params, "buffers": new_buffers}, "optimizer": opt_state, "metrics": metrics,
                "rng": advance_rng(state["rng"])}

    def _backward(self, state: dict, batch: tuple, spec: Any, frozen: dict, weight: float) -> tuple:
        """Forward through the FSDP2 module and backward of the loss times ``weight`` (FSDP2 reduce-scatters
        the gradients into the sharded params' ``.grad``); returns the objective's detached ``aux``."""
        core, module = self.core, self._module
        x, y, sw = batch
        buffers, rng = state["model"]["buffers"], state["rng"]

        def run(gathered: list) -> Any:
            leaves = list(self._published)
            for i, value in zip(self._moving, gathered):
                leaves[i] = value
            return core.objective(spec.unflatten(leaves), frozen, buffers, x, y, sw, rng)

        torch._C._set_grad_enabled(True)
        loss, aux = module(run)
        torch.autograd.backward(loss * weight)
        return optree.tree_map(_detach, aux)

    def _update(self, opt_state: dict, leaves: list, spec: Any) -> dict:
        """With the signals held, this rank's rows updated in place (the optimizer's fused kernels write the
        sharded params and fit's own copy of the optimizer state), then gathered again; returns the new
        optimizer state."""
        optimizer = self.core.optimizer
        pieces = optimizer.pieces(leaves)
        grads: list = [None] * len(leaves)
        values: list = [_detach(leaf) for leaf in leaves]  # size 0: variables outside the module
        for i, param in zip(self._moving, self._sharded):
            local = param.to_local()
            lo, hi = pieces[i]
            if local.numel() != hi - lo:
                raise RuntimeError(f"fully_shard: FSDP2 gave this rank {local.numel()} elements of variable {i} "
                                   f"(shape {tuple(leaves[i].shape)}), the optimizer's row layout {hi - lo}; "
                                   "this torch version cuts parameters differently from torch.chunk")
            values[i] = local.view(-1)  # this rank's rows (none: a zero-size view), written in place
            if param.grad is not None and hi > lo:
                grads[i] = param.grad.to_local().view(-1)
            param.grad = None
        self._held.hold()  # released by the loop's publish: a Ctrl-C now lands after the whole step
        new_values, new_state = optimizer.update_pieces(spec, grads, opt_state, values, in_place=True)
        moved = [(value, new) for value, new in zip(values, new_values) if new is not value]
        if moved:  # an optimizer without a fused kernel returned new tensors
            torch._foreach_copy_([value for value, _ in moved], [new for _, new in moved])
        self._gather()
        return new_state

    def _gather(self) -> None:
        """Every rank's new rows into the gathered params (the tensors ``model.state`` shows), in place:
        one all-gather of the padded row chunks per dtype (FSDP2's layout), then one copy.

        FSDP2's own ``reshard``/``unshard`` would free and refill the gathered params' storage, which
        fails once anything else shares that storage (a NumPy view of the weights from ``get_weights``
        or a checkpoint); the gathered tensors here stay the same, with the same storage, for the fit."""
        world = dist.get_world_size()
        groups: dict[torch.dtype, list[int]] = {}
        for k, param in enumerate(self._gathered):
            groups.setdefault(param.dtype, []).append(k)
        targets, sources = [], []
        for indices in groups.values():
            chunks = [-(-self._gathered[k].shape[0] // world) * self._gathered[k][:1].numel() for k in indices]
            buffer = self._gathered[indices[0]].new_zeros(sum(chunks))
            offset = 0
            for k, chunk in zip(indices, chunks):
                local = self._sharded[k].to_local().reshape(-1)
                buffer[offset:offset + local.numel()].copy_(local)
                offset += chunk
            out = buffer.new_empty(world * buffer.numel())
            dist.all_gather_into_tensor(out, buffer)
            out = out.view(world, -1)
            offset = 0
            for k, chunk in zip(indices, chunks):
                gathered = self._gathered[k]
                rows = out[:, offset:offset + chunk].reshape(-1)[:gathered.numel()]
                targets.append(gathered)
                sources.append(rows.view(gathered.shape))
                offset += chunk
        torch._foreach_copy_(targets, sources)


def make_steps(core: Any, jit: Any = "auto") -> FullyShardedSteps:
    """The FSDP2 steps for ``core`` (the trainer's ``StepCore`` with its optimizer sharded by rows).

    Raises:
        NotImplementedError: ``jit=True``, a loss-scaled optimizer, or constraints (module docstring).
    """
    alternative = "or use DataParallel(shard_optimizer=True) without fully_shard"
    if jit is True:
        raise NotImplementedError("DataParallel(fully_shard=True): jit_compile=True is not implemented with FSDP2's "
                                  f"step (it runs eagerly); compile with jit_compile='auto' or False, {alternative}")
    if getattr(core.optimizer, "inner_optimizer", None) is not None:
        raise NotImplementedError("DataParallel(fully_shard=True): a LossScaleOptimizer checks every gradient for "
                                  "overflow, but each rank receives only its rows of the gradients from FSDP2; train "
                                  f"in float32 or bfloat16 (no loss scaling), {alternative}")
    if core.constraints:
        raise NotImplementedError("DataParallel(fully_shard=True): constraints act on whole variables, but each rank "
                                  f"updates only its rows of them; drop the constraints, {alternative}")
    return FullyShardedSteps(core)
