"""Focal crossentropies, Dice, Tversky, generalized crossentropy and Circle against Keras 3 (torch backend)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ember import losses, ops

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")

rng = np.random.default_rng(7)
LOGITS = rng.normal(size=(4, 3)).astype(np.float32)
PROBS = (np.exp(LOGITS) / np.exp(LOGITS).sum(1, keepdims=True)).astype(np.float32)
ONE_HOT = np.eye(3, dtype=np.float32)[[0, 2, 1, 2]]
BINARY = (rng.uniform(size=(4, 3)) > 0.5).astype(np.float32)
SIGMOID = (1 / (1 + np.exp(-LOGITS))).astype(np.float32)
LABELS = np.array([0, 2, 1, 2])
EMBED = rng.normal(size=(6, 4)).astype(np.float32)
EMBED /= np.linalg.norm(EMBED, axis=1, keepdims=True)
WEIGHTS = np.array([1.0, 0.5, 0.0, 2.0], np.float32)

CASES = [
    ("BinaryFocalCrossentropy", {}, BINARY, SIGMOID),
    ("BinaryFocalCrossentropy", {"apply_class_balancing": True, "alpha": 0.4, "gamma": 1.5}, BINARY, SIGMOID),
    ("BinaryFocalCrossentropy", {"from_logits": True, "label_smoothing": 0.1}, BINARY, LOGITS),
    ("CategoricalFocalCrossentropy", {}, ONE_HOT, PROBS),
    ("CategoricalFocalCrossentropy", {"from_logits": True, "alpha": 0.5, "gamma": 3.0, "label_smoothing": 0.2},
     ONE_HOT, LOGITS),
    ("Dice", {}, BINARY, SIGMOID), ("Dice", {"axis": 1}, BINARY, SIGMOID),
    ("Tversky", {"alpha": 0.3, "beta": 0.7}, BINARY, SIGMOID), ("Tversky", {"axis": 1}, BINARY, SIGMOID),
    ("CategoricalGeneralizedCrossEntropy", {"q": 0.7}, LABELS, PROBS),
    ("Circle", {}, np.array([0, 1, 0, 1, 2, 2]), EMBED),
    ("Circle", {"gamma": 10.0, "margin": 0.25, "remove_diagonal": False}, np.array([0, 1, 0, 1, 2, 2]), EMBED),
]


@pytest.mark.parametrize("name, kwargs, y_true, y_pred", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_loss_matches_keras(backend, name, kwargs, y_true, y_pred):
    theirs = getattr(keras.losses, name)(**kwargs)
    ours = getattr(losses, name)(**kwargs)
    expected = float(keras.ops.convert_to_numpy(theirs(y_true, y_pred)))
    np.testing.assert_allclose(float(ops.to_numpy(ours(y_true, y_pred))), expected, rtol=2e-5, atol=1e-6)
    if name != "Circle" and ("axis" in kwargs or name not in ("Dice", "Tversky")):
        weights = WEIGHTS if len(y_true) == 4 else None
        expected = float(keras.ops.convert_to_numpy(theirs(y_true, y_pred, sample_weight=weights)))
        np.testing.assert_allclose(float(ops.to_numpy(ours(y_true, y_pred, sample_weight=weights))), expected,
                                   rtol=2e-5, atol=1e-6)
    rebuilt = losses.deserialize(losses.serialize(ours))
    assert type(rebuilt) is type(ours) and rebuilt.get_config() == ours.get_config()


@pytest.mark.parametrize("name", ["binary_focal_crossentropy", "categorical_focal_crossentropy", "dice", "tversky"])
def test_loss_functions_match_keras(backend, name):
    y_true, y_pred = (ONE_HOT, PROBS) if name.startswith("categorical") else (BINARY, SIGMOID)
    expected = keras.ops.convert_to_numpy(getattr(keras.losses, name)(y_true, y_pred))
    actual = ops.to_numpy(getattr(losses, name)(y_true, y_pred))
    np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=1e-6)
    assert losses.get(name) is getattr(losses, name)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="gamma"):
        losses.BinaryFocalCrossentropy(gamma=-1.0)
    with pytest.raises(ValueError, match="label_smoothing"):
        losses.CategoricalFocalCrossentropy(label_smoothing=2.0)
    with pytest.raises(ValueError, match="q must be in"):
        losses.CategoricalGeneralizedCrossEntropy(q=0.0)
    with pytest.raises(ValueError, match="same shape"):
        losses.categorical_focal_crossentropy(ONE_HOT[:, :2], PROBS)
