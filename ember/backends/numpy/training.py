"""NumPy training steps: Ember's own reverse-mode engine, with two hand-fused pieces.

* The gradient comes from :class:`ember.GradientTape` (Ember's NumPy engine). For the most
  common loss, ``SparseCategoricalCrossentropy(from_logits=True)`` on one output without
  sample weights, regularizers or activity losses, the loss and its gradient with respect
  to the logits are computed in closed form (``softmax - one_hot``, over the batch) and the
  tape starts its backward pass from the logits with that gradient: the same math as the
  op-by-op loss, without recording a dozen small ops.
* ``fit`` owns its params and optimizer slots (:meth:`NumpySteps.own` adopts the arrays nobody
  else holds and copies the others). Its update is all or nothing. For ``SGD``, ``Adam`` and
  ``AdamW`` without gradient clipping (no constraints, no ``ember.distribute``) it is written into
  the state's own arrays by the fused kernels of :mod:`ember.backends.numpy.optim` (NumPy ``out=``
  ufuncs, the formulas of :mod:`ember.training.optimizers`): everything it needs is computed
  first (the optimizer's plan, metrics, the next state), then, with the signals held
  (:mod:`ember.backends._held_signals`) and NumPy's floating-point errors logged
  (:mod:`ember.backends.numpy.float_errors`), ufuncs write params, slots and the step counter
  without entering any Python function, and the step returns to the loop, whose publish
  (:meth:`release`) delivers a Ctrl-C (or reports a floating-point error) that arrived meanwhile.
  So ``fit`` holds one copy of the params and slots, plus one scratch array the size of the
  largest parameter. Otherwise the update goes into a second set of arrays
  (:mod:`ember.backends._step_buffers`, out of place for these optimizers) and the given state
  stays intact; other optimizers take the pure path.

The pure ``train_step`` writes into new arrays, so its input is never modified.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    >>> _ = model.build(seed=0)
    >>> trainer = ember.Trainer(model, optimizer="sgd", loss="mse")
    >>> state = trainer.init_state(seed=0)
    >>> new_state, logs = trainer.train_step(state, (np.ones((4, 2)), np.zeros((4, 1))))
    >>> sorted(logs), new_state["model"]["params"] is state["model"]["params"]
    (['loss'], False)
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import optree

from ember.backends._held_signals import HeldSignals
from ember.backends._step_buffers import StepBuffers
from ember.backends._steps import GenericSteps, advance_rng
from ember.backends.numpy import optim
from ember.backends.numpy.float_errors import DeferredFloatErrors


def _plain(value: Any) -> Any:
    """A traced array (the tape's view) as a plain ndarray sharing its memory."""
    if isinstance(value, np.ndarray) and type(value) is not np.ndarray:
        return value.view(np.ndarray)
    return value


def _detach(tree: Any) -> Any:
    return optree.tree_map(_plain, tree)


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def _owns_memory(value: Any) -> bool:
    """Whether ``value`` is a plain ndarray whose memory no other array views (no ``base``: a view
    of it would hold it as its base, which the caller's reference count shows)."""
    return type(value) is np.ndarray and value.base is None and value.flags.owndata and value.flags.writeable


def _fits(spare: Any, leaf: Any) -> bool:
    """Whether the array ``spare`` can hold the next value of ``leaf`` (see StepBuffers)."""
    return (isinstance(spare, np.ndarray) and isinstance(leaf, np.ndarray) and spare.shape == leaf.shape
            and spare.dtype == leaf.dtype and spare is not leaf)


def _copy_into(targets: list, sources: list) -> None:
    for target, source in zip(targets, sources):
        np.copyto(target, source)


def _buffers() -> StepBuffers:
    return StepBuffers(_copy, _fits, _copy_into)


# fit's update for SGD/Adam/AdamW: written in place under held signals (False: into spare arrays).
_IN_PLACE_UNDER_HELD_SIGNALS = True


def _shared_scratch(leaves: list) -> list:
    """One array per leaf, of its shape and dtype, all views of one buffer per dtype (the size of the
    largest leaf of that dtype): the in-place write uses one at a time."""
    sizes: dict = {}
    for leaf in leaves:
        sizes[leaf.dtype] = max(sizes.get(leaf.dtype, 0), leaf.size)
    buffers = {dtype: np.empty(size, dtype) for dtype, size in sizes.items()}
    return [buffers[leaf.dtype][:leaf.size].reshape(leaf.shape) for leaf in leaves]


# --------------------------------------------------------------------------- fused loss
def sparse_crossentropy_from_logits(labels: Any, logits: Any) -> tuple[Any, Any] | None:
    """``(mean loss, d loss / d logits)`` for integer labels, or None when the inputs do not fit
    the closed form (the generic loss then runs and reports any problem)."""
    labels, logits = _plain(labels), _plain(logits)
    if not (isinstance(labels, np.ndarray) and isinstance(logits, np.ndarray)) or logits.ndim != 2 \
            or logits.dtype not in (np.float32, np.float64) or labels.dtype.kind not in "iu":
        return None
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    count, classes = logits.shape
    if labels.shape != (count,) or count == 0:
        return None
    if labels.min() < 0 or labels.max() >= classes:
        bad = labels[(labels < 0) | (labels >= classes)][0]
        raise ValueError(f"sparse_categorical_crossentropy: class indices must be in [0, {classes}) for y_pred "
                         f"with {classes} classes, received {bad.item()!r}")
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(axis=1, keepdims=True)
    rows = np.arange(count)
    picked = shifted[rows, labels] - np.log(total[:, 0])
    loss = np.asarray(-picked.mean(dtype=logits.dtype), dtype=logits.dtype)
    grad = exp
    grad /= total
    grad[rows, labels] -= 1.0
    grad *= logits.dtype.type(1.0 / count)
    return loss, grad


class NumpySteps(GenericSteps):
    """Ember-engine gradients with a fused loss and in-place updates (see the module docstring)."""

    fit_step_is_pure = False

    def __init__(self, core: Any) -> None:
        super().__init__(core, lambda fn: fn, detach=_detach)
        self._fused_loss = core.fusable_sparse_crossentropy
        self._regularized: bool | None = None
        self.buffers = _buffers()
        self._held = HeldSignals()  # held from an in-place write until the loop publishes its result
        self._float_errors = DeferredFloatErrors()  # logged during an in-place write, reported at its publish

    # --- state ownership ---------------------------------------------------------------------
    def own(self, state: dict, donated: frozenset = frozenset()) -> dict:
        """``state`` with arrays of its own: the ``donated`` arrays that own their memory are adopted,
        every other one is copied (the caller's arrays are never written)."""
        def owned(value: Any) -> Any:
            return value if id(value) in donated and _owns_memory(value) else _copy(value)

        return {"model": {"params": optree.tree_map(owned, state["model"]["params"]),
                          "buffers": state["model"]["buffers"]},
                "optimizer": optree.tree_map(owned, state["optimizer"]),
                "metrics": state["metrics"], "rng": state["rng"]}

    def release(self, model_state: dict) -> dict:
        # The loop publishes right after recording a step: what an in-place write held back is
        # delivered now (a Ctrl-C during the write interrupts here, with the step taken).
        self._settle_write()
        return model_state

    def _settle_write(self) -> None:
        """NumPy's error state and the signal handlers back as they were; then the held signals and
        the logged floating-point errors delivered (a no-op when no write is pending)."""
        errors = self._float_errors.restore()
        self._held.release()
        self._float_errors.report(errors)

    # --- gradients ----------------------------------------------------------------------------
    def _has_regularization(self, params: dict) -> bool:
        if self._regularized is None:  # structural: it depends on the layers' config only
            regularization = getattr(self.core.model, "regularization_losses", None)
            self._regularized = bool(regularization(params)) if regularization is not None else False
        return self._regularized

    def gradients(self, trainable: dict, frozen: dict, buffers: dict, x: Any, y: Any, sw: Any, rng: Any,
                  scale: Any = None) -> tuple:
        """``((total, per-output losses, y_pred_flat, new_buffers), grads)``, the gradients of the loss
        times the dynamic ``scale`` of a ``LossScaleOptimizer`` when given."""
        core = self.core
        with core.gradient_tape() as tape:
            tape.watch(trainable)
            params = core.merge(trainable, frozen)
            y_pred, new_buffers, activity = core.forward(params, buffers, x, True, rng)
            y_pred_flat = core.flat(y_pred, "the model's outputs")
            fused = None
            if (self._fused_loss and sw is None and scale is None and not activity
                    and not self._has_regularization(params)):
                with tape.stop_recording():
                    fused = sparse_crossentropy_from_logits(core.flat(y, "y")[0], y_pred_flat[0])
            if fused is None:
                total, per_output = core.total_loss(params, y, y_pred_flat, sw, activity)
                scaled = core.scaled(total, scale)
        if fused is None:
            grads = tape.gradient(scaled, trainable, unconnected_gradients="zero")
        else:
            total, seed = fused
            per_output = [total]
            if core.optimizer.loss_scale_factor is not None:
                seed = seed * core.optimizer.loss_scale_factor
            grads = tape.gradient(y_pred_flat[0], trainable, output_gradients=seed, unconnected_gradients="zero")
        return _detach((total, per_output, y_pred_flat, new_buffers)), _detach(grads)

    # --- steps ---------------------------------------------------------------------------------
    def fit_step(self, state: dict, batch: tuple) -> dict:
        """One step of ``fit``: all or nothing (written in place under held signals, or into spare arrays)."""
        self._settle_write()  # nothing is pending unless the loop skipped a publish
        return self._step(state, batch, self.buffers)

    def train_step(self, state: dict, batch: tuple) -> dict:
        return self._step(state, batch, _buffers())  # new arrays for the new state

    def _step(self, state: dict, batch: tuple, buffers: Any) -> dict:
        """A step. With fit's own ``buffers`` the fused update is written into ``state``'s arrays under held
        signals (:meth:`_write_in_place`) where it can be, else into ``buffers``' arrays, never ``state``'s."""
        core = self.core
        x, y, sw = batch
        model_state = state["model"]
        params = model_state["params"]
        trainable, frozen = core.split(params)
        rng = state["rng"]
        scale = core.loss_scale_of(state["optimizer"])
        metrics = None
        if self.sync is not None and getattr(batch, "window", None) is not None:  # ember.distribute
            grads, new_buffers, metrics = self.sync.train(
                core, lambda: self.gradients(trainable, frozen, model_state["buffers"], x, y, sw, rng, scale), state,
                batch, trainable)
        else:
            (total, per_output, y_pred_flat, new_buffers), grads = self.gradients(
                trainable, frozen, model_state["buffers"], x, y, sw, rng, scale)
        optimizer, opt_state = core.optimizer, state["optimizer"]
        leaves, spec = optree.tree_flatten(trainable)
        written = optim.written_slots(optimizer, leaves)
        if (written is not None and buffers is self.buffers and self.sync is None and _IN_PLACE_UNDER_HELD_SIGNALS
                and not core.constraints and leaves and optim.writable_in_place(
                    leaves, [spec.flatten_up_to(opt_state[name]) for name in written], opt_state["iterations"])):
            return self._write_in_place(state, batch, (total, per_output, y_pred_flat, new_buffers), grads,
                                        trainable, leaves)
        in_place = written is not None
        if written is not None:  # the fused kernel writes the new values straight into the spare arrays
            grad_leaves = spec.flatten_up_to(grads)
            slots = [spec.flatten_up_to(opt_state[name]) for name in written]
            overwritten = frozenset([id(array) for i, g in enumerate(grad_leaves) if g is not None
                                     for array in [leaves[i]] + [values[i] for values in slots]])
            params, new_opt_state = buffers.writable(params, opt_state, overwritten)  # the new state's arrays
            new_trainable, frozen = core.split(params)
            _, opt_state = optimizer.apply_gradients_into(grads, opt_state, trainable, new_opt_state, new_trainable)
            if core.constraints:
                constrained = core.apply_constraints(params)
                for leaf, new in zip(optree.tree_leaves(params), optree.tree_leaves(constrained)):
                    if new is not leaf:
                        np.copyto(leaf, _plain(new))
        else:
            new_trainable, opt_state = optimizer.apply_gradients(grads, opt_state, trainable)
            params = core.apply_constraints(core.merge(new_trainable, frozen))
        if metrics is None:
            metrics = core.update_metrics(state["metrics"], x, y, y_pred_flat, sw, total, per_output)
        if in_place:  # the last action: the step is taken
            buffers.commit(model_state["params"], state["optimizer"], params, opt_state)
        return {"model": {"params": params, "buffers": new_buffers}, "optimizer": opt_state, "metrics": metrics,
                "rng": advance_rng(rng)}

    def _write_in_place(self, state: dict, batch: tuple, aux: tuple, grads: dict, trainable: dict,
                        leaves: list) -> dict:
        """The step's update written into ``state``'s own arrays: all or nothing.

        Everything is computed first (metrics, the next state's dict, the optimizer's plan with its
        scratch arrays); then NumPy's floating-point errors are logged instead of raised or warned,
        the signals are held (:mod:`ember.backends._held_signals`), the ufuncs of
        ``optim.write_in_place`` update params, slots and the step counter, and the step returns
        straight to the loop, which records it and publishes (``release`` delivers what was held).
        No Python function is entered from the first write until then, so neither a signal handler,
        a warning nor a trace function's call event can stop the step half-way.
        """
        core = self.core
        x, y, sw = batch
        total, per_output, y_pred_flat, new_buffers = aux
        metrics = core.update_metrics(state["metrics"], x, y, y_pred_flat, sw, total, per_output)
        key = [(leaf.shape, leaf.dtype) for leaf in leaves]
        buffers = self.buffers
        assert buffers is not None  # fit's own: the in-place write runs in fit_step only
        scratch = buffers.scratch(key, lambda: _shared_scratch(leaves))
        plan = core.optimizer.plan_in_place(grads, state["optimizer"], trainable,
                                            optree.tree_structure(trainable).unflatten(scratch))
        new = {"model": {"params": state["model"]["params"], "buffers": new_buffers}, "optimizer": state["optimizer"],
               "metrics": metrics, "rng": advance_rng(state["rng"])}
        self._float_errors.defer()
        self._held.hold()
        optim.write_in_place(plan)
        return new


def make_steps(core: Any, jit: Any = "auto") -> NumpySteps:
    """The NumPy steps for ``core`` (the trainer's ``StepCore``).

    NumPy has no compiler: ``jit=True`` runs the eager step with a warning (as Keras proceeds with
    ``jit_compile=False`` on a backend that cannot compile); ``"auto"`` and False run it silently.
    """
    if jit is True:
        warnings.warn("jit_compile=True: the NumPy backend has no compiler; proceeding with the eager step "
                      "(jit_compile compiles on torch and MLX)", UserWarning, stacklevel=4)
    return NumpySteps(core)
