"""Metrics: values against scikit-learn and NumPy float64 references written here, on every
backend, accumulated over several batches with sample weights; the pure state API (a
pytree, functional updates), the stateful handle, resolution by name and bad input.

AUC follows Keras's threshold method, so it is compared with scikit-learn exactly where
the method is exact (every distinct prediction in its own threshold bucket) and within
the discretisation error Keras documents otherwise; its PR interpolation is checked
against Davis & Goadrich's formula written out in NumPy.
"""

from __future__ import annotations

import json

import numpy as np
import optree
import pytest

from ember import losses, metrics, ops, serialization
from tests.helpers import assert_close, needs, optional_import

skm = optional_import("sklearn.metrics")  # the reference; None on a core-only install, where those tests skip

EPS = 1e-7


def _run(metric, batches, pure=True):
    """Accumulate ``batches`` (tuples of update arguments) and return the result.

    ``pure`` threads the state through the pure API; otherwise the stateful handle is used.
    """
    if pure:
        state = metric.init_state(metric.shape_from_arguments(batches[0], {}))
        for args in batches:
            state = metric.update_state(state, *args)
        return metric.result(state)
    handle = metric.stateful()
    for args in batches:
        handle.update_state(*args)
    return handle.result()


def _split(*arrays, at=7):
    """Two batches of the given arrays (the first ``at`` rows, then the rest)."""
    return [tuple(a[:at] for a in arrays), tuple(a[at:] for a in arrays)]


def _f32(x):
    return np.asarray(x, np.float32)


# ----------------------------------------------------------------- reductions


def test_mean_and_sum_weighted(backend):
    rng = np.random.default_rng(0)
    values, weight = rng.normal(size=(10, 3)), rng.uniform(0, 2, 10)
    batches = _split(_f32(values), _f32(weight))
    per_sample = values.mean(-1)  # Keras: values of rank > 1 are averaged per sample
    assert_close(_run(metrics.Mean(), batches), (per_sample * weight).sum() / weight.sum())
    assert_close(_run(metrics.Sum(), batches, pure=False), (values.sum(-1) * weight).sum())
    assert_close(_run(metrics.Mean(), [(values[:4],), (values[4:],)]), values.mean())
    assert_close(metrics.Mean()(_f32([])), 0.0)  # nothing seen: 0, not NaN


# ------------------------------------------------------------------ accuracy


@needs("sklearn.metrics")
def test_accuracy_metrics_match_sklearn(backend):
    rng = np.random.default_rng(1)
    n, c = 16, 4
    weight = rng.uniform(0, 2, n)
    labels = rng.integers(0, c, n)
    scores = rng.uniform(size=(n, c))
    guesses = np.where(rng.uniform(size=n) < 0.6, labels, rng.integers(0, c, n))
    one_hot = np.eye(c)[labels]
    expected = skm.accuracy_score(labels, scores.argmax(-1), sample_weight=weight)
    for metric, y_true in ((metrics.CategoricalAccuracy(), one_hot), (metrics.SparseCategoricalAccuracy(), labels),
                           (metrics.SparseCategoricalAccuracy(), labels[:, None])):
        for pure in (True, False):
            assert_close(_run(metric, _split(y_true, _f32(scores), _f32(weight)), pure), expected)
    assert_close(_run(metrics.Accuracy(), _split(labels, guesses, weight)),
                 skm.accuracy_score(labels, guesses, sample_weight=weight))
    binary, probability = rng.integers(0, 2, (n, 1)), rng.uniform(size=(n, 1))
    assert_close(_run(metrics.BinaryAccuracy(), _split(binary, _f32(probability), weight)),
                 skm.accuracy_score(binary, probability > 0.5, sample_weight=weight))
    assert_close(_run(metrics.BinaryAccuracy(threshold=0.7), _split(binary, _f32(probability))),
                 skm.accuracy_score(binary, probability > 0.7))
    for k in (1, 2, 3):
        expected = skm.top_k_accuracy_score(labels, scores, k=k, sample_weight=weight, labels=range(c))
        assert_close(_run(metrics.SparseTopKCategoricalAccuracy(k=k), _split(labels, _f32(scores), weight)), expected)
        assert_close(_run(metrics.TopKCategoricalAccuracy(k=k), _split(one_hot, _f32(scores), weight)), expected)


