"""One rank of the elastic-restart test (started by torchrun from tests/distribute/test_elastic.py).

``python elastic_worker.py BACKEND OUT_DIR KILL_AT [SHARDING]`` trains a small model data-parallel with
``BackupAndRestore`` (a backup each epoch); SHARDING ``shard_optimizer`` or ``fully_shard`` shards the
training state (each rank then backs up its shard). On torchrun's first attempt, rank 1 dies (``os._exit``)
at global batch KILL_AT (-1: never); ``torchrun --max-restarts`` then restarts the group (under
mlx.launch, which has no restarts, the launch is run again: ``EMBER_TEST_ATTEMPT`` numbers the
attempts), and ``BackupAndRestore`` resumes from the last epoch's backup. Rank 0 writes the final weights to
``OUT_DIR/weights.npz`` and each attempt appends a line to ``OUT_DIR/attempts.txt``.
"""

from __future__ import annotations

import os
import pathlib
import sys

import numpy as np

import ember
from ember import callbacks, distribute, layers, optimizers


class _DieOnce(callbacks.Callback):
    """Rank 1 of the first attempt exits at global batch ``at`` (as a process killed there would)."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.seen = at, 0

    def on_train_batch_end(self, batch, logs=None):
        self.seen += 1
        first_attempt = _attempt() == "0"
        if first_attempt and distribute.get_strategy().rank == 1 and self.seen == self.at:
            os._exit(3)


def _attempt() -> str:
    """torchrun's restart count, or the attempt a relaunching loop (mlx.launch has no restarts) sets."""
    return os.environ.get("TORCHELASTIC_RESTART_COUNT", os.environ.get("EMBER_TEST_ATTEMPT", "0"))


def main() -> None:
    backend, out, kill_at = sys.argv[1], pathlib.Path(sys.argv[2]), int(sys.argv[3])
    sharding = sys.argv[4] if len(sys.argv) > 4 else "none"
    ember.set_backend(backend)
    ember.backend.set_floatx("float64")  # ranks differ from one process by float64 rounding only
    distribute.initialize(timeout=float(os.environ.get("EMBER_TEST_TIMEOUT", "60")),
                          shard_optimizer=sharding == "shard_optimizer", fully_shard=sharding == "fully_shard")
    rank = distribute.get_strategy().rank
    with open(out / "attempts.txt", "a") as attempts:
        attempts.write(f"rank {rank} attempt {_attempt()}\n")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(48, 5))
    y = (x[:, :3].sum(axis=1) > 0).astype("int64")
    net = ember.Sequential([ember.Input((5,)), layers.Dense(8, activation="tanh", name="hidden"),
                            layers.Dense(2, name="out")], name="net")
    net.build(seed=1)
    net.compile(optimizer=optimizers.Adam(0.01), loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True),
                seed=3)
    backup = callbacks.BackupAndRestore(str(out / "backup"))
    net.fit(x, y, batch_size=8, epochs=4, shuffle=True, verbose=0, callbacks=[backup, _DieOnce(kill_at)])
    if distribute.is_main_process():
        np.savez(out / "weights.npz", *[np.asarray(w) for w in net.get_weights()])
    distribute.shutdown()


if __name__ == "__main__":
    main()
