"""MLX training steps: ``mx.value_and_grad`` of the pure step, the whole step under ``mx.compile``.

One compiled function takes the whole TrainState (model params and buffers, optimizer
state, metric state and the step seed, all arrays) and a batch, and returns the next
TrainState: the forward pass, the gradient, the optimizer update, constraints and metric
updates fuse into one graph. The step seed is an int64 array (not a Python int), so a
new seed per step does not retrace; dropout builds its PRNG key from it on the device.
A new batch shape (the last, smaller batch) traces once more. ``jit_compile=False`` (or
``run_eagerly=True``) runs the same functions without ``mx.compile``.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("mlx")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    >>> _ = model.build(seed=0)
    >>> trainer = ember.Trainer(model, optimizer="sgd", loss="mse")
    >>> state = trainer.init_state(seed=0)
    >>> state, logs = trainer.train_step(state, (np.ones((4, 2)), np.zeros((4, 1))))
    >>> str(state["rng"].dtype)
    'mlx.core.int64'
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import mlx.core as mx

if TYPE_CHECKING:
    from ember.backends._steps_base import GenericStepsBase as _StepsBase
else:
    _StepsBase = object  # the real base, the kit's GenericSteps, is mixed in by _steps_class


class _MLXSteps(_StepsBase):
    """The generic pure steps, compiled with ``mx.compile`` (see the module docstring), on the
    trainer's ``GenericSteps`` (given in the kit: :func:`make_steps`)."""

    def __init__(self, core: Any, kit: Any, jit: bool = True) -> None:
        super().__init__(core, mx.value_and_grad)
        self.kit = kit
        self.jit = jit
        train = super().train_step
        test = super().test_step
        predict = super().predict_step
        self._train = mx.compile(train) if jit else train
        self._test = mx.compile(test) if jit else test
        self._predict = mx.compile(predict) if jit else predict
        self._by_window: dict = {}

    # --- ember.distribute: one compiled step per batch window --------------------------------
    def _windowed(self, kind: str, window: tuple, batch_type: type) -> Any:
        """The step of ``kind`` for a ShardedBatch's ``window``: its offset and sizes are constants of
        the traced graph (the rank's random draws and gradient weight), so each window compiles once;
        ``mx.distributed.all_sum`` runs inside the compiled function."""
        key = (kind, window)
        step = self._by_window.get(key)
        if step is None:
            base = self.kit.GenericSteps
            generic = base.train_step if kind == "train" else base.test_step

            def step_fn(state: dict, batch: tuple) -> dict:
                return generic(self, state, batch_type(batch, window))

            step = self._by_window[key] = mx.compile(step_fn) if self.jit else step_fn
        return step

    def rng(self, seed: int) -> Any:
        return mx.array(self.kit.initial_rng(seed), dtype=mx.int64)

    def train_step(self, state: dict, batch: tuple) -> dict:
        window = getattr(batch, "window", None)
        if window is not None and self.sync is not None:
            return self._windowed("train", window, type(batch))(state, tuple(batch))
        return self._train(state, batch)

    def fit_step(self, state: dict, batch: tuple) -> dict:
        new = self.train_step(state, batch)  # lazy: the loop settles it once it holds only the new state
        if self.sync is not None:  # ember.distribute: the collectives run inside the loop's step guard
            mx.eval(new)
        return new

    def settle(self, state: dict) -> None:
        """Evaluate the step ``fit`` took. The loop calls it after replacing its state and the model's,
        so the previous params and optimizer slots are held by the pending graph alone: MLX donates
        their buffers to the new values (as in a raw loop that evaluates after reassigning its state)
        instead of keeping both sets alive."""
        mx.eval(state)

    def test_step(self, state: dict, batch: tuple) -> dict:
        window = getattr(batch, "window", None)
        if window is not None and self.sync is not None:
            new = self._windowed("test", window, type(batch))(state, tuple(batch))
            mx.eval(new["metrics"])
            return new
        new = self._test(state, batch)
        mx.eval(new["metrics"])
        return new

    def predict_step(self, state: dict, x: Any) -> Any:
        return self._predict(state, x)


@functools.cache
def _steps_class(generic: type) -> type:
    """The MLX steps class on the trainer's ``GenericSteps`` (one class per base)."""
    return type("MLXSteps", (_MLXSteps, generic), {"__module__": __name__, "__doc__": _MLXSteps.__doc__})


def make_steps(core: Any, kit: Any, jit: bool = True) -> Any:
    """The MLX steps for ``core`` (a ``StepCore``), built on the trainer's ``kit`` (a ``StepKit``)."""
    return _steps_class(kit.GenericSteps)(core, kit, jit=jit)