def test_top_k_counts_ties_in(backend):
    scores = _f32([[0.5, 0.5, 0.5, 0.1]])
    assert_close(metrics.sparse_top_k_categorical_accuracy([2], scores, k=1), [1.0])  # tie at the top
    assert_close(metrics.sparse_top_k_categorical_accuracy([3], scores, k=3), [0.0])


# ------------------------------------------------------- precision / recall


@needs("sklearn.metrics")
def test_precision_recall_match_sklearn(backend):
    rng = np.random.default_rng(2)
    n = 20
    labels, scores, weight = rng.integers(0, 2, n), rng.uniform(size=n), rng.uniform(0, 2, n)
    batches = _split(labels, _f32(scores), _f32(weight))
    for threshold in (None, 0.3):
        predicted = scores > (0.5 if threshold is None else threshold)
        for cls, reference in ((metrics.Precision, skm.precision_score), (metrics.Recall, skm.recall_score)):
            assert_close(_run(cls(thresholds=threshold), batches), reference(labels, predicted, sample_weight=weight))
    thresholds = [0.2, 0.5, 0.8]  # one result per threshold
    for cls, reference in ((metrics.Precision, skm.precision_score), (metrics.Recall, skm.recall_score)):
        assert_close(_run(cls(thresholds=thresholds), batches, pure=False),
                     [reference(labels, scores > t, sample_weight=weight) for t in thresholds])
    counts = skm.confusion_matrix(labels, scores > 0.5, sample_weight=weight)  # [[tn, fp], [fn, tp]]
    for cls, value in ((metrics.TrueNegatives, counts[0, 0]), (metrics.FalsePositives, counts[0, 1]),
                       (metrics.FalseNegatives, counts[1, 0]), (metrics.TruePositives, counts[1, 1])):
        assert_close(_run(cls(), batches), value, rtol=1e-5)


@needs("sklearn.metrics")
def test_precision_recall_class_id_and_top_k(backend):
    rng = np.random.default_rng(3)
    n, c = 12, 4
    y = rng.integers(0, 2, (n, c))
    scores = rng.uniform(size=(n, c))
    weight = rng.uniform(0, 2, n)
    batches = _split(y, _f32(scores), _f32(weight), at=5)
    assert_close(_run(metrics.Precision(class_id=2), batches),
                 skm.precision_score(y[:, 2], scores[:, 2] > 0.5, sample_weight=weight))
    assert_close(_run(metrics.Recall(class_id=1), batches),
                 skm.recall_score(y[:, 1], scores[:, 1] > 0.5, sample_weight=weight))
    # top_k: only each row's k largest scores may be positive (NumPy reference).
    top2 = np.argsort(-scores, axis=-1)[:, :2]
    in_top = np.zeros_like(y, dtype=bool)
    np.put_along_axis(in_top, top2, True, axis=-1)
    w = np.broadcast_to(weight[:, None], y.shape)
    for threshold, positive in ((None, in_top), (0.6, in_top & (scores > 0.6))):
        tp, fp = (w * (positive & (y == 1))).sum(), (w * (positive & (y == 0))).sum()
        fn = (w * (~positive & (y == 1))).sum()
        assert_close(_run(metrics.Precision(top_k=2, thresholds=threshold), batches), tp / (tp + fp))
        assert_close(_run(metrics.Recall(top_k=2, thresholds=threshold), batches), tp / (tp + fn))
    positive = in_top[:, 3]
    tp, fp = (weight * (positive & (y[:, 3] == 1))).sum(), (weight * (positive & (y[:, 3] == 0))).sum()
    assert_close(_run(metrics.Precision(top_k=2, class_id=3), batches), tp / (tp + fp))


# ------------------------------------------------------------------ F-scores


