"""torch training steps: native autograd, then the optimizer's fused in-place update.

``fit`` owns a private copy of the params (leaf tensors with ``requires_grad`` for the
trainable ones) and of the optimizer state, made once per ``fit`` by :meth:`TorchSteps.own`.
Each step runs the forward pass and the losses under autograd, ``torch.autograd.grad``
for the trainable leaves, then ``optimizer.apply_gradients_inplace`` (``torch._foreach_*``
kernels from :mod:`ember.backends.torch.optim`) updates params and slots in place under
``no_grad``; metrics accumulate on the device. The update goes into a second set of tensors
(:mod:`ember.training.step_buffers`), so a step interrupted anywhere leaves the state it was
given intact: for ``SGD``/``Adam``/``AdamW`` on the CPU with tensors of 8k elements on average
or more, ``optimizer.apply_gradients_into`` writes the new values straight into them (out of
place, each tensor read and written once); otherwise they are refilled with one
``torch._foreach_copy_`` and updated in place. Nothing in a step reads a value on the host,
so a CUDA step never synchronises (the progress bar reads the loss at most every 0.1 s).
The pure ``train_step`` copies the state first, so its input is never modified.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("torch")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    >>> _ = model.build(seed=0)
    >>> trainer = ember.Trainer(model, optimizer="adam", loss="mse")
    >>> state = trainer.init_state(seed=0)
    >>> new_state, logs = trainer.train_step(state, (np.ones((4, 2)), np.zeros((4, 1))))
    >>> new_state["model"]["params"] is state["model"]["params"], int(new_state["optimizer"]["iterations"])
    (False, 1)
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Callable

import optree
import torch
import torch.nn.functional as F

from ember.backends.torch import optim


class _FusedLoss:
    """The compiled loss, with one fused kernel for the most common case.

    ``SparseCategoricalCrossentropy(from_logits=True)`` (mean reduction, no ``ignore_class``,
    no sample weights, one output) runs as ``torch.nn.functional.cross_entropy``: one kernel
    forward and one backward instead of a chain of small ops; the math is the same (mean of
    ``-log_softmax(logits)[label]``). Every other case, and any input the fused kernel would
    not take as is, goes to the generic losses (which also give the error messages).
    """

    def __init__(self, generic: Any, fused: bool) -> None:
        self.generic = generic
        self.entries = generic.entries
        self.per_output_logs = generic.per_output_logs
        self.fused = fused

    def __call__(self, y_true: list, y_pred: list, sample_weight: list) -> tuple[Any, list]:
        if self.fused:
            entry = self.entries[0]
            labels, logits = y_true[entry.index], y_pred[entry.index]
            if (sample_weight[entry.index] is None and isinstance(logits, torch.Tensor)
                    and isinstance(labels, torch.Tensor) and logits.ndim == 2
                    and logits.dtype in (torch.float32, torch.float64) and not labels.is_floating_point()
                    and labels.dtype is not torch.bool and labels.shape[0] == logits.shape[0]
                    and (labels.ndim == 1 or (labels.ndim == 2 and labels.shape[1] == 1))):
                if labels.ndim == 2:
                    labels = labels.reshape(-1)
                if labels.dtype is not torch.int64:
                    labels = labels.long()
                value = F.cross_entropy(logits, labels)
                return value, [value]
        return self.generic(y_true, y_pred, sample_weight)


def _clone(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _detach(value: Any) -> Any:
    return value.detach() if isinstance(value, torch.Tensor) else value


def _keeps_grad_mode(step: Callable) -> Callable:
    """Restore torch's global grad mode when ``step`` ends, however it ends.

    A KeyboardInterrupt landing in a ``torch.no_grad()``/``enable_grad()`` exit would otherwise leave
    gradients globally off (or on) for the rest of the process. The restore is torch's C function,
    which no interrupt can enter half-way (no Python frame).
    """

    @functools.wraps(step)
    def run(*args: Any, **kwargs: Any) -> Any:
        mode = torch.is_grad_enabled()
        try:
            return step(*args, **kwargs)
        finally:
            torch._C._set_grad_enabled(mode)

    return run


def _clone_leaf(value: Any) -> Any:
    """A copy of a tensor that keeps its ``requires_grad`` (an owned trainable param stays a leaf)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    return value


