"""Losses: values against NumPy float64 references written here, gradients against torch
autograd in float64, reductions and sample weights as Keras 3 defines them, stability,
resolution by name, serialization and bad input.

The references restate Keras's formulas independently of the code under test:
per-sample losses are means over the last axis (sums for crossentropies, KL divergence
and cosine similarity), probabilities are clipped to ``[1e-7, 1 - 1e-7]``. The torch
references use torch's own loss functions where torch has the same loss
(``mse_loss``, ``l1_loss``, ``huber_loss``, ``binary_cross_entropy(_with_logits)``,
``cross_entropy`` with ``label_smoothing``, ``nll_loss``, ``kl_div``,
``poisson_nll_loss``, ``cosine_similarity``) and write the others out in torch ops.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import optree
import pytest

import ember
from ember import losses, ops, serialization
from tests.helpers import assert_close, float64_device, needs, optional_import

# The references of a few tests; None on a core-only install, where those tests skip.
skm = optional_import("sklearn.metrics")
torch = optional_import("torch")
F = optional_import("torch.nn.functional")

EPS = 1e-7
BATCH, DIM = 6, 4
REDUCTIONS = ("sum", "sum_over_batch_size", "mean", "mean_with_sample_weight", "none", None)


# ------------------------------------------------------------ NumPy references


def _logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    return m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))


def _signed(t):
    return 2.0 * t - 1.0 if np.all((t == 0) | (t == 1)) else t


def _norm(x):
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), EPS)


def np_bce(t, p, from_logits=False, label_smoothing=0.0):
    t = t * (1 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:  # -log(sigmoid(x)) = logaddexp(0, -x)
        per = t * np.logaddexp(0.0, -p) + (1 - t) * np.logaddexp(0.0, p)
    else:
        q = np.clip(p, EPS, 1 - EPS)
        per = -(t * np.log(q) + (1 - t) * np.log(1 - q))
    return per.mean(-1)


def np_cce(t, p, from_logits=False, label_smoothing=0.0):
    t = t * (1 - label_smoothing) + label_smoothing / t.shape[-1]
    log_p = p - _logsumexp(p) if from_logits else np.log(np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS))
    return -(t * log_p).sum(-1)


def np_scce(labels, p, from_logits=False):
    return np_cce(np.eye(p.shape[-1])[labels.astype(int)], p, from_logits)


NP_REFS = {
    "mse": lambda t, p: ((t - p) ** 2).mean(-1),
    "mae": lambda t, p: np.abs(t - p).mean(-1),
    "mape": lambda t, p: 100 * np.abs((t - p) / np.maximum(np.abs(t), EPS)).mean(-1),
    "msle": lambda t, p: ((np.log(np.maximum(p, EPS) + 1) - np.log(np.maximum(t, EPS) + 1)) ** 2).mean(-1),
    "huber": lambda t, p: np.where(np.abs(p - t) <= 0.7, 0.5 * (p - t) ** 2,
                                   0.7 * np.abs(p - t) - 0.5 * 0.7**2).mean(-1),
    "log_cosh": lambda t, p: np.log(np.cosh(p - t)).mean(-1),
    "cosine": lambda t, p: -(_norm(t) * _norm(p)).sum(-1),
    "bce": lambda t, p: np_bce(t, p),
    "bce_logits_smooth": lambda t, p: np_bce(t, p, True, 0.1),
    "cce": lambda t, p: np_cce(t, p),
    "cce_logits_smooth": lambda t, p: np_cce(t, p, True, 0.2),
    "scce": lambda t, p: np_scce(t, p),
    "scce_logits": lambda t, p: np_scce(t, p, True),
    "kld": lambda t, p: (np.clip(t, EPS, 1) * np.log(np.clip(t, EPS, 1) / np.clip(p, EPS, 1))).sum(-1),
    "poisson": lambda t, p: (p - t * np.log(p + EPS)).mean(-1),
    "hinge": lambda t, p: np.maximum(1 - _signed(t) * p, 0).mean(-1),
    "squared_hinge": lambda t, p: (np.maximum(1 - _signed(t) * p, 0) ** 2).mean(-1),
    "categorical_hinge": lambda t, p: np.maximum(((1 - t) * p).max(-1) - (t * p).sum(-1) + 1, 0),
}


# ------------------------------------------------------------- torch references


def _t_signed(t):
    return 2 * t - 1 if bool(torch.all((t == 0) | (t == 1))) else t


TORCH_REFS = {
    "mse": lambda t, p: F.mse_loss(p, t, reduction="none").mean(-1),
    "mae": lambda t, p: F.l1_loss(p, t, reduction="none").mean(-1),
    "mape": lambda t, p: 100 * torch.abs((t - p) / torch.clamp(torch.abs(t), min=EPS)).mean(-1),
    "msle": lambda t, p: ((torch.log1p(torch.clamp(p, min=EPS)) - torch.log1p(torch.clamp(t, min=EPS))) ** 2).mean(-1),
    "huber": lambda t, p: F.huber_loss(p, t, reduction="none", delta=0.7).mean(-1),
    "log_cosh": lambda t, p: torch.log(torch.cosh(p - t)).mean(-1),
    "cosine": lambda t, p: -F.cosine_similarity(t, p, dim=-1),
    "bce": lambda t, p: F.binary_cross_entropy(torch.clamp(p, EPS, 1 - EPS), t, reduction="none").mean(-1),
    "bce_logits_smooth": lambda t, p: F.binary_cross_entropy_with_logits(p, t * 0.9 + 0.05, reduction="none").mean(-1),
    "cce": lambda t, p: -(t * torch.log(torch.clamp(p / p.sum(-1, keepdim=True), EPS, 1 - EPS))).sum(-1),
    "cce_logits_smooth": lambda t, p: F.cross_entropy(p, t, label_smoothing=0.2, reduction="none"),
    "scce": lambda t, p: F.nll_loss(torch.log(torch.clamp(p / p.sum(-1, keepdim=True), EPS, 1 - EPS)), t.long(),
                                    reduction="none"),
    "scce_logits": lambda t, p: F.cross_entropy(p, t.long(), reduction="none"),
    "kld": lambda t, p: F.kl_div(torch.log(torch.clamp(p, EPS, 1)), torch.clamp(t, EPS, 1), reduction="none").sum(-1),
    "poisson": lambda t, p: F.poisson_nll_loss(p, t, log_input=False, full=False, eps=EPS, reduction="none").mean(-1),
    "hinge": lambda t, p: torch.clamp(1 - _t_signed(t) * p, min=0).mean(-1),
    "squared_hinge": lambda t, p: (torch.clamp(1 - _t_signed(t) * p, min=0) ** 2).mean(-1),
    "categorical_hinge": lambda t, p: torch.clamp(((1 - t) * p).max(-1).values - (t * p).sum(-1) + 1, min=0),
}


# ------------------------------------------------------------------ test data


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _data(key, seed=0):
    """``(y_true, y_pred)`` in float64 (labels int for the sparse losses), away from kinks."""
    rng = np.random.default_rng(seed)
    shape = (BATCH, DIM)
    normal = rng.normal(size=shape)
    one_hot = np.eye(DIM)[rng.integers(0, DIM, BATCH)]
    if key in ("mse", "mae", "huber", "log_cosh", "cosine"):
        return rng.normal(size=shape), normal
    if key == "mape":
        return rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape), normal
    if key == "msle":
        return rng.uniform(0.1, 3.0, shape), rng.uniform(0.1, 3.0, shape)
    if key == "bce":
        return rng.integers(0, 2, shape).astype(float), rng.uniform(0.05, 0.95, shape)
    if key == "bce_logits_smooth":
        return rng.uniform(0, 1, shape), 3 * normal
    if key == "cce":
        return one_hot, rng.uniform(0.1, 1.0, shape)  # unnormalised: the loss normalises
    if key == "cce_logits_smooth":
        return _softmax(rng.normal(size=shape)), 3 * normal  # soft labels
    if key in ("scce", "scce_logits"):
        p = rng.uniform(0.1, 1.0, shape) if key == "scce" else 3 * normal
        return rng.integers(0, DIM, BATCH).astype(np.int32), p
    if key == "kld":
        return _softmax(rng.normal(size=shape)), _softmax(normal)
    if key == "poisson":
        return rng.poisson(2.0, shape).astype(float), rng.uniform(0.5, 4.0, shape)
    if key in ("hinge", "squared_hinge"):
        return rng.integers(0, 2, shape).astype(float), rng.uniform(-2, 2, shape)
    if key == "categorical_hinge":
        return one_hot, rng.uniform(-2, 2, shape)
    raise KeyError(key)


# (key, class, function, constructor kwargs)
SPECS = [
    ("mse", losses.MeanSquaredError, losses.mean_squared_error, {}),
    ("mae", losses.MeanAbsoluteError, losses.mean_absolute_error, {}),
    ("mape", losses.MeanAbsolutePercentageError, losses.mean_absolute_percentage_error, {}),
    ("msle", losses.MeanSquaredLogarithmicError, losses.mean_squared_logarithmic_error, {}),
    ("huber", losses.Huber, losses.huber, {"delta": 0.7}),
    ("log_cosh", losses.LogCosh, losses.log_cosh, {}),
    ("cosine", losses.CosineSimilarity, losses.cosine_similarity, {}),
    ("bce", losses.BinaryCrossentropy, losses.binary_crossentropy, {}),
    ("bce_logits_smooth", losses.BinaryCrossentropy, losses.binary_crossentropy,
     {"from_logits": True, "label_smoothing": 0.1}),
    ("cce", losses.CategoricalCrossentropy, losses.categorical_crossentropy, {}),
    ("cce_logits_smooth", losses.CategoricalCrossentropy, losses.categorical_crossentropy,
     {"from_logits": True, "label_smoothing": 0.2}),
    ("scce", losses.SparseCategoricalCrossentropy, losses.sparse_categorical_crossentropy, {}),
    ("scce_logits", losses.SparseCategoricalCrossentropy, losses.sparse_categorical_crossentropy,
     {"from_logits": True}),
    ("kld", losses.KLDivergence, losses.kl_divergence, {}),
    ("poisson", losses.Poisson, losses.poisson, {}),
    ("hinge", losses.Hinge, losses.hinge, {}),
    ("squared_hinge", losses.SquaredHinge, losses.squared_hinge, {}),
    ("categorical_hinge", losses.CategoricalHinge, losses.categorical_hinge, {}),
]
IDS = [spec[0] for spec in SPECS]


def _f32(t, p):
    t = t if t.dtype.kind == "i" else t.astype(np.float32)
    return ops.convert_to_tensor(t), ops.convert_to_tensor(p.astype(np.float32))


def _weights(seed=1):
    return np.random.default_rng(seed).uniform(0.0, 2.0, BATCH)


def _reduce(per, weight, reduction):
    """Keras 3's reduction of per-sample losses, written out."""
    weighted = per if weight is None else per * weight
    if reduction in (None, "none"):
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean_with_sample_weight" and weight is not None:
        return weighted.sum() / weight.sum()
    return weighted.sum() / weighted.size


