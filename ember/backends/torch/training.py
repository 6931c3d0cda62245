"""torch training steps: native autograd, then the optimizer's fused in-place update.

``fit`` owns its params (leaf tensors with ``requires_grad`` for the trainable ones) and optimizer
state, taken once per ``fit`` by :meth:`TorchSteps.own`: the tensors nobody else holds are adopted
(aliases of their storage, no copy), the others cloned.
Each step runs the forward pass and the losses under autograd, ``torch.autograd.grad``
for the trainable leaves, then the optimizer's update under ``no_grad``; metrics accumulate on the
device. The update is all or nothing, in one of two ways:

* **in place** (``SGD``/``Adam``/``AdamW``, no constraints): everything the update needs is computed
  first (the optimizer's plan, metrics, the next state), then, with the signals held
  (:mod:`ember.backends._held_signals`), the ``torch._foreach_*`` kernels of
  :mod:`ember.backends.torch.optim` write params, slots and the step counter without entering any
  Python function, and the step returns to the loop, whose publish (:meth:`release`) delivers a
  Ctrl-C that arrived meanwhile;
* **into new tensors** (any other optimizer, constraints, ``train_step``): the trainable params and
  the optimizer's tensors are cloned and updated (``optimizer.apply_gradients_inplace``); the given
  state's tensors are never written, so an interrupted step is simply not taken.

Nothing in a step reads a value on the host, so a CUDA step never synchronises (the progress bar
reads the loss at most every 0.1 s).

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
from collections.abc import Callable
from typing import Any

import optree
import torch
import torch.nn.functional as F

from ember.backends._held_signals import HeldSignals
from ember.backends._steps import GenericSteps, advance_rng, one_label_per_row
from ember.backends.torch import _base, optim
from ember.backends.torch.compiled_step import CompiledSteps


class _FusedLoss:
    """The compiled loss, with one fused kernel for the most common case.

    ``SparseCategoricalCrossentropy(from_logits=True)`` (mean reduction, no ``ignore_class``,
    no sample weights, one output) runs as ``torch.nn.functional.cross_entropy``: one kernel
    forward and one backward instead of a chain of small ops; the math is the same (mean of
    ``-log_softmax(logits)[label]``, over the batch and any positions: logits ``(batch, *positions,
    classes)`` go to the kernel as rows). Every other case, and any input the fused kernel would
    not take as is, goes to the generic losses (which also give the error messages). Mean squared
    error (one output, mean reduction, no sample weights, ``y_true`` of ``y_pred``'s shape) runs as
    ``torch.nn.functional.mse_loss`` likewise: the mean of every squared difference is the mean of
    the per-sample means, which all cover the same number of elements.
    """

    def __init__(self, generic: Any, fused: bool, fused_mse: bool = False) -> None:
        self.generic = generic
        self.entries = generic.entries
        self.per_output_logs = generic.per_output_logs
        self.fused = fused
        self.fused_mse = fused_mse

    def __call__(self, y_true: list, y_pred: list, sample_weight: list) -> tuple[Any, list]:
        if self.fused_mse:
            entry = self.entries[0]
            target, prediction = y_true[entry.index], y_pred[entry.index]
            if (sample_weight[entry.index] is None and isinstance(prediction, torch.Tensor)
                    and isinstance(target, torch.Tensor) and prediction.ndim >= 1
                    and prediction.dtype in (torch.float32, torch.float64) and target.shape == prediction.shape
                    and not target.is_complex() and target.dtype is not torch.bool):
                value = F.mse_loss(prediction, target.to(prediction.dtype))
                return value, [value]
        if self.fused:
            entry = self.entries[0]
            labels, logits = y_true[entry.index], y_pred[entry.index]
            if (sample_weight[entry.index] is None and isinstance(logits, torch.Tensor)
                    and isinstance(labels, torch.Tensor) and logits.ndim >= 2
                    and logits.dtype in (torch.float32, torch.float64) and not labels.is_floating_point()
                    and labels.dtype is not torch.bool and one_label_per_row(labels.shape, logits.shape)):
                if logits.ndim > 2:  # (batch, *positions, classes): the mean over every position
                    logits = logits.reshape(-1, logits.shape[-1])
                labels = labels.reshape(-1)
                if labels.dtype is not torch.int64:
                    labels = labels.long()
                if not _base.host_reads_free(labels.device):
                    # On CUDA an out-of-range label would trip a device-side assert (fatal to the
                    # process) before fit's deferred label check reads its flag and raises.
                    labels = labels.clamp(0, logits.shape[1] - 1)
                value = F.cross_entropy(logits, labels)
                return value, [value]
        return self.generic(y_true, y_pred, sample_weight)


def _accumulate(generic: Callable, tracker: dict, value: Any, count: float) -> dict:
    """The core's ``accumulate`` (``generic``) in two torch calls (``total + count * value``,
    ``seen + count``) for a value of the tracker's dtype; anything else goes to ``generic``."""
    total = tracker["total"]
    if type(value) is torch.Tensor and type(total) is torch.Tensor and value.dtype is total.dtype:
        return {"total": torch.add(total, value, alpha=count), "count": tracker["count"] + count}
    return generic(tracker, value, count)


