"""The training steps of a model compiled with a :class:`~ember.optimizers.LossScaleOptimizer`.

The differentiated loss must be multiplied by the *current* dynamic scale, which lives in the
optimizer state. The backends' fast steps differentiate ``StepCore.objective``, which sees no
optimizer state, so a loss-scaled model trains with these generic steps instead, on every
backend: :class:`LossScaleSteps` differentiates ``scale * loss`` with
:func:`ember.value_and_grad` (torch autograd, MLX's transforms, NumPy's engine) and hands
the gradients to the optimizer, which unscales them, checks them for ``inf``/``nan`` and
applies or skips the update (:mod:`ember.training.optimizers.loss_scale`). The steps are
pure, run eagerly (no ``mx.compile``, no fused torch kernels) and synchronise nothing on the
host. ``Trainer.steps`` picks them; everything else (metrics, distribution, callbacks) is the
generic step's.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers, optimizers
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    >>> _ = model.build(seed=0)
    >>> opt = optimizers.LossScaleOptimizer(optimizers.SGD(0.1), initial_scale=1024.0)
    >>> trainer = ember.Trainer(model, optimizer=opt, loss="mse")
    >>> type(trainer.steps).__name__
    'LossScaleSteps'
    >>> state, logs = trainer.train_step(trainer.init_state(seed=0), (np.ones((4, 2)), np.zeros((4, 1))))
    >>> float(state["optimizer"]["dynamic_scale"]), int(state["optimizer"]["iterations"])
    (1024.0, 1)
"""

from __future__ import annotations

from typing import Any

import optree

from ember import dtype_policies, ops
from ember.autodiff import functional
from ember.training import optimizers
from ember.training.steps import GenericSteps, StepCore


def _detach(tree: Any) -> Any:
    return optree.tree_map(lambda leaf: ops.stop_gradient(leaf) if ops.is_array(leaf) else leaf, tree,
                           none_is_leaf=False)


class LossScaleSteps(GenericSteps):
    """Generic pure steps that differentiate ``dynamic_scale * loss`` (see the module docstring)."""

    def __init__(self, core: StepCore) -> None:
        super().__init__(core, lambda fn: fn, detach=_detach)
        self._scaled_value_and_grad = functional.value_and_grad(self._scaled_objective, has_aux=True)
        self._grad_objective = self._scaled_grad
        self._scale: Any = None

    def _scaled_objective(self, trainable: dict, frozen: dict, buffers: dict, x: Any, y: Any, sw: Any, rng: Any,
                          scale: Any) -> tuple[Any, tuple]:
        core = self.core
        params = core.merge(trainable, frozen)
        y_pred, new_buffers, activity = core.forward(params, buffers, x, True, rng)
        y_pred_flat = core.flat(y_pred, "the model's outputs")
        total, per_output = core.total_loss(params, y, y_pred_flat, sw, activity)
        scaled = ops.multiply(total, ops.cast(scale, ops.dtype(total)))
        return scaled, (total, per_output, y_pred_flat, new_buffers)

    def _scaled_grad(self, trainable: dict, frozen: dict, buffers: dict, x: Any, y: Any, sw: Any,
                     rng: Any) -> tuple:
        return self._scaled_value_and_grad(trainable, frozen, buffers, x, y, sw, rng, self._scale)

    def train_step(self, state: dict, batch: tuple) -> dict:
        self._scale = state["optimizer"]["dynamic_scale"]
        try:
            return super().train_step(state, batch)
        finally:
            self._scale = None

    fit_step = train_step


def computes_in_float16(model: Any) -> bool:
    """Whether the model or any layer in it has the ``mixed_float16`` policy (or the global policy is
    ``mixed_float16``): what makes ``compile`` wrap the optimizer in a ``LossScaleOptimizer``."""
    if dtype_policies.dtype_policy().name == "mixed_float16":
        return True
    seen: set[int] = set()
    pending = [model]
    while pending:
        layer = pending.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        if getattr(layer, "dtype", None) == "mixed_float16":
            return True
        children = getattr(layer, "_state_children", None)
        if callable(children):
            pending.extend(children().values())
    return False


def with_loss_scaling(optimizer: Any) -> Any:
    """``optimizer`` (a name, config or object) wrapped in a ``LossScaleOptimizer`` unless it is one."""
    optimizer = optimizers.get(optimizer)
    if isinstance(optimizer, optimizers.LossScaleOptimizer):
        return optimizer
    return optimizers.LossScaleOptimizer(optimizer)
