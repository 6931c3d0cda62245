"""``BackupAndRestore``: resume an interrupted ``fit`` where it stopped (Keras's callback).

At the end of every epoch (and every ``save_freq`` batches) the callback saves a full checkpoint
(``model.save``: weights, optimizer state, step RNG, shuffling seed, next epoch) to ``backup_dir``. When ``fit``
starts with a backup present (the previous run was interrupted by an exception, a crash or
a kill), the model, optimizer and RNG state are restored from it and training continues at
the saved epoch: the finished run has the same weights as an uninterrupted one. A ``fit``
that completes deletes the backup (unless ``delete_checkpoint=False``). Writes are atomic,
so a crash while saving leaves the previous backup intact.

Under an ``ember.distribute`` strategy that shards the optimizer state (``shard_optimizer=True``
or ``fully_shard=True``) every rank backs up its own shard: the backup is a sharded checkpoint
(:func:`ember.saving.save_sharded`) written into ``backup_dir/writing`` and then renamed to
``backup_dir/latest`` by the main rank, and on restart each rank reads its pieces of it under the
current layout (any number of processes). ``backup_dir`` must then be one directory every rank
sees (a shared file system on several machines).

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> import ember
    >>> from ember import callbacks, layers
    >>> ember.set_backend("numpy")
    >>> x, y = np.ones((8, 2), "float32"), np.ones((8, 1), "float32")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    >>> model.compile(optimizer="adam", loss="mse", seed=0)
    >>> backup = callbacks.BackupAndRestore(os.path.join(tempfile.mkdtemp(), "backup"))
    >>> class Crash(callbacks.Callback):
    ...     def on_epoch_end(self, epoch, logs=None):
    ...         if epoch == 1:
    ...             raise RuntimeError("power cut")
    >>> try:
    ...     model.fit(x, y, epochs=4, callbacks=[backup, Crash()], verbose=0)
    ... except RuntimeError:
    ...     pass
    >>> history = model.fit(x, y, epochs=4, callbacks=[backup], verbose=0)  # resumes at epoch 2
    >>> history.epoch
    [2, 3]
"""

from __future__ import annotations

import contextlib
import numbers
import os
import shutil
from typing import Any

from ember import distribute
from ember.saving import CheckpointError
from ember.saving.model_io import read_training_checkpoint
from ember.saving.sharded import INDEX, read_sharded_backup, save_sharded
from ember.saving.training_state import step_rng
from ember.training.callbacks.callback import Callback