def _clone(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _conv_memory_order(ndim: int) -> tuple[int, ...] | None:
    """The axes of a Keras-layout kernel ``(*spatial, in, out)`` in the order torch's 2-d and 3-d
    convolutions read them fastest: ``(out, *spatial, in)``, torch's channels-last weight. None for
    other ranks (1-d convolutions gain nothing)."""
    if ndim not in (4, 5):
        return None
    nd = ndim - 2
    return (nd + 1, *range(nd), nd)


def _in_conv_layout(tensor: Any) -> bool:
    """Whether ``tensor`` (a conv kernel in Keras's shape) is stored in the convolutions' memory order."""
    order = _conv_memory_order(tensor.ndim)
    return order is None or tensor.permute(order).is_contiguous()


def _to_conv_layout(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of the kernel ``tensor``, same shape and values, stored in the convolutions' memory order.

    torch's convolution reads a channels-last weight (the ``(out, in, *k)`` view of this storage is
    channels-last) without reordering it, its weight gradient comes out in the same memory order, and
    the optimizer's slots made like it: a kernel stored in Keras's own order was reordered in every
    forward and backward pass, and Adam's updates ran on mismatched strides (a ResNet-18 step on the
    CPU spent about a fifth of its time there).
    """
    order = _conv_memory_order(tensor.ndim)
    assert order is not None
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    return tensor.permute(order).contiguous().permute(inverse)


def _sole_user(tensor: Any) -> bool:
    """Whether ``tensor`` is a plain tensor whose memory no other tensor or array uses: no view, alias
    (``detach``), NumPy array (``.numpy()``) or DLPack capsule of it, and it is no view itself."""
    if not isinstance(tensor, torch.Tensor) or tensor._is_view() or tensor.requires_grad:
        return False
    try:  # the storage's users: this tensor, and the storage object made here to ask
        storage_users = torch._C._storage_Use_Count(tensor.untyped_storage()._cdata) - 1
    except (AttributeError, RuntimeError, TypeError):  # a tensor without storage, or another torch
        return False
    return storage_users == 1 and tensor._use_count() == 1  # type: ignore[attr-defined]  # private, not in stubs


class _StepCounter:
    """The host's copy of the optimizer's step counter during a ``fit`` on an accelerator.

    The counter lives on the device; reading it every step would wait for the device. It is read
    once (the first step of a ``fit``, or after anything else changed it: another tensor, or an
    in-place write that moved its ``_version``), then counted on the host alongside the in-place
    writes (``_write_in_place`` records each), so Adam's bias corrections are Python floats (one
    kernel per step instead of a dozen tiny ones). On the CPU it is read every step (no wait).
    """

    def __init__(self) -> None:
        self._known: tuple | None = None  # (the counter tensor, its _version after our write, its value)

    def next(self, iterations: Any) -> int | None:
        """The number of the coming update (``iterations + 1``); None for a counter that is no tensor."""
        if not isinstance(iterations, torch.Tensor):
            return None
        if _base.host_reads_free(iterations.device):
            return int(iterations) + 1
        known = self._known
        if known is not None and known[0] is iterations and known[1] == iterations._version:
            return known[2] + 1
        return int(iterations) + 1  # one host read: a counter new to this fit, or changed elsewhere

    def clear(self) -> None:
        self._known = None


def _detach(value: Any) -> Any:
    return value.detach() if isinstance(value, torch.Tensor) else value


class _UpdateLayout:
    """The flat views of one optimizer state that fit's in-place update reads every step.

    Made from the state ``Optimizer.plan_in_place`` checked; valid while the state's dict, its
    slot trees and the param tensors are the same objects (the in-place update keeps them; a
    state taken anew by ``own`` has new ones).
    """

    def __init__(self, optimizer: Any, opt_state: dict, trainable: dict, leaves: list) -> None:
        spec = optree.tree_structure(trainable)
        names = optim.in_place_slots(optimizer, leaves) or ()
        self.opt_state = opt_state
        self.leaves = list(leaves)
        self.trees = [opt_state[name] for name in names]
        self.slots = {name: spec.flatten_up_to(tree) for name, tree in zip(names, self.trees)}
        self.decay = optimizer.decay_mask(trainable)
        # Adam's second moments (its denominators take their shape and memory order), or None for SGD.
        self.second_moments = self.slots[names[1]] if len(names) > 1 else None

    def fits(self, opt_state: dict, leaves: list) -> bool:
        """Whether this layout shows ``opt_state`` for the params ``leaves``."""
        mine = self.leaves
        return (opt_state is self.opt_state and len(leaves) == len(mine)
                and all([a is b for a, b in zip(leaves, mine)])
                and all([opt_state[name] is tree for name, tree in zip(self.slots, self.trees)]))


# The C++ autograd engine under ``torch.autograd.grad`` (None where a torch version lacks it).
_ENGINE = getattr(getattr(torch.autograd, "Variable", None), "_execution_engine", None)


def gradients_of_scalar(loss: Any, leaves: list) -> tuple:
    """``torch.autograd.grad(loss, leaves, allow_unused=True)`` for a step's scalar loss.

    A plain 0-d floating tensor that requires grad goes straight to the autograd engine with a
    fresh ``ones_like`` seed: the same call ``torch.autograd.grad`` ends in, without its argument
    normalization, override dispatch and debug-logging hooks (about a tenth of a small model's
    step on the CPU). Anything else (a tensor subclass, a loss that does not require grad, a
    torch without the engine attribute) takes ``torch.autograd.grad`` itself and its errors.

    Example:
        >>> import torch
        >>> w = torch.ones(3, requires_grad=True)
        >>> gradients_of_scalar((w * w).sum(), [w])
        (tensor([2., 2., 2.]),)
    """
    if (_ENGINE is not None and type(loss) is torch.Tensor and loss.ndim == 0 and loss.requires_grad
            and loss.is_floating_point()):
        return _ENGINE.run_backward((loss,), (torch.ones_like(loss),), False, False, tuple(leaves), True, False)
    return torch.autograd.grad(loss, leaves, allow_unused=True)


def _as_param(value: Any, trainable: bool) -> Any:
    """A param tensor as a step's gradients need it: a trainable floating one requires grad (it is a
    leaf: a clone, a detached alias, or made under ``no_grad``)."""
    if trainable and isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex()):
        value.requires_grad_(True)
    return value


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


class TorchSteps(GenericSteps):
    """Autograd + fused in-place optimizer steps (see the module docstring)."""

    fit_step_is_pure = False

    def __init__(self, core: Any) -> None:
        core = copy.copy(core)  # this backend's own view, with the fused loss
        core.compile_loss = _FusedLoss(core.compile_loss, core.fusable_sparse_crossentropy,
                                       core.fusable_mean_squared_error)
        core.accumulate = functools.partial(_accumulate, core.accumulate)
        super().__init__(core, lambda fn: fn)
        self._released: tuple | None = None
        self._held = HeldSignals()  # held from an in-place write until the loop publishes its result
        self._step_counter = _StepCounter()
        self._layout: _UpdateLayout | None = None  # the flat views of the state fit updates in place

    # --- state ownership ------------------------------------------------------------------
    def own(self, state: dict, donated: frozenset = frozenset()) -> dict:
        """``state`` with tensors of its own for the params (trainable ones as leaves requiring grad)
        and the optimizer state: a ``donated`` tensor whose memory no other tensor shares is adopted
        (an alias of its storage: no copy), every other one is cloned (the caller's tensors are
        never written)."""
        core = self.core
        params = state["model"]["params"]
        core.prepare_mask(params)
        mask, conv_kernels = core._mask, core.conv_kernels

        def own(value: Any, conv_kernel: bool) -> Any:
            adopted = id(value) in donated and _sole_user(value)
            if conv_kernel and not _in_conv_layout(value):  # in the layout the convolutions read
                laid_out = _to_conv_layout(value.detach())
                if not adopted:
                    return laid_out
                with torch.no_grad():  # nothing else sees its memory: re-point it, the old storage is freed now
                    value.set_(laid_out)
            return value.detach() if adopted else _clone(value)

        def own_param(value: Any, trainable: bool, conv_kernel: bool) -> Any:
            return _as_param(own(value, conv_kernel), trainable) if isinstance(value, torch.Tensor) else value

        def own_slots(tree: Any) -> Any:
            """An optimizer-state entry; slots mirroring the trainable params follow their kernels' layout."""
            if optree.tree_structure(tree) == spec:
                return optree.tree_map(lambda value, conv: own(value, conv) if isinstance(value, torch.Tensor)
                                       else value, tree, trainable_conv)
            return optree.tree_map(lambda value: own(value, False) if isinstance(value, torch.Tensor) else value, tree)

        owned = optree.tree_map(own_param, params, mask, conv_kernels)
        trainable_conv, _ = core.split(conv_kernels)
        spec = optree.tree_structure(core.split(params)[0])
        opt_state = state["optimizer"]
        owned_opt = ({key: own_slots(value) for key, value in opt_state.items()} if isinstance(opt_state, dict)
                     else own_slots(opt_state))
        return {"model": {"params": owned, "buffers": state["model"]["buffers"]},
                "optimizer": owned_opt, "metrics": state["metrics"], "rng": state["rng"]}

    def _watched(self, state: dict) -> dict:
        """``state`` with its trainable params as aliases requiring grad: no copy, for a step that writes
        only new tensors (``train_step``)."""
        params = state["model"]["params"]
        self.core.prepare_mask(params)
        watched = optree.tree_map(lambda value, trainable: _as_param(_detach(value), trainable), params,
                                  self.core._mask)
        return {**state, "model": {"params": watched, "buffers": state["model"]["buffers"]}}

    def finish_fit(self) -> None:
        super().finish_fit()
        self._released = None  # the owned params behind the published views: the views own them now
        self._step_counter.clear()
        self._layout = None

    def release(self, model_state: dict) -> dict:
        # The loop publishes right after recording a step: signals held by its in-place write are
        # delivered now (a Ctrl-C during the write interrupts here, with the step taken).
        self._held.release()
        params = model_state["params"]
        cached = self._released  # the detached views of the last param tree (the in-place write keeps it)
        if cached is not None and cached[0] is params:
            views = cached[1]
        else:
            views = optree.tree_map(_detach, params)
            self._released = (params, views)
        return {"params": views, "buffers": model_state["buffers"]}

    # --- steps -----------------------------------------------------------------------------
    @_keeps_grad_mode
    def fit_step(self, state: dict, batch: tuple) -> dict:
        """One step of ``fit``: all or nothing (written in place under held signals, or into new tensors)."""
        self._held.release()  # nothing is held unless the loop skipped a publish
        return self._step(state, batch, owned=True)

    def _step(self, state: dict, batch: tuple, owned: bool) -> dict:
        """A step. ``owned`` (fit's state, made by :meth:`own`): the fused update is written into
        ``state``'s tensors under held signals where the optimizer has one; every other update goes
        into new tensors and never writes ``state``'s (an interrupted step is simply not taken)."""
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
                    "metrics": metrics, "rng": advance_rng(rng)}
        if len([leaf for leaf in leaves if leaf.requires_grad]) != len(leaves):
            raise RuntimeError("TorchSteps.fit_step needs a state made by own(state); use train_step for "
                               "a state you hold")
        scale = core.loss_scale_of(state["optimizer"])
        if self.sync is not None and getattr(batch, "window", None) is not None:  # ember.distribute
            def gradients() -> tuple:
                local_aux, local_grads = self._gradients(trainable, frozen, model_state["buffers"], x, y, sw, rng,
                                                         leaves, scale)
                local_grads = [torch.zeros_like(leaf) if g is None else g for leaf, g in zip(leaves, local_grads)]
                return optree.tree_map(_detach, local_aux), spec.unflatten(local_grads)

            torch._C._set_grad_enabled(False)  # a C call, no context manager: the steps' wrapper restores the mode
            synced, new_buffers, metrics = self.sync.train(core, gradients, state, batch, trainable)
            grads = spec.flatten_up_to(synced)
        else:
            aux, grads = self._gradients(trainable, frozen, model_state["buffers"], x, y, sw, rng, leaves, scale)
            torch._C._set_grad_enabled(False)  # gradients off from here (the steps' wrapper restores the mode)
            # The metrics read no gradients: only the buffers kept in the state are detached.
            total, per_output, y_pred_flat, new_buffers = aux
            if new_buffers:
                new_buffers = optree.tree_map(_detach, new_buffers)
            metrics = core.update_metrics(state["metrics"], x, y, y_pred_flat, sw, total, per_output)
        new = {"model": {"params": params, "buffers": new_buffers}, "optimizer": state["optimizer"],
               "metrics": metrics, "rng": advance_rng(rng)}
        if owned and not core.constraints and optim.in_place_slots(core.optimizer, leaves) is not None:
            return self._write_in_place(new, list(grads), trainable, leaves)
        new["model"]["params"], new["optimizer"] = self._updated_copy(params, state["optimizer"], list(grads), spec)
        return new

    def _updated_copy(self, params: dict, opt_state: dict, grads: list, spec: Any) -> tuple[dict, dict]:
        """``(new params, new optimizer state)`` in new tensors (``params``' and ``opt_state``'s are never
        written): the trainable params and the optimizer's tensors cloned, updated in place by the
        optimizer's fused kernels (``apply_gradients_inplace``; its pure update where it has none; no
        clones for an optimizer that never writes what it is given), then the constraints applied. The
        new trainable params are leaves requiring grad, as :meth:`own` makes them."""
        core = self.core
        trainable, frozen = core.split(params)
        if core.optimizer.writes_given_arrays:  # else (ZeRO's sharded update) every array it returns is new
            trainable, opt_state = optree.tree_map(_clone, (trainable, opt_state))
        updated, new_opt_state = core.optimizer.apply_gradients_inplace(spec.unflatten(grads), opt_state, trainable)
        new_params = core.apply_constraints(core.merge(updated, frozen))
        return optree.tree_map(_as_param, new_params, core._mask), new_opt_state

    def _write_in_place(self, new: dict, grads: list, trainable: dict, leaves: list) -> dict:
        """The step's update written into the state's own tensors, all or nothing; returns ``new``, the
        next state (made by the caller, with ``new["optimizer"]`` the state's own optimizer state).

        Everything is computed first (the caller's metrics and next state, the optimizer's plan);
        then, with the signals held (:mod:`ember.backends._held_signals`), the C kernels of
        ``optim.write_in_place`` update params, slots and the step counter, and the step returns
        straight to the loop, which records it and publishes (``release`` delivers the held signals).
        No Python function is entered from the first write until then, so neither a signal handler
        nor a trace function's call event can stop the step half-way.
        """
        opt_state = new["optimizer"]
        iterations = opt_state["iterations"]
        step = None if self.core.optimizer.kernel_name == "sgd" else self._step_counter.next(iterations)
        plan = self._plan(grads, opt_state, trainable, leaves, iterations, step)
        counter = self._step_counter
        self._held.hold()
        optim.write_in_place(plan)
        # The write took update ``step``: an assignment, no call (no Python function may run between
        # the first write and the loop's publish).
        counter._known = None if step is None else (iterations, iterations._version, step)
        return new

    def _plan(self, grads: list, opt_state: dict, trainable: dict, leaves: list, iterations: Any,
              step: int | None) -> tuple:
        """The optimizer's in-place plan for this step (nothing written yet).

        The first step of a fit, and the first after the state was replaced (new weights from a
        callback, a restored checkpoint), plans through ``Optimizer.plan_in_place``, which checks the
        state against the params; the flat views it used are kept (:class:`_UpdateLayout`) and the
        steps after it plan from them directly while the state's tensors stay the same objects.
        """
        optimizer, layout = self.core.optimizer, self._layout
        if layout is not None and layout.fits(opt_state, leaves):
            lr = optimizer.learning_rate_at(iterations, opt_state)
            return optim.plan_in_place(optimizer, grads, leaves, layout.slots, 0 if step is None else step, lr,
                                       layout.decay, self._denominator_space(grads, layout), iterations)
        spec = optree.tree_structure(trainable)  # checked by the optimizer first; its denominators made anew
        plan = optimizer.plan_in_place(spec.unflatten(grads), opt_state, trainable, None, step=step)
        self._layout = _UpdateLayout(optimizer, opt_state, trainable, leaves)
        return plan

    @staticmethod
    def _denominator_space(grads: list, layout: _UpdateLayout) -> list:
        """Where Adam writes this step's denominators: the step's own gradients where they can hold them
        (they are dropped after the write; :func:`optim.reusable_gradients`), None (a tensor made for
        this step) elsewhere and for SGD. fit keeps no param-sized spare buffer through the backward pass."""
        if layout.second_moments is None:
            return [None] * len(grads)
        return optim.reusable_gradients(grads, layout.second_moments)

    def _gradients(self, trainable: dict, frozen: dict, buffers: dict, x: Any, y: Any, sw: Any, rng: Any,
                   leaves: list, scale: Any = None) -> tuple:
        """``(aux, grads)`` by autograd (None for a leaf the loss does not use), of the loss times the
        dynamic ``scale`` of a ``LossScaleOptimizer`` when given; the grad mode is restored after (C
        calls: cheaper than ``enable_grad``'s context manager)."""
        mode = torch.is_grad_enabled()
        torch._C._set_grad_enabled(True)
        try:
            scaled, aux = self.core.objective(trainable, frozen, buffers, x, y, sw, rng, scale)
            if not self.core.compile_metrics.entries:  # no metric reads the predictions: not kept through
                aux = (aux[0], aux[1], None, aux[3])   # the backward pass (a language model's logits: 17 MiB)
            grads = gradients_of_scalar(scaled, leaves)
        finally:
            torch._C._set_grad_enabled(mode)
        return aux, grads

    @_keeps_grad_mode
    def train_step(self, state: dict, batch: tuple) -> dict:
        new = self._step(self._watched(state), batch, owned=False)
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


class CompiledTorchSteps(CompiledSteps, TorchSteps):
    """The torch steps with the train step under ``torch.compile`` (:mod:`.compiled_step`)."""


def make_steps(core: Any, jit: Any = "auto") -> TorchSteps:
    """The torch steps for ``core`` (the trainer's ``StepCore``).

    ``jit=True`` compiles the train step with ``torch.compile`` (:mod:`.compiled_step`); ``"auto"``
    and False run the fused eager step (compiling costs seconds to tens of seconds before the first
    step, which only long runs win back).
    """
    if jit is True:
        return CompiledTorchSteps(core)
    return TorchSteps(core)
