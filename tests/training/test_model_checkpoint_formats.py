"""``ModelCheckpoint`` writes the files Keras's does: ``model_{epoch}.keras`` (the whole model, which
``ember.load_model`` and Keras's ``load_model`` open) and ``.weights.h5`` with ``save_weights_only=True``
(``load_weights``), with Keras's rules for the path; on every backend.

Tolerances: an Ember reload runs the same computation on the same float32 weights, so it predicts
bit-equal values (no tolerance). Keras against Ember compares two float32 implementations of Dense
layers of <= 8 inputs: ``FLOAT32_PAIR`` from ``tests/tolerances.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import callbacks, layers, ops
from tests.helpers import needs
from tests.saving.keras_models import keras
from tests.tolerances import FLOAT32_PAIR

RNG = np.random.default_rng(0)
X = RNG.normal(size=(16, 5)).astype("float32")
Y = RNG.normal(size=(16, 1)).astype("float32")
EPOCHS = 3
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Keras 3.15: NumPy 2 __array__ notices


def _model(seed=0):
    model = ember.Sequential([ember.Input((5,)), layers.Dense(8, activation="relu", name="hidden"),
                              layers.Dense(1, name="out")], name="checkpointed")
    model.build(seed=seed)
    model.compile(optimizer=ember.optimizers.Adam(0.01), loss="mse")
    return model


def _predict(model):
    return np.asarray(ops.to_numpy(model.predict(X, verbose=0)))


def _fit_with_checkpoints(tmp_path):
    """Fit with a ``.keras`` and a ``.weights.h5`` checkpoint per epoch; the predictions after each epoch."""
    model = _model()
    predictions = []
    record = callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: predictions.append(_predict(model)))
    checkpoints = [callbacks.ModelCheckpoint(str(tmp_path / "model_{epoch}.keras")),
                   callbacks.ModelCheckpoint(str(tmp_path / "w_{epoch:02d}.weights.h5"), save_weights_only=True)]
    model.fit(X, Y, epochs=EPOCHS, batch_size=4, verbose=0, callbacks=[*checkpoints, record])
    return predictions


def test_keras_and_weights_checkpoints_load_back(tmp_path, backend):
    predictions = _fit_with_checkpoints(tmp_path)
    assert len({p.tobytes() for p in predictions}) == EPOCHS  # the model changed every epoch
    for epoch, expected in enumerate(predictions, start=1):
        restored = ember.load_model(tmp_path / f"model_{epoch}.keras")
        assert restored.optimizer is not None  # the compile configuration travels in the archive
        np.testing.assert_array_equal(_predict(restored), expected)
        fresh = _model(seed=1)
        fresh.load_weights(tmp_path / f"w_{epoch:02d}.weights.h5")
        np.testing.assert_array_equal(_predict(fresh), expected)


@needs("keras")
def test_keras_checkpoint_loads_in_keras(tmp_path, backend):
    predictions = _fit_with_checkpoints(tmp_path)
    for epoch, expected in enumerate(predictions, start=1):
        restored = keras.saving.load_model(tmp_path / f"model_{epoch}.keras")
        np.testing.assert_allclose(np.asarray(restored.predict(X, verbose=0)), expected, **FLOAT32_PAIR)


CASES = [  # (filepath, save_weights_only, accepted)
    ("model_{epoch}.keras", False, True), ("model.h5", False, True), ("best.weights.h5", True, True),
    ("model.keras", True, False), ("model.h5", True, False), ("model.txt", False, False),
    ("model", False, False),
]


@needs("keras")
@pytest.mark.parametrize(("filepath", "weights_only", "accepted"), CASES)
def test_path_rules_are_kerass(tmp_path, filepath, weights_only, accepted):
    """Keras accepts and refuses the same paths, when the callback is made."""
    for module in (callbacks, keras.callbacks):
        if accepted:
            module.ModelCheckpoint(str(tmp_path / filepath), save_weights_only=weights_only)
            continue
        suffix = r"\.weights\.h5" if weights_only else r"\.keras"
        with pytest.raises(ValueError, match=f"must end in [`']{suffix}[`']"):  # Keras quotes with backticks
            module.ModelCheckpoint(str(tmp_path / filepath), save_weights_only=weights_only)


def test_a_refused_path_is_refused_before_training(tmp_path):
    model = _model()
    before = _predict(model)
    with pytest.raises(ValueError, match=r"save_weights_only=True the filepath must end in '\.weights\.h5' "
                                         r"\(Keras's weights format\), received filepath='.*best\.h5'"):
        callbacks.ModelCheckpoint(str(tmp_path / "best.h5"), save_weights_only=True)
    with pytest.raises(ValueError, match=r"must end in '\.keras' .* or '\.h5' .* received filepath='.*model\.txt'"):
        callbacks.ModelCheckpoint(str(tmp_path / "model.txt"))
    np.testing.assert_array_equal(_predict(model), before)
    assert not list(tmp_path.iterdir())
