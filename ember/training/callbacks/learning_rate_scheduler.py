"""``LearningRateScheduler``: set the learning rate at the start of every epoch from a function.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

from ember.training.callbacks.callback import Callback
from ember.training.callbacks.reduce_lr_on_plateau import current_learning_rate


class LearningRateScheduler(Callback):
    """``schedule(epoch, lr) -> new_lr`` (or ``schedule(epoch)``), applied before each epoch.

    Args:
        schedule: the function; ``epoch`` is 0-based, ``lr`` the current learning rate.
        verbose: 1 prints each change.

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import callbacks, layers
        >>> model = ember.Sequential([ember.Input((1,)), layers.Dense(1)])
        >>> model.compile(optimizer=ember.optimizers.SGD(learning_rate=0.1), loss="mse")
        >>> scheduler = callbacks.LearningRateScheduler(lambda epoch, lr: lr / (epoch + 1))  # lr: the current rate
        >>> history = model.fit(np.ones((4, 1)), np.ones((4, 1)), epochs=2, verbose=0, callbacks=[scheduler])
        >>> [round(v, 4) for v in history.history["learning_rate"]]
        [0.1, 0.05]
    """

    def __init__(self, schedule: Callable, verbose: int = 0) -> None:
        super().__init__()
        if not callable(schedule):
            raise TypeError(f"LearningRateScheduler: schedule must be callable, received {schedule!r}")
        self.schedule = schedule
        self.verbose = verbose
        try:
            parameters = inspect.signature(schedule).parameters.values()
            positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            self._takes_lr = len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)
        except (TypeError, ValueError):
            self._takes_lr = True

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        lr = current_learning_rate(self.model)
        new_lr = self.schedule(epoch, lr) if self._takes_lr else self.schedule(epoch)
        try:
            new_lr = float(new_lr)
        except (TypeError, ValueError):
            raise ValueError(f"LearningRateScheduler: the schedule must return a float, received {new_lr!r}") from None
        if not math.isfinite(new_lr):
            raise ValueError(f"LearningRateScheduler: the schedule returned {new_lr} at epoch {epoch}")
        self.model.optimizer.learning_rate = new_lr
        if self.verbose > 0:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {new_lr}.")

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if logs is not None:
            logs["learning_rate"] = current_learning_rate(self.model)