@needs("sklearn.metrics")
@pytest.mark.parametrize("average", [None, "micro", "macro", "weighted"])
def test_f1_score_matches_sklearn(backend, average):
    rng = np.random.default_rng(4)
    n, c = 16, 3
    y = rng.integers(0, 2, (n, c))
    scores = np.clip(y * 0.4 + rng.uniform(size=(n, c)) * 0.7, 0, 1)
    weight = rng.uniform(0, 2, n)
    batches = _split(y, _f32(scores), _f32(weight))
    expected = skm.f1_score(y, scores > 0.5, average=average, sample_weight=weight, zero_division=0)
    assert_close(_run(metrics.F1Score(average=average, threshold=0.5), batches), expected)
    assert_close(_run(metrics.F1Score(average=average, threshold=0.5), batches, pure=False), expected)
    expected = skm.fbeta_score(y, scores > 0.5, beta=2.0, average=average, sample_weight=weight, zero_division=0)
    assert_close(_run(metrics.FBetaScore(average=average, beta=2.0, threshold=0.5), batches), expected)
    # Without a threshold each row's maximum is the prediction (one-hot multi-class).
    labels = rng.integers(0, c, n)
    argmax_pred = np.eye(c)[scores.argmax(-1)]
    expected = skm.f1_score(np.eye(c)[labels], argmax_pred, average=average, sample_weight=weight, zero_division=0)
    assert_close(_run(metrics.F1Score(average=average), _split(np.eye(c)[labels], _f32(scores), _f32(weight))),
                 expected)


# ----------------------------------------------------------------------- AUC


def _np_curve_counts(y, p, thresholds, w):
    pos = p[None, :] > np.asarray(thresholds)[:, None]
    tp = (w * (pos & (y == 1))).sum(1)
    fp = (w * (pos & (y == 0))).sum(1)
    return tp, fp, (w * (y == 1)).sum() - tp, (w * (y == 0)).sum() - fp


def _np_keras_thresholds(n):
    return np.array([-EPS] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + EPS])


def _np_pr_interpolation(tp, fp, fn):
    """Davis & Goadrich's PR-AUC between thresholds (Keras's formula, in float64)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = tp + fp
        dtp, dp = tp[:-1] - tp[1:], p[:-1] - p[1:]
        slope = np.where(dp > 0, dtp / np.where(dp > 0, dp, 1), 0.0)
        intercept = tp[1:] - slope * p[1:]
        ratio = np.where((p[:-1] > 0) & (p[1:] > 0), p[:-1] / np.where(p[1:] > 0, p[1:], 1), 1.0)
        total = tp[1:] + fn[1:]
        inc = slope * (dtp + intercept * np.log(ratio))
        return np.where(total > 0, inc / np.where(total > 0, total, 1), 0.0).sum()


@needs("sklearn.metrics")
def test_auc_roc_is_exact_when_predictions_sit_in_their_own_buckets(backend):
    rng = np.random.default_rng(5)
    n_thresholds = 50
    buckets = rng.integers(0, n_thresholds - 1, 40)
    p = (buckets + 0.5) / (n_thresholds - 1)  # bucket centres (ties allowed: sklearn treats them alike)
    y = (rng.uniform(size=40) < p).astype(int)
    y[:2] = [0, 1]
    weight = rng.uniform(0.1, 2, 40)
    auc = metrics.AUC(num_thresholds=n_thresholds)
    assert_close(_run(auc, _split(y, _f32(p), _f32(weight), at=15)), skm.roc_auc_score(y, p, sample_weight=weight),
                 rtol=1e-5)


@needs("sklearn.metrics")
def test_auc_roc_within_keras_interpolation_tolerance(backend):
    rng = np.random.default_rng(6)
    p = rng.uniform(size=200)
    y = (rng.uniform(size=200) < p).astype(int)
    # Keras's documented approximation: ~1/num_thresholds for predictions spread over [0, 1].
    for n_thresholds, tolerance in ((200, 5e-3), (1000, 1e-3)):
        got = float(metrics.AUC(num_thresholds=n_thresholds)(y, _f32(p)))
        assert abs(got - skm.roc_auc_score(y, p)) < tolerance


def _np_auc(y, p, thresholds, weight, curve, summation):
    """Keras's AUC for the given thresholds (with the +-eps end points), in float64."""
    tp, fp, fn, tn = _np_curve_counts(y, p, thresholds, weight)
    if curve == "PR" and summation == "interpolation":
        return _np_pr_interpolation(tp, fp, fn)
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.nan_to_num(tp / (tp + fn))
        if curve == "ROC":
            x, h = np.nan_to_num(fp / (fp + tn)), recall
        else:
            x, h = recall, np.nan_to_num(tp / (tp + fp))
    heights = {"interpolation": (h[:-1] + h[1:]) / 2, "minoring": np.minimum(h[:-1], h[1:]),
               "majoring": np.maximum(h[:-1], h[1:])}[summation]
    return ((x[:-1] - x[1:]) * heights).sum()


