"""IoU family, correlation metrics and X-at-Y metrics against Keras 3 (torch backend), two batches each."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ember import metrics, ops
from tests.tolerances import FLOAT32_PAIR

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")

rng = np.random.default_rng(5)
SCORES = rng.uniform(size=(2, 12, 4)).astype(np.float32)
CLASSES = rng.integers(0, 4, size=(2, 12))
ONE_HOT = np.eye(4, dtype=np.float32)[CLASSES]
BINARY = rng.integers(0, 2, size=(2, 12)).astype(np.float32)
PROB = rng.uniform(size=(2, 12)).astype(np.float32)
WEIGHTS = rng.uniform(size=(2, 12)).astype(np.float32)
# Keras keeps the IoU confusion matrix in int32, truncating fractional weights; Ember sums them
# as floats. Whole-number weights compare the two exactly.
INT_WEIGHTS = rng.integers(0, 3, size=(2, 12)).astype(np.float32)
REAL_TRUE = rng.normal(size=(2, 3, 5)).astype(np.float32)
REAL_PRED = (REAL_TRUE + rng.normal(scale=0.5, size=(2, 3, 5))).astype(np.float32)

CASES = [
    ("IoU", {"num_classes": 4, "target_class_ids": [0, 2]}, CLASSES, SCORES.argmax(-1), True),
    ("IoU", {"num_classes": 4, "target_class_ids": [1], "sparse_y_pred": False, "ignore_class": 3},
     CLASSES, SCORES, True),
    ("MeanIoU", {"num_classes": 4}, CLASSES, SCORES.argmax(-1), True),
    ("MeanIoU", {"num_classes": 4, "sparse_y_true": False, "sparse_y_pred": False}, ONE_HOT, SCORES, False),
    ("BinaryIoU", {}, BINARY, PROB, True),
    ("BinaryIoU", {"target_class_ids": [1], "threshold": 0.3}, BINARY, PROB, True),
    ("OneHotIoU", {"num_classes": 4, "target_class_ids": [0, 3]}, ONE_HOT, SCORES, False),
    ("OneHotMeanIoU", {"num_classes": 4}, ONE_HOT, SCORES, False),
    ("PearsonCorrelation", {}, REAL_TRUE, REAL_PRED, False),
    ("ConcordanceCorrelation", {"axis": 1}, REAL_TRUE, REAL_PRED, False),
    ("PrecisionAtRecall", {"recall": 0.6}, BINARY, PROB, True),
    ("RecallAtPrecision", {"precision": 0.5, "num_thresholds": 50}, BINARY, PROB, True),
    ("SensitivityAtSpecificity", {"specificity": 0.4}, BINARY, PROB, True),
    ("SpecificityAtSensitivity", {"sensitivity": 0.7}, BINARY, PROB, True),
    ("PrecisionAtRecall", {"recall": 0.5, "class_id": 2}, ONE_HOT, SCORES, False),
]


@pytest.mark.parametrize("name, kwargs, y_true, y_pred, weighted", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_metric_matches_keras_over_two_batches(backend, name, kwargs, y_true, y_pred, weighted):
    theirs = getattr(keras.metrics, name)(**kwargs)
    ours = getattr(metrics, name)(**kwargs).stateful()
    for batch in range(2):
        weight = (INT_WEIGHTS if "IoU" in name else WEIGHTS)[batch] if weighted else None
        theirs.update_state(y_true[batch], y_pred[batch], sample_weight=weight)
        ours.update_state(y_true[batch], y_pred[batch], sample_weight=weight)
    expected = float(keras.ops.convert_to_numpy(theirs.result()))
    np.testing.assert_allclose(float(ops.to_numpy(ours.result())), expected, **FLOAT32_PAIR)
    metric = getattr(metrics, name)(**kwargs)
    rebuilt = metrics.deserialize(metrics.serialize(metric))
    assert type(rebuilt) is type(metric) and rebuilt.get_config() == metric.get_config()


@pytest.mark.parametrize("name",
                         ["pearson_correlation", "concordance_correlation", "binary_focal_crossentropy", "huber"])
def test_metric_functions_match_keras(backend, name):
    y_true, y_pred = (BINARY, PROB) if name == "binary_focal_crossentropy" else (REAL_TRUE[0], REAL_PRED[0])
    expected = keras.ops.convert_to_numpy(getattr(keras.metrics, name)(y_true, y_pred))
    np.testing.assert_allclose(ops.to_numpy(getattr(metrics, name)(y_true, y_pred)), expected, **FLOAT32_PAIR)


def test_iou_keeps_fractional_weights(backend):
    result = metrics.MeanIoU(num_classes=2)([0, 0, 1, 1], [0, 1, 0, 1], sample_weight=[0.5, 0.5, 0.5, 1.5])
    # confusion matrix [[0.5, 0.5], [0.5, 1.5]]: IoU 0.5 / 1.5 and 1.5 / 2.5
    np.testing.assert_allclose(float(ops.to_numpy(result)), (0.5 / 1.5 + 1.5 / 2.5) / 2, rtol=1e-6)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="target_class_ids"):
        metrics.IoU(num_classes=2, target_class_ids=[2])
    with pytest.raises(ValueError, match="num_classes"):
        metrics.MeanIoU(num_classes=0)
    with pytest.raises(ValueError, match="recall must be in"):
        metrics.PrecisionAtRecall(1.5)
    with pytest.raises(ValueError, match="num_thresholds"):
        metrics.RecallAtPrecision(0.5, num_thresholds=1)
