"""Callbacks: hooks, History, progress output, early stopping, learning-rate callbacks, CSV, checkpoints."""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest

import ember
from ember import callbacks, layers, ops
from ember.training.callbacks._monitor import copy_state
from tests.tolerances import FLOAT32


def _model(lr=0.05, optimizer=None):
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1, name="d")])
    model.build(seed=0)
    model.compile(optimizer or ember.optimizers.SGD(lr), "mse", seed=0)
    return model


def _xy(n=16):
    x = np.random.default_rng(0).normal(size=(n, 2)).astype(np.float32)
    return x, x @ np.array([[1.0], [-1.0]], np.float32)


def _kernel(model):
    return ops.to_numpy(model.state["params"]["d"]["kernel"]).copy()


class Recorder(callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def on_train_begin(self, logs=None):
        self.calls.append("train_begin")

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(f"epoch_begin {epoch}")

    def on_train_batch_end(self, batch, logs=None):
        self.calls.append(f"batch_end {batch} {sorted(logs)}")

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(f"epoch_end {epoch} {sorted(logs)}")

    def on_test_begin(self, logs=None):
        self.calls.append("test_begin")

    def on_train_end(self, logs=None):
        self.calls.append("train_end")


def test_hook_order_and_logs():
    x, y = _xy(8)
    recorder = Recorder()
    model = _model()
    history = model.fit(x, y, batch_size=4, epochs=2, validation_data=(x, y), verbose=0, callbacks=[recorder])
    assert recorder.calls == [
        "train_begin", "epoch_begin 0", "batch_end 0 ['loss']", "batch_end 1 ['loss']", "test_begin",
        "epoch_end 0 ['loss', 'val_loss']", "epoch_begin 1", "batch_end 0 ['loss']", "batch_end 1 ['loss']",
        "test_begin", "epoch_end 1 ['loss', 'val_loss']", "train_end"]
    assert history.epoch == [0, 1] and model.history is history and recorder.model is model
    assert recorder.params == {"verbose": 0, "epochs": 2, "steps": 2}
    assert all(isinstance(v, float) for values in history.history.values() for v in values)


def test_batch_logs_are_only_computed_when_read(monkeypatch):
    x, y = _xy(8)
    model = _model()
    trainer = model._training.trainer
    calls = []
    original = trainer.core.results
    monkeypatch.setattr(trainer.core, "results", lambda state: calls.append(1) or original(state))

    class Quiet(callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            pass

    model.fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[Quiet()])
    assert len(calls) == 1  # the epoch's logs only, not one per batch


def test_validation_freq():
    x, y = _xy(8)
    history = _model().fit(x, y, epochs=4, validation_data=(x, y), validation_freq=2, verbose=0)
    assert len(history.history["val_loss"]) == 2
    history = _model().fit(x, y, epochs=4, validation_data=(x, y), validation_freq=[1, 4], verbose=0)
    assert len(history.history["val_loss"]) == 2


@pytest.mark.parametrize("verbose", ["auto", 1])
def test_piped_fit_prints_one_line_per_epoch(capsys, verbose):
    """capsys is not a terminal: as Keras, ``"auto"`` is 1 and the bar writes its final line only."""
    x, y = _xy(8)
    _model().fit(x, y, batch_size=2, epochs=3, verbose=verbose, validation_data=(x, y))
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[::2] == ["Epoch 1/3", "Epoch 2/3", "Epoch 3/3"] and len(lines) == 6, out
    assert all(re.match(r"4/4 \[=+\] - \d+s \d+(us|ms|s)/step - loss: \d+\.\d{4} - val_loss: \d+\.\d{4}$", line)
               for line in lines[1::2]), out
    assert "\r" not in out  # no redrawing off a terminal
    _model().evaluate(x, y)
    assert re.match(r"1/1 \[=+\] - .* - loss: \d+\.\d{4}\n$", capsys.readouterr().out)


def test_progress_output(capsys):
    x, y = _xy(8)
    _model().fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert capsys.readouterr().out == ""  # verbose=0: nothing
    _model().fit(x, y, batch_size=4, epochs=2, verbose=2, validation_data=(x, y))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2" and len(lines) == 4
    assert re.match(r"2/2 - \d+s - \d+(us|ms|s)/step - loss: \d+\.\d{4} - val_loss: \d+\.\d{4}$", lines[1])
    _model().fit(x, y, batch_size=4, epochs=1, verbose=1)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Epoch 1/1" and lines[1].startswith("2/2 [==============================] - ")
    assert "\r" not in "".join(lines)  # no redrawing when the output is not a terminal
    _model().evaluate(x, y, verbose=1)
    assert capsys.readouterr().out.startswith("1/1 [")


def test_progbar_redraws_in_place_on_a_terminal():
    import io

    from ember.training.callbacks.progbar import Progbar

    out = io.StringIO()
    bar = Progbar(target=10, output=out, dynamic=True)
    bar.update(3, [("loss", 1.5)])
    bar.update(10, [("loss", 0.5)], finalize=True)
    text = out.getvalue()
    assert text.startswith("\r 3/10 [") and "ETA" in text and "loss: 1.5000" in text and text.endswith("\n")


def test_early_stopping_restores_the_best_weights(backend):
    x, y = _xy()
    snapshots = []
    keep = callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: snapshots.append(_kernel(model)))
    # A learning rate that turns huge from epoch 3 on makes the loss diverge after epoch 2.
    schedule = callbacks.LearningRateScheduler(lambda epoch, lr: 0.05 if epoch < 3 else 5.0)
    stop = callbacks.EarlyStopping(monitor="loss", patience=2, restore_best_weights=True)
    model = _model()
    history = model.fit(x, y, batch_size=4, epochs=20, verbose=0, callbacks=[schedule, keep, stop])
    losses = history.history["loss"]
    best = int(np.argmin(losses))
    assert len(losses) == best + 3 and stop.stopped_epoch == best + 2 and stop.best_epoch == best
    np.testing.assert_array_equal(_kernel(model), snapshots[best])


