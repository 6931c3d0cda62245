"""``History``: records every epoch's logs; ``fit`` returns it (and sets ``model.history``).
"""

from __future__ import annotations

from typing import Any

from ember.training.callbacks.callback import Callback


class History(Callback):
    """``history.history``: ``{log name: [value per epoch]}``; ``history.epoch``: the epochs run.

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import layers
        >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> history = model.fit(np.zeros((8, 2)), np.zeros((8, 1)), epochs=3, verbose=0)
        >>> history.epoch, sorted(history.history), model.history is history
        ([0, 1, 2], ['loss'], True)
    """

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: Any = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        if self.model is not None:
            self.model.history = self
