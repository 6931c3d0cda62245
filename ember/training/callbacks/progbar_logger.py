"""``ProgbarLogger``: prints training progress (``fit(verbose=...)`` adds it).

* ``verbose=1``: ``Epoch 3/10`` then a progress bar with ETA, time per step and the
  running loss/metrics, redrawn in place at most every 0.1 s (reading the logs only then,
  so training is not slowed by a device sync per step); the final line adds ``val_*``.
  Where standard output is not a terminal (a pipe, a log file, CI) only each bar's final
  line is written: one line per epoch after its ``Epoch 3/10`` header, as Keras does.
* ``verbose=2``: one line per epoch.
* ``verbose="auto"`` (the default of ``fit``/``evaluate``/``predict``): 1, as in Keras.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from ember import global_settings
from ember.training.callbacks.callback import Callback
from ember.training.callbacks.progbar import LoggingStream, Progbar

UPDATE_INTERVAL = 0.1  # seconds between redraws (and so between reads of the loss)


def _items(logs: Any) -> list[tuple[str, Any]]:
    if not logs:
        return []
    return [(k, v) for k, v in logs.items() if k != "outputs"]


class ProgbarLogger(Callback):
    """Progress output for ``fit``, ``evaluate`` and ``predict`` (see the module docstring).

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import layers
        >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
        >>> _ = model.fit(np.zeros((8, 2)), np.zeros((8, 1)), epochs=1, verbose=2)  # doctest: +ELLIPSIS
        Epoch 1/1
        1/1 - 0s - ...s/step - loss: 0.0000 - mae: 0.0000
    """

    def __init__(self) -> None:
        super().__init__()
        self._bar: Progbar | None = None
        self._in_fit = False
        self._last = 0.0
        self._seen = 0

    @property
    def verbose(self) -> int:
        return int(self.params.get("verbose", 1))

    def _new_bar(self, target: int | None) -> None:
        output = sys.stdout if global_settings.interactive_logging() else LoggingStream()
        self._bar = Progbar(target=target, verbose=self.verbose, output=output)
        self._last = 0.0
        self._seen = 0

    def _progress(self, batch: int, logs: Any) -> None:
        self._seen = batch + 1
        bar = self._bar
        if bar is None or self.verbose != 1 or not bar.dynamic:
            return
        now = time.monotonic()
        if now - self._last < UPDATE_INTERVAL:
            return
        self._last = now
        bar.update(self._seen, _items(logs), finalize=False)

    def _finish(self, logs: Any) -> None:
        if self._bar is not None:
            self._bar.update(self._seen, _items(logs), finalize=True)
            self._bar = None

    # --- fit ------------------------------------------------------------------------------
    def on_train_begin(self, logs: Any = None) -> None:
        self._in_fit = True

    def on_train_end(self, logs: Any = None) -> None:
        self._in_fit = False

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        if self.verbose:
            epochs = self.params.get("epochs")
            print(f"Epoch {epoch + 1}/{epochs}" if epochs else f"Epoch {epoch + 1}")
            self._new_bar(self.params.get("steps"))

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self._progress(batch, logs)

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if self.verbose:
            self._finish(logs)

    # --- evaluate / predict ------------------------------------------------------------------
    def on_test_begin(self, logs: Any = None) -> None:
        if not self._in_fit and self.verbose:
            self._new_bar(self.params.get("steps"))

    def on_test_batch_end(self, batch: int, logs: Any = None) -> None:
        if not self._in_fit:
            self._progress(batch, logs)

    def on_test_end(self, logs: Any = None) -> None:
        if not self._in_fit and self.verbose:
            self._finish(logs)

    def on_predict_begin(self, logs: Any = None) -> None:
        if self.verbose:
            self._new_bar(self.params.get("steps"))

    def on_predict_batch_end(self, batch: int, logs: Any = None) -> None:
        self._progress(batch, None)

    def on_predict_end(self, logs: Any = None) -> None:
        if self.verbose:
            self._finish(None)
