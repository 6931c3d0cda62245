"""``ModelCheckpoint``: save the model (or its weights) during training.

It calls ``model.save(path)`` or, with ``save_weights_only=True``, ``model.save_weights(path)``,
and takes the paths Keras takes, checked when the callback is made (Keras's rules):

* the whole model: ``.keras`` (Keras 3's archive, which Keras's ``load_model`` opens too) or ``.h5``
  (Ember's full-fidelity checkpoint: optimizer state and training progress for an exact resume;
  ``.hdf5`` is the same format);
* weights only (``save_weights_only=True``): ``.weights.h5``, the suffix Keras requires there.

Every write is atomic, so an interrupted save never damages the previous best file.

``filepath`` may contain ``{epoch}`` (1-based) and log names (``"ckpt-{epoch:02d}-{val_loss:.2f}.h5"``).
"""

from __future__ import annotations

import numbers
import os
from typing import Any

from ember import distribute
from ember.training.callbacks._monitor import improvement, read_monitor, resolve_mode
from ember.training.callbacks.callback import Callback

WEIGHTS_SUFFIX = ".weights.h5"
# The whole model: Keras 3's archive, or Ember's full-fidelity HDF5 checkpoint (.hdf5 is the same format).
MODEL_SUFFIXES = (".keras", ".h5", ".hdf5")


def _check_suffix(filepath: str, save_weights_only: bool) -> None:
    """Keras's rule for a checkpoint's path: ``.weights.h5`` for weights only, ``.keras``/``.h5`` for the model.

    Raises:
        ValueError: the path names the wrong kind of file.
    """
    if save_weights_only and not filepath.endswith(WEIGHTS_SUFFIX):
        raise ValueError(f"ModelCheckpoint: with save_weights_only=True the filepath must end in '.weights.h5' "
                         f"(Keras's weights format), received filepath={filepath!r}")
    if not save_weights_only and not filepath.endswith(MODEL_SUFFIXES):
        raise ValueError(f"ModelCheckpoint: the filepath must end in '.keras' (Keras's model format) or '.h5' "
                         f"(Ember's checkpoint) to save the whole model, received filepath={filepath!r}; "
                         "pass save_weights_only=True with a '.weights.h5' path to save the weights only")


class ModelCheckpoint(Callback):
    """Save after every epoch (or every ``save_freq`` batches), or only on improvement.

    Args:
        filepath: where to save; may hold ``{epoch}`` and log-name placeholders.
        monitor: the log deciding "best" with ``save_best_only``.
        verbose: 1 prints a line per save.
        save_best_only: save only when ``monitor`` improves (the file is overwritten).
        save_weights_only: ``model.save_weights`` instead of ``model.save``.
        mode: ``"min"``, ``"max"`` or ``"auto"``.
        save_freq: ``"epoch"`` or a number of batches.
        initial_value_threshold: the value ``monitor`` must beat for the first save.

    Raises:
        TypeError: ``filepath`` is not a path.
        ValueError: ``save_freq`` is neither ``"epoch"`` nor a positive int; ``filepath`` does not end
            with ``.weights.h5`` (``save_weights_only=True``) or with ``.keras``/``.h5`` (the whole model).

    Example:
        >>> from ember import callbacks
        >>> checkpoint = callbacks.ModelCheckpoint("best.weights.h5", monitor="val_loss", save_best_only=True,
        ...                                        save_weights_only=True)
        >>> checkpoint.monitor, checkpoint.mode
        ('val_loss', 'min')
        >>> callbacks.ModelCheckpoint("model_{epoch}.keras").filepath
        'model_{epoch}.keras'
    """

    def __init__(self, filepath: str, monitor: str = "val_loss", verbose: int = 0, save_best_only: bool = False,
                 save_weights_only: bool = False, mode: str = "auto", save_freq: Any = "epoch",
                 initial_value_threshold: float | None = None) -> None:
        super().__init__()
        if not isinstance(filepath, (str, os.PathLike)):
            raise TypeError(f"ModelCheckpoint: filepath must be a path, received {filepath!r}")
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, numbers.Integral)
                                     or save_freq <= 0):
            raise ValueError(f"ModelCheckpoint: save_freq must be 'epoch' or a positive int, received {save_freq!r}")
        self.filepath = os.fspath(filepath)
        _check_suffix(self.filepath, bool(save_weights_only))
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = bool(save_best_only)
        self.save_weights_only = bool(save_weights_only)
        self.mode = resolve_mode("ModelCheckpoint", monitor, mode)
        self.save_freq = save_freq
        self._better = improvement(self.mode, 0.0)
        self.initial_value_threshold = initial_value_threshold
        self.best = initial_value_threshold if initial_value_threshold is not None else (
            float("inf") if self.mode == "min" else float("-inf"))
        self._batches = 0
        self._epoch = 0

    @property
    def _method(self) -> str:
        return "save_weights" if self.save_weights_only else "save"

    def on_train_begin(self, logs: Any = None) -> None:
        strategy = distribute.get_strategy()
        if strategy is not None and strategy.shard_optimizer and not self.save_weights_only:
            # Every rank raises here: the main rank alone failing in model.save would leave the others waiting.
            raise NotImplementedError(
                "ModelCheckpoint: under ember.distribute with shard_optimizer=True (or fully_shard=True) each rank "
                "holds only its shard of the optimizer state, so the main rank cannot save the whole model; use "
                "save_weights_only=True, or "
                "call ember.saving.save_sharded(model, directory) on every rank (e.g. from a LambdaCallback's "
                "on_epoch_end)")

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        if self.save_freq == "epoch":
            return
        self._batches += 1
        if self._batches % self.save_freq == 0:
            self._save(self._epoch, dict(logs or {}), batch=batch)

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if self.save_freq == "epoch":
            self._save(epoch, dict(logs or {}))

    def _save(self, epoch: int, logs: dict, batch: int | None = None) -> None:
        try:
            path = self.filepath.format(epoch=epoch + 1, batch=batch, **logs)
        except KeyError as error:
            raise KeyError(f"ModelCheckpoint: filepath {self.filepath!r} names {error}, which is not in the logs "
                           f"{sorted(logs)}") from None
        if self.save_best_only:
            current = read_monitor("ModelCheckpoint", logs, self.monitor)
            if current is None or not self._better(current, self.best):
                if self.verbose > 0 and current is not None:
                    print(f"Epoch {epoch + 1}: {self.monitor} did not improve from {self.best:.5f}")
                return
            if self.verbose > 0:
                print(f"Epoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to {current:.5f}, "
                      f"saving model to {path}")
            self.best = current
        elif self.verbose > 0:
            print(f"Epoch {epoch + 1}: saving model to {path}")
        if not distribute.is_main_process():  # ember.distribute: the same decision on every rank, one writer
            return
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        getattr(self.model, self._method)(path)
