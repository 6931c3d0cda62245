"""NumPy training steps: Ember's own reverse-mode engine, with two hand-fused pieces.

* The gradient comes from :class:`ember.GradientTape` (Ember's NumPy engine). For the most
  common loss, ``SparseCategoricalCrossentropy(from_logits=True)`` on one output without
  sample weights, regularizers or activity losses, the loss and its gradient with respect
  to the logits are computed in closed form (``softmax - one_hot``, over the batch) and the
  tape starts its backward pass from the logits with that gradient: the same math as the
  op-by-op loss, without recording a dozen small ops.
* ``fit`` owns its params and optimizer slots (:meth:`NumpySteps.own` adopts the arrays nobody
  else holds and copies the others). Its update is all or nothing, in one of two ways. For ``SGD``,
  ``Adam`` and ``AdamW`` without gradient clipping (and no constraints) it is written **in place**
  into the state's own arrays by the fused kernels of :mod:`ember.backends.numpy.optim` (NumPy
  ``out=`` ufuncs, the formulas of :mod:`ember.training.optimizers`): everything it needs is
  computed first (the optimizer's plan, metrics, the next state), then, with the signals held
  (:mod:`ember.backends._held_signals`) and NumPy's floating-point errors logged
  (:mod:`ember.backends.numpy.float_errors`), ufuncs write params, slots and the step counter
  without entering any Python function, and the step returns to the loop, whose publish
  (:meth:`release`) delivers a Ctrl-C (or reports a floating-point error) that arrived meanwhile.
  So ``fit`` holds one copy of the params and slots, plus one scratch array the size of the
  largest parameter. Every other update goes **into new arrays** (the same kernels on copies, or
  the optimizer's pure update) and the given state is never written.

``train_step`` writes into new arrays, so its input is never modified.

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
        self._scratch: tuple | None = None  # (shapes and dtypes, arrays) of the in-place write's scratch
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
        """One step of ``fit``: all or nothing (written in place under held signals, or into new arrays)."""
        self._settle_write()  # nothing is pending unless the loop skipped a publish
        return self._step(state, batch, owned=True)

    def train_step(self, state: dict, batch: tuple) -> dict:
        return self._step(state, batch, owned=False)  # new arrays for the new state

    def finish_fit(self) -> None:
        super().finish_fit()
        self._scratch = None

    def _step(self, state: dict, batch: tuple, owned: bool) -> dict:
        """A step. ``owned`` (fit's state, made by :meth:`own`): the fused update is written into
        ``state``'s arrays under held signals (:meth:`_write_in_place`) where it can be; every other
        update goes into new arrays (:meth:`_updated_copy`), never ``state``'s."""
        core = self.core
        x, y, sw = batch
        model_state = state["model"]
        params = model_state["params"]
        trainable, frozen = core.split(params)
        rng = state["rng"]
        scale = core.loss_scale_of(state["optimizer"])
        if self.sync is not None and getattr(batch, "window", None) is not None:  # ember.distribute
            grads, new_buffers, metrics = self.sync.train(
                core, lambda: self.gradients(trainable, frozen, model_state["buffers"], x, y, sw, rng, scale), state,
                batch, trainable)
        else:
            (total, per_output, y_pred_flat, new_buffers), grads = self.gradients(
                trainable, frozen, model_state["buffers"], x, y, sw, rng, scale)
            metrics = core.update_metrics(state["metrics"], x, y, y_pred_flat, sw, total, per_output)
        new = {"model": {"params": params, "buffers": new_buffers}, "optimizer": state["optimizer"],
               "metrics": metrics, "rng": advance_rng(rng)}
        leaves, spec = optree.tree_flatten(trainable)
        if owned and not core.constraints and self._writable_in_place(leaves, spec, state["optimizer"]):
            return self._write_in_place(new, grads, trainable, leaves)
        new["model"]["params"], new["optimizer"] = self._updated_copy(params, state["optimizer"], grads, spec)
        return new

    def _writable_in_place(self, leaves: list, spec: Any, opt_state: dict) -> bool:
        """Whether the fused kernels can write the update into the params ``leaves`` (flattened by
        ``spec``) and ``opt_state``'s arrays."""
        names = optim.in_place_slots(self.core.optimizer, leaves)
        return bool(leaves) and names is not None and optim.writable_in_place(
            leaves, [spec.flatten_up_to(opt_state[name]) for name in names], opt_state["iterations"])

    def _scratch_for(self, leaves: list) -> list:
        """The in-place write's scratch arrays for ``leaves`` (kept between the steps of a ``fit``)."""
        key = [(leaf.shape, leaf.dtype) for leaf in leaves]
        if self._scratch is None or self._scratch[0] != key:
            self._scratch = (key, _shared_scratch(leaves))
        return self._scratch[1]

    def _write_in_place(self, new: dict, grads: dict, trainable: dict, leaves: list) -> dict:
        """The step's update written into the state's own arrays, all or nothing; returns ``new``, the
        next state (made by the caller, with ``new["optimizer"]`` the state's own optimizer state).

        Everything is computed first (the caller's metrics and next state, the optimizer's plan with
        its scratch arrays); then NumPy's floating-point errors are logged instead of raised or warned,
        the signals are held (:mod:`ember.backends._held_signals`), the ufuncs of
        ``optim.write_in_place`` update params, slots and the step counter, and the step returns
        straight to the loop, which records it and publishes (``release`` delivers what was held).
        No Python function is entered from the first write until then, so neither a signal handler,
        a warning nor a trace function's call event can stop the step half-way.
        """
        scratch = optree.tree_structure(trainable).unflatten(self._scratch_for(leaves))
        plan = self.core.optimizer.plan_in_place(grads, new["optimizer"], trainable, scratch)
        self._float_errors.defer()
        self._held.hold()
        optim.write_in_place(plan)
        return new

    def _updated_copy(self, params: dict, opt_state: dict, grads: dict, spec: Any) -> tuple[dict, dict]:
        """``(new params, new optimizer state)`` in new arrays (``params``' and ``opt_state``'s are never
        written): the fused kernels on copies of the trainable params and the optimizer's arrays where
        they apply, else the optimizer's pure update; then the constraints."""
        core = self.core
        trainable, frozen = core.split(params)
        leaves = spec.flatten_up_to(trainable)
        if self._writable_in_place(leaves, spec, opt_state):
            trainable, opt_state = optree.tree_map(_copy, (trainable, opt_state))
            optim.write_in_place(core.optimizer.plan_in_place(grads, opt_state, trainable))
        else:
            trainable, opt_state = core.optimizer.apply_gradients(grads, opt_state, trainable)
        return core.apply_constraints(core.merge(trainable, frozen)), opt_state


def make_steps(core: Any, jit: Any = "auto") -> NumpySteps:
    """The NumPy steps for ``core`` (the trainer's ``StepCore``).

    NumPy has no compiler: ``jit=True`` runs the eager step with a warning (as Keras proceeds with
    ``jit_compile=False`` on a backend that cannot compile); ``"auto"`` and False run it silently.
    """
    if jit is True:
        warnings.warn("jit_compile=True: the NumPy backend has no compiler; proceeding with the eager step "
                      "(jit_compile compiles on torch and MLX)", UserWarning, stacklevel=4)
    return NumpySteps(core)