# ------------------------------------------------------------------- values


@pytest.mark.parametrize("key, cls, fn, kwargs", SPECS, ids=IDS)
def test_per_sample_values_match_numpy(backend, key, cls, fn, kwargs):
    t, p = _data(key)
    expected = NP_REFS[key](t, p)
    yt, yp = _f32(t, p)
    assert_close(fn(yt, yp, **kwargs), expected)
    assert_close(cls(reduction="none", **kwargs)(yt, yp), expected)
    assert_close(cls(reduction="none", **kwargs).call(yt, yp), expected)


@pytest.mark.parametrize("key, cls, fn, kwargs", SPECS, ids=IDS)
def test_reductions_and_sample_weights(backend, key, cls, fn, kwargs):
    t, p = _data(key, seed=2)
    per = NP_REFS[key](t, p)
    yt, yp = _f32(t, p)
    weight = _weights()
    for reduction in REDUCTIONS:
        loss = cls(reduction=reduction, **kwargs)
        message = f"reduction={reduction!r}"
        assert_close(loss(yt, yp), _reduce(per, None, reduction), err_msg=message)
        assert_close(loss(yt, yp, sample_weight=weight), _reduce(per, weight, reduction), err_msg=message)
        # (batch, 1) weights weigh the same (Keras's rank rule, which also makes "none" give (batch, 1)).
        expected = _reduce(per, weight, reduction)
        expected = expected[:, None] if reduction in (None, "none") else expected
        assert_close(loss(yt, yp, sample_weight=weight[:, None]), expected, err_msg=message)