@pytest.mark.parametrize("summation", ["interpolation", "minoring", "majoring"])
@pytest.mark.parametrize("curve", ["ROC", "PR"])
def test_auc_matches_numpy_keras_method(backend, curve, summation):
    rng = np.random.default_rng(7)
    p = rng.uniform(size=30)
    y = (rng.uniform(size=30) < p).astype(int)
    weight = rng.uniform(0.1, 2, 30)
    batches = _split(y, _f32(p), _f32(weight), at=11)
    n_thresholds = 17
    thresholds = _np_keras_thresholds(n_thresholds)
    expected = _np_auc(y, p, thresholds, weight, curve, summation)
    auc = metrics.AUC(num_thresholds=n_thresholds, curve=curve, summation_method=summation)
    assert_close(_run(auc, batches), expected)
    # The same thresholds given explicitly (evenly spaced: the bucketed path) ...
    explicit = metrics.AUC(thresholds=list(thresholds[1:-1]), curve=curve, summation_method=summation)
    assert_close(_run(explicit, batches), expected)
    # ... and uneven thresholds (every prediction compared with every threshold).
    uneven = np.sort(rng.uniform(size=9))
    expected = _np_auc(y, p, np.concatenate([[-EPS], uneven, [1 + EPS]]), weight, curve, summation)
    got = _run(metrics.AUC(thresholds=list(uneven), curve=curve, summation_method=summation), batches, pure=False)
    assert_close(got, expected)


@needs("sklearn.metrics")
def test_auc_pr_against_average_precision(backend):
    rng = np.random.default_rng(8)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p).astype(int)
    got = float(metrics.AUC(curve="PR", num_thresholds=500)(y, _f32(p)))
    # Interpolated PR-AUC and scikit-learn's step-wise average precision are different
    # estimators of the same area; they agree to ~1e-2 on data like this.
    assert abs(got - skm.average_precision_score(y, p)) < 2e-2
    lower = float(metrics.AUC(curve="PR", summation_method="minoring", num_thresholds=500)(y, _f32(p)))
    upper = float(metrics.AUC(curve="PR", summation_method="majoring", num_thresholds=500)(y, _f32(p)))
    assert lower - 1e-6 <= skm.average_precision_score(y, p) <= upper + 1e-6


@needs("sklearn.metrics")
def test_auc_multi_label_from_logits_and_label_weights(backend):
    rng = np.random.default_rng(9)
    logits = rng.normal(size=(40, 3)) * 2
    p = 1 / (1 + np.exp(-logits))
    y = (rng.uniform(size=(40, 3)) < p).astype(int)
    per_label = [skm.roc_auc_score(y[:, j], p[:, j]) for j in range(3)]
    auc = metrics.AUC(num_thresholds=2000, multi_label=True, from_logits=True)
    assert_close(_run(auc, _split(y, _f32(logits))), np.mean(per_label), atol=2e-3)  # discretisation
    weighted = metrics.AUC(num_thresholds=2000, multi_label=True, num_labels=3, label_weights=[1.0, 0.0, 3.0])
    assert_close(weighted(y, _f32(p)), (per_label[0] + 3 * per_label[2]) / 4, atol=2e-3)


# ---------------------------------------------------------------- regression


