"""One rank of the distributed tests (started by tests/distribute/test_data_parallel.py).

``python worker.py SCENARIO BACKEND OUT_DIR`` runs SCENARIO on BACKEND and writes its
results to ``OUT_DIR/rank<R>.npz``. The launcher's variables (torchrun's ``RANK`` ...,
or ``MLX_RANK``/``MLX_HOSTFILE``) select data parallelism; without them it runs in one
process, the reference.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import optree

import ember
from ember import callbacks, distribute, layers, optimizers, saving

DISTRIBUTED = "RANK" in os.environ or "MLX_RANK" in os.environ
# Every scenario trains in float64: ranks and one process then differ by float64 rounding only,
# which the tests bound (test_data_parallel.TOLERANCE). The code paths are the same as float32's.
FLOATX = "float64"
# How long a hanging rank hangs: far past any timeout the tests set (3 s), so rank 0 can only end by its
# timeout; the test stops the hanging rank once rank 0 has finished.
HANG_S = 120.0


def data(n: int = 37) -> tuple:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 5)).astype(FLOATX)
    y = (x[:, :3].sum(axis=1) > 0).astype("int64") + (x[:, 3] > 0.5).astype("int64")
    return x, y


def model(dropout: float) -> ember.Model:
    # Explicit names: a layer's dropout seed derives from its name, which must not depend on how many
    # models the process created before.
    net = ember.Sequential([ember.Input((5,)), layers.Dense(8, activation="tanh", name="hidden"),
                            layers.Dropout(dropout, name="drop"), layers.Dense(3, name="out")], name="net")
    net.build(seed=1)
    return net


class PlainAdam(optimizers.Adam):
    """Adam's math through the generic path (a subclass names no fused kernel)."""


def fit_scenario(out: dict, optimizer: str, extra: tuple = ()) -> ember.Model:
    x, y = data()
    net = model(0.3)
    opt = {"adam": lambda: optimizers.Adam(0.01), "sgd": lambda: optimizers.SGD(0.1, momentum=0.9),
           "plainadam": lambda: PlainAdam(0.01),
           # dynamic loss scaling: the scale, an input of each rank's step, doubles every 3 finite steps
           "lso": lambda: optimizers.LossScaleOptimizer(optimizers.Adam(0.01), initial_scale=2.0 ** 10,
                                                        dynamic_growth_steps=3)}[optimizer]()
    net.compile(optimizer=opt, loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"], seed=3)
    # 37 samples, validation_split 0.2 -> 29 training samples: batches 8,8,8,5 (the last uneven).
    history = net.fit(x, y, batch_size=8, epochs=3, shuffle=True, validation_split=0.2, verbose=0,
                      callbacks=list(extra))
    for key, values in history.history.items():
        out[f"{optimizer}_history_{key}"] = np.asarray(values)
    for i, w in enumerate(optree.tree_leaves(net.state["params"])):
        out[f"{optimizer}_weight_{i}"] = np.asarray(ember.ops.to_numpy(w))
    out[f"{optimizer}_evaluate"] = np.asarray(net.evaluate(x, y, batch_size=7, verbose=0))
    out[f"{optimizer}_predict"] = net.predict(x, batch_size=5, verbose=0)
    opt_state = net._training.opt_state
    if "dynamic_scale" in opt_state:
        out[f"{optimizer}_dynamic_scale"] = np.asarray(ember.ops.to_numpy(opt_state["dynamic_scale"]))
    return net


class Batches(ember.data.Dataset):
    """The first 29 samples in batches of 7: the last batch has 1 row (rank 1 of 2 gets none)."""

    def __init__(self) -> None:
        super().__init__()
        self.x, self.y = (a[:29] for a in data())

    def __len__(self) -> int:
        return 5

    def __getitem__(self, index: int) -> tuple:
        return self.x[7 * index:7 * index + 7], self.y[7 * index:7 * index + 7]


def dataset_scenario(out: dict) -> None:
    """An ember.data.Dataset with a one-row last batch, shuffled batches, and EarlyStopping."""
    net = model(0.3)
    net.compile(optimizer=optimizers.Adam(0.02), loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"], seed=4)
    stop = callbacks.EarlyStopping(monitor="loss", min_delta=0.03, patience=0)
    history = net.fit(Batches(), epochs=30, shuffle=True, verbose=0, callbacks=[stop])
    out["dataset_history_loss"] = np.asarray(history.history["loss"])
    out["dataset_history_accuracy"] = np.asarray(history.history["accuracy"])
    for i, w in enumerate(optree.tree_leaves(net.state["params"])):
        out[f"dataset_weight_{i}"] = np.asarray(ember.ops.to_numpy(w))


class Interrupt(callbacks.Callback):
    """Raises at the end of epoch 1 the first time (after BackupAndRestore saved it)."""

    def __init__(self) -> None:
        super().__init__()
        self.fired = False

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if epoch == 1 and not self.fired:
            self.fired = True
            raise RuntimeError("interrupted on purpose")


def backup_scenario(out: dict, directory: str) -> None:
    """BackupAndRestore: a fit interrupted after epoch 1 resumes from the main rank's backup."""
    x, y = data()
    net = compiled_model()
    backup = callbacks.BackupAndRestore(os.path.join(directory, "backup"))
    interrupt = Interrupt()
    try:
        net.fit(x, y, batch_size=6, epochs=4, verbose=0, callbacks=[backup, interrupt])
    except RuntimeError as error:
        assert "interrupted on purpose" in str(error), error
    history = net.fit(x, y, batch_size=6, epochs=4, verbose=0, callbacks=[backup, interrupt])
    out["backup_epochs"] = np.asarray(history.epoch)
    out["backup_history_loss"] = np.asarray(history.history["loss"])
    for i, w in enumerate(optree.tree_leaves(net.state["params"])):
        out[f"backup_weight_{i}"] = np.asarray(ember.ops.to_numpy(w))


def batchnorm_scenario(out: dict) -> None:
    """BatchNormalization: per-rank batch statistics, moving statistics averaged over the ranks."""
    x, y = data()
    net = ember.Sequential([ember.Input((5,)), layers.Dense(8, name="hidden"), layers.BatchNormalization(name="bn"),
                            layers.Dense(3, name="out")], name="bn_net")
    net.build(seed=1)
    net.compile(optimizer="adam", loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), seed=2)
    net.fit(x, y, batch_size=8, epochs=2, verbose=0)
    for i, w in enumerate(optree.tree_leaves(net.state)):
        out[f"rankonly_bn_{i}"] = np.asarray(ember.ops.to_numpy(w))


def compiled_model() -> ember.Model:
    net = model(0.3)
    net.compile(optimizer="adam", loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), seed=2)
    return net


