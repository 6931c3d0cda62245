"""Tutorial 08 - Data-parallel training on several processes, same results as one.

What you learn:
    * the same model code trains on N processes: start the script with a launcher
      (``torchrun`` for the torch and NumPy backends, ``mlx.launch`` for MLX) and call
      ``ember.distribute.initialize()``; without a launcher it runs in one process;
    * ``batch_size`` is the GLOBAL batch: each process runs its share of every batch, the
      gradients are summed inside the training step, so N processes reach the same weights,
      losses and accuracy as one process with the same batch size (to float32 rounding),
      dropout included;
    * only the main process (``ember.distribute.is_main_process()``) prints and writes files;
      ``ember.distribute.barrier()`` makes the others wait until a file is complete.

When the model outgrows one device: ``distribute.initialize(shard_optimizer=True)`` keeps 1/N of
the optimizer state on each process (every backend), and ``initialize(fully_shard=True)`` trains
through torch's FSDP2 (each process keeps its rows of every parameter, their gradients and their
optimizer state). Both give the weights of this script; save with
``ember.saving.save_sharded(model, directory)`` on every rank instead of ``model.save`` (which
refuses a rank's partial optimizer state), and ``BackupAndRestore`` backs up each rank's shard.

Run it (one host, two processes)::

    torchrun --nproc-per-node 2 tutorials/08_data_parallel.py --backend torch
    torchrun --nproc-per-node 2 tutorials/08_data_parallel.py --backend numpy
    mlx.launch -n 2 -- python tutorials/08_data_parallel.py --backend mlx   # "--": the options are the script's
    python tutorials/08_data_parallel.py --backend torch          # one process, the same numbers

Several hosts (every host runs the same command; the first host's address is the rendezvous)::

    torchrun --nnodes 2 --node-rank 0 --nproc-per-node 4 --master-addr 10.0.0.1 --master-port 29500 \\
        tutorials/08_data_parallel.py --backend torch              # on 10.0.0.1 (node-rank 1 on the other)
    mlx.launch --hostfile hosts.json --backend ring -- python tutorials/08_data_parallel.py --backend mlx
    # hosts.json: [{"ssh": "mac1", "ips": ["10.0.0.1"]}, {"ssh": "mac2", "ips": ["10.0.0.2"]}]

Expected: test accuracy ~0.97 after 15 epochs, the same with 1 or 2 processes.
"""

from __future__ import annotations

import os
import pathlib
import tempfile
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import ember
from ember import distribute, layers

from _common import parse_args, print_results

LAUNCHED = "RANK" in os.environ or "MLX_RANK" in os.environ  # set by torchrun / mlx.launch


def main(argv=None):
    args = parse_args(argv, "Tutorial 08: data-parallel training on the digits.", plot=False)
    ember.clear_session()  # fresh layer names: the same seeded weights (and dropout seeds) on every rank
    if LAUNCHED:
        # Joins the launcher's process group (torch.distributed or mx.distributed) and makes the
        # strategy active: fit/evaluate/predict below run on every process.
        distribute.initialize(timeout=120)
    main_process = distribute.is_main_process()

    # --- 1. The same data on every rank ------------------------------------------------------
    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64")
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)

    # --- 2. The same model on every rank (same seed: fit checks a checksum of the weights) ------
    model = ember.Sequential([
        ember.Input((64,)),
        layers.Dense(64, activation="relu"),
        layers.Dropout(0.2),  # each sample's mask is the one a single process would draw
        layers.Dense(10),
    ], name="digits_mlp")
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(learning_rate=0.005),
                  loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"], seed=0)

    # --- 3. Train: batch_size is the global batch (each of 2 ranks runs 32 rows per step) ----------
    epochs = 5 if args.fast else 15
    start = time.perf_counter()
    history = model.fit(x_train, y_train, batch_size=64, epochs=epochs, validation_split=0.1,
                        verbose=2 if main_process and not args.fast else 0)
    seconds = time.perf_counter() - start
    test = model.evaluate(x_test, y_test, verbose=0, return_dict=True)    # sharded, then summed
    predicted = np.argmax(model.predict(x_test, verbose=0), axis=-1)      # gathered in order on every rank

    # --- 4. Files: the main process writes, the others wait for it ----------------------------
    directory = pathlib.Path(tempfile.gettempdir()) / "ember_tutorial_08"
    path = directory / "digits.h5"
    if main_process:
        directory.mkdir(exist_ok=True)
        model.save(path)
    distribute.barrier()  # after this line every rank may read the complete file
    reloaded = ember.load_model(path)
    same_predictions = bool(np.array_equal(np.argmax(reloaded.predict(x_test, verbose=0), axis=-1), predicted))

    results = {
        "backend": args.backend,
        "processes": distribute.world_size(),
        "epochs": epochs,
        "final_loss": history.history["loss"][-1],
        "test_accuracy": test["accuracy"],
        "predict_accuracy": float(np.mean(predicted == y_test)),
        "reloaded_same_predictions": same_predictions,
        "seconds": seconds,
    }
    if main_process:
        print_results(f"08 data parallel ({distribute.world_size()} process(es))", results)
    distribute.shutdown()  # leave the process group cleanly (no-op in one process)
    return results


if __name__ == "__main__":
    main()