# The out-of-place kernels run tensor by tensor from Python (~6 calls per tensor), the in-place ones
# loop in C++ but need the copy first: the first wins once the tensors average about this many
# elements (measured on a CPU: 20 tensors of 2k elements 0.2 vs 0.1 ms, of 8k even, of 32k 0.9 vs 1.3 ms).
_OUT_OF_PLACE_MEAN_SIZE = 8192


def _large(leaves: list) -> bool:
    """Whether the tensors are large enough on average for the out-of-place update to pay."""
    return sum([leaf.numel() for leaf in leaves]) >= _OUT_OF_PLACE_MEAN_SIZE * len(leaves)


def _fits(spare: Any, leaf: Any) -> bool:
    """Whether the tensor ``spare`` can hold the next value of ``leaf`` (see StepBuffers)."""
    return (isinstance(spare, torch.Tensor) and isinstance(leaf, torch.Tensor) and spare.shape == leaf.shape
            and spare.dtype == leaf.dtype and spare.device == leaf.device
            and spare.requires_grad == leaf.requires_grad and spare is not leaf)


def _copy_into(targets: list, sources: list) -> None:
    """One multi-tensor copy."""
    with torch.no_grad():
        torch._foreach_copy_(targets, sources)


class _TorchSteps:
    """Autograd + fused in-place optimizer steps (see the module docstring), on the trainer's
    ``GenericSteps`` (given in the kit: :func:`make_steps`)."""

    fit_step_is_pure = False

    def __init__(self, core: Any, kit: Any, jit: bool = True) -> None:
        core = copy.copy(core)  # this backend's own view, with the fused loss
        core.compile_loss = _FusedLoss(core.compile_loss, kit.fusable_sparse_crossentropy(core.compile_loss))
        super().__init__(core, lambda fn: fn)
        self.kit = kit
        self._released: tuple | None = None
        self.buffers = kit.StepBuffers(_clone_leaf, _fits, _copy_into)

    # --- state ownership ------------------------------------------------------------------
    def own(self, state: dict) -> dict:
        core = self.core
        params = state["model"]["params"]
        core.prepare_mask(params)
        mask = core._mask

        def own_param(value: Any, trainable: bool) -> Any:
            tensor = value.detach().clone()
            if trainable and (tensor.is_floating_point() or tensor.is_complex()):
                tensor.requires_grad_(True)
            return tensor

        owned = optree.tree_map(own_param, params, mask)
        return {"model": {"params": owned, "buffers": state["model"]["buffers"]},
                "optimizer": optree.tree_map(_clone, state["optimizer"]),
                "metrics": state["metrics"], "rng": state["rng"]}

    def release(self, model_state: dict) -> dict:
        params = model_state["params"]
        cached = self._released  # the detached views of the last two param trees (fit alternates two)
        if cached is not None and cached[0] is params:
            views = cached[1]
        elif cached is not None and cached[2] is params:
            views = cached[3]
        else:
            views = optree.tree_map(_detach, params)
        self._released = (params, views) + ((cached[0], cached[1]) if cached is not None else (None, None))
        return {"params": views, "buffers": model_state["buffers"]}

    # --- steps -----------------------------------------------------------------------------
    @_keeps_grad_mode
    def fit_step(self, state: dict, batch: tuple) -> dict:
        """One step of ``fit``: all or nothing (the given state is never written to)."""
        return self._step(state, batch, self.buffers)

    def _step(self, state: dict, batch: tuple, buffers: Any) -> dict:
        """A step; with ``buffers`` the in-place update writes into spare tensors, else into ``state``'s."""
        core = self.core
        x, y, sw = batch
        model_state = state["model"]
        params = model_state["params"]
        trainable, frozen = core.split(params)
        leaves, spec = optree.tree_flatten(trainable)
        rng = state["rng"]
        if not leaves:  # everything frozen: the loss is computed, nothing is updated
            with torch.no_grad():
                _, aux = core.objective(trainable, frozen, model_state["buffers"], x, y, sw, rng)
                total, per_output, y_pred_flat, new_buffers = aux
                metrics = core.update_metrics(state["metrics"], x, y, y_pred_flat, sw, total, per_output)
            return {"model": {"params": params, "buffers": new_buffers}, "optimizer": state["optimizer"],
                    "metrics": metrics, "rng": self.kit.advance_rng(rng)}
        if len([leaf for leaf in leaves if leaf.requires_grad]) != len(leaves):
            raise RuntimeError("TorchSteps.fit_step needs a state made by own(state); use train_step for "
                               "a state you hold")
        metrics = None
        if self.sync is not None and getattr(batch, "window", None) is not None:  # ember.distribute
            def gradients() -> tuple:
                local_aux, local_grads = self._gradients(trainable, frozen, model_state["buffers"], x, y, sw, rng,
                                                         leaves)
                local_grads = [torch.zeros_like(leaf) if g is None else g for leaf, g in zip(leaves, local_grads)]
                return optree.tree_map(_detach, local_aux), spec.unflatten(local_grads)

            with torch.no_grad():
                synced, new_buffers, metrics = self.sync.train(core, gradients, state, batch, trainable)
            grads = spec.flatten_up_to(synced)
        else:
            aux, grads = self._gradients(trainable, frozen, model_state["buffers"], x, y, sw, rng, leaves)
        with torch.no_grad():
            optimizer, opt_state = core.optimizer, state["optimizer"]
            written = optim.written_slots(optimizer, leaves) if buffers is not None and _large(leaves) else None
            if written is not None:  # out of place: the new values go straight into the spare tensors
                slots = [spec.flatten_up_to(opt_state[name]) for name in written]
                overwritten = frozenset([id(tensor) for i, g in enumerate(grads) if g is not None
                                         for tensor in [leaves[i]] + [values[i] for values in slots]])
                params, new_opt_state = buffers.writable(params, opt_state, overwritten)
                new_trainable, frozen = core.split(params)
                _, opt_state = optimizer.apply_gradients_into(spec.unflatten(list(grads)), opt_state, trainable,
                                                              new_opt_state, new_trainable)
            else:  # in place, into a copy (spare tensors refilled) or into train_step's own state
                if buffers is not None:
                    params, opt_state = buffers.writable(params, opt_state)
                    trainable, frozen = core.split(params)
                    leaves = spec.flatten_up_to(trainable)
                new_trainable, opt_state = optimizer.apply_gradients_inplace(
                    spec.unflatten(list(grads)), opt_state, trainable)
                new_leaves = spec.flatten_up_to(new_trainable)
                for leaf, new in zip(leaves, new_leaves):
                    if new is not leaf:  # an optimizer without a fused path returns new tensors
                        leaf.copy_(new)
            if core.constraints:
                constrained = core.apply_constraints(params)
                for leaf, new in zip(optree.tree_leaves(params), optree.tree_leaves(constrained)):
                    if new is not leaf:
                        leaf.copy_(new)
            if metrics is None:
                total, per_output, y_pred_flat, new_buffers = optree.tree_map(_detach, aux)
                metrics = core.update_metrics(state["metrics"], x, y, y_pred_flat, sw, total, per_output)
        if buffers is not None:  # the last action: the step is taken
            buffers.commit(model_state["params"], state["optimizer"], params, opt_state)
        return {"model": {"params": params, "buffers": new_buffers}, "optimizer": opt_state, "metrics": metrics,
                "rng": self.kit.advance_rng(rng)}

    def _gradients(self, trainable: dict, frozen: dict, buffers: dict, x: Any, y: Any, sw: Any, rng: Any,
                   leaves: list) -> tuple:
        """``(aux, grads)`` by autograd (None for a leaf the loss does not use)."""
        with torch.enable_grad():
            scaled, aux = self.core.objective(trainable, frozen, buffers, x, y, sw, rng)
            grads = torch.autograd.grad(scaled, leaves, allow_unused=True)
        return aux, grads

    @_keeps_grad_mode
    def train_step(self, state: dict, batch: tuple) -> dict:
        new = self._step(self.own(state), batch, None)
        params = optree.tree_map(_detach, new["model"]["params"])
        new["model"] = {"params": params, "buffers": new["model"]["buffers"]}
        return new

    @_keeps_grad_mode
    def test_step(self, state: dict, batch: tuple) -> dict:
        with torch.no_grad():
            return super().test_step(state, batch)

    @_keeps_grad_mode
    def predict_step(self, state: dict, x: Any) -> Any:
        with torch.no_grad():
            return super().predict_step(state, x)


@functools.cache
def _steps_class(generic: type) -> type:
    """The torch steps class on the trainer's ``GenericSteps`` (one class per base)."""
    return type("TorchSteps", (_TorchSteps, generic), {"__module__": __name__, "__doc__": _TorchSteps.__doc__})


def make_steps(core: Any, kit: Any, jit: bool = True) -> Any:
    """The torch steps for ``core`` (a ``StepCore``), built on the trainer's ``kit`` (a ``StepKit``)."""
    return _steps_class(kit.GenericSteps)(core, kit, jit=jit)
