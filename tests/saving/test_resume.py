"""Exact resume: train 2 epochs, save, load, train 2 more == 4 epochs in one go (Adam, dropout,
shuffling), on every backend; BackupAndRestore after an interruption; ModelCheckpoint best-only."""

from __future__ import annotations

import os

import numpy as np
import optree
import pytest

import ember
from ember import callbacks, layers, ops
from ember.saving.reader import CheckpointReader
from tests.saving.models import assert_trees_bit_equal, to_numpy_tree

RNG = np.random.default_rng(0)
X = RNG.normal(size=(48, 5)).astype(np.float32)
Y = RNG.integers(0, 3, size=(48,))
FIT = dict(batch_size=16, verbose=0)


def _model():
    model = ember.Sequential([ember.Input((5,)), layers.Dense(12, activation="relu", name="hidden"),
                              layers.Dropout(0.3, name="drop"), layers.Dense(3, name="out")], name="resumable")
    model.build(seed=1)
    model.compile(optimizer=ember.optimizers.Adam(0.01),
                  loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"], seed=0)
    return model


def test_train_save_load_train_equals_uninterrupted_training(tmp_path, backend):
    # Bit-exact on every backend, MLX included (its compiled step is deterministic on the CPU).
    straight = _model()
    straight.fit(X, Y, epochs=4, **FIT)

    first = _model()
    first.fit(X, Y, epochs=2, **FIT)
    first.save(tmp_path / "half.h5")
    ember.load_model(tmp_path / "half.h5").save(tmp_path / "again.h5")  # load + save keeps the training state
    resumed = ember.load_model(tmp_path / "again.h5")
    history = resumed.fit(X, Y, epochs=4, initial_epoch=2, **FIT)
    assert history.epoch == [2, 3]
    assert_trees_bit_equal(to_numpy_tree(resumed.state), to_numpy_tree(straight.state))
    assert_trees_bit_equal(to_numpy_tree(resumed._training.opt_state),
                           to_numpy_tree(straight._training.opt_state))
    # ... and the fits after it draw the same seeds as they would have.
    straight.fit(X, Y, epochs=1, **FIT)
    resumed.fit(X, Y, epochs=1, **FIT)
    assert_trees_bit_equal(to_numpy_tree(resumed.state), to_numpy_tree(straight.state))


def test_optimizer_state_and_progress_are_in_the_file(tmp_path, backend):
    model = _model()
    model.fit(X, Y, epochs=2, **FIT)
    model.save(tmp_path / "m.h5")
    with CheckpointReader(tmp_path / "m.h5") as ckpt:
        names = {path for path, _, _ in ckpt.variables("training/optimizer")}
        progress = ckpt.document("training")
        compiled = ckpt.document("compile")
    assert {"iterations", "learning_rate", "momentum/hidden/kernel", "velocity/out/bias"} <= names
    assert progress["epoch"] == 2 and progress["fits"] == 1 and progress["rng"] > 0
    assert compiled["optimizer"]["class_name"] == "ember>Adam"
    for target in ember.backends.available():
        with ember.using_backend(target):
            loaded = ember.load_model(tmp_path / "m.h5")
            opt = loaded._training.opt_state
            assert int(ops.to_numpy(opt["iterations"])) == 6
            assert ops.dtype(opt["iterations"]) == ops.dtype(loaded.optimizer.init({})["iterations"])
            assert_trees_bit_equal(to_numpy_tree(opt["velocity"]),
                                   to_numpy_tree(model._training.opt_state["velocity"]))


def test_include_optimizer_false(tmp_path):
    model = _model()
    model.fit(X, Y, epochs=1, **FIT)
    model.save(tmp_path / "m.h5", include_optimizer=False)
    with CheckpointReader(tmp_path / "m.h5") as ckpt:
        assert not ckpt.has("training/optimizer") and ckpt.document("training") is None
    loaded = ember.load_model(tmp_path / "m.h5")
    assert loaded.compiled and loaded._training.opt_state is None


class _Interrupt(callbacks.Callback):
    def __init__(self, at_epoch):
        super().__init__()
        self.at_epoch = at_epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.at_epoch:
            raise KeyboardInterrupt("interrupted (test)")


def test_backup_and_restore_resumes_an_interrupted_fit_exactly(tmp_path, backend):
    straight = _model()
    straight.fit(X, Y, epochs=4, **FIT)

    backup_dir = tmp_path / "backup"
    model = _model()
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, Y, epochs=4, callbacks=[callbacks.BackupAndRestore(backup_dir), _Interrupt(1)], **FIT)
    assert os.listdir(backup_dir) == ["latest.h5"]
    # A new process would rebuild the model from code: a fresh model, same compile call.
    restarted = _model()
    backup = callbacks.BackupAndRestore(backup_dir)
    history = restarted.fit(X, Y, epochs=4, callbacks=[backup], **FIT)
    assert backup.restored_epoch == 2 and history.epoch == [2, 3]
    assert_trees_bit_equal(to_numpy_tree(restarted.state), to_numpy_tree(straight.state))
    assert not backup_dir.exists()  # deleted once fit completed