def test_reduction_zero_weights_give_zero_not_nan(backend):
    loss = losses.MeanSquaredError(reduction="mean_with_sample_weight")
    value = loss(np.ones((3, 2), np.float32), np.zeros((3, 2), np.float32), sample_weight=np.zeros(3, np.float32))
    assert_close(value, 0.0)


def test_sequence_losses_take_per_sample_and_per_step_weights(backend):
    rng = np.random.default_rng(3)
    t, p = rng.normal(size=(3, 5, 2)), rng.normal(size=(3, 5, 2))
    per = ((t - p) ** 2).mean(-1)  # (batch, steps)
    loss = losses.MeanSquaredError()
    yt, yp = _f32(t, p)
    steps = rng.uniform(size=(3, 5))
    assert_close(loss(yt, yp, sample_weight=steps), (per * steps).sum() / per.size)
    # Ember: (batch,) weights broadcast over the time axis (Keras 3 would misalign them).
    sample = rng.uniform(size=3)
    assert_close(loss(yt, yp, sample_weight=sample), (per * sample[:, None]).sum() / per.size)
    # Ember: "mean_with_sample_weight" divides by the weight of every step (Keras: of every sequence).
    weighted_mean = losses.MeanSquaredError(reduction="mean_with_sample_weight")
    assert_close(weighted_mean(yt, yp, sample_weight=sample), (per * sample[:, None]).sum() / (5 * sample.sum()))
    assert_close(weighted_mean(yt, yp, sample_weight=steps), (per * steps).sum() / steps.sum())