def checkpoint_scenario(out: dict, directory: str) -> None:
    """2 epochs, a full checkpoint and a CSV log per epoch (written by the main rank only)."""
    x, y = data()
    net = compiled_model()
    path = os.path.join(directory, "ckpt-{epoch}.h5")
    csv = os.path.join(directory, "log.csv")
    net.fit(x, y, batch_size=6, epochs=2, verbose=0,
            callbacks=[callbacks.ModelCheckpoint(path), callbacks.CSVLogger(csv)])
    out["predict"] = net.predict(x, verbose=0)


def resume_scenario(out: dict, directory: str) -> None:
    """Continue the fit saved in ``directory/ckpt-2.h5`` for a third epoch."""
    x, y = data()
    net = ember.load_model(os.path.join(directory, "ckpt-2.h5"))
    net.fit(x, y, batch_size=6, epochs=3, initial_epoch=2, verbose=0)
    for i, w in enumerate(optree.tree_leaves(net.state["params"])):
        out[f"weight_{i}"] = np.asarray(ember.ops.to_numpy(w))


def hang_scenario(out: dict) -> None:
    """Rank 1 stays alive but never joins the collectives of fit."""
    x, y = data()
    net = compiled_model()
    if distribute.rank() == 1:
        time.sleep(HANG_S)  # the test ends this rank as soon as rank 0 has finished
        os._exit(0)
    started = time.monotonic()
    try:
        net.fit(x, y, batch_size=4, epochs=1, verbose=0)
        out["error"] = np.asarray("no error")
    except Exception as error:  # noqa: BLE001 - the test reads the message
        out["error"] = np.asarray(f"{type(error).__name__}: {error}")
    out["seconds"] = np.asarray(time.monotonic() - started)


def die_scenario(out: dict) -> None:
    x, y = data()
    net = model(0.0)
    net.compile(optimizer="sgd", loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), seed=2)
    def die(batch: int, logs: dict) -> None:
        if distribute.rank() == 1 and batch == 2:
            os._exit(3)  # a rank that dies in the middle of an epoch

    started = time.monotonic()
    try:
        net.fit(x, y, batch_size=4, epochs=50, verbose=0, callbacks=[callbacks.LambdaCallback(on_train_batch_end=die)])
        out["error"] = np.asarray("no error")
    except Exception as error:  # noqa: BLE001 - the test reads the message
        out["error"] = np.asarray(f"{type(error).__name__}: {error}")
    out["seconds"] = np.asarray(time.monotonic() - started)


def mismatch_scenario(out: dict) -> None:
    x, y = data()
    net = ember.Sequential([ember.Input((5,)), layers.Dense(8), layers.Dense(3)])
    net.build(seed=distribute.rank())  # different initial weights on each rank
    net.compile(optimizer="sgd", loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), seed=2)
    try:
        net.fit(x, y, batch_size=4, epochs=1, verbose=0)
        out["error"] = np.asarray("no error")
    except ValueError as error:
        out["error"] = np.asarray(str(error))


class ShardShapes(callbacks.Callback):
    """Records, at the first batch, what each trainable param of fit's steps is on this rank (FSDP2)."""

    def __init__(self, out: dict) -> None:
        super().__init__()
        self.out = out

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if batch == 0 and "rankonly_fsdp_local" not in self.out:
            sharded = self.model._training.trainer.steps._sharded
            self.out["rankonly_fsdp_types"] = np.asarray([type(p).__name__ for p in sharded])
            self.out["rankonly_fsdp_local"] = np.asarray([p.to_local().numel() for p in sharded])
            self.out["rankonly_fsdp_global"] = np.asarray([p.numel() for p in sharded])


