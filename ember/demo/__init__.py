"""The main demo (``python -m ember demo``): one model, every installed backend, one checkpoint.

One function (:func:`build_model`) defines a small MLP for scikit-learn's handwritten digits.
The demo builds it on each backend from the same seed (identical initial weights, checked),
trains it with ``compile`` + ``fit``, and prints a table of backend, device, epochs, train loss,
test accuracy and seconds per epoch. It then saves the first backend's trained model to an HDF5
checkpoint, loads it with :func:`ember.load_model` on every backend and compares the predicted
probabilities on the test images with the first backend's. The exit status is 0 when every
backend learned (test accuracy at or above the floor) and every loaded checkpoint agrees, 1
otherwise, with a line naming each backend that failed.

The pieces: :mod:`ember.demo.data` (the digits and the split), :mod:`ember.demo.training` (the
model and training it on one backend), :mod:`ember.demo.report` (agreement and tables).
The data set ships inside scikit-learn, in the ``examples`` extra (``pip install -e ".[torch,examples]"``;
``make demo`` installs it with the others); without it the demo says which extra to install.

Example:
    >>> import io
    >>> from ember.demo import run_demo
    >>> out = io.StringIO()
    >>> run_demo(["numpy"], epochs=1, out=out)
    0
    >>> "OK: " in out.getvalue()
    True
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

import numpy as np

import ember
from ember.demo.data import SEED, TEST_FRACTION, load_data, stratified_split
from ember.demo.report import PREDICTION_ATOL, Agreement, compare_predictions, format_table
from ember.demo.training import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_EPOCHS,
    TrainResult,
    build_model,
    predict,
    resolve_backends,
    train_on,
)
from ember.utils import plot_history

MIN_ACCURACY = 0.9  # the floor at DEFAULT_EPOCHS or more
FEW_EPOCHS_MIN_ACCURACY = 0.2  # below DEFAULT_EPOCHS: twice chance (10 classes), "it learned something"

__all__ = [
    "Agreement", "DEFAULT_BATCH_SIZE", "DEFAULT_EPOCHS", "FEW_EPOCHS_MIN_ACCURACY", "MIN_ACCURACY", "PREDICTION_ATOL",
    "SEED", "TEST_FRACTION", "TrainResult", "build_model", "check_options", "compare_predictions", "format_table",
    "load_data", "predict", "resolve_backends", "run_demo", "stratified_split", "train_on",
]


def run_demo(backends: Iterable[str] | str | None = None, epochs: int = DEFAULT_EPOCHS,
             batch_size: int = DEFAULT_BATCH_SIZE, plot: str | os.PathLike | None = None, verbose: int = 0,
             min_accuracy: float | None = None, atol: float = PREDICTION_ATOL, out: TextIO | None = None) -> int:
    """Train the demo model on each backend, move a checkpoint between them, report; the exit status.

    Args:
        backends: backend names (None: every installed backend); the first one writes the checkpoint.
        epochs: epochs of ``fit`` on each backend (>= 1).
        batch_size: ``fit``'s batch size (>= 1).
        plot: where to write the first backend's training history as a PNG (needs matplotlib).
        verbose: ``fit``'s verbosity (0 silent, 1 progress bar, 2 a line per epoch).
        min_accuracy: the test accuracy every backend must reach; None: :data:`MIN_ACCURACY` at
            ``epochs >= DEFAULT_EPOCHS``, else :data:`FEW_EPOCHS_MIN_ACCURACY`.
        atol: the largest |difference| of predicted probabilities that counts as agreement.
        out: where the report goes (default ``sys.stdout``).

    Returns:
        0 when every backend learned and every loaded checkpoint agrees, else 1.

    Raises:
        ValueError: bad ``backends``, ``epochs`` or ``batch_size``, or ``plot`` in a folder that
            does not exist (nothing has run then).
        ImportError: scikit-learn is missing, or matplotlib for ``plot``.
    """
    out = out or sys.stdout
    names = resolve_backends(backends)
    check_options(epochs, batch_size, plot)
    floor = min_accuracy if min_accuracy is not None else (
        MIN_ACCURACY if epochs >= DEFAULT_EPOCHS else FEW_EPOCHS_MIN_ACCURACY)
    data = load_data()
    original = ember.get_backend()
    try:
        return _run(names, data, epochs, batch_size, plot, verbose, floor, atol, out)
    finally:
        ember.set_backend(original)


def check_options(epochs: int = DEFAULT_EPOCHS, batch_size: int = DEFAULT_BATCH_SIZE,
                  plot: str | os.PathLike | None = None) -> None:
    """Validate the demo's options before anything runs (what :func:`run_demo` checks first).

    Raises:
        ValueError: ``epochs`` or ``batch_size`` not an integer >= 1, or ``plot`` in a folder
            that does not exist.
        ImportError: ``plot`` without matplotlib (names the ``[plot]`` extra).

    Example:
        >>> check_options(epochs=0)
        Traceback (most recent call last):
        ...
        ValueError: --epochs must be an integer >= 1, received 0
    """
    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be an integer >= 1, received {value!r}")
    if plot is not None:  # fail before training if the plot cannot be written
        if importlib.util.find_spec("matplotlib") is None:
            raise ImportError('--plot needs matplotlib: pip install "ember[plot]"')
        if not pathlib.Path(plot).parent.is_dir():
            raise ValueError(f"--plot: the directory {str(pathlib.Path(plot).parent)!r} does not exist")


def _run(names: list[str], data: tuple[np.ndarray, ...], epochs: int, batch_size: int,
         plot: str | os.PathLike | None, verbose: int, floor: float, atol: float, out: TextIO) -> int:
    started = time.perf_counter()
    say = lambda text="": print(text, file=out, flush=True)  # noqa: E731
    say(f"Ember {ember.__version__} demo: one model, {len(names)} backend(s): {', '.join(names)}")
    say(f"data   scikit-learn digits: {len(data[0])} train / {len(data[2])} test images (8x8 -> 64 pixels "
        f"in [0, 1]), 10 classes, stratified split (seed {SEED})")
    say(f"model  {_describe(build_model(), data[0].shape[1])}, built from seed {SEED} on every backend")
    say(f"fit    adam, sparse_categorical_crossentropy, {epochs} epoch{'s' if epochs > 1 else ''}, "
        f"batch size {batch_size}")
    say()
    results, failures = _train_all(names, data, epochs, batch_size, verbose, floor, out)
    say()
    say(format_table(["backend", "device", "epochs", "train loss", "test accuracy", "s/epoch"], [
        [r.backend, r.device, r.epochs, f"{r.train_loss:.4f}", f"{r.test_accuracy:.4f}", f"{r.seconds_per_epoch:.3f}"]
        for r in results]))
    say(f"(same initial weights on every backend; s/epoch: fit wall time / epochs, validation included; "
        f"accuracy floor {floor:g})")
    if plot is not None:
        path = plot_history(results[0].history, plot,
                            title=f"Ember demo: digits MLP on {names[0]} (validation: the test set)")
        say(f"plot   training history on {names[0]} written to {path}")
    say()
    failures += _move_checkpoint(results[0], names, data[2], atol, say)
    say()
    for failure in failures:
        say(f"FAILED  {failure}")
    if failures:
        return 1
    say(f"OK: every backend reached test accuracy >= {floor:g}; the checkpoint from {names[0]} predicts "
        f"the same on {', '.join(names)} ({time.perf_counter() - started:.1f} s)")
    return 0


def _train_all(names: list[str], data: tuple[np.ndarray, ...], epochs: int, batch_size: int, verbose: int,
               floor: float, out: TextIO) -> tuple[list[TrainResult], list[str]]:
    """Train on each backend in turn; the failures: different initial weights, accuracy below ``floor``."""
    results, failures = [], []
    for name in names:
        print(f"training on {name} ...", end="\n" if verbose else "", file=out, flush=True)
        result = train_on(name, data, epochs, batch_size, verbose)
        print(f"{'' if verbose else ' '}done: test accuracy {result.test_accuracy:.4f}", file=out, flush=True)
        results.append(result)
        if not all(np.array_equal(a, b) for a, b in zip(result.initial_weights, results[0].initial_weights)):
            failures.append(f"{name}: initial weights differ from {names[0]}'s for the same seed")
        if not result.test_accuracy >= floor:
            failures.append(f"{name}: test accuracy {result.test_accuracy:.4f} is below {floor:g}")
    return results, failures


def _move_checkpoint(first: TrainResult, names: list[str], x_test: np.ndarray, atol: float,
                     say: Callable[..., None]) -> list[str]:
    """Save ``first.model``, load it on every backend, compare predictions; the failures."""
    ember.set_backend(first.backend)  # a model's state holds its own backend's arrays
    reference = predict(first.model, x_test)
    rows, failures = [], []
    with tempfile.TemporaryDirectory(prefix="ember-demo-") as folder:
        path = os.path.join(folder, "digits_mlp.h5")
        first.model.save(path)
        say(f"checkpoint  model.save on {first.backend} ({os.path.getsize(path) / 1024:.0f} KiB HDF5), "
            f"ember.load_model on each backend")
        say(f"            predicted probabilities on the {len(x_test)} test images vs {first.backend}'s: "
            f"agree when max |diff| <= {atol:g} and every argmax is the same")
        for name in names:
            ember.set_backend(name)
            agreement = compare_predictions(reference, predict(ember.load_model(path), x_test), atol)
            rows.append([name, f"{agreement.max_abs_diff:.1e}", f"{100 * agreement.argmax_agreement:.2f}%",
                         "OK" if agreement.ok else "MISMATCH"])
            if not agreement.ok:
                failures.append(f"{name}: the checkpoint from {first.backend} predicts differently: max |diff| "
                                f"{agreement.max_abs_diff:.3g} (tolerance {atol:g}), argmax agreement "
                                f"{100 * agreement.argmax_agreement:.2f}%")
    say(format_table(["loaded on", "max |diff|", "argmax agree", "result"], rows))
    return failures


def _describe(model: Any, inputs: int) -> str:
    sizes = [str(inputs)] + [f"{layer.units} {layer.activation}" for layer in model.layers]
    return f"{type(model).__name__} {model.name!r}: {' -> '.join(sizes)}"