@needs("sklearn.metrics")
def test_sklearn_agrees_on_weighted_means(backend):
    rng = np.random.default_rng(4)
    weight = rng.uniform(0.1, 2.0, 20)
    t, p = rng.normal(size=(20, 1)), rng.normal(size=(20, 1))
    yt, yp = _f32(t, p)
    mws = "mean_with_sample_weight"
    assert_close(losses.MeanSquaredError(reduction=mws)(yt, yp, weight),
                 skm.mean_squared_error(t, p, sample_weight=weight))
    assert_close(losses.MeanAbsoluteError(reduction=mws)(yt, yp, weight),
                 skm.mean_absolute_error(t, p, sample_weight=weight))
    assert_close(losses.MeanAbsolutePercentageError(reduction=mws)(yt, yp, weight),
                 100 * skm.mean_absolute_percentage_error(t, p, sample_weight=weight))
    labels = rng.integers(0, 2, 20)
    prob = rng.uniform(0.05, 0.95, 20)
    assert_close(losses.BinaryCrossentropy(reduction=mws)(labels[:, None], prob[:, None].astype(np.float32), weight),
                 skm.log_loss(labels, prob, sample_weight=weight))
    classes = rng.integers(0, 3, 20)
    probs = _softmax(rng.normal(size=(20, 3)))
    assert_close(losses.SparseCategoricalCrossentropy(reduction=mws)(classes, probs.astype(np.float32), weight),
                 skm.log_loss(classes, probs, sample_weight=weight, labels=[0, 1, 2]))
    assert_close(losses.CategoricalCrossentropy(reduction=mws)(np.eye(3)[classes], probs.astype(np.float32), weight),
                 skm.log_loss(classes, probs, sample_weight=weight, labels=[0, 1, 2]))
    signs = 2 * labels - 1
    scores = rng.uniform(-2, 2, 20)
    hinge = losses.Hinge(reduction=mws)(signs[:, None].astype(np.float32), scores[:, None].astype(np.float32), weight)
    assert_close(hinge, skm.hinge_loss(signs, scores, sample_weight=weight))


# ---------------------------------------------------------------- gradients


def _torch_reference(key, t, p, weight):
    """``(loss, d loss / d y_pred)`` by torch autograd in float64 (sum_over_batch_size)."""
    tt = torch.tensor(t if t.dtype.kind == "i" else t.astype(np.float64))
    tp = torch.tensor(p.astype(np.float64), requires_grad=True)
    per = TORCH_REFS[key](tt, tp)
    value = (per * torch.tensor(weight)).sum() / per.numel()
    value.backward()
    return value.detach().cpu().numpy(), tp.grad.numpy()


