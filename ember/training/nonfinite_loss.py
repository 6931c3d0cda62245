"""A warning at the first NaN or infinite training loss of a ``fit``, naming the epoch and batch.

NaN or inf in ``x``/``y`` (or a learning rate that diverges) turns the weights to NaN, and
without a signal a long ``fit`` ends with a useless model. ``fit`` therefore watches the
running loss (which stays non-finite once one batch's loss is): where reading it costs no extra
sync (NumPy, torch on the CPU, MLX) after every step; on a CUDA/MPS device the values stay on the
device (:class:`~ember.training.deferred_reads.DeferredReads`) and are read in one transfer where
the loop synchronises for its logs anyway (a batch's logs read by a callback or the progress bar,
each epoch's end), then the first bad step among them is found. It warns once per ``fit`` with
:class:`NonFiniteLossWarning`:

* to stop training there instead (and keep the weights from before that batch), pass
  ``callbacks=[ember.callbacks.TerminateOnNaN()]`` (the watch then stays silent);
* to make it an error: ``warnings.simplefilter("error", NonFiniteLossWarning)``;
* to continue without the warning: ``warnings.simplefilter("ignore", NonFiniteLossWarning)``.

Example:
    >>> import warnings
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((1,)), layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> x = np.array([[1.0], [np.nan]], dtype="float32")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = model.fit(x, np.ones((2, 1)), batch_size=1, epochs=2, shuffle=False, verbose=0)
    >>> print(caught[0].message)  # doctest: +ELLIPSIS
    fit: the training loss is nan at epoch 0, batch 1 (0-based); ...
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from ember.training.deferred_reads import DeferredReads
from ember.training.label_check import reads_without_sync


class NonFiniteLossWarning(RuntimeWarning):
    """The training loss became NaN or infinite (see :mod:`ember.training.nonfinite_loss`)."""


class NonFiniteLossWatch:
    """Watches the running training loss of one ``fit`` (module docstring)."""

    def __init__(self) -> None:
        self.warned = False
        self._deferred = DeferredReads(columns=1)  # tag (epoch, step): the running loss total
        self._reads_now: bool | None = None  # whether reading costs no sync (the total's device: fixed per fit)

    def __call__(self, epoch: int, step: int, running_total: Any) -> None:
        if self.warned:
            return
        reads_now = self._reads_now
        if reads_now is None:
            reads_now = self._reads_now = reads_without_sync(running_total)
        if reads_now:
            self._check(epoch, step, running_total)
            return
        self._deferred.add((epoch, step), running_total)

    def flush(self) -> None:
        """Read the values kept on the device (one transfer, in step order) and warn at the first bad one."""
        for (epoch, step), (total,) in self._deferred.read():
            if self.warned or self._check(epoch, step, total):
                return

    def _check(self, epoch: int, step: int, running_total: Any) -> bool:
        value = float(running_total)  # a 0-d array of any backend, or a value read back from the device
        if math.isfinite(value):
            return False
        self.warned = True
        self._deferred.clear()
        warnings.warn(
            f"fit: the training loss is {value} at epoch {epoch}, batch {step} (0-based); the weights are likely "
            "NaN from here on. Check x and y for NaN/inf and lower the learning rate; pass "
            "callbacks=[ember.callbacks.TerminateOnNaN()] to stop there with the weights from before that batch, "
            "or silence this with warnings.simplefilter('ignore', ember.training.nonfinite_loss.NonFiniteLossWarning)",
            NonFiniteLossWarning, stacklevel=6)
        return True
