"""When ``compile`` turns on dynamic loss scaling (Keras's ``auto_scale_loss``).

A model that computes in float16 (the ``mixed_float16`` policy, globally or on any layer) has its
optimizer wrapped in a :class:`~ember.optimizers.LossScaleOptimizer` by ``compile``, as Keras
does. The training steps need nothing else: every backend's step (torch's fused eager step and
its ``torch.compile``d one, MLX's ``mx.compile``d step, NumPy's) differentiates the loss times
the optimizer state's current scale (``StepCore.loss_scale_of``: an input of the step, so a
compiled step follows it), and the optimizer unscales the gradients and applies or skips the
update on the device (:mod:`ember.training.optimizers.loss_scale`).

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers, optimizers
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1, dtype="mixed_float16")])
    >>> computes_in_float16(model), type(with_loss_scaling("sgd")).__name__
    (True, 'LossScaleOptimizer')
    >>> _ = model.build(seed=0)
    >>> opt = optimizers.LossScaleOptimizer(optimizers.SGD(0.1), initial_scale=1024.0)
    >>> trainer = ember.Trainer(model, optimizer=opt, loss="mse")
    >>> state, logs = trainer.train_step(trainer.init_state(seed=0), (np.ones((4, 2)), np.zeros((4, 1))))
    >>> float(state["optimizer"]["dynamic_scale"]), int(state["optimizer"]["iterations"])
    (1024.0, 1)
"""

from __future__ import annotations

from typing import Any

from ember import dtype_policies
from ember.training import optimizers


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