@needs("torch")
@pytest.mark.parametrize("key, cls, fn, kwargs", SPECS, ids=IDS)
def test_gradients_match_torch_autograd(backend, key, cls, fn, kwargs):
    t, p = _data(key, seed=5)
    weight = _weights(6)
    ref_value, ref_grad = _torch_reference(key, t, p, weight)
    loss = cls(**kwargs)
    yt, yp = _f32(t, p)
    value, grad = ember.value_and_grad(lambda pred: loss(yt, pred, sample_weight=weight))(yp)
    assert_close(value, ref_value)
    assert_close(grad, ref_grad, rtol=1e-5, atol=1e-6)
    with float64_device(backend):  # the same in float64, to float64 precision
        yt64 = ops.convert_to_tensor(t if t.dtype.kind == "i" else t.astype(np.float64))
        yp64 = ops.convert_to_tensor(p.astype(np.float64))
        value, grad = ember.value_and_grad(lambda pred: loss(yt64, pred, sample_weight=weight))(yp64)
        assert_close(value, ref_value, rtol=1e-10, atol=1e-12, dtype="float64")
        assert_close(grad, ref_grad, rtol=1e-9, atol=1e-12, dtype="float64")


# ---------------------------------------------------------------- stability


def test_binary_crossentropy_from_huge_logits_is_finite_and_exact(backend):
    labels = np.array([[1.0, 0.0, 1.0, 0.0]], np.float32)
    logits = ops.convert_to_tensor(np.array([[1e4, -1e4, -1e4, 1e4]], np.float32))
    loss = losses.BinaryCrossentropy(from_logits=True)
    value, grad = ember.value_and_grad(lambda x: loss(labels, x))(logits)
    assert_close(value, 5000.0)  # two confident right (0), two confident wrong (1e4 each), mean over 4
    assert_close(grad, [[0.0, 0.0, -0.25, 0.25]])  # (sigmoid(x) - y) / 4


def test_binary_crossentropy_gradient_at_zero_logits(backend):
    # log-sigmoid's kink-free form: the gradient at x = 0 is sigmoid(0) - y = +-0.5 on every
    # backend (MLX's softplus had 0 there before it was written with `where`).
    loss = losses.BinaryCrossentropy(from_logits=True)
    value, grad = ember.value_and_grad(lambda x: loss([[1.0, 0.0]], x))(ops.zeros((1, 2)))
    assert_close(value, np.log(2.0))
    assert_close(grad, [[-0.25, 0.25]])


@pytest.mark.parametrize("sparse", [False, True])
def test_categorical_crossentropy_from_huge_logits_is_finite_and_exact(backend, sparse):
    logits = ops.convert_to_tensor(np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, -1e4]], np.float32))
    if sparse:
        labels, loss = np.array([1, 1]), losses.SparseCategoricalCrossentropy(from_logits=True)
    else:
        labels, loss = np.eye(3, dtype=np.float32)[[1, 1]], losses.CategoricalCrossentropy(from_logits=True)
    value, grad = ember.value_and_grad(lambda x: loss(labels, x))(logits)
    assert_close(value, 1e4)  # (2e4 + 0) / 2
    assert_close(grad, [[0.5, -0.5, 0.0], [0.0, 0.0, 0.0]])  # (softmax - one_hot) / 2


def test_probability_inputs_are_clipped_like_keras(backend):
    low, high = np.float64(np.float32(EPS)), np.float64(np.float32(1 - EPS))  # the float32 clip bounds
    value = losses.binary_crossentropy(np.array([[1.0, 0.0]], np.float32), np.array([[0.0, 1.0]], np.float32))
    assert_close(value, [(-np.log(low) - np.log1p(-high)) / 2])
    value = losses.categorical_crossentropy(np.array([[0.0, 1.0]], np.float32), np.array([[1.0, 0.0]], np.float32))
    assert_close(value, [-np.log(low)])


def test_label_smoothing_as_keras(backend):
    t = np.array([[1.0, 0.0, 0.0]], np.float32)
    logits = np.array([[2.0, -1.0, 0.5]], np.float32)
    smoothed = t * 0.7 + 0.3 / 3  # categorical: towards uniform over the classes
    assert_close(losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.3, reduction="none")(t, logits),
                 -(smoothed * (logits - _logsumexp(logits.astype(np.float64)))).sum(-1))
    binary = t * 0.7 + 0.15  # binary: towards 0.5
    assert_close(losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.3, reduction="none")(t, logits),
                 (binary * np.logaddexp(0, -logits) + (1 - binary) * np.logaddexp(0, logits)).mean(-1))


