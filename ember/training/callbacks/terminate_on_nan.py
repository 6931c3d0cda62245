"""``TerminateOnNaN``: stop training as soon as the loss becomes NaN or infinite.

It reads the loss after every batch (one device sync per step) and, on a non-finite
value, stops training, says at which epoch/batch/step it happened, and puts the model
(weights and optimizer state) back to what it was *before* that batch, so the NaN
update never reaches ``model.state``.
"""

from __future__ import annotations

import math
from typing import Any

from ember.training.callbacks.callback import Callback


class TerminateOnNaN(Callback):
    """Stop on a NaN/inf loss (see the module docstring); ``stopped_step`` records where (0-based).

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import callbacks, layers
        >>> x = np.array([[1.0], [np.nan]], dtype="float32")  # the second sample makes the loss NaN
        >>> model = ember.Sequential([ember.Input((1,)), layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> history = model.fit(x, np.ones((2, 1)), batch_size=1, epochs=3, shuffle=False, verbose=0,
        ...                     callbacks=[callbacks.TerminateOnNaN()])  # doctest: +NORMALIZE_WHITESPACE
        TerminateOnNaN: invalid loss (nan) at epoch 1, batch 1 (training step 2); training stopped,
        weights restored to before that batch
        >>> bool(np.isfinite(model.layers[0].get_weights()[0]).all())
        True
    """

    # Tells fit to keep the state from before each batch, so it can be restored.
    keeps_previous_state = True

    def __init__(self) -> None:
        super().__init__()
        self.rollback = False
        self.stopped_step: int | None = None
        self._epoch = 0
        self._step = 0

    def on_train_begin(self, logs: Any = None) -> None:
        self.rollback = False
        self.stopped_step = None
        self._step = 0

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        step = self._step
        self._step += 1
        loss = (logs or {}).get("loss")
        if loss is None:
            return
        loss = float(loss)
        if math.isfinite(loss):
            return
        self.stopped_step = step
        self.rollback = True
        self.model.stop_training = True
        print(f"TerminateOnNaN: invalid loss ({loss}) at epoch {self._epoch + 1}, batch {batch} (training step "
              f"{step + 1}); training stopped, weights restored to before that batch")
