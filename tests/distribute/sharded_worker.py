"""One rank of the sharded-optimizer tests (started by tests/distribute/test_sharded.py).

``python sharded_worker.py SCENARIO BACKEND OUT_DIR`` runs SCENARIO on BACKEND under
``ember.distribute`` (the launcher's variables select the ranks) and writes its results to
``OUT_DIR/rank<R>.npz``. The models, data and float type are those of ``worker.py``.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import optree

import ember
from ember import callbacks, distribute, optimizers, saving
from tests.distribute import worker  # the launcher puts the repository on PYTHONPATH

EPOCHS = 2
BATCH = 8


def make_optimizer(kind: str) -> optimizers.Optimizer:
    if kind == "lso":  # dynamic loss scaling around a sharded Adam: the scale doubles every 3 finite steps
        return optimizers.LossScaleOptimizer(optimizers.Adam(0.01), initial_scale=2.0 ** 10, dynamic_growth_steps=3)
    if kind == "sgdclip":  # clipnorm takes each variable's norm: sharded by whole variables
        return optimizers.SGD(0.1, momentum=0.9, clipnorm=0.5)
    return optimizers.Adam(0.01)


def trained(kind: str, epochs: int = EPOCHS) -> ember.Model:
    """The 5-8-3 net with Dropout, trained on worker.data() (shuffled, an uneven last batch)."""
    x, y = worker.data()
    net = worker.model(0.3)
    net.compile(optimizer=make_optimizer(kind), loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True),
                seed=3)
    net.fit(x, y, batch_size=BATCH, epochs=epochs, shuffle=True, verbose=0)
    return net


def record(out: dict, prefix: str, net: ember.Model) -> None:
    """Weights, and the optimizer slots this process holds (placeholders kept: size 0)."""
    for i, w in enumerate(optree.tree_leaves(net.state["params"])):
        out[f"{prefix}_weight_{i}"] = np.asarray(ember.ops.to_numpy(w))
    opt_state = net._training.opt_state
    elements = 0
    for slot in net._training.trainer.optimizer.slot_initializers():
        for i, value in enumerate(optree.tree_leaves(opt_state[slot])):
            array = np.asarray(ember.ops.to_numpy(value))
            out[f"{prefix}_slot_{slot}_{i}"] = array
            elements += array.size
    out[f"{prefix}_slot_elements"] = np.asarray(elements)
    out[f"{prefix}_iterations"] = np.asarray(ember.ops.to_numpy(opt_state["iterations"]))


def sharded_scenario(out: dict, directory: str) -> None:
    """Unsharded and sharded data parallelism on the same data; the sharded model saved sharded."""
    strategy = distribute.get_strategy()
    strategy.shard_optimizer = False
    record(out, "dp", trained("adam"))
    strategy.shard_optimizer = True
    net = trained("adam")
    record(out, "zero", net)
    record(out, "zerolso", trained("lso"))
    record(out, "zerosgdclip", trained("sgdclip"))
    try:
        net.save(os.path.join(directory, "full.h5"))
        out["save_error"] = np.asarray("no error")
    except ValueError as error:
        out["save_error"] = np.asarray(str(error))
    x, y = worker.data()
    try:  # refused on every rank before the first step (none is left waiting for the main rank)
        net.fit(x, y, batch_size=BATCH, epochs=1, verbose=0,
                callbacks=[callbacks.ModelCheckpoint(os.path.join(directory, "c.h5"))])
        out["checkpoint_error"] = np.asarray("no error")
    except NotImplementedError as error:
        out["checkpoint_error"] = np.asarray(str(error))
    saving.save_sharded(net, os.path.join(directory, "ckpt"))
    worker.backup_scenario(out, directory)  # interrupted after epoch 1, resumed from each rank's shard


def resume_scenario(out: dict, directory: str) -> None:
    """Load the one-process sharded checkpoint ``directory/one`` on these ranks (resharding 1 -> N),
    train one more epoch sharded, and save sharded again (``directory/ckpt``)."""
    distribute.get_strategy().shard_optimizer = True
    x, y = worker.data()
    net = saving.load_sharded(os.path.join(directory, "one"))
    record(out, "loaded", net)
    net.fit(x, y, batch_size=BATCH, epochs=EPOCHS + 1, initial_epoch=EPOCHS, shuffle=True, verbose=0)
    record(out, "resumed", net)
    saving.save_sharded(net, os.path.join(directory, "ckpt"))


def main() -> None:
    scenario, backend, directory = sys.argv[1:4]
    ember.set_backend(backend)
    ember.dtypes.set_floatx(worker.FLOATX)
    distribute.initialize(timeout=float(os.environ.get("EMBER_TEST_TIMEOUT", "60")))
    out: dict = {"world_size": np.asarray(distribute.world_size())}
    if scenario == "sharded":
        sharded_scenario(out, directory)
    elif scenario == "resume":
        resume_scenario(out, directory)
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
    np.savez(os.path.join(directory, f"rank{distribute.rank()}.npz"), **out)
    distribute.shutdown()
    print(json.dumps({"rank": distribute.rank(), "done": scenario}))


if __name__ == "__main__":
    main()
