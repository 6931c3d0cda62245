"""Tutorial 06 - Checkpoints: move a trained model between backends, and resume training.

What you learn:
    * ``model.save("file.h5")`` writes one HDF5 file with everything: the architecture
      (config), the compile settings, every weight, and the optimizer state and training
      progress; ``ember.load_model("file.h5")`` rebuilds the model on *the active backend*,
      whichever backend wrote the file;
    * a model trained on one backend gives the same predictions on every other: the
      weights arrive bit for bit, and the outputs agree to float32 rounding;
    * resuming: fit 2 epochs, save, load, fit 2 more (``initial_epoch=2``) gives exactly
      the same weights as 4 epochs in one go, shuffling and dropout included, because the
      optimizer state and the random-stream position are in the file.

Give layers explicit names when you build models you will save: variables are stored
under ``layer name/variable name`` (``hidden/kernel``), so names are the contract
between the code and the file.

Run it::

    python tutorials/06_checkpoints.py [--backend numpy|torch|mlx] [--fast] [--out DIR]

Without ``--out`` the files go to a temporary directory that is deleted at the end.
``python -m ember inspect DIR/digits.h5`` shows what a checkpoint holds.

Expected: test accuracy ~0.97 on every installed backend, identical weights, predicted
probabilities within ~1e-6, and resumed == uninterrupted training (bit for bit).
"""

from __future__ import annotations

import pathlib
import tempfile

import numpy as np
import optree
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import ember
from ember import layers, ops

from _common import parse_args, print_results


def make_model():
    """The architecture, compiled; built with a fixed seed so every call gives the same start."""
    model = ember.Sequential([
        ember.Input((64,), name="pixels"),
        layers.Dense(64, activation="relu", name="hidden"),
        layers.Dropout(0.2, name="dropout"),
        layers.Dense(10, activation="softmax", name="probabilities"),
    ], name="digits_mlp")
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(learning_rate=0.003),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"], seed=0)
    return model


def weights_as_numpy(model):
    """``{"hidden/kernel": ndarray, ...}``: a model's params and buffers as host arrays, by path."""
    paths, leaves, _ = optree.tree_flatten_with_path(model.state)
    return {"/".join(map(str, path)): ops.to_numpy(leaf) for path, leaf in zip(paths, leaves)}


def max_difference(a, b):
    """The largest absolute difference between two dicts of arrays with the same keys."""
    return max(float(np.max(np.abs(a[key].astype(np.float64) - b[key].astype(np.float64)))) for key in a)


def main(argv=None):
    args = parse_args(argv, "Tutorial 06: checkpoints across backends and exact resume.", plot=False,
                      extra=lambda p: p.add_argument("--out", metavar="DIR", type=pathlib.Path, default=None,
                                                     help="keep the checkpoints in DIR (default: a temp dir)"))
    trained_on = args.backend
    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64")
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    fit = dict(batch_size=32, verbose=0)

    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or pathlib.Path(tmp)
        out.mkdir(parents=True, exist_ok=True)

        # --- 1. Train on one backend and save ------------------------------------------------------
        model = make_model()
        model.fit(x_train, y_train, epochs=3 if args.fast else 20, **fit)
        path = out / "digits.h5"
        model.save(path)  # atomic: a crash mid-save never damages an older file
        reference = model.predict(x_test, verbose=0)
        reference_weights = weights_as_numpy(model)
        print(f"trained on {trained_on}, saved {path.name} ({path.stat().st_size / 1024:.0f} KiB)")

        # --- 2. Load it on every installed backend ----------------------------------------------------
        print(f"\n{'backend':<8} {'weights identical':>18} {'max |p - p_ref|':>16} {'same classes':>13} "
              f"{'test accuracy':>14}")
        per_backend = {}
        for name in ember.backends.available():
            with ember.using_backend(name):  # or ember.set_backend(name) for the rest of a program
                loaded = ember.load_model(path)
                probabilities = loaded.predict(x_test, verbose=0)
                accuracy = loaded.evaluate(x_test, y_test, verbose=0, return_dict=True)["accuracy"]
                identical = all(np.array_equal(a, reference_weights[k]) for k, a in weights_as_numpy(loaded).items())
            same_classes = bool(np.array_equal(probabilities.argmax(-1), reference.argmax(-1)))
            difference = float(np.max(np.abs(probabilities - reference)))
            per_backend[name] = {"weights_identical": identical, "max_prediction_difference": difference,
                                 "same_classes": same_classes, "test_accuracy": accuracy}
            print(f"{name:<8} {str(identical):>18} {difference:>16.2e} {str(same_classes):>13} {accuracy:>14.4f}")

        # --- 3. Resume training exactly ---------------------------------------------------------------
        # (a) 4 epochs in one go ...
        straight = make_model()
        straight_history = straight.fit(x_train, y_train, epochs=4, **fit)
        # (b) ... versus 2 epochs, save (the optimizer state is included by default), load, 2 more.
        first_half = make_model()
        first_half.fit(x_train, y_train, epochs=2, **fit)
        first_half.save(out / "half.h5")
        resumed = ember.load_model(out / "half.h5")  # compiled, with Adam's moments and the step count
        resumed_history = resumed.fit(x_train, y_train, epochs=4, initial_epoch=2, **fit)  # epochs 3 and 4
        resume_difference = max_difference(weights_as_numpy(resumed), weights_as_numpy(straight))
        print(f"\nresume: epochs run after loading {[e + 1 for e in resumed_history.epoch]}; final loss "
              f"{resumed_history.history['loss'][-1]:.6f} (resumed) vs {straight_history.history['loss'][-1]:.6f} "
              f"(straight); largest weight difference {resume_difference:g}")

    results = {
        "trained_on": trained_on,
        "backends": list(per_backend),
        "test_accuracy": per_backend[trained_on]["test_accuracy"],
        "weights_identical_everywhere": all(r["weights_identical"] for r in per_backend.values()),
        "same_classes_everywhere": all(r["same_classes"] for r in per_backend.values()),
        "max_prediction_difference": max(r["max_prediction_difference"] for r in per_backend.values()),
        "resume_max_weight_difference": resume_difference,
        "resumed_final_loss": resumed_history.history["loss"][-1],
        "straight_final_loss": straight_history.history["loss"][-1],
        "per_backend": per_backend,
    }
    print_results("06 checkpoints", {k: v for k, v in results.items() if k != "per_backend"})
    return results


if __name__ == "__main__":
    main()
