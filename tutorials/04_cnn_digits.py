"""Tutorial 04 - A convolutional network on the digit images.

What you learn:
    * image tensors are ``(batch, height, width, channels)`` ("channels_last", Keras's
      default): the 8x8 grey-scale digits become ``(n, 8, 8, 1)``;
    * ``Conv2D`` learns small filters that slide over the image, ``MaxPooling2D`` halves
      the resolution, ``Flatten`` turns the feature maps into a vector for ``Dense``;
    * the convolutions run on each backend's native kernels (torch's and MLX's conv, NumPy
      through stride tricks): the model code does not change.

Compared with the MLP of tutorial 01, the CNN shares each filter across positions, so it
needs fewer parameters to reach the same accuracy and it is more robust to small shifts.

Run it::

    python tutorials/04_cnn_digits.py [--backend numpy|torch|mlx] [--fast] [--plot DIR]

Expected: test accuracy ~0.98 after 20 epochs.
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
    args = parse_args(argv, "Tutorial 04: a CNN on the 8x8 digit images.")
    ember.clear_session()  # fresh layer names, so the seeded initial weights are the same every run

    # --- 1. Data as images -------------------------------------------------------------
    digits = load_digits()
    # (1797, 8, 8) -> (1797, 8, 8, 1): one channel (grey level), last.
    images = (digits.images / 16.0).astype("float32")[..., np.newaxis]
    labels = digits.target.astype("int64")
    x_train, x_test, y_train, y_test = train_test_split(images, labels, test_size=0.2, random_state=0,
                                                        stratify=labels)
    if args.fast:
        x_train, y_train = x_train[:600], y_train[:600]  # fewer samples: a quick run

    # --- 2. The network ------------------------------------------------------------------------
    model = ember.Sequential([
        ember.Input((8, 8, 1)),
        # 16 filters of 3x3; padding="same" keeps the 8x8 size.
        layers.Conv2D(16, kernel_size=3, padding="same", activation="relu"),
        layers.MaxPooling2D(pool_size=2),  # -> 4x4x16
        layers.Conv2D(32, kernel_size=3, padding="same", activation="relu"),
        layers.MaxPooling2D(pool_size=2),  # -> 2x2x32
        layers.Flatten(),                  # -> 128
        layers.Dense(10, activation="softmax"),
    ], name="digits_cnn")
    model.build(seed=0)
    model.summary()

    # --- 3. Train and evaluate -------------------------------------------------------------------
    model.compile(optimizer=ember.optimizers.Adam(learning_rate=0.005),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"], seed=0)
    epochs = 4 if args.fast else 20
    start = time.perf_counter()
    history = model.fit(x_train, y_train, batch_size=32, epochs=epochs, validation_split=0.1)
    seconds = time.perf_counter() - start
    test = model.evaluate(x_test, y_test, verbose=0, return_dict=True)

    # Which digits does it confuse? Count the test mistakes per (true, predicted) pair.
    predicted = np.argmax(model.predict(x_test, verbose=0), axis=-1)
    mistakes = {}
    for true, guess in zip(y_test[predicted != y_test], predicted[predicted != y_test]):
        mistakes[(int(true), int(guess))] = mistakes.get((int(true), int(guess)), 0) + 1
    worst = sorted(mistakes.items(), key=lambda item: -item[1])[:3]
    print(f"\n{int(np.sum(predicted != y_test))} of {len(y_test)} test digits wrong; most frequent "
          "(true -> predicted): " + ", ".join(f"{t} -> {p} ({n}x)" for (t, p), n in worst))

    if args.plot is not None:
        from ember.utils import plot_history  # needs matplotlib: pip install "ember[plot]"

        print("wrote", plot_history(history, args.plot / "04_history.png", title="04 CNN on digits"))

    results = {
        "backend": args.backend,
        "epochs": epochs,
        "params": model.count_params(),
        "first_loss": history.history["loss"][0],
        "final_loss": history.history["loss"][-1],
        "test_loss": test["loss"],
        "test_accuracy": test["accuracy"],
        "seconds": seconds,
    }
    print_results("04 CNN on digits", results)
    return results


if __name__ == "__main__":
    main()
