"""Tutorial 02 - The functional API: a model with two inputs and two outputs.

What you learn:
    * ``ember.Input`` makes a symbolic tensor; calling a layer on symbolic tensors records
      the graph, and ``ember.Model(inputs, outputs)`` turns that graph into a model;
    * several inputs, merged with a merge layer (``layers.Concatenate``);
    * several outputs, each with its own loss, loss weight and metrics, addressed by the
      output layer's name;
    * feeding ``fit``/``evaluate`` dicts keyed by input and output names.

The task: scikit-learn's handwritten digits again, seen two ways. Input ``pixels`` is the
8x8 image flattened to 64 values; input ``profile`` is 16 hand-crafted features, the ink
in each of the 8 rows and 8 columns. Each input gets its own small branch, the branches
are concatenated, and two heads answer two questions: which digit is it (``digit``,
10 classes) and is it odd (``odd``, a yes/no question).

Run it::

    python tutorials/02_functional_api.py [--backend numpy|torch|mlx] [--fast] [--plot DIR]

Expected: digit test accuracy ~0.97 and odd/even accuracy ~0.98 after 30 epochs.
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
    args = parse_args(argv, "Tutorial 02: a two-input, two-output functional model on digits.")
    ember.clear_session()  # fresh layer names, so the seeded initial weights are the same every run

    # --- 1. Data: two views of each image, two targets ------------------------------------
    digits = load_digits()
    images = (digits.images / 16.0).astype("float32")  # (1797, 8, 8), values in [0, 1]
    pixels = images.reshape(len(images), 64)
    # Hand-crafted features: how much ink is in each row and each column (scaled to ~[0, 1]).
    profile = np.concatenate([images.sum(axis=2), images.sum(axis=1)], axis=1) / 8.0  # (1797, 16)
    digit = digits.target.astype("int64")
    odd = (digit % 2).astype("float32")[:, None]  # binary target, shape (n, 1) like the output

    split = train_test_split(pixels, profile, digit, odd, test_size=0.2, random_state=0, stratify=digit)
    px_train, px_test, pr_train, pr_test, digit_train, digit_test, odd_train, odd_test = split

    # --- 2. The graph ------------------------------------------------------------------------
    # Inputs and layers get names: fit/evaluate take dicts keyed by them, and the logs
    # are named after the outputs ("digit_accuracy", "odd_loss", ...).
    pixels_in = ember.Input((64,), name="pixels")
    profile_in = ember.Input((16,), name="profile")
    a = layers.Dense(64, activation="relu", name="pixel_branch")(pixels_in)
    b = layers.Dense(16, activation="relu", name="profile_branch")(profile_in)
    merged = layers.Concatenate(name="merge")([a, b])  # (None, 64 + 16)
    hidden = layers.Dense(64, activation="relu", name="shared")(merged)
    digit_out = layers.Dense(10, activation="softmax", name="digit")(hidden)
    odd_out = layers.Dense(1, activation="sigmoid", name="odd")(hidden)
    model = ember.Model(inputs=[pixels_in, profile_in], outputs=[digit_out, odd_out], name="two_views")
    model.build(seed=0)
    model.summary()

    # --- 3. One loss per output -----------------------------------------------------------------
    # The total loss is 1.0 * digit_loss + 0.5 * odd_loss; each output has its own metric.
    model.compile(
        optimizer=ember.optimizers.Adam(learning_rate=0.003),
        loss={"digit": "sparse_categorical_crossentropy", "odd": "binary_crossentropy"},
        loss_weights={"digit": 1.0, "odd": 0.5},
        metrics={"digit": ["accuracy"], "odd": ["binary_accuracy"]},
        seed=0,
    )
    epochs = 3 if args.fast else 30
    start = time.perf_counter()
    history = model.fit(
        {"pixels": px_train, "profile": pr_train},  # inputs by name
        {"digit": digit_train, "odd": odd_train},   # targets by output name
        batch_size=32, epochs=epochs, validation_split=0.1,
    )
    seconds = time.perf_counter() - start
    print("\nlogged per epoch:", sorted(history.history))

    # --- 4. Evaluate ------------------------------------------------------------------------------
    test = model.evaluate({"pixels": px_test, "profile": pr_test}, {"digit": digit_test, "odd": odd_test},
                          verbose=0, return_dict=True)
    # predict returns one NumPy array per output, in the order of `outputs`.
    digit_probs, odd_probs = model.predict({"pixels": px_test[:8], "profile": pr_test[:8]}, verbose=0)
    print("digit predicted:", np.argmax(digit_probs, axis=-1).tolist(), " true:", digit_test[:8].tolist())
    print("odd predicted:  ", (odd_probs[:, 0] > 0.5).astype(int).tolist(), " true:",
          odd_test[:8, 0].astype(int).tolist())

    if args.plot is not None:
        from ember.utils import plot_history  # needs matplotlib: pip install "ember[plot]"

        print("wrote", plot_history(history, args.plot / "02_history.png", title="02 functional API: two views"))

    results = {
        "backend": args.backend,
        "epochs": epochs,
        "first_loss": history.history["loss"][0],
        "final_loss": history.history["loss"][-1],
        "test_loss": test["loss"],
        "test_digit_accuracy": test["digit_accuracy"],
        "test_odd_accuracy": test["odd_binary_accuracy"],
        "seconds": seconds,
    }
    print_results("02 functional API", results)
    return results


if __name__ == "__main__":
    main()
