"""The demo's one model and training it on one backend.

Example:
    >>> from ember.demo.data import load_data
    >>> from ember.demo.training import train_on
    >>> result = train_on("numpy", load_data(), epochs=1)
    >>> result.backend, result.device, result.epochs
    ('numpy', 'cpu', 1)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import optree

import ember
from ember import backends, layers, ops
from ember.demo.data import SEED

DEFAULT_EPOCHS = 10  # ~96% test accuracy; ~10 s of compute for all three backends on 2 cores
DEFAULT_BATCH_SIZE = 32


@dataclasses.dataclass
class TrainResult:
    """What :func:`train_on` measured on one backend (``model`` and ``history`` for later steps)."""

    backend: str
    device: str
    epochs: int
    train_loss: float
    test_accuracy: float
    seconds_per_epoch: float
    initial_weights: list
    model: Any = dataclasses.field(repr=False)
    history: Any = dataclasses.field(repr=False)


def build_model() -> ember.Sequential:
    """The demo's one model: 64 -> 128 relu -> 64 relu -> 10 softmax.

    The layers are named explicitly: a layer's initial weights derive from the build seed and
    its name, so auto-numbered names (``dense_3`` on the second backend) would change them.

    Example:
        >>> ember.set_backend("numpy")
        >>> model = build_model()
        >>> _ = model.build(seed=0)
        >>> model.count_params()
        17226
    """
    return ember.Sequential([
        ember.Input((64,), name="pixels"),
        layers.Dense(128, activation="relu", name="hidden_1"),
        layers.Dense(64, activation="relu", name="hidden_2"),
        layers.Dense(10, activation="softmax", name="digit"),
    ], name="digits_mlp")


def resolve_backends(names: Iterable[str] | str | None = None) -> list[str]:
    """The backends to run: every installed one for None, else the names given (comma-separated
    strings allowed), in order, without repeats.

    Raises:
        ValueError: an unknown name (the valid ones are listed) or an empty selection.
        ember.BackendNotAvailableError: a known backend that is not installed (names the extra).

    Example:
        >>> resolve_backends(["numpy", "numpy,NumPy"])
        ['numpy']
    """
    if names is None:
        return backends.available()
    if isinstance(names, str):
        names = [names]
    chosen: list[str] = []
    for entry in names:
        for name in str(entry).split(","):
            name = name.strip().lower()
            if not name:
                continue
            if name not in backends.BACKENDS:
                raise ValueError(f"--backend: unknown backend {name!r}; valid names: {', '.join(backends.BACKENDS)} "
                                 f"(installed: {', '.join(backends.available())})")
            backends.load(name)  # not installed: BackendNotAvailableError naming the extra
            if name not in chosen:
                chosen.append(name)
    if not chosen:
        raise ValueError(f"--backend: no backend given; valid names: {', '.join(backends.BACKENDS)}")
    return chosen


def predict(model: Any, x: np.ndarray) -> np.ndarray:
    """The model's predicted probabilities as a NumPy array (one place the demo predicts).

    Example:
        >>> ember.set_backend("numpy")
        >>> model = build_model()
        >>> _ = model.build(seed=0)
        >>> probabilities = predict(model, np.zeros((3, 64), np.float32))
        >>> probabilities.shape, bool(np.allclose(probabilities.sum(axis=1), 1.0))
        ((3, 10), True)
    """
    return np.asarray(model.predict(x, batch_size=256, verbose=0))


def train_on(backend: str, data: Sequence[np.ndarray], epochs: int = DEFAULT_EPOCHS,
             batch_size: int = DEFAULT_BATCH_SIZE, verbose: int = 0) -> TrainResult:
    """Switch to ``backend``, build :func:`build_model` from :data:`SEED`, compile and fit it.

    Seconds per epoch is the wall time of ``fit`` (validation on the test set included) divided
    by ``epochs``; importing the backend, building and compiling are not counted. The backend
    stays active afterwards.

    Example:
        >>> from ember.demo.data import load_data
        >>> result = train_on("numpy", load_data(), epochs=1)
        >>> result.backend, result.epochs, 0.0 <= result.test_accuracy <= 1.0
        ('numpy', 1, True)
    """
    x_train, y_train, x_test, y_test = data
    ember.set_backend(backend)
    model = build_model()
    model.build(seed=SEED)
    initial = [ops.to_numpy(leaf) for leaf in optree.tree_leaves(model.state)]
    # seed: the same shuffling order on every backend (an Ember extension of Keras's compile).
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"], seed=SEED)
    start = time.perf_counter()
    history = model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, verbose=verbose,
                        validation_data=(x_test, y_test))
    seconds = time.perf_counter() - start
    return TrainResult(backend=backend, device=backends.default_device(backend), epochs=epochs,
                       train_loss=float(history.history["loss"][-1]),
                       test_accuracy=float(history.history["val_accuracy"][-1]),
                       seconds_per_epoch=seconds / epochs, initial_weights=initial, model=model, history=history)
