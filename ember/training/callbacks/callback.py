"""``Callback``: hooks that ``fit``/``evaluate``/``predict`` call (Keras's ``keras.callbacks.Callback``).

Override the hooks you need. ``self.model`` is the model being trained (its ``state``
holds the current weights at every hook; ``model.stop_training = True`` ends ``fit``
after the current batch/epoch) and ``self.params`` holds ``{"verbose", "epochs", "steps"}``.

``logs`` is always a mapping, as in Keras: ``{}`` where there is nothing to report
(``on_train_begin``, ``on_epoch_begin``, ``on_test_begin``, ``on_predict_*``, the batch-begin
hooks), ``{"outputs": ...}`` in ``on_predict_batch_end``. At epoch level it is a dict of Python
floats (``loss``, metrics, ``val_*``). At batch level it is a read-only mapping whose values
are computed on first access: reading one costs a device sync (and a small computation), so a callback that does not
read it costs nothing.
"""

from __future__ import annotations

from typing import Any


class Callback:
    """Base class: every hook is a no-op.

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import callbacks, layers
        >>> class CountBatches(callbacks.Callback):
        ...     def on_train_begin(self, logs=None):
        ...         self.count = 0
        ...     def on_train_batch_end(self, batch, logs=None):
        ...         self.count += 1
        >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> counter = CountBatches()
        >>> _ = model.fit(np.zeros((10, 2)), np.zeros((10, 1)), batch_size=4, epochs=2, verbose=0, callbacks=[counter])
        >>> counter.count
        6
    """

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict) -> None:
        self.params = params

    # --- training ----------------------------------------------------------------------
    def on_train_begin(self, logs: Any = None) -> None:
        """Before the first epoch."""

    def on_train_end(self, logs: Any = None) -> None:
        """After the last epoch (``logs``: the last epoch's logs)."""

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        """At the start of epoch ``epoch`` (0-based)."""

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        """At the end of an epoch; ``logs`` holds the epoch's metrics and ``val_*`` results."""

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        """Before a training batch (``batch`` is its index within the epoch)."""
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        """After a training batch; ``logs`` holds the running loss and metrics of the epoch."""
        self.on_batch_end(batch, logs=logs)

    def on_batch_begin(self, batch: int, logs: Any = None) -> None:
        """Legacy alias of :meth:`on_train_batch_begin`."""

    def on_batch_end(self, batch: int, logs: Any = None) -> None:
        """Legacy alias of :meth:`on_train_batch_end`."""

    # --- evaluation / prediction ------------------------------------------------------------
    def on_test_begin(self, logs: Any = None) -> None:
        """Before ``evaluate`` (also validation inside ``fit``)."""

    def on_test_end(self, logs: Any = None) -> None:
        """After ``evaluate``; ``logs`` holds its results."""

    def on_test_batch_begin(self, batch: int, logs: Any = None) -> None:
        """Before an evaluation batch."""

    def on_test_batch_end(self, batch: int, logs: Any = None) -> None:
        """After an evaluation batch."""

    def on_predict_begin(self, logs: Any = None) -> None:
        """Before ``predict``."""

    def on_predict_end(self, logs: Any = None) -> None:
        """After ``predict``."""

    def on_predict_batch_begin(self, batch: int, logs: Any = None) -> None:
        """Before a prediction batch."""

    def on_predict_batch_end(self, batch: int, logs: Any = None) -> None:
        """After a prediction batch; ``logs["outputs"]`` holds the batch's outputs."""