# ----------------------------------------------------------- ignore_class


@pytest.mark.parametrize("reduction", ["sum", "sum_over_batch_size", "mean_with_sample_weight", "none"])
def test_sparse_ignore_class_masks_entries(backend, reduction):
    rng = np.random.default_rng(7)
    labels = np.array([0, 2, -1, 1, -1, 2])
    logits = rng.normal(size=(6, 3))
    valid = labels != -1
    per = np.where(valid, np_scce(np.where(valid, labels, 0), logits, True), 0.0)
    weight = _weights(8)
    loss = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1, reduction=reduction)
    got = loss(labels, logits.astype(np.float32), sample_weight=weight)
    if reduction == "none":
        expected = per * weight
    elif reduction == "sum":
        expected = (per * weight).sum()
    elif reduction == "sum_over_batch_size":  # Keras: the mean over valid entries only
        expected = (per * weight).sum() / (valid.sum() + EPS)
    else:
        expected = (per * weight).sum() / (weight * valid).sum()
    assert_close(got, expected)


# ------------------------------------------------------------------- dtypes


def test_compute_dtype(backend):
    t, p = np.ones((2, 3)), np.full((2, 3), 0.5)
    assert ops.dtype(losses.MeanSquaredError()(t, p.astype(np.float32))) == "float32"
    with float64_device(backend):
        assert ops.dtype(losses.MeanSquaredError()(t, p)) == "float64"
        assert ops.dtype(losses.MeanSquaredError(dtype="float32")(t, p)) == "float32"
    assert ops.dtype(losses.MeanSquaredError()(t, p.astype(np.float16))) == "float32"  # promoted
    assert_close(losses.MeanSquaredError()(np.zeros((2, 1)), np.array([[1], [3]])), 5.0)  # integer predictions


# ------------------------------------------------------------ get / config


def test_get_resolves_names_aliases_instances_and_configs():
    assert losses.get(None) is None
    assert losses.get("mse") is losses.mean_squared_error
    assert losses.get("MSE") is losses.mean_squared_error
    assert losses.get("bce") is losses.binary_crossentropy
    assert losses.get("kld") is losses.kl_divergence
    assert losses.get("sparse_categorical_crossentropy") is losses.sparse_categorical_crossentropy
    assert isinstance(losses.get("Huber"), losses.Huber)
    assert isinstance(losses.get(losses.Poisson), losses.Poisson)
    instance = losses.LogCosh()
    assert losses.get(instance) is instance
    custom = lambda t, p: t  # noqa: E731
    assert losses.get(custom) is custom
    rebuilt = losses.get(losses.serialize(losses.Huber(delta=2.5, reduction="sum", name="h")))
    assert isinstance(rebuilt, losses.Huber) and rebuilt.get_config() == {
        "name": "h", "reduction": "sum", "dtype": None, "delta": 2.5}


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError, match="unknown loss 'msqe'.*mean_squared_error"):
        losses.get("msqe")
    with pytest.raises(ValueError, match=r"unknown loss 'huberr' \(did you mean 'huber'\?\); expected one of \["):
        losses.get("huberr")
    with pytest.raises(TypeError, match="loss"):
        losses.get(3)


@pytest.mark.parametrize("key, cls, fn, kwargs", SPECS, ids=IDS)
def test_config_round_trip(key, cls, fn, kwargs):
    loss = cls(reduction="sum", name="custom", **kwargs)
    data = json.loads(json.dumps(serialization.serialize(loss)))
    assert data["class_name"] == f"ember>{cls.__name__}"
    rebuilt = serialization.deserialize(data)
    assert type(rebuilt) is cls and rebuilt.get_config() == loss.get_config()
    assert losses.deserialize(losses.serialize(fn)) is fn


def test_loss_function_wrapper_config_round_trip(backend):
    wrapper = losses.LossFunctionWrapper(losses.huber, reduction="sum", delta=0.25)
    data = json.loads(json.dumps(losses.serialize(wrapper)))
    rebuilt = losses.deserialize(data)
    assert rebuilt.fn is losses.huber and rebuilt.get_config() == wrapper.get_config()
    t, p = np.zeros((2, 1), np.float32), np.array([[0.1], [2.0]], np.float32)
    assert_close(rebuilt(t, p), 0.5 * 0.01 + (0.25 * 2.0 - 0.5 * 0.0625))