@needs("sklearn.metrics")
def test_regression_metrics_match_sklearn(backend):
    rng = np.random.default_rng(10)
    t, p = rng.normal(size=(14, 3)), rng.normal(size=(14, 3))
    weight = rng.uniform(0.1, 2, 14)
    batches = _split(_f32(t), _f32(p), _f32(weight))
    mse = skm.mean_squared_error(t, p, sample_weight=weight)
    assert_close(_run(metrics.MeanSquaredError(), batches), mse)
    assert_close(_run(metrics.RootMeanSquaredError(), batches, pure=False), np.sqrt(mse))
    assert_close(_run(metrics.MeanAbsoluteError(), batches), skm.mean_absolute_error(t, p, sample_weight=weight))
    assert_close(_run(metrics.MeanAbsolutePercentageError(), batches),
                 100 * skm.mean_absolute_percentage_error(t, p, sample_weight=weight), rtol=2e-5)
    for aggregation, multioutput in (("uniform_average", "uniform_average"),
                                     ("variance_weighted_average", "variance_weighted"), (None, "raw_values")):
        expected = skm.r2_score(t, p, sample_weight=weight, multioutput=multioutput)
        assert_close(_run(metrics.R2Score(class_aggregation=aggregation), batches), expected, rtol=2e-5)
    # 1-D inputs count as one output.
    assert_close(_run(metrics.R2Score(), _split(_f32(t[:, 0]), _f32(p[:, 0]))), skm.r2_score(t[:, 0], p[:, 0]),
                 rtol=2e-5)
    r2, n, k = skm.r2_score(t, p), t.size, 4  # Keras counts label entries as n
    assert_close(metrics.R2Score(num_regressors=k)(_f32(t), _f32(p)), 1 - (1 - r2) * (n - 1) / (n - k - 1),
                 rtol=2e-5)
    assert_close(metrics.R2Score(num_regressors=100)(_f32(t), _f32(p)), r2, rtol=2e-5)  # too few samples: unadjusted


def test_loss_valued_metrics_average_the_loss(backend):
    rng = np.random.default_rng(11)
    t, p = rng.uniform(0.1, 1, (10, 3)), rng.uniform(0.1, 1, (10, 3))
    weight = rng.uniform(0.1, 2, 10)
    cases = [
        (metrics.MeanSquaredLogarithmicError(), ((np.log1p(p) - np.log1p(t)) ** 2).mean(-1)),
        (metrics.LogCoshError(), np.log(np.cosh(p - t)).mean(-1)),
        (metrics.CosineSimilarity(), (t * p).sum(-1) / np.linalg.norm(t, axis=-1) / np.linalg.norm(p, axis=-1)),
        (metrics.BinaryCrossentropy(), -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean(-1)),
        (metrics.CategoricalCrossentropy(), -(t * np.log(p / p.sum(-1, keepdims=True))).sum(-1)),
        (metrics.KLDivergence(), (t * np.log(t / p)).sum(-1)),
        (metrics.Poisson(), (p - t * np.log(p + EPS)).mean(-1)),
        (metrics.Hinge(), np.maximum(1 - t * p, 0).mean(-1)),
        (metrics.SquaredHinge(), (np.maximum(1 - t * p, 0) ** 2).mean(-1)),
    ]
    for metric, per_sample in cases:
        assert_close(_run(metric, _split(_f32(t), _f32(p), _f32(weight))), (per_sample * weight).sum() / weight.sum(),
                     err_msg=metric.name)
    labels = rng.integers(0, 3, 10)
    assert_close(_run(metrics.SparseCategoricalCrossentropy(), _split(labels, _f32(p), weight)),
                 (-np.log(p[np.arange(10), labels] / p.sum(-1)) * weight).sum() / weight.sum())


# --------------------------------------------------------- pure state API