class HalveWeights(callbacks.Callback):
    """Replaces the weights at the start of epoch ``epoch`` (fit adopts the new state mid-run)."""

    def __init__(self, epoch: int) -> None:
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if epoch == self.epoch:
            self.model.set_weights([0.5 * w for w in self.model.get_weights()])


def refit_scenario(out: dict) -> None:
    """Two fits of one model, the second one's weights replaced by a callback mid-run."""
    x, y = data()
    net = model(0.0)
    net.compile(optimizer=optimizers.Adam(0.01), loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True),
                seed=5)
    net.fit(x, y, batch_size=8, epochs=1, verbose=0)
    net.fit(x, y, batch_size=8, epochs=3, initial_epoch=1, verbose=0, callbacks=[HalveWeights(2)])
    for i, w in enumerate(optree.tree_leaves(net.state["params"])):
        out[f"refit_weight_{i}"] = np.asarray(ember.ops.to_numpy(w))


def fully_sharded_scenario(out: dict, directory: str) -> None:
    """Under DataParallel(fully_shard=True) (torch's FSDP2; one process runs the same code unsharded):
    SGD and Adam with validation, evaluate and predict; a Dataset whose last batch leaves rank 1 without
    rows; a sharded checkpoint; and the refusals."""
    extra = (ShardShapes(out),) if DISTRIBUTED else ()
    fit_scenario(out, "sgd")
    fit_scenario(out, "plainadam")  # no fused kernel for a subclass: its update comes back in new tensors
    net = fit_scenario(out, "adam", extra)
    dataset_scenario(out)
    refit_scenario(out)
    backup_scenario(out, directory)  # interrupted after epoch 1, resumed from each rank's shard of the backup
    saving.save_sharded(net, os.path.join(directory, "ckpt"))
    if not DISTRIBUTED:
        return
    x, y = data()
    for name, optimizer, jit in (("clipnorm", optimizers.Adam(0.01, clipnorm=1.0), "auto"),
                                 ("lso", optimizers.LossScaleOptimizer(optimizers.Adam(0.01)), "auto"),
                                 ("jit", optimizers.Adam(0.01), True)):
        refused = model(0.0)
        refused.compile(optimizer=optimizer, loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True),
                        jit_compile=jit, seed=2)
        before = [np.asarray(ember.ops.to_numpy(w)) for w in optree.tree_leaves(refused.state["params"])]
        try:
            refused.fit(x, y, batch_size=8, epochs=1, verbose=0)
            out[f"rankonly_refusal_{name}"] = np.asarray("no error")
        except NotImplementedError as error:
            out[f"rankonly_refusal_{name}"] = np.asarray(str(error))
        after = [np.asarray(ember.ops.to_numpy(w)) for w in optree.tree_leaves(refused.state["params"])]
        out[f"rankonly_refusal_{name}_unchanged"] = np.asarray(all(np.array_equal(a, b) for a, b in zip(before, after)))
    try:  # a rank's shard of the optimizer state cannot go into the main rank's file
        net.fit(x, y, batch_size=8, epochs=1, verbose=0,
                callbacks=[callbacks.ModelCheckpoint(os.path.join(directory, "whole.h5"))])
        out["rankonly_refusal_checkpoint"] = np.asarray("no error")
    except NotImplementedError as error:
        out["rankonly_refusal_checkpoint"] = np.asarray(str(error))


def main() -> None:
    scenario, backend, directory = sys.argv[1:4]
    ember.set_backend(backend)
    ember.dtypes.set_floatx(FLOATX)
    if DISTRIBUTED:
        distribute.initialize(timeout=float(os.environ.get("EMBER_TEST_TIMEOUT", "60")),
                              fully_shard=scenario == "fully_sharded")
    out: dict = {"world_size": np.asarray(distribute.world_size())}
    if scenario == "fit":
        fit_scenario(out, "sgd")
        fit_scenario(out, "adam")
        fit_scenario(out, "lso")
        dataset_scenario(out)
        backup_scenario(out, directory)
        batchnorm_scenario(out)
    elif scenario == "fully_sharded":
        fully_sharded_scenario(out, directory)
    elif scenario == "checkpoint":
        checkpoint_scenario(out, directory)
    elif scenario == "resume":
        resume_scenario(out, directory)
    elif scenario == "hang":
        hang_scenario(out)
    elif scenario == "die":
        die_scenario(out)
    elif scenario == "mismatch":
        mismatch_scenario(out)
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
    np.savez(os.path.join(directory, f"rank{distribute.rank()}.npz"), **out)
    if scenario not in ("die", "hang"):
        distribute.shutdown()
    print(json.dumps({"rank": distribute.rank(), "done": scenario}))


if __name__ == "__main__":
    main()