# --------------------------------------------------------------- bad input


def test_sparse_labels_with_wrong_shape_name_the_loss_and_shapes():
    loss = losses.SparseCategoricalCrossentropy()
    probs = np.full((4, 3), 1 / 3, np.float32)
    with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy.*expected shape \(4,\).*\(4, 2\)"):
        loss(np.zeros((4, 2), np.int32), probs)  # trailing dim != 1
    with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy.*received y_true.shape=\(4, 1, 1\)"):
        loss(np.zeros((4, 1, 1), np.int32), probs)  # rank mismatch
    with pytest.raises(ValueError, match="one-hot labels go to categorical_crossentropy"):
        loss(np.eye(3, dtype=np.float32)[[0, 1, 2, 0]][:, :, None], probs)


def test_sparse_labels_with_bad_values(backend):
    loss = losses.SparseCategoricalCrossentropy()
    probs = np.full((3, 3), 1 / 3, np.float32)
    with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy.*integer class indices.*0.5"):
        loss(np.array([0.0, 0.5, 1.0], np.float32), probs)
    with pytest.raises(ValueError, match=r"class indices must be in \[0, 3\).*3"):
        loss(np.array([0, 3, 1]), probs)
    with pytest.raises(ValueError, match=r"class indices must be in \[0, 3\).*-1"):
        loss(np.array([0, -1, 1]), probs)
    assert_close(loss(np.array([0.0, 2.0, 1.0], np.float32), probs), np.log(3.0))  # integral floats are fine
    with pytest.raises(TypeError, match="sparse_categorical_crossentropy.*bool"):
        loss(np.array([True, False, True]), probs)


def test_value_checks_can_be_skipped_by_the_trainer(backend):
    from ember.validation import unchecked_values

    loss = losses.SparseCategoricalCrossentropy(reduction="none")
    probs = np.full((2, 3), 1 / 3, np.float32)
    with unchecked_values():  # no host sync: out-of-range labels are not looked at
        assert ops.shape(loss(np.array([0, 1]), probs)) == (2,)
    with pytest.raises(ValueError, match="class indices"):
        loss(np.array([0, 7]), probs)


def test_one_hot_width_mismatch_names_the_loss_and_shapes():
    with pytest.raises(ValueError, match=r"categorical_crossentropy.*expected \(2, 3\).*\(2, 4\)"):
        losses.CategoricalCrossentropy()(np.eye(4, dtype=np.float32)[:2], np.full((2, 3), 1 / 3, np.float32))
    with pytest.raises(ValueError, match="sparse_categorical_crossentropy"):
        losses.categorical_crossentropy(np.array([0, 1]), np.full((2, 3), 1 / 3, np.float32))
    with pytest.raises(ValueError, match=r"binary_crossentropy.*\(2, 3\)"):
        losses.BinaryCrossentropy()(np.zeros((2, 3), np.float32), np.full((2, 2), 0.5, np.float32))
    with pytest.raises(ValueError, match=r"mean_squared_error.*y_true.shape=\(2, 3\), y_pred.shape=\(2, 2\)"):
        losses.MeanSquaredError()(np.zeros((2, 3), np.float32), np.zeros((2, 2), np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses.categorical_crossentropy(np.ones((2, 1), np.float32), np.ones((2, 1), np.float32))
    assert any("binary_crossentropy" in str(w.message) for w in caught)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match=r"MeanSquaredError: invalid reduction='avg'.*sum_over_batch_size"):
        losses.MeanSquaredError(reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing must be a float in \\[0, 1\\]"):
        losses.BinaryCrossentropy(label_smoothing=1.5)
    with pytest.raises(ValueError, match="Huber: delta"):
        losses.Huber(delta=0.0)
    with pytest.raises(TypeError, match="ignore_class"):
        losses.SparseCategoricalCrossentropy(ignore_class=0.5)
    with pytest.raises(ValueError, match="dtype must be a floating dtype"):
        losses.Poisson(dtype="int32")
    with pytest.raises(TypeError, match="fn must be callable"):
        losses.LossFunctionWrapper("mse")


def test_bad_sample_weight_and_dtype(backend):
    loss = losses.MeanSquaredError()
    t = np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match=r"mean_squared_error: sample_weight of shape \(3,\).*expected shape \(4,\)"):
        loss(t, t, sample_weight=np.ones(3, np.float32))
    with pytest.raises(TypeError, match="mean_squared_error: y_pred must be real-valued"):
        loss(t, t.astype(np.complex64))


# ------------------------------------------------------------ mx.compile


def test_losses_compile_with_mlx(mlx_backend):
    import mlx.core as mx

    labels = mx.array(np.array([0, 2, 1, 2], np.int32))
    logits = mx.array(np.random.default_rng(9).normal(size=(4, 3)).astype(np.float32))
    scce = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=2)
    hinge = losses.Hinge()

    def step(labels, logits):
        return scce(labels, logits), hinge(ops.cast(ops.greater(logits, 0), "float32"), logits)

    eager = step(labels, logits)
    compiled = mx.compile(step)(labels, logits)
    for a, b in zip(eager, compiled):
        assert_close(b, ops.to_numpy(a))


