"""``EarlyStopping``: stop training when a monitored quantity stops improving.
"""

from __future__ import annotations

import numbers
from typing import Any

from ember.training.callbacks._monitor import copy_state, improvement, read_monitor, resolve_mode
from ember.training.callbacks.callback import Callback


class EarlyStopping(Callback):
    """Stop when ``monitor`` has not improved by more than ``min_delta`` for ``patience`` epochs.

    Args:
        monitor: the log to watch (``"val_loss"``, ``"accuracy"``, ...).
        min_delta: changes smaller than this do not count as improvement.
        patience: epochs without improvement before stopping.
        verbose: 1 prints a message when stopping / restoring.
        mode: ``"min"``, ``"max"`` or ``"auto"`` (max for accuracy-like names).
        baseline: training stops if the model does not beat this value within ``patience`` epochs.
        restore_best_weights: at the end of training, put back the weights of the best epoch
            (even if training was not stopped early, as Keras 3 does).
        start_from_epoch: epochs to wait before watching at all.

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import callbacks, layers
        >>> model = ember.Sequential([ember.Input((1,)), layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
        >>> stop = callbacks.EarlyStopping(monitor="mae", patience=0, min_delta=10.0)  # any logged metric
        >>> history = model.fit(np.ones((4, 1)), np.ones((4, 1)), epochs=20, verbose=0, callbacks=[stop])
        >>> len(history.epoch), stop.stopped_epoch
        (2, 1)
    """

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 0, verbose: int = 0,
                 mode: str = "auto", baseline: float | None = None, restore_best_weights: bool = False,
                 start_from_epoch: int = 0) -> None:
        super().__init__()
        for name, value in (("patience", patience), ("start_from_epoch", start_from_epoch)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"EarlyStopping: {name} must be a non-negative int, received {value!r}")
        self.monitor = monitor
        self.min_delta = abs(float(min_delta))
        self.patience = int(patience)
        self.verbose = verbose
        self.mode = resolve_mode("EarlyStopping", monitor, mode)
        self.baseline = baseline
        self.restore_best_weights = bool(restore_best_weights)
        self.start_from_epoch = int(start_from_epoch)
        self._better = improvement(self.mode, self.min_delta)
        self._reset()

    def _reset(self) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best = float("inf") if self.mode == "min" else float("-inf")
        self.best_weights = None
        self.best_epoch = 0

    def on_train_begin(self, logs: Any = None) -> None:
        self._reset()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        current = read_monitor("EarlyStopping", logs, self.monitor)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = copy_state(self.model.state)
            self.best_epoch = epoch
        self.wait += 1
        if self._better(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = copy_state(self.model.state)
            if self.baseline is None or self._better(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs: Any = None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}.")
            self.model.state = self.best_weights
