"""``TensorBoard``: write the training logs as TensorBoard event files (Keras's ``keras.callbacks.TensorBoard``).

The files are written by ``tensorboardX``'s ``SummaryWriter`` (the optional ``[tensorboard]``
extra, imported when training begins), in Keras's layout and tag names, so
``tensorboard --logdir LOG_DIR`` shows Keras's and Ember's runs the same way:

* ``LOG_DIR/train``: ``epoch_<name>`` for each epoch log (``epoch_loss``, ``epoch_accuracy``),
  ``epoch_learning_rate``, and with ``update_freq`` a number of batches ``batch_<name>`` every
  that many batches (at the global batch index); with ``histogram_freq`` > 0, a histogram of
  every weight (``<weight path>/histogram``, e.g. ``dense/kernel/histogram``) every that many
  epochs; with ``write_graph``, the model's config (JSON) as the text summary ``keras`` (what
  Keras writes besides a TensorFlow graph, which Ember models do not have).
* ``LOG_DIR/validation``: ``epoch_<name>`` for each ``val_<name>`` log.

Under ``ember.distribute`` only the main rank writes (every rank runs the same hooks).
"""

from __future__ import annotations

import json
import numbers
import os
import time
from typing import Any

import numpy as np

from ember import distribute, ops
from ember.training.callbacks.callback import Callback
from ember.training.callbacks.reduce_lr_on_plateau import current_learning_rate

_NOT_SUPPORTED = {
    "write_images": (False, "Keras draws weights as images; use histogram_freq for weight distributions"),
    "profile_batch": (0, "Keras runs TensorFlow's profiler; profile Ember with the backend's own profiler "
                         "(torch.profiler, mlx.core.metal.start_capture)"),
    "embeddings_freq": (0, "Keras writes TensorFlow's embedding projector; save the embedding weights with "
                           "model.save_weights instead"),
    "embeddings_metadata": (None, "it goes with embeddings_freq, which Ember does not write"),
}


def summary_writer_class() -> type:
    """``tensorboardX.SummaryWriter``, or an ImportError naming the extra to install."""
    try:
        from tensorboardX import SummaryWriter  # lazy: the optional [tensorboard] extra
    except ImportError:
        raise ImportError('TensorBoard needs tensorboardX: pip install "ember[tensorboard]"') from None
    return SummaryWriter


def _check_update_freq(update_freq: Any) -> Any:
    if update_freq in ("epoch", "batch"):
        return 1 if update_freq == "batch" else "epoch"
    if isinstance(update_freq, bool) or not isinstance(update_freq, numbers.Integral) or update_freq <= 0:
        raise ValueError(f"TensorBoard: update_freq must be 'epoch', 'batch' or a positive int, "
                         f"received {update_freq!r}")
    return int(update_freq)


def _check_histogram_freq(histogram_freq: Any) -> int:
    if isinstance(histogram_freq, bool) or not isinstance(histogram_freq, numbers.Integral) or histogram_freq < 0:
        raise ValueError(f"TensorBoard: histogram_freq must be a non-negative int, received {histogram_freq!r}")
    return int(histogram_freq)


