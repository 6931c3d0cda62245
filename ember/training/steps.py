"""The pure pieces of a training step, shared by every backend's step builder.

:class:`StepCore` knows the model, the optimizer and the compiled losses/metrics, and
offers pure functions over native arrays: the objective (forward pass, losses,
regularization and activity losses), the metric updates, the split of params into
trainable and frozen parts, and the step RNG. Each backend's
``ember/backends/<name>/training.py`` turns them into steps through one small interface,
``make_steps(core, kit, jit) -> Steps``, where ``kit`` (:data:`STEP_KIT`, a :class:`StepKit`)
hands the backend the trainer's building blocks: a backend imports nothing above the op
protocol, the trainer gives it what it builds on.

* ``train_step(state, batch) -> state``: pure (the input state is never modified);
* ``fit_step(state, batch) -> state``: what ``fit`` calls; may update the arrays of a state
  made by ``own`` in place (torch: fused optimizer kernels);
* ``test_step(state, batch) -> state`` (metrics only) and ``predict_step(state, x) -> y_pred``;
* ``own(state)``: a private copy ``fit_step`` may update in place; ``release(model_state)``:
  the model state to show users (torch: views without ``requires_grad``);
* ``rng(seed)``: the step-RNG value for an int seed (an int, or an integer array on MLX so
  that a compiled step does not retrace for every new seed).

:class:`GenericSteps` builds all of them from a ``value_and_grad`` transform; NumPy uses it
with Ember's engine and MLX with ``mx.value_and_grad`` under ``mx.compile``.

TrainState layout::

    {"model": {"params", "buffers"}, "optimizer": opt_state,
     "metrics": {"loss": {"total", "count"}, "output_losses": [...], "metrics": [...]},
     "rng": seed (int, or a 0-d int64 array on MLX)}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import optree

from ember import dtypes, ops
from ember.autodiff import GradientTape
from ember.constraints import apply_constraints
from ember.layers.loss_collection import collect_losses
from ember.training.compile_utils import flatten_outputs
from ember.training.losses import MeanSquaredError, SparseCategoricalCrossentropy
from ember.training.losses.base import LossFunctionWrapper
from ember.training.losses.regression import mean_squared_error
from ember.training.optimizers.loss_scale import LossScaleOptimizer
from ember.training.step_buffers import StepBuffers
from ember.validation import unchecked_values

# Park-Miller "minimal standard" generator: the step seeds s_{k+1} = 48271 s_k mod (2^31 - 1).
_RNG_MULTIPLIER = 48271
_RNG_MODULUS = 2147483647


def initial_rng(seed: int) -> int:
    """The first step seed for an int ``seed`` (in [1, 2^31 - 2], never the fixed point 0)."""
    return int(seed) % (_RNG_MODULUS - 1) + 1


def advance_rng(rng: Any) -> Any:
    """The next step seed (ints with Python arithmetic, arrays with int64 ops: no host sync)."""
    if isinstance(rng, int):
        return rng * _RNG_MULTIPLIER % _RNG_MODULUS

    return ops.mod(ops.multiply(rng, _RNG_MULTIPLIER), _RNG_MODULUS)


# ------------------------------------------------------------------------ trainable split
def trainable_mask(layer: Any, params: dict) -> Any:
    """A tree of bools mirroring ``params``: False under layers with ``trainable=False``."""
    if not getattr(layer, "trainable", True):
        return optree.tree_map(lambda _: False, params)
    children = layer._state_children()  # {state key: sub-layer}
    mask = {}
    for key, value in params.items():
        if isinstance(value, dict):
            child = children.get(key)
            mask[key] = trainable_mask(child, value) if child is not None else optree.tree_map(lambda _: True, value)
        else:
            mask[key] = True
    return mask


def split_tree(tree: dict, mask: Any) -> tuple[dict, dict]:
    """``(trainable, frozen)`` nested dicts (empty sub-dicts dropped)."""
    trainable, frozen = {}, {}
    for key, value in tree.items():
        flag = mask[key]
        if isinstance(value, dict):
            t, f = split_tree(value, flag)
            if t:
                trainable[key] = t
            if f:
                frozen[key] = f
        elif flag:
            trainable[key] = value
        else:
            frozen[key] = value
    return trainable, frozen


def merge_trees(a: dict, b: dict) -> dict:
    """Deep union of two nested dicts with disjoint leaves."""
    if not b:
        return a
    if not a:
        return b
    out = dict(a)
    for key, value in b.items():
        out[key] = merge_trees(out[key], value) if key in out and isinstance(value, dict) else value
    return out


def _all_true(mask: Any) -> bool:
    return all(optree.tree_leaves(mask))


def fusable_sparse_crossentropy(compile_loss: Any) -> bool:
    """Whether the compiled loss is exactly ``SparseCategoricalCrossentropy(from_logits=True)`` on one
    output (mean reduction, no ``ignore_class``, weight 1): the case backends may compute in one
    fused kernel (the same math), falling back to the generic losses for anything else."""
    entries = compile_loss.entries
    if len(entries) != 1 or compile_loss.per_output_logs:
        return False
    entry = entries[0]
    if type(entry.fn) is not SparseCategoricalCrossentropy or entry.weight != 1.0:
        return False
    config = entry.fn.get_config()
    return (config.get("from_logits") is True and config.get("ignore_class") is None
            and config.get("axis", -1) == -1 and config.get("reduction") in ("sum_over_batch_size", "mean")
            and config.get("dtype") is None)


def fusable_mean_squared_error(compile_loss: Any) -> bool:
    """Whether the compiled loss is exactly mean squared error (``"mse"`` or ``MeanSquaredError()``) on
    one output, mean reduction, weight 1: backends may compute it as one fused kernel, the mean of
    ``(y_pred - y_true) ** 2`` over every element (the same number: each sample's mean over its
    last axis, then the mean over the samples, all of one size)."""
    entries = compile_loss.entries
    if len(entries) != 1 or compile_loss.per_output_logs:
        return False
    entry = entries[0]
    fn = entry.fn
    if (type(fn) not in (LossFunctionWrapper, MeanSquaredError) or getattr(fn, "fn", None) is not mean_squared_error
            or getattr(fn, "_fn_kwargs", None) or entry.weight != 1.0):
        return False
    config = fn.get_config()
    return config.get("reduction") in ("sum_over_batch_size", "mean") and config.get("dtype") is None


def batch_size_of(x: Any) -> int:
    if isinstance(x, dict):
        x = next(iter(x.values()))
    while isinstance(x, (list, tuple)):
        x = x[0]
        if isinstance(x, dict):
            x = next(iter(x.values()))
    return ops.shape(x)[0]


# --------------------------------------------------------------------------------- core
@dataclasses.dataclass
class _TrainableMask:
    """Which params train (``trainable_mask``), for the param tree structure ``spec``."""

    mask: Any = None
    spec: Any = None
    all_trainable: bool = True
    # Whether any layer declares a weight penalty (None: not yet known). Regularizers are config and the
    # trainable flags change only at a compile (a new core): known once per parameter structure, so a
    # model without penalties does not walk its layers in every step.
    penalized: bool | None = None


class StepCore:
    """The pure pieces of a step for one model/optimizer/loss/metrics combination."""

    def __init__(self, model: Any, optimizer: Any, compile_loss: Any, compile_metrics: Any,
                 output_names: list[str]) -> None:
        self.model = model
        self.optimizer = optimizer
        self.compile_loss = compile_loss
        self.compile_metrics = compile_metrics
        self.output_names = output_names
        # The trainable mask lives in one mutable record that a backend's shallow copy of the core
        # (its own view with a fused loss) shares: whichever copy prepares it, every copy splits by it.
        self._masks = _TrainableMask()
        constraints = getattr(model, "constraints", None)
        self.constraints = constraints() if callable(constraints) else {}
        # A LossScaleOptimizer's dynamic scale lives in its state: the steps pass it to objective.
        self.loss_scaled = isinstance(optimizer, LossScaleOptimizer)

    # --- params ------------------------------------------------------------------------
    @property
    def _mask(self) -> Any:
        return self._masks.mask

    @property
    def all_trainable(self) -> bool:
        return self._masks.all_trainable

    def prepare_mask(self, params: dict) -> None:
        masks = self._masks
        spec = optree.tree_structure(params)
        if spec != masks.spec:
            mask = trainable_mask(self.model, params)
            masks.mask, masks.spec, masks.all_trainable = mask, spec, _all_true(mask)
            regularization = getattr(self.model, "regularization_losses", None)
            masks.penalized = None if regularization is None else bool(regularization(params))

    def split(self, params: dict) -> tuple[dict, dict]:
        masks = self._masks
        if masks.all_trainable:
            return params, {}
        return split_tree(params, masks.mask)

    def merge(self, trainable: dict, frozen: dict) -> dict:
        return trainable if not frozen else merge_trees(trainable, frozen)

    def apply_constraints(self, params: dict) -> dict:
        if not self.constraints:
            return params

        return apply_constraints(self.constraints, params)

    # --- forward / loss ---------------------------------------------------------------------
    def flat(self, value: Any, what: str) -> list:
        return flatten_outputs(value, self.output_names, what)

    def forward(self, params: dict, buffers: dict, x: Any, training: bool, rng: Any) -> tuple[Any, dict, list]:
        """``(y_pred, new_buffers, activity_losses)``."""
        with collect_losses() as activity:
            y_pred, new_state = self.model.apply({"params": params, "buffers": buffers}, x, training=training,
                                                 rng=rng)
        return y_pred, new_state["buffers"], list(activity)

    def total_loss(self, params: dict, y: Any, y_pred_flat: list, sw: Any, activity: list) -> tuple[Any, list]:
        """``(total, per-output losses)``: compiled losses + regularization + activity losses."""
        total, per_output = self.compile_loss(self.flat(y, "y"), y_pred_flat, self.flat(sw, "sample_weight"))
        extra = list(activity)
        regularization = getattr(self.model, "regularization_losses", None)
        if regularization is not None and self._masks.penalized is not False:
            extra.extend(regularization(params))
        for value in extra:
            total = value if total is None else ops.add(total, value)
        if total is None:
            raise ValueError("No loss to compute: pass `loss=` to compile() (or give the model layers that add losses)")
        return total, per_output

    def objective(self, trainable: dict, frozen: dict, buffers: dict, x: Any, y: Any, sw: Any,
                  rng: Any, scale: Any = None) -> tuple[Any, tuple]:
        """The differentiated function: ``(scaled loss, (loss, per-output losses, y_pred_flat, new_buffers))``;
        ``scale``: a ``LossScaleOptimizer``'s dynamic scale (:meth:`loss_scale_of`), else None."""
        params = self.merge(trainable, frozen)
        y_pred, new_buffers, activity = self.forward(params, buffers, x, True, rng)
        y_pred_flat = self.flat(y_pred, "the model's outputs")
        total, per_output = self.total_loss(params, y, y_pred_flat, sw, activity)
        return self.scaled(total, scale), (total, per_output, y_pred_flat, new_buffers)

    def loss_scale_of(self, opt_state: dict) -> Any:
        """The dynamic loss scale in ``opt_state`` (a 0-d float32 array) under a ``LossScaleOptimizer``;
        None for any other optimizer. The scale is an input of the step, never a constant of it, so a
        compiled step (``mx.compile``, ``torch.compile``) follows it as it changes."""
        return opt_state["dynamic_scale"] if self.loss_scaled else None

    def scaled(self, total: Any, scale: Any) -> Any:
        """The loss that is differentiated: ``total`` times the dynamic ``scale`` when there is one,
        else ``optimizer.scale_loss(total)`` (a static ``loss_scale_factor``, or ``total`` itself)."""
        if scale is None:
            return self.optimizer.scale_loss(total)
        return ops.multiply(total, ops.cast(scale, ops.dtype(total)))

    # --- metrics --------------------------------------------------------------------------------
    def init_metrics(self, output_shapes: list) -> dict:
        def tracker() -> dict:
            return {"total": ops.zeros((), dtype=dtypes.floatx()), "count": ops.zeros((), dtype=dtypes.floatx())}

        losses = self.compile_loss.entries if self.compile_loss.per_output_logs else []
        return {"loss": tracker(), "output_losses": [tracker() for _ in losses],
                "metrics": self.compile_metrics.init_states(output_shapes)}

    def update_metrics(self, state: dict, x: Any, y: Any, y_pred_flat: list, sw: Any, total: Any,
                       per_output: list) -> dict:
        count = float(batch_size_of(x))
        track = self.accumulate
        new = {"loss": track(state["loss"], total, count),
               "output_losses": [track(t, v, count) for t, v in zip(state["output_losses"], per_output)],
               "metrics": state["metrics"]}
        if self.compile_metrics.entries and y is not None:
            new["metrics"] = self.compile_metrics.update(state["metrics"], self.flat(y, "y"), y_pred_flat,
                                                         self.flat(sw, "sample_weight"))
        return new

    @staticmethod
    def accumulate(tracker: dict, value: Any, count: float) -> dict:
        """A loss tracker ``{"total", "count"}`` after a batch of ``count`` samples whose mean loss is
        ``value`` (a backend's steps may put a native version on their copy of the core)."""
        value = ops.cast(value, ops.dtype(tracker["total"]))
        return {"total": ops.add(tracker["total"], ops.multiply(value, count)),
                "count": ops.add(tracker["count"], count)}

    def results(self, state: dict) -> dict:
        """``{log name: native scalar}``: the running loss, per-output losses and metrics."""
        def mean(tracker: dict) -> Any:
            return ops.divide(tracker["total"], ops.maximum(tracker["count"], 1.0))

        logs = {"loss": mean(state["loss"])}
        if self.compile_loss.per_output_logs:
            for entry, tracker in zip(self.compile_loss.entries, state["output_losses"]):
                logs[entry.log_name] = mean(tracker)
        logs.update(self.compile_metrics.results(state["metrics"]))
        return logs

    def eval_loss(self, params: dict, buffers: dict, x: Any, y: Any, sw: Any) -> tuple[Any, list, list]:
        """Inference-mode ``(total or None, per-output losses, y_pred_flat)`` (no targets: no loss)."""
        y_pred, _, activity = self.forward(params, buffers, x, False, None)
        y_pred_flat = self.flat(y_pred, "the model's outputs")
        if y is None:
            return None, [], y_pred_flat
        total, per_output = self.total_loss(params, y, y_pred_flat, sw, activity)
        return total, per_output, y_pred_flat


