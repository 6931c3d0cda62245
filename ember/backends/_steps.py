"""The generic training steps every backend's steps class extends, and the step seeds.

A backend's ``training`` module (``ember/backends/<name>/training.py``) defines its steps class
on :class:`GenericSteps` with a plain ``class`` statement and exports ``make_steps(core, jit)``;
the trainer asks the active backend for it (``backends.current().training.make_steps``). The
steps work on a ``core`` (``ember.training.steps.StepCore``: the model, optimizer, compiled
losses and metrics as pure functions over native arrays), which the trainer builds and passes
down; nothing here imports the trainer.

* ``train_step(state, batch) -> state``: pure (the input state is never modified);
* ``fit_step(state, batch) -> state``: what ``fit`` calls; may update the arrays of a state
  made by ``own`` in place (NumPy and torch: fused optimizer kernels);
* ``test_step(state, batch) -> state`` (metrics only) and ``predict_step(state, x) -> y_pred``;
* ``own(state)``: a private copy ``fit_step`` may update in place; ``release(model_state)``:
  the model state to show users (torch: views without ``requires_grad``);
* ``rng(seed)``: the step-RNG value for an int seed (an int, or an integer array on MLX and in
  torch's compiled step, so that a compiled step does not retrace for every new seed).

:class:`GenericSteps` builds all of them from a ``value_and_grad`` transform; MLX uses it with
``mx.value_and_grad`` under ``mx.compile``; NumPy and torch override the training steps.

TrainState layout::

    {"model": {"params", "buffers"}, "optimizer": opt_state,
     "metrics": {"loss": {"total", "count"}, "output_losses": [...], "metrics": [...]},
     "rng": seed (int, or a 0-d int64 array)}

Example:
    >>> advance_rng(initial_rng(0))
    48271
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optree

# Park-Miller "minimal standard" generator: the step seeds s_{k+1} = 48271 s_k mod (2^31 - 1).
_RNG_MULTIPLIER = 48271
_RNG_MODULUS = 2147483647


def one_label_per_row(label_shape: tuple, logits_shape: tuple) -> bool:
    """Whether integer labels of ``label_shape`` name one class for each row of logits ``(batch,
    *positions, classes)``: the shape of the logits less their class axis, or that with a trailing 1
    (what a fused sparse cross-entropy may take; anything else goes to the generic loss).

    Example:
        >>> one_label_per_row((16, 128), (16, 128, 2048)), one_label_per_row((4, 1), (4, 10))
        (True, True)
        >>> one_label_per_row((16,), (16, 128, 2048))
        False
    """
    rows = tuple(logits_shape[:-1])
    return tuple(label_shape) in (rows, rows + (1,))


def initial_rng(seed: int) -> int:
    """The first step seed for an int ``seed`` (in [1, 2^31 - 2], never the fixed point 0)."""
    return int(seed) % (_RNG_MODULUS - 1) + 1


def advance_rng(rng: Any) -> Any:
    """The next step seed (ints with Python arithmetic, arrays with int64 ops: no host sync)."""
    return rng * _RNG_MULTIPLIER % _RNG_MODULUS  # below 2^47 before the modulus: exact in int64



class GenericSteps:
    """Steps built from a ``value_and_grad(fn) -> f(trainable, *rest) -> ((value, aux), grads)``.

    Used as is on NumPy (Ember's engine); MLX wraps these functions in ``mx.compile``.
    """

    fit_step_is_pure = True  # fit_step never modifies its input (torch's does: it updates in place)
    # Set by the Trainer under ember.distribute: a ShardedBatch's step then sums gradients and
    # metric states over the ranks (ember.training.distributed.StepSync) before the update.
    sync: Any = None

    def __init__(self, core: Any, value_and_grad: Callable, detach: Callable = lambda x: x) -> None:
        self.core = core
        self._grad_objective = value_and_grad(core.objective)
        self._detach = detach

    def rng(self, seed: int) -> Any:
        return initial_rng(seed)

    def own(self, state: dict, donated: frozenset = frozenset()) -> dict:
        """The state ``fit_step`` may update (pure steps update nothing: ``state`` itself).

        ``donated``: ``id()`` of arrays of ``state`` that nothing else reaches
        (:func:`ember.training.ownership.unshared_leaves`): steps that update in place adopt them
        instead of copying them, where no other array shares their memory.
        """
        return state

    def finish_fit(self) -> None:
        """``fit`` ended: drop what its steps kept between steps (scratch arrays, cached views)."""

    def release(self, model_state: dict) -> dict:
        return model_state

    def settle(self, state: dict) -> None:
        """Compute a lazy ``state`` that ``fit_step`` returned, once ``fit`` holds nothing but it (a
        no-op for eager steps). Called after the loop published the step, so the arrays of the
        state before it are referenced by the pending computation alone and can give it their memory."""

    def train_step(self, state: dict, batch: tuple) -> dict:
        core = self.core
        x, y, sw = batch
        model_state = state["model"]
        trainable, frozen = core.split(model_state["params"])
        rng = state["rng"]
        scale = core.loss_scale_of(state["optimizer"])
        scaling = () if scale is None else (scale,)  # no None argument for mx.compile to see
        if self.sync is not None and getattr(batch, "window", None) is not None:
            def gradients() -> tuple:
                (_, aux), grads = self._grad_objective(trainable, frozen, model_state["buffers"], x, y, sw, rng,
                                                       *scaling)
                return self._detach(aux), grads

            grads, new_buffers, metrics = self.sync.train(core, gradients, state, batch, trainable)
            new_trainable, opt_state = core.optimizer.apply_gradients(grads, state["optimizer"], trainable)
            params = core.apply_constraints(core.merge(new_trainable, frozen))
            return {"model": {"params": params, "buffers": new_buffers}, "optimizer": opt_state, "metrics": metrics,
                    "rng": advance_rng(rng)}
        if not optree.tree_leaves(trainable):  # everything frozen: the loss is computed, nothing is updated
            _, aux = core.objective(trainable, frozen, model_state["buffers"], x, y, sw, rng)
            total, per_output, y_pred_flat, new_buffers = self._detach(aux)
            new_trainable, opt_state = trainable, state["optimizer"]
        else:
            (_, aux), grads = self._grad_objective(trainable, frozen, model_state["buffers"], x, y, sw, rng, *scaling)
            total, per_output, y_pred_flat, new_buffers = self._detach(aux)
            new_trainable, opt_state = core.optimizer.apply_gradients(grads, state["optimizer"], trainable)
        params = core.apply_constraints(core.merge(new_trainable, frozen))
        metrics = core.update_metrics(state["metrics"], x, y, y_pred_flat, sw, total, per_output)
        return {"model": {"params": params, "buffers": new_buffers}, "optimizer": opt_state, "metrics": metrics,
                "rng": advance_rng(rng)}

    fit_step = train_step

    def test_step(self, state: dict, batch: tuple) -> dict:
        core = self.core
        if self.sync is not None and getattr(batch, "window", None) is not None:
            new = dict(state)
            new["metrics"] = self.sync.test(core, state, batch)
            return new
        x, y, sw = batch
        total, per_output, y_pred_flat = core.eval_loss(state["model"]["params"], state["model"]["buffers"], x, y, sw)
        metrics = state["metrics"]
        if total is not None:
            metrics = core.update_metrics(metrics, x, y, y_pred_flat, sw, total, per_output)
        new = dict(state)
        new["metrics"] = metrics
        return new

    def predict_step(self, state: dict, x: Any) -> Any:
        y_pred, _, _ = self.core.forward(state["model"]["params"], state["model"]["buffers"], x, False, None)
        return y_pred