def _scalar(value: Any) -> float | None:
    """A log value as a float, or None when it is not a single number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        if isinstance(value, numbers.Number) and not isinstance(value, bool):
            raise  # a number that is not real (complex): an error, not "not a number"
        return None


class TensorBoard(Callback):
    """Write scalars (per epoch, optionally per batch) and weight histograms for TensorBoard.

    Args:
        log_dir: the directory of the event files (``train/`` and ``validation/`` under it).
        histogram_freq: every how many epochs to write a histogram of every weight (0: never).
        write_graph: write the model's config (JSON) as the text summary ``keras``.
        write_images: not supported (``NotImplementedError`` when True).
        write_steps_per_second: also write ``epoch_steps_per_second``.
        update_freq: ``"epoch"`` (scalars once per epoch), ``"batch"`` or ``N`` (also the
            running ``batch_<name>`` logs every ``N`` training batches).
        profile_batch, embeddings_freq, embeddings_metadata: not supported
            (``NotImplementedError`` when set).

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> import ember
        >>> from ember import callbacks, layers
        >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> log_dir = tempfile.mkdtemp()
        >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), epochs=2, verbose=0,
        ...               callbacks=[callbacks.TensorBoard(log_dir, histogram_freq=1)])
        >>> sorted(os.listdir(log_dir))
        ['train']
    """

    def __init__(self, log_dir: Any = "logs", histogram_freq: int = 0, write_graph: bool = True,
                 write_images: bool = False, write_steps_per_second: bool = False, update_freq: Any = "epoch",
                 profile_batch: Any = 0, embeddings_freq: int = 0, embeddings_metadata: Any = None) -> None:
        super().__init__()
        given = {"write_images": write_images, "profile_batch": profile_batch, "embeddings_freq": embeddings_freq,
                 "embeddings_metadata": embeddings_metadata}
        for name, value in given.items():
            default, alternative = _NOT_SUPPORTED[name]
            if value != default:
                raise NotImplementedError(f"TensorBoard: {name}={value!r} is not supported by Ember ({alternative})")
        if not isinstance(log_dir, (str, os.PathLike)):
            raise TypeError(f"TensorBoard: log_dir must be a path, received {log_dir!r}")
        for name, value in (("write_graph", write_graph), ("write_steps_per_second", write_steps_per_second)):
            if not isinstance(value, bool):
                raise TypeError(f"TensorBoard: {name} must be a bool, received {value!r}")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = _check_histogram_freq(histogram_freq)
        self.write_graph = write_graph
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = _check_update_freq(update_freq)
        self._writers: dict = {}
        self._global_batch = 0
        self._epoch_start = 0.0
        self._epoch_batches = 0

    # --- writers -------------------------------------------------------------------------------
    def _writer(self, run: str) -> Any:
        writer = self._writers.get(run)
        if writer is None:
            writer = summary_writer_class()(os.path.join(self.log_dir, run))
            self._writers[run] = writer
        return writer

    def _write_scalars(self, run: str, prefix: str, logs: dict, step: int) -> None:
        writer = self._writer(run)
        for name, value in logs.items():
            number = _scalar(value)
            if number is not None:
                writer.add_scalar(f"{prefix}{name}", number, step)

    def _close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    # --- hooks ---------------------------------------------------------------------------------
    def on_train_begin(self, logs: Any = None) -> None:
        summary_writer_class()  # a missing extra fails before the first epoch
        self._global_batch = 0
        if not distribute.is_main_process():  # ember.distribute: one writer
            return
        if self.write_graph:
            to_json = getattr(self.model, "to_json", None)
            if to_json is not None:
                self._writer("train").add_text("keras", json.dumps(json.loads(to_json()), indent=2), 0)
                self._writer("train").flush()

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._epoch_start = time.perf_counter()
        self._epoch_batches = 0

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self._global_batch += 1
        self._epoch_batches += 1
        if self.update_freq == "epoch" or self._global_batch % self.update_freq != 0:
            return
        if distribute.is_main_process():
            self._write_scalars("train", "batch_", dict(logs or {}), self._global_batch)

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if not distribute.is_main_process():
            return
        logs = dict(logs or {})
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        validation = {k[len("val_"):]: v for k, v in logs.items() if k.startswith("val_")}
        if "learning_rate" not in train and getattr(self.model, "optimizer", None) is not None:
            train["learning_rate"] = current_learning_rate(self.model)
        if self.write_steps_per_second:
            elapsed = time.perf_counter() - self._epoch_start
            train["steps_per_second"] = self._epoch_batches / elapsed if elapsed > 0 else 0.0
        self._write_scalars("train", "epoch_", train, epoch)
        if validation:
            self._write_scalars("validation", "epoch_", validation, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._write_histograms(epoch)
        for writer in self._writers.values():
            writer.flush()

    def _write_histograms(self, epoch: int) -> None:
        writer = self._writer("train")
        for weight in self.model.weights:
            values = np.asarray(ops.to_numpy(weight.value), dtype=np.float64)  # bfloat16/float16 too
            writer.add_histogram(f"{weight.path}/histogram", values, epoch)

    def on_train_end(self, logs: Any = None) -> None:
        self._close()