CASES = [
    (metrics.Mean, ([1.0, 2.0],)),
    (metrics.Sum, ([1.0, 2.0],)),
    (metrics.Accuracy, ([1, 2], [1.0, 3.0])),
    (metrics.BinaryAccuracy, ([[1], [0]], [[0.7], [0.2]])),
    (metrics.CategoricalAccuracy, ([[0, 1], [1, 0]], [[0.3, 0.7], [0.2, 0.8]])),
    (metrics.SparseCategoricalAccuracy, ([1, 0], [[0.3, 0.7], [0.2, 0.8]])),
    (metrics.TopKCategoricalAccuracy, ([[0, 1], [1, 0]], [[0.3, 0.7], [0.2, 0.8]])),
    (metrics.SparseTopKCategoricalAccuracy, ([1, 0], [[0.3, 0.7], [0.2, 0.8]])),
    (metrics.Precision, ([1, 0], [0.7, 0.8])),
    (metrics.Recall, ([1, 0], [0.7, 0.8])),
    (metrics.TruePositives, ([1, 0], [0.7, 0.8])),
    (metrics.F1Score, ([[0, 1], [1, 0]], [[0.3, 0.7], [0.2, 0.8]])),
    (metrics.FBetaScore, ([[0, 1], [1, 0]], [[0.3, 0.7], [0.2, 0.8]])),
    (metrics.AUC, ([1, 0], [0.7, 0.8])),
    (metrics.MeanSquaredError, ([[1.0], [0.0]], [[0.7], [0.2]])),
    (metrics.RootMeanSquaredError, ([[1.0], [0.0]], [[0.7], [0.2]])),
    (metrics.MeanAbsoluteError, ([[1.0], [0.0]], [[0.7], [0.2]])),
    (metrics.R2Score, ([[1.0], [0.0]], [[0.7], [0.2]])),
    (metrics.BinaryCrossentropy, ([[1.0], [0.0]], [[0.7], [0.2]])),
]
CASE_IDS = [cls.__name__ for cls, _ in CASES]


@pytest.mark.parametrize("cls, args", CASES, ids=CASE_IDS)
def test_state_is_a_pytree_and_updates_are_functional(backend, cls, args):
    metric = cls()
    state = metric.init_state(metric.shape_from_arguments(args, {}))
    leaves, spec = optree.tree_flatten(state)
    assert leaves and all(ops.is_array(leaf) for leaf in leaves)
    rebuilt = optree.tree_unflatten(spec, leaves)
    assert rebuilt.keys() == state.keys()
    before = {k: ops.to_numpy(v).copy() for k, v in state.items()}
    new_state = metric.update_state(state, *args)
    assert optree.tree_structure(new_state) == spec  # same structure: compiles as a loop carry
    for key, value in state.items():  # the old state is untouched
        np.testing.assert_array_equal(ops.to_numpy(value), before[key])
    again = metric.update_state(state, *args)  # same input, same output
    for key in new_state:
        np.testing.assert_array_equal(ops.to_numpy(again[key]), ops.to_numpy(new_state[key]))
    assert np.all(np.isfinite(ops.to_numpy(metric.result(new_state))))


@pytest.mark.parametrize("cls, args", CASES, ids=CASE_IDS)
def test_config_round_trip(cls, args):
    metric = cls(name="custom")
    data = json.loads(json.dumps(metrics.serialize(metric)))
    assert data["class_name"] == f"ember.metrics>{cls.__name__}"
    rebuilt = serialization.deserialize(data)
    assert type(rebuilt) is cls and rebuilt.get_config() == metric.get_config()
    np.testing.assert_allclose(ops.to_numpy(rebuilt(*args)), ops.to_numpy(metric(*args)))


def test_configs_keep_arguments():
    for metric in (metrics.AUC(curve="PR", summation_method="majoring", thresholds=[0.2, 0.6], from_logits=True),
                   metrics.Precision(thresholds=[0.2, 0.6], class_id=1), metrics.Recall(top_k=3),
                   metrics.F1Score(average="macro", threshold=0.4), metrics.R2Score(None, num_regressors=2),
                   metrics.BinaryAccuracy(threshold=0.3), metrics.TopKCategoricalAccuracy(k=2),
                   metrics.MeanMetricWrapper(losses.huber, delta=0.5)):
        rebuilt = metrics.deserialize(json.loads(json.dumps(metrics.serialize(metric))))
        assert rebuilt.get_config() == metric.get_config(), type(metric).__name__