def test_early_stopping_baseline_and_start_from_epoch():
    x, y = _xy()
    # A constant loss (learning rate 0): the first epoch improves on +inf; as in Keras, the wait is
    # only reset by a value that also beats the baseline.
    stop = callbacks.EarlyStopping(monitor="loss", patience=2, baseline=-1.0)  # never reached
    assert len(_model(lr=0.0).fit(x, y, epochs=10, verbose=0, callbacks=[stop]).epoch) == 2
    stop = callbacks.EarlyStopping(monitor="loss", patience=2)
    assert len(_model(lr=0.0).fit(x, y, epochs=10, verbose=0, callbacks=[stop]).epoch) == 3
    stop = callbacks.EarlyStopping(monitor="loss", patience=0, min_delta=100.0, start_from_epoch=3)
    assert len(_model().fit(x, y, epochs=10, verbose=0, callbacks=[stop]).epoch) == 5
    with pytest.warns(RuntimeWarning, match="not in the logs"):
        _model().fit(x, y, epochs=1, verbose=0, callbacks=[callbacks.EarlyStopping(monitor="val_accuracy")])


def test_learning_rate_changes_reach_the_running_step(backend):
    x, y = _xy()
    frozen = []
    schedule = callbacks.LearningRateScheduler(lambda epoch: 0.05 if epoch == 0 else 0.0)
    keep = callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: frozen.append(_kernel(model)))
    model = _model()
    history = model.fit(x, y, batch_size=4, epochs=3, verbose=0, callbacks=[schedule, keep])
    np.testing.assert_allclose(history.history["learning_rate"], [0.05, 0.0, 0.0], **FLOAT32)  # float32(0.05)
    assert not np.array_equal(frozen[0], _model().state["params"]["d"]["kernel"])
    np.testing.assert_array_equal(frozen[1], frozen[0])  # learning rate 0: no change
    np.testing.assert_array_equal(frozen[2], frozen[0])