def test_backup_and_restore_arguments_and_double_checkpoint(tmp_path):
    with pytest.raises(ValueError, match="save_freq must be 'epoch' or a positive int.*save_freq=0"):
        callbacks.BackupAndRestore(tmp_path, save_freq=0)
    backup_dir = tmp_path / "b"
    model = _model()
    keep = callbacks.BackupAndRestore(backup_dir, double_checkpoint=True, delete_checkpoint=False)
    model.fit(X, Y, epochs=2, callbacks=[keep], **FIT)
    assert sorted(os.listdir(backup_dir)) == ["latest.h5", "previous.h5"]
    (backup_dir / "latest.h5").write_bytes(b"garbage")  # damaged latest: falls back to previous (epoch 1)
    again = _model()
    restore = callbacks.BackupAndRestore(backup_dir, double_checkpoint=True)
    history = again.fit(X, Y, epochs=2, callbacks=[restore], **FIT)
    assert restore.restored_epoch == 1 and history.epoch == [1]


def test_model_checkpoint_best_only_keeps_the_best_epoch(tmp_path, backend):
    model = _model()
    weights = []
    record = callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: weights.append(to_numpy_tree(model.state)))
    best = callbacks.ModelCheckpoint(str(tmp_path / "best.h5"), monitor="val_loss", save_best_only=True)
    best_weights = callbacks.ModelCheckpoint(str(tmp_path / "best.weights.h5"), monitor="val_accuracy", mode="max",
                                             save_best_only=True, save_weights_only=True)
    every = callbacks.ModelCheckpoint(str(tmp_path / "epoch{epoch:02d}.h5"))
    history = model.fit(X, Y, epochs=5, validation_split=0.25, callbacks=[best, best_weights, every, record], **FIT)
    val_loss = history.history["val_loss"]
    val_acc = history.history["val_accuracy"]
    loaded = ember.load_model(tmp_path / "best.h5")
    assert_trees_bit_equal(to_numpy_tree(loaded.state), weights[int(np.argmin(val_loss))])
    first_best_acc = int(np.argmax(val_acc))  # strict improvement: the first epoch reaching the maximum
    fresh = _model()
    fresh.load_weights(tmp_path / "best.weights.h5")
    assert_trees_bit_equal(to_numpy_tree(fresh.state), weights[first_best_acc])
    assert sorted(p for p in os.listdir(tmp_path) if p.startswith("epoch")) == [f"epoch{i:02d}.h5" for i in range(1, 6)]
    assert_trees_bit_equal(to_numpy_tree(ember.load_model(tmp_path / "epoch03.h5").state), weights[2])
    with pytest.raises(ValueError, match=r"must end in '\.keras' .* or '\.h5'"):
        callbacks.ModelCheckpoint(str(tmp_path / "x.txt"))


def test_saving_during_fit_captures_the_running_state(tmp_path):
    model = _model()
    saved_epochs = []

    def save(epoch, logs):
        model.save(tmp_path / f"during{epoch}.h5")
        saved_epochs.append(to_numpy_tree(model._training.live_state.state["optimizer"]))

    model.fit(X, Y, epochs=2, callbacks=[callbacks.LambdaCallback(on_epoch_end=save)], **FIT)
    with CheckpointReader(tmp_path / "during0.h5") as ckpt:
        assert ckpt.document("training")["epoch"] == 1
        iterations = ckpt.arrays("training/optimizer")["iterations"]
    assert int(iterations) == 3
    assert optree.tree_leaves(saved_epochs)  # the live optimizer state was there to save