@needs("torch")
def test_sparse_crossentropy_with_many_classes(backend):
    # Above 1024 classes the label's log-probability is gathered instead of one-hot picked.
    rng = np.random.default_rng(10)
    logits = rng.normal(size=(3, 1100))
    labels = np.array([0, 1099, 517])
    tp = torch.tensor(logits, requires_grad=True)
    reference = F.cross_entropy(tp, torch.tensor(labels))
    reference.backward()
    loss = losses.SparseCategoricalCrossentropy(from_logits=True)
    value, grad = ember.value_and_grad(lambda x: loss(labels, x))(ops.convert_to_tensor(logits.astype(np.float32)))
    assert_close(value, reference.detach().cpu().numpy())
    assert_close(grad, tp.grad.numpy())
    with pytest.raises(ValueError, match=r"class indices must be in \[0, 1100\).*1100"):
        loss(np.array([0, 1100, 3]), logits.astype(np.float32))


# --- string / object labels --------------------------------------------------------------------

_LABEL_FIX = "encode them as integers first, e.g. with a StringLookup layer or numpy.unique("


@pytest.mark.parametrize("labels, dtype_text", [
    (np.array(["cat", "dog", "cat"]), "strings (dtype <U3)"),
    (np.array([b"cat", b"dog", b"cat"]), "bytes (dtype |S3)"),
    (np.array(["cat", 1, 2.0], dtype=object), "Python objects (dtype object)"),
    (["cat", "dog", "cat"], "strings (dtype <U3)"),
])
@pytest.mark.parametrize("loss", [losses.sparse_categorical_crossentropy, losses.SparseCategoricalCrossentropy(),
                                  losses.MeanSquaredError()])
def test_non_numeric_labels_give_one_message_on_every_backend(backend, labels, dtype_text, loss):
    y_pred = np.full((3, 2), 0.5, dtype="float32")
    if loss is losses.sparse_categorical_crossentropy or isinstance(loss, losses.SparseCategoricalCrossentropy):
        owner = "sparse_categorical_crossentropy"
    else:
        owner, y_pred = "mean_squared_error", y_pred[:, 0]
    with pytest.raises(TypeError) as info:
        loss(labels, y_pred)
    assert str(info.value) == (f"{owner}: y_true holds {dtype_text}, but labels must be numbers; "
                               f"{_LABEL_FIX}y_true, return_inverse=True)[1]")


def test_fit_with_string_labels_names_y_and_the_fix_and_leaves_the_model_untrained(backend):
    model = ember.Sequential([ember.Input((4,)), ember.layers.Dense(2, activation="softmax")])
    model.compile(loss="sparse_categorical_crossentropy", optimizer="sgd")
    model.build((None, 4))
    before = [ops.to_numpy(w) for w in optree.tree_leaves(model.state)]
    with pytest.raises(TypeError) as info:
        model.fit(np.zeros((3, 4), "float32"), np.array(["cat", "dog", "cat"]), verbose=0)
    assert str(info.value) == ("fit: y holds strings (dtype <U3), but labels must be numbers; "
                               f"{_LABEL_FIX}y, return_inverse=True)[1]")
    for old, new in zip(before, optree.tree_leaves(model.state), strict=True):
        np.testing.assert_array_equal(old, ops.to_numpy(new))
    # The suggested fix works: integer codes train.
    codes = np.unique(np.array(["cat", "dog", "cat"]), return_inverse=True)[1]
    history = model.fit(np.ones((3, 4), "float32"), codes, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