# ------------------------------------------------------------------------ generic steps
class GenericSteps:
    """Steps built from a ``value_and_grad(fn) -> f(trainable, *rest) -> ((value, aux), grads)``.

    Used as is on NumPy (Ember's engine); MLX wraps these functions in ``mx.compile``.
    """

    fit_step_is_pure = True  # fit_step never modifies its input (torch's does: it updates in place)
    # Set by the Trainer under ember.distribute: a ShardedBatch's step then sums gradients and
    # metric states over the ranks (ember.training.distributed.StepSync) before the update.
    sync: Any = None
    buffers: StepBuffers | None = None  # of steps that update in place (NumPy, torch): cleared after fit

    def __init__(self, core: StepCore, value_and_grad: Callable, detach: Callable = lambda x: x) -> None:
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
        """``fit`` ended: drop what its steps kept between steps (spare arrays, cached views)."""
        if self.buffers is not None:
            self.buffers.clear()

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


# ------------------------------------------------------------------- the backends' kit
@dataclasses.dataclass(frozen=True)
class StepKit:
    """What the trainer hands a backend's ``make_steps(core, kit, jit)``.

    The backends sit below the trainer in the import graph (ARCHITECTURE.md): their step
    builders get the trainer's building blocks from this object instead of importing them.

    Attributes:
        GenericSteps: the pure steps a backend's steps class extends (:class:`GenericSteps`).
        StepBuffers: the second set of arrays of in-place fit steps (:mod:`ember.training.step_buffers`).
        GradientTape: Ember's own reverse-mode tape (the NumPy engine's gradients).
        advance_rng: the next step seed (:func:`advance_rng`).
        initial_rng: the first step seed for an int seed (:func:`initial_rng`).
        fusable_sparse_crossentropy: whether the compiled loss is the one a backend may fuse
            (:func:`fusable_sparse_crossentropy`).
        fusable_mean_squared_error: the same for mean squared error (:func:`fusable_mean_squared_error`).
        unchecked_values: a context in which the losses skip their host-side label value checks
            (:func:`ember.validation.unchecked_values`; a compiled step runs in it).

    Example:
        >>> from ember.training.steps import STEP_KIT
        >>> STEP_KIT.advance_rng(STEP_KIT.initial_rng(0))
        48271
    """

    GenericSteps: type
    StepBuffers: type
    GradientTape: type
    advance_rng: Callable[[Any], Any]
    initial_rng: Callable[[int], int]
    fusable_sparse_crossentropy: Callable[[Any], bool]
    fusable_mean_squared_error: Callable[[Any], bool]
    unchecked_values: Callable[[], Any]


STEP_KIT = StepKit(GenericSteps=GenericSteps, StepBuffers=StepBuffers, GradientTape=GradientTape,
                   advance_rng=advance_rng, initial_rng=initial_rng,
                   fusable_sparse_crossentropy=fusable_sparse_crossentropy,
                   fusable_mean_squared_error=fusable_mean_squared_error, unchecked_values=unchecked_values)