def test_reduce_lr_on_plateau():
    x, y = _xy()
    reduce = callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_delta=10.0, cooldown=1,
                                         min_lr=0.01)
    model = _model(lr=0.08)
    history = model.fit(x, y, epochs=6, verbose=0, callbacks=[reduce])
    # Logged at the start of each epoch's end (before that epoch's reduction), as in Keras; the
    # cooldown ends at the next epoch, which may reduce again.
    np.testing.assert_allclose(history.history["learning_rate"], [0.08, 0.08, 0.04, 0.02, 0.01, 0.01], rtol=1e-6)
    assert model.optimizer.learning_rate == 0.01
    schedule_model = _model(optimizer=ember.optimizers.SGD(ember.optimizers.schedules.ExponentialDecay(0.1, 1, 0.5)))
    with pytest.raises(TypeError, match="schedule"):
        schedule_model.fit(x, y, epochs=3, verbose=0,
                           callbacks=[callbacks.ReduceLROnPlateau(monitor="loss", patience=0, min_delta=10.0)])


def test_csv_logger(tmp_path):
    x, y = _xy()
    path = tmp_path / "log.csv"
    _model().fit(x, y, epochs=2, validation_data=(x, y), verbose=0, callbacks=[callbacks.CSVLogger(str(path))])
    _model().fit(x, y, epochs=1, validation_data=(x, y), verbose=0,
                 callbacks=[callbacks.CSVLogger(str(path), append=True)])
    rows = list(csv.DictReader(open(path)))
    assert [row["epoch"] for row in rows] == ["0", "1", "0"]
    assert set(rows[0]) == {"epoch", "loss", "val_loss"} and float(rows[1]["loss"]) > 0


def test_lambda_callback_hooks():
    x, y = _xy(8)
    seen = []
    cb = callbacks.LambdaCallback(on_train_begin=lambda logs: seen.append("begin"),
                                  on_batch_end=lambda batch, logs: seen.append(batch),
                                  on_train_end=lambda logs: seen.append("end"))
    _model().fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[cb])
    assert seen == ["begin", 0, 1, "end"]
    with pytest.raises(TypeError, match="unknown hook"):
        callbacks.LambdaCallback(on_epoch_ends=print)


def test_model_checkpoint_needs_ember_saving(tmp_path):
    x, y = _xy()
    model = _model()
    before = _kernel(model)
    checkpoint = callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch:02d}.weights.h5"), save_weights_only=True)
    if callable(getattr(model, "save_weights", None)):  # once ember.saving provides it, it saves
        model.fit(x, y, epochs=2, verbose=0, callbacks=[checkpoint])
        assert (tmp_path / "w-02.weights.h5").exists()
        return
    with pytest.raises(NotImplementedError, match=r"Model.save_weights.*ember.saving"):
        model.fit(x, y, epochs=2, verbose=0, callbacks=[checkpoint])
    np.testing.assert_array_equal(_kernel(model), before)


def test_model_checkpoint_saves_best_only(tmp_path, monkeypatch):
    saved = []
    model = _model()
    checkpoint = callbacks.ModelCheckpoint(str(tmp_path / "best.h5"), monitor="loss", save_best_only=True)
    checkpoint.set_model(model)
    monkeypatch.setattr(type(model), "save", lambda self, path: saved.append(path), raising=False)
    for epoch, loss in enumerate([1.0, 2.0, 0.5]):
        checkpoint.on_epoch_end(epoch, {"loss": loss})
    assert saved == [str(tmp_path / "best.h5")] * 2


def test_callback_can_replace_the_model_state(backend):
    x, y = _xy()
    model = _model()
    initial = copy_state(model.state)

    class Reset(callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.state = copy_state(initial)

    model.fit(x, y, epochs=2, verbose=0, callbacks=[Reset()])
    np.testing.assert_array_equal(_kernel(model), ops.to_numpy(initial["params"]["d"]["kernel"]))


def test_stop_training_from_a_batch_hook():
    x, y = _xy()

    class StopAtThree(callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 2:
                self.model.stop_training = True

    model = _model()
    history = model.fit(x, y, batch_size=2, epochs=5, verbose=0, callbacks=[StopAtThree()])
    assert history.epoch == [0]
    assert int(ops.to_numpy(model._training.opt_state["iterations"])) == 3