class BackupAndRestore(Callback):
    """Back up training state every epoch; restore it when ``fit`` restarts after an interruption.

    Args:
        backup_dir: directory for the backup files (created if needed); use one per training run.
        save_freq: ``"epoch"``, or a number of batches: back up every ``save_freq`` batches too, and
            resume at the batch after the backup (array data; see :mod:`ember.saving.training_state`).
        double_checkpoint: keep the previous backup too, and fall back to it if the latest one
            cannot be read.
        delete_checkpoint: delete the backup when ``fit`` completes.

    Raises:
        ValueError: ``save_freq`` neither ``"epoch"`` nor a positive int.

    Example:
        >>> from ember import callbacks
        >>> backup = callbacks.BackupAndRestore("/tmp/run-1-backup")
        >>> backup.latest_path
        '/tmp/run-1-backup/latest.h5'
    """

    def __init__(self, backup_dir: Any, save_freq: Any = "epoch", double_checkpoint: bool = False,
                 delete_checkpoint: bool = True) -> None:
        super().__init__()
        if not isinstance(backup_dir, (str, os.PathLike)) or not os.fspath(backup_dir):
            raise ValueError(f"BackupAndRestore: backup_dir must be a directory path, received {backup_dir!r}")
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, numbers.Integral)
                                     or save_freq <= 0):
            raise ValueError(f"BackupAndRestore: save_freq must be 'epoch' or a positive int (batches), received "
                             f"save_freq={save_freq!r}")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.double_checkpoint = bool(double_checkpoint)
        self.delete_checkpoint = bool(delete_checkpoint)
        self.restored_epoch: int | None = None
        self._batches = 0
        self._sharded = False  # this fit's optimizer state is sharded over the ranks: sharded backups

    @property
    def latest_path(self) -> str:
        return os.path.join(self.backup_dir, "latest.h5")

    @property
    def previous_path(self) -> str:
        return os.path.join(self.backup_dir, "previous.h5")

    def _sharded_path(self, name: str) -> str:
        """A sharded backup's directory: ``writing`` (being written), ``latest``, ``previous``, ``old``."""
        return os.path.join(self.backup_dir, name)

    def _read(self) -> Any:
        if self._sharded:  # a complete "writing" (its index is written last) is newer than "latest"
            names = ["writing", "latest"] + (["previous"] if self.double_checkpoint else [])
            candidates = [self._sharded_path(name) for name in names
                          if os.path.exists(os.path.join(self._sharded_path(name), INDEX))]
        else:
            candidates = [self.latest_path] + ([self.previous_path] if self.double_checkpoint else [])
        errors = []
        for path in candidates:
            if not os.path.exists(path):
                continue
            try:
                if self._sharded:
                    return read_sharded_backup(self.model, path)
                return read_training_checkpoint(self.model, path)
            except CheckpointError as error:
                errors.append(error)
        if errors:
            raise errors[0]
        return None

    def on_train_begin(self, logs: Any = None) -> None:
        self.restored_epoch = None
        self._batches = 0
        live = self.model._training.live_state
        if live is None:
            raise RuntimeError("BackupAndRestore works inside model.fit only")
        strategy = distribute.get_strategy()
        self._sharded = strategy is not None and strategy.shard_optimizer
        found = self._read()
        if found is None:
            return

        model_state, opt_state, progress = found
        if opt_state is None or progress.get("epoch") is None or progress.get("rng") is None:
            raise ValueError(f"BackupAndRestore: the backup {self.latest_path!r} holds no training state "
                             "(optimizer state, epoch and RNG); delete it to start afresh")
        live.resume(model_state, opt_state, step_rng(live.steps, progress["rng"]), progress["epoch"],
                    progress.get("seed"), step=int(progress.get("step") or 0))
        self.model._training.trainer._fits = int(progress.get("fits") or 0)
        self.restored_epoch = int(progress["epoch"])

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        if self.save_freq == "epoch":
            return
        self._batches += 1
        if self._batches % self.save_freq == 0:
            self._backup()  # mid-epoch: the checkpoint records the batch, fit resumes after it

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self._backup()

    def _backup(self) -> None:
        if self._sharded:
            self._backup_sharded()
            return
        if not distribute.is_main_process():  # ember.distribute: the main rank writes, fit's barrier follows
            return
        os.makedirs(self.backup_dir, exist_ok=True)
        if self.double_checkpoint and os.path.exists(self.latest_path):
            os.replace(self.latest_path, self.previous_path)
        self.model.save(self.latest_path)

    def _backup_sharded(self) -> None:
        """Every rank writes its shard into ``writing``; the main rank then renames it to ``latest`` (the
        previous one kept as ``previous`` or removed). A crash leaves a complete ``latest`` or ``writing``."""
        main = distribute.is_main_process()
        writing, latest = self._sharded_path("writing"), self._sharded_path("latest")
        if main:
            shutil.rmtree(writing, ignore_errors=True)  # an incomplete one from a crash
            os.makedirs(self.backup_dir, exist_ok=True)
        distribute.barrier()
        save_sharded(self.model, writing)  # every rank's shard, then the index (barriers inside)
        if main:
            if os.path.exists(latest):
                kept = self._sharded_path("previous" if self.double_checkpoint else "old")
                shutil.rmtree(kept, ignore_errors=True)
                os.replace(latest, kept)
            os.replace(writing, latest)
            shutil.rmtree(self._sharded_path("old"), ignore_errors=True)
        distribute.barrier()

    def on_train_end(self, logs: Any = None) -> None:
        if not self.delete_checkpoint or not distribute.is_main_process():
            return
        for path in (self.latest_path, self.previous_path):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        for name in ("writing", "latest", "previous", "old"):
            shutil.rmtree(self._sharded_path(name), ignore_errors=True)
        with contextlib.suppress(OSError):
            os.rmdir(self.backup_dir)  # only when empty