def test_stateful_handle_and_failing_updates(backend):
    handle = metrics.F1Score(average="macro", threshold=0.5).stateful()
    handle.update_state([[1, 0], [0, 1]], [[0.9, 0.1], [0.2, 0.8]])
    state = handle.state
    with pytest.raises(ValueError, match=r"f1_score: the state counts 2 classes but y_pred has 3"):
        handle.update_state([[1, 0, 0]], [[0.9, 0.1, 0.0]])
    assert handle.state is state  # a failing call changes nothing
    assert_close(handle.result(), 1.0, rtol=1e-6)
    handle.reset_state()
    assert_close(handle.result(), 0.0)
    handle.update_state([[1, 0]], [[0.2, 0.9]])
    assert_close(handle.result(), 0.0)
    assert handle.name == "f1_score"


# ------------------------------------------------------------------- get


def test_accuracy_resolves_from_the_loss_like_keras():
    cases = [
        ("binary_crossentropy", metrics.BinaryAccuracy), ("bce", metrics.BinaryAccuracy),
        (losses.BinaryCrossentropy(from_logits=True), metrics.BinaryAccuracy),
        (losses.binary_crossentropy, metrics.BinaryAccuracy),
        ("sparse_categorical_crossentropy", metrics.SparseCategoricalAccuracy),
        (losses.SparseCategoricalCrossentropy(), metrics.SparseCategoricalAccuracy),
        ("categorical_crossentropy", metrics.CategoricalAccuracy),
        (losses.CategoricalCrossentropy(label_smoothing=0.1), metrics.CategoricalAccuracy),
        (losses.LossFunctionWrapper(losses.categorical_crossentropy), metrics.CategoricalAccuracy),
    ]
    for loss, expected in cases:
        for name in ("accuracy", "acc"):
            metric = metrics.get(name, loss=loss)
            assert type(metric) is expected and metric.name == name, (loss, name)
    assert type(metrics.get("accuracy", loss="mse", output_shape=(None, 1))) is metrics.BinaryAccuracy
    assert type(metrics.get("accuracy", loss="hinge", output_shape=(None, 5))) is metrics.CategoricalAccuracy
    assert type(metrics.get("accuracy", output_shape=(None, 1))) is metrics.BinaryAccuracy
    assert type(metrics.get("accuracy")) is metrics.Accuracy  # no context: Keras's metrics.get


def test_get_resolves_names_instances_classes_functions_and_configs():
    assert metrics.get(None) is None
    assert type(metrics.get("mse")) is metrics.MeanSquaredError
    assert type(metrics.get("mean_absolute_error")) is metrics.MeanAbsoluteError
    assert type(metrics.get("AUC")) is metrics.AUC and type(metrics.get("auc")) is metrics.AUC
    assert type(metrics.get("f1_score")) is metrics.F1Score
    assert type(metrics.get(metrics.R2Score)) is metrics.R2Score
    instance = metrics.Precision()
    assert metrics.get(instance) is instance
    wrapped = metrics.get(losses.log_cosh)
    assert isinstance(wrapped, metrics.MeanMetricWrapper) and wrapped.name == "log_cosh"
    assert type(metrics.get(metrics.serialize(metrics.Recall(thresholds=0.3)))) is metrics.Recall
    with pytest.raises(ValueError, match=r"unknown metric 'accuracyy'.*'accuracy'.*'auc'"):
        metrics.get("accuracyy")
    with pytest.raises(TypeError, match="metric"):
        metrics.get(42)


# -------------------------------------------------------------- bad input


def test_bad_arguments_name_the_metric():
    with pytest.raises(ValueError, match=r"F1Score: invalid average='mean'.*'macro'"):
        metrics.F1Score(average="mean")
    with pytest.raises(ValueError, match=r"FBetaScore: threshold must be a float in \(0, 1\]"):
        metrics.FBetaScore(threshold=1.5)
    with pytest.raises(ValueError, match=r"AUC: invalid curve='ROCK'.*'ROC', 'PR'"):
        metrics.AUC(curve="ROCK")
    with pytest.raises(ValueError, match="AUC: invalid summation_method"):
        metrics.AUC(summation_method="trapezoid")
    with pytest.raises(ValueError, match="AUC: num_thresholds must be an int > 1"):
        metrics.AUC(num_thresholds=1)
    with pytest.raises(ValueError, match="num_labels is needed only when multi_label=True"):
        metrics.AUC(num_labels=3)
    with pytest.raises(ValueError, match=r"Precision: threshold values must be in \[0, 1\]"):
        metrics.Precision(thresholds=[0.5, 2.0])
    with pytest.raises(ValueError, match="Recall: top_k must be a positive int"):
        metrics.Recall(top_k=0)
    with pytest.raises(ValueError, match="R2Score: invalid class_aggregation"):
        metrics.R2Score(class_aggregation="median")
    with pytest.raises(ValueError, match="TopKCategoricalAccuracy: k must be a positive int"):
        metrics.TopKCategoricalAccuracy(k=0)
    with pytest.raises(ValueError, match="Mean: dtype must be a floating dtype"):
        metrics.Mean(dtype="int32")


