"""``ReduceLROnPlateau``: multiply the learning rate by ``factor`` when a metric stops improving.

It sets ``model.optimizer.learning_rate``; the running training step picks the new value up
without recompiling, and ``logs["learning_rate"]`` records the rate each epoch ran with (as
Keras: read before that epoch's reduction).
"""

from __future__ import annotations

import numbers
from typing import Any

from ember.training.callbacks._monitor import improvement, read_monitor, resolve_mode
from ember.training.callbacks.callback import Callback


def current_learning_rate(model: Any) -> float:
    """The model's current learning rate as a float (from the running optimizer state)."""
    getter = getattr(model, "_current_learning_rate", None)
    if getter is not None:
        return float(getter())
    return float(model.optimizer.learning_rate)


class ReduceLROnPlateau(Callback):
    """Reduce the learning rate when ``monitor`` plateaus.

    Args:
        monitor: the log to watch.
        factor: new_lr = lr * factor (in (0, 1)).
        patience: epochs without improvement before reducing.
        verbose: 1 prints each reduction.
        mode: ``"min"``, ``"max"`` or ``"auto"``.
        min_delta: threshold for counting an improvement.
        cooldown: epochs to wait after a reduction before watching again.
        min_lr: the lower bound of the learning rate.

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import callbacks, layers
        >>> model = ember.Sequential([ember.Input((1,)), layers.Dense(1)])
        >>> model.compile(optimizer=ember.optimizers.SGD(0.1), loss="mse")
        >>> reduce = callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=0, min_delta=10.0)
        >>> history = model.fit(np.ones((4, 1)), np.ones((4, 1)), epochs=3, verbose=0, callbacks=[reduce])
        >>> history.history["learning_rate"]
        [0.10000000149011612, 0.10000000149011612, 0.05000000074505806]
    """

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10, verbose: int = 0,
                 mode: str = "auto", min_delta: float = 1e-4, cooldown: int = 0, min_lr: float = 0.0,
                 **kwargs: Any) -> None:
        super().__init__()
        if "epsilon" in kwargs:  # legacy Keras name of min_delta
            min_delta = kwargs.pop("epsilon")
        if kwargs:
            raise TypeError(f"ReduceLROnPlateau: unknown argument(s) {sorted(kwargs)}")
        if not 0.0 < float(factor) < 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be in (0, 1), received {factor!r}")
        for name, value in (("patience", patience), ("cooldown", cooldown)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"ReduceLROnPlateau: {name} must be a non-negative int, received {value!r}")
        self.monitor = monitor
        self.factor = float(factor)
        self.patience = int(patience)
        self.verbose = verbose
        self.mode = resolve_mode("ReduceLROnPlateau", monitor, mode)
        self.min_delta = float(min_delta)
        self.cooldown = int(cooldown)
        self.min_lr = float(min_lr)
        self._better = improvement(self.mode, self.min_delta)
        self._reset()

    def _reset(self) -> None:
        self.best = float("inf") if self.mode == "min" else float("-inf")
        self.wait = 0
        self.cooldown_counter = 0

    def on_train_begin(self, logs: Any = None) -> None:
        self._reset()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        logs = logs if logs is not None else {}
        lr = current_learning_rate(self.model)
        logs["learning_rate"] = lr
        current = read_monitor("ReduceLROnPlateau", logs, self.monitor)
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._better(current, self.best):
            self.best = current
            self.wait = 0
            return
        if self.cooldown_counter > 0:
            return
        self.wait += 1
        if self.wait >= self.patience:
            if lr > self.min_lr:
                new_lr = max(lr * self.factor, self.min_lr)
                self.model.optimizer.learning_rate = new_lr
                if self.verbose > 0:
                    print(f"Epoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new_lr}.")
                self.cooldown_counter = self.cooldown
                self.wait = 0
