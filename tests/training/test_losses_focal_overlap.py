"""Focal crossentropies, Dice, Tversky, generalized crossentropy and Circle against Keras 3 (torch backend)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import losses, ops
from tests.tolerances import FLOAT32, FLOAT32_PAIR

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
    np.testing.assert_allclose(float(ops.to_numpy(ours(y_true, y_pred))), expected, **FLOAT32_PAIR)
    if name != "Circle" and ("axis" in kwargs or name not in ("Dice", "Tversky")):
        weights = WEIGHTS if len(y_true) == 4 else None
        expected = float(keras.ops.convert_to_numpy(theirs(y_true, y_pred, sample_weight=weights)))
        np.testing.assert_allclose(float(ops.to_numpy(ours(y_true, y_pred, sample_weight=weights))), expected,
                                   **FLOAT32_PAIR)
    rebuilt = losses.deserialize(losses.serialize(ours))
    assert type(rebuilt) is type(ours) and rebuilt.get_config() == ours.get_config()


@pytest.mark.parametrize("name", ["binary_focal_crossentropy", "categorical_focal_crossentropy", "dice", "tversky"])
def test_loss_functions_match_keras(backend, name):
    y_true, y_pred = (ONE_HOT, PROBS) if name.startswith("categorical") else (BINARY, SIGMOID)
    expected = keras.ops.convert_to_numpy(getattr(keras.losses, name)(y_true, y_pred))
    actual = ops.to_numpy(getattr(losses, name)(y_true, y_pred))
    np.testing.assert_allclose(actual, expected, **FLOAT32_PAIR)
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


# ------------------------------------------------------------------------ CTC
CTC_LOGITS = rng.normal(size=(3, 6, 5)).astype(np.float32)
CTC_TARGET = np.array([[1, 2, 2, 0], [3, 0, 0, 0], [1, 4, 1, 3]], dtype=np.int32)


def test_ctc_loss_op_and_gradient_match_torch(backend):
    import torch

    target_length, output_length = np.array([3, 1, 4]), np.array([6, 4, 6])
    logits = torch.tensor(CTC_LOGITS, dtype=torch.float64, requires_grad=True)
    reference = torch.nn.functional.ctc_loss(
        torch.log_softmax(logits, -1).transpose(0, 1), torch.tensor(CTC_TARGET, dtype=torch.long),
        torch.tensor(output_length), torch.tensor(target_length), blank=0, reduction="none")
    reference.sum().backward()
    actual = ops.ctc_loss(CTC_TARGET, ops.convert_to_tensor(CTC_LOGITS), target_length, output_length)
    np.testing.assert_allclose(ops.to_numpy(actual), reference.detach().cpu().numpy(), **FLOAT32)
    grad = ember.grad(lambda v: ops.sum(ops.ctc_loss(CTC_TARGET, v, target_length, output_length)))(
        ops.convert_to_tensor(CTC_LOGITS))
    # the occupancies exp(alpha + beta - loss) turn the log-space recursions' absolute error (~40 roundings of
    # terms up to |alpha| ~ 20: 40 u * 20 = 4.8e-5) into a relative one: rtol 1e-4
    np.testing.assert_allclose(ops.to_numpy(grad), logits.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_ctc_loss_class_and_greedy_decode_match_keras(backend):
    expected = float(keras.ops.convert_to_numpy(keras.losses.CTC()(CTC_TARGET, CTC_LOGITS)))
    np.testing.assert_allclose(float(ops.to_numpy(losses.CTC()(CTC_TARGET, CTC_LOGITS))), expected, **FLOAT32_PAIR)
    lengths = np.array([6, 3, 5])
    for merge in (True, False):
        theirs = keras.ops.ctc_decode(CTC_LOGITS, lengths, merge_repeated=merge)
        ours = ops.ctc_decode(ops.convert_to_tensor(CTC_LOGITS), lengths, merge_repeated=merge)
        np.testing.assert_array_equal(ops.to_numpy(ours[0]), keras.ops.convert_to_numpy(theirs[0]))
        np.testing.assert_allclose(ops.to_numpy(ours[1]), keras.ops.convert_to_numpy(theirs[1]), **FLOAT32_PAIR)
    with pytest.raises(NotImplementedError, match="beam_search"):
        ops.ctc_decode(ops.convert_to_tensor(CTC_LOGITS), lengths, strategy="beam_search")
    with pytest.raises(ValueError, match="ctc: y_true"):
        losses.ctc(CTC_TARGET[0], CTC_LOGITS)