def test_bad_inputs_name_the_metric_and_shapes(backend):
    with pytest.raises(ValueError, match=r"f1_score: expects .*\(batch_size, num_classes\).*y_pred.shape=\(3,\)"):
        metrics.F1Score(average="micro")([1, 0, 1], [0.9, 0.1, 0.8])
    with pytest.raises(ValueError, match=r"f1_score: the state holds one count per class"):
        metrics.F1Score().init_state()
    with pytest.raises(ValueError, match=r"precision: class_id=4 is out of range for 3 classes"):
        metrics.Precision(class_id=4)([[1, 0, 0]], [[0.9, 0.1, 0.0]])
    with pytest.raises(ValueError, match=r"precision: y_true must have the shape of y_pred.*\(2, 3\)"):
        metrics.Precision()([[1, 0], [0, 1]], [[0.9, 0.1, 0.0], [0.9, 0.1, 0.0]])
    with pytest.raises(ValueError, match=r"categorical_accuracy: y_true must have the shape of y_pred.*sparse"):
        metrics.CategoricalAccuracy()([0, 1], [[0.9, 0.1], [0.2, 0.8]])
    with pytest.raises(ValueError, match=r"sparse_categorical_accuracy: .*expected shape \(2,\).*\(2, 2\)"):
        metrics.SparseCategoricalAccuracy()([[0, 1], [1, 0]], [[0.9, 0.1], [0.2, 0.8]])
    with pytest.raises(ValueError, match=r"mean: sample_weight of shape \(3,\).*\(2,\)"):
        metrics.Mean()([1.0, 2.0], sample_weight=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"r2_score: expects .*y_true.shape=\(2, 1\), y_pred.shape=\(2, 2\)"):
        metrics.R2Score()([[1.0], [2.0]], [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match=r"auc: multi_label AUC expects y_pred of shape \(batch, 2\)"):
        metrics.AUC(multi_label=True, num_labels=2)([[1, 0, 1]], [[0.2, 0.3, 0.4]])
    accuracy = metrics.Accuracy()
    with pytest.raises(ValueError, match=r"accuracy: state must be the dict Accuracy.init_state\(\) returns"):
        accuracy.update_state(metrics.Sum().init_state(), [1], [1])


# ------------------------------------------------------------- mx.compile


def test_metric_updates_compile_with_mlx(mlx_backend):
    import mlx.core as mx

    rng = np.random.default_rng(12)
    y = mx.array(rng.integers(0, 2, (8, 1)).astype(np.float32))
    p = mx.array(rng.uniform(size=(8, 1)).astype(np.float32))
    chosen = [metrics.AUC(num_thresholds=20), metrics.BinaryAccuracy(), metrics.Precision(thresholds=[0.3, 0.6]),
              metrics.F1Score(threshold=0.5), metrics.R2Score(), metrics.Mean()]

    def step(states, y, p):
        return [m.update_state(s, p) if isinstance(m, metrics.Mean) and not isinstance(m, metrics.MeanMetricWrapper)
                else m.update_state(s, y, p) for m, s in zip(chosen, states)]

    states = [m.init_state((8, 1)) for m in chosen]
    eager = step(states, y, p)
    compiled = mx.compile(step)(states, y, p)
    for metric, a, b in zip(chosen, eager, compiled):
        assert_close(metric.result(b), ops.to_numpy(metric.result(a)), err_msg=metric.name)