class _StopAfter(callbacks.Callback):
    """Raise KeyboardInterrupt after ``steps`` training steps (a Ctrl-C mid-epoch)."""

    def __init__(self, steps):
        super().__init__()
        self.steps, self.seen = steps, 0

    def on_train_batch_end(self, batch, logs=None):
        self.seen += 1
        if self.seen == self.steps:
            raise KeyboardInterrupt


_RESUME_SCRIPT = """
import sys
import numpy as np
import ember
ember.set_backend(sys.argv[1])
data = np.load(sys.argv[2])
model = ember.load_model(sys.argv[3])
model.fit(data["x"], data["y"], epochs=3, initial_epoch=int(sys.argv[4]), batch_size=16, verbose=0)
np.savez(sys.argv[5], **{"/".join(k): np.asarray(ember.ops.to_numpy(v)) for k, v in
                         zip(*__import__("optree").tree_flatten_with_path(model.state["params"])[:2])})
"""


def test_mid_epoch_checkpoint_resumes_bit_exactly_in_a_new_process(tmp_path, backend):
    """ModelCheckpoint(save_freq=N) mid-epoch, Ctrl-C, load in a new process, finish: the weights of an
    uninterrupted run, bit for bit (CPU; Adam, dropout and per-epoch shuffling included)."""
    import subprocess
    import sys

    straight = _model()
    straight.fit(X, Y, epochs=3, **FIT)
    interrupted = _model()
    path = tmp_path / "mid.h5"
    with pytest.raises(KeyboardInterrupt):  # 3 steps per epoch: saved after step 5 = epoch 1, batch 1
        interrupted.fit(X, Y, epochs=3, callbacks=[callbacks.ModelCheckpoint(path, save_freq=5), _StopAfter(6)],
                        **FIT)
    with CheckpointReader(path) as ckpt:
        progress = ckpt.document("training")
    assert (progress["epoch"], progress["step"]) == (1, 2)
    np.savez(tmp_path / "data.npz", x=X, y=Y)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path_entries = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))  # keep the caller's too
    result = subprocess.run([sys.executable, "-c", _RESUME_SCRIPT, backend, str(tmp_path / "data.npz"), str(path),
                             "1", str(tmp_path / "out.npz")], capture_output=True, text=True, timeout=300,
                            cwd=root, env={**os.environ, "PYTHONPATH": path_entries}, check=False)
    assert result.returncode == 0, result.stderr
    resumed = np.load(tmp_path / "out.npz")
    expected = {"/".join(k): v for k, v in zip(*optree.tree_flatten_with_path(to_numpy_tree(
        straight.state["params"]))[:2])}
    assert sorted(resumed.files) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(resumed[key], value, err_msg=key)


def test_backup_and_restore_with_save_freq_resumes_mid_epoch(tmp_path, backend):
    straight = _model()
    straight.fit(X, Y, epochs=3, **FIT)
    backup_dir = tmp_path / "backup"
    model = _model()
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, Y, epochs=3, callbacks=[callbacks.BackupAndRestore(backup_dir, save_freq=2), _StopAfter(5)],
                  **FIT)
    restarted = _model()  # a new run of the same script
    backup = callbacks.BackupAndRestore(backup_dir, save_freq=2)
    history = restarted.fit(X, Y, epochs=3, callbacks=[backup], **FIT)
    assert backup.restored_epoch == 1 and history.epoch == [1, 2]  # backed up after step 4: epoch 1, batch 0
    assert_trees_bit_equal(to_numpy_tree(restarted.state), to_numpy_tree(straight.state))
    assert_trees_bit_equal(to_numpy_tree(restarted._training.opt_state),
                           to_numpy_tree(straight._training.opt_state))


def test_mid_epoch_resume_is_refused_where_the_batch_order_cannot_repeat(tmp_path):
    model = _model()
    path = tmp_path / "mid.h5"
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, Y, epochs=2, callbacks=[callbacks.ModelCheckpoint(path, save_freq=1), _StopAfter(1)], **FIT)
    loaded = ember.load_model(path)
    before = to_numpy_tree(loaded.state)

    def batches():
        for start in range(0, 48, 16):
            yield X[start:start + 16], Y[start:start + 16]

    with pytest.raises(ValueError, match=r"saved after batch 0 of epoch 0.*cannot repeat its batch order"):
        loaded.fit(batches(), epochs=2, verbose=0)
    assert_trees_bit_equal(to_numpy_tree(loaded.state), before)
