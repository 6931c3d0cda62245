"""Tutorial 01 - Quickstart: classify handwritten digits with a Sequential MLP.

What you learn:
    * loading a real data set (scikit-learn's 8x8 handwritten digits: 1797 images, 10
      classes) and holding out a test set;
    * defining a model with ``ember.Sequential`` and reading ``model.summary()``;
    * ``compile`` (optimizer, loss, metrics), ``fit`` with ``validation_split``,
      ``evaluate`` and ``predict``, exactly as in Keras;
    * the ``History`` that ``fit`` returns, and ``ember.utils.plot_history`` to draw it.

The same code runs on NumPy, PyTorch and MLX: only ``--backend`` changes. With the same
seeds every backend starts from identical weights and shuffles the data identically
(dropout masks come from each backend's own random generator, so the curves differ a
little between backends, but every run on one backend gives the same numbers).

Run it (once: ``pip install -e ".[torch,examples]"`` for a backend and scikit-learn)::

    python tutorials/01_quickstart.py                    # Ember's default backend
    python tutorials/01_quickstart.py --backend numpy    # or torch, mlx
    python tutorials/01_quickstart.py --fast             # 3 epochs instead of 30
    python tutorials/01_quickstart.py --plot plots/      # also writes plots/01_history.png

Expected: test accuracy ~0.97 after 30 epochs (~0.93 with ``--fast``).
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import ember
from ember import layers

from _common import parse_args, print_results


def main(argv=None):
    args = parse_args(argv, "Tutorial 01: a Sequential MLP on scikit-learn's digits.")
    # Layer names ("dense", "dense_1", ...) come from a global counter, and each layer's
    # initial weights are derived from the model seed *and its name*: start the counter
    # afresh so that every run of main() builds exactly the same model.
    ember.clear_session()

    # --- 1. Data --------------------------------------------------------------------
    # 1797 images of 8x8 pixels with values 0..16, flattened to 64 features.
    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")  # scale pixels to [0, 1]
    y = digits.target.astype("int64")            # integer labels 0..9
    # Hold out 20% as a test set the model never sees while training (stratified:
    # every digit appears in the same proportion in both parts).
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)

    # --- 2. Model -------------------------------------------------------------------
    # Input((64,)) declares the shape of one sample (the batch dimension is implicit).
    model = ember.Sequential([
        ember.Input((64,)),
        layers.Dense(64, activation="relu"),
        layers.Dropout(0.1),                     # active during fit only
        layers.Dense(10, activation="softmax"),  # one probability per digit
    ], name="digits_mlp")
    model.build(seed=0)  # the same seed gives the same weights on every backend
    model.summary()

    # --- 3. Compile and fit --------------------------------------------------------------
    # Integer labels + softmax outputs -> sparse categorical cross-entropy.
    # `seed` (an Ember extension) fixes the shuffling and dropout masks of fit.
    model.compile(optimizer=ember.optimizers.Adam(learning_rate=0.003),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"], seed=0)
    epochs = 3 if args.fast else 30
    start = time.perf_counter()
    # validation_split=0.1 holds out the *last* 10% of the training arrays to watch
    # for over-fitting; verbose defaults to a progress bar in a terminal.
    history = model.fit(x_train, y_train, batch_size=32, epochs=epochs, validation_split=0.1)
    seconds = time.perf_counter() - start

    # --- 4. The History ---------------------------------------------------------------
    # history.history maps each logged quantity to one value per epoch.
    print("\nHistory (one row per epoch):")
    names = list(history.history)
    print("epoch  " + "  ".join(f"{n:>12}" for n in names))
    for i, epoch in enumerate(history.epoch):
        print(f"{epoch + 1:5d}  " + "  ".join(f"{history.history[n][i]:12.4f}" for n in names))

    # --- 5. Evaluate and predict ------------------------------------------------------------
    test = model.evaluate(x_test, y_test, verbose=0, return_dict=True)
    probabilities = model.predict(x_test[:10], verbose=0)  # a NumPy array (10, 10)
    print("\npredicted:", np.argmax(probabilities, axis=-1).tolist())
    print("true:     ", y_test[:10].tolist())

    if args.plot is not None:
        from ember.utils import plot_history  # needs matplotlib: pip install "ember[plot]"

        print("wrote", plot_history(history, args.plot / "01_history.png", title="01 quickstart: digits MLP"))

    results = {
        "backend": args.backend,
        "epochs": epochs,
        "first_loss": history.history["loss"][0],
        "final_loss": history.history["loss"][-1],
        "final_val_accuracy": history.history["val_accuracy"][-1],
        "test_loss": test["loss"],
        "test_accuracy": test["accuracy"],
        "seconds": seconds,
    }
    print_results("01 quickstart", results)
    return results


if __name__ == "__main__":
    main()
