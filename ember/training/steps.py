"""The pure pieces of a training step: :class:`StepCore`, which the trainer hands the backend's steps.

:class:`StepCore` knows the model, the optimizer and the compiled losses/metrics, and
offers pure functions over native arrays: the objective (forward pass, losses,
regularization and activity losses), the metric updates, the split of params into
trainable and frozen parts, Ember's gradient tape (the NumPy steps' gradients) and which
losses a backend may fuse. The steps themselves are the active backend's
(``ember/backends/<name>/training.py``, on :mod:`ember.backends._steps`): the trainer calls
``backends.current().training.make_steps(core, jit)`` with a ``StepCore``, and the steps call
the core's functions; a backend imports nothing above the op protocol.
"""

from __future__ import annotations

import dataclasses
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


def conv_kernel_mask(layer: Any, params: dict) -> Any:
    """A tree of bools mirroring ``params``: True at the N-d convolution kernels, in Keras's layout
    ``(*spatial, in, out)``, that their layer names in ``conv_kernel_weights`` (a backend may keep them
    in the memory order its convolutions read, :meth:`StepCore.conv_kernels`).

    Example:
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> model = ember.Sequential([ember.Input((5, 5, 2)), layers.Conv2D(3, 3), layers.Flatten(), layers.Dense(1)])
        >>> mask = conv_kernel_mask(model, model.build(seed=0)["params"])
        >>> sorted((layer, name) for layer, weights in mask.items() for name, flag in weights.items() if flag)
        [('conv2d', 'kernel')]
    """
    names = getattr(type(layer), "conv_kernel_weights", ())
    children = layer._state_children()  # {state key: sub-layer}
    mask = {}
    for key, value in params.items():
        if isinstance(value, dict):
            child = children.get(key)
            mask[key] = conv_kernel_mask(child, value) if child is not None else optree.tree_map(lambda _: False, value)
        else:
            mask[key] = key in names
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
    conv_kernels: Any = None  # conv_kernel_mask of the same params


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
        # The compiled losses a backend may run as one fused kernel (its steps read these flags).
        self.fusable_sparse_crossentropy = fusable_sparse_crossentropy(compile_loss)
        self.fusable_mean_squared_error = fusable_mean_squared_error(compile_loss)

    @staticmethod
    def gradient_tape() -> GradientTape:
        """A new :class:`~ember.autodiff.GradientTape`: the NumPy steps' gradients come from Ember's own engine."""
        return GradientTape()

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
            masks.conv_kernels = conv_kernel_mask(self.model, params)
            regularization = getattr(self.model, "regularization_losses", None)
            masks.penalized = None if regularization is None else bool(regularization(params))

    @property
    def conv_kernels(self) -> Any:
        """:func:`conv_kernel_mask` of the params :meth:`prepare_mask` was given."""
        return self._masks.conv_kernels

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
