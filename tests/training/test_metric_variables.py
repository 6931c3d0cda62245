"""Keras-style metrics (issue 18 item 2): ``add_variable`` subclasses and the stateful
``update_state``/``result``/``reset_state`` of every metric, on every backend.

References: NumPy float64 for a custom F1 metric, Keras 3 (torch backend) for the built-in
metrics used directly on the same batches.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.serialization import register_serializable
from tests.helpers import needs, optional_import
from tests.tolerances import FLOAT32_PAIR

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported (the reference)
keras = optional_import("keras")  # None on a core-only install: the comparison with Keras skips

RTOL = 1e-5  # float32 sums of a few dozen terms


@register_serializable("tests")
class BinaryF1(ember.metrics.Metric):
    """The Keras developer guide's custom metric pattern: counts in add_variable variables."""

    def __init__(self, threshold=0.5, name="binary_f1", **kwargs):
        super().__init__(name=name, **kwargs)
        self.threshold = threshold
        self.true_positives = self.add_variable(shape=(), initializer="zeros", name="true_positives")
        self.false_positives = self.add_variable(shape=(), initializer="zeros", name="false_positives")
        self.false_negatives = self.add_variable(shape=(), initializer="zeros", name="false_negatives")

    def update_state(self, y_true, y_pred, sample_weight=None):
        truth = ops.cast(ops.greater(ops.reshape(y_true, (-1,)), 0.5), self.dtype)
        predicted = ops.cast(ops.greater(ops.reshape(y_pred, (-1,)), self.threshold), self.dtype)
        weight = ops.ones_like(truth) if sample_weight is None else ops.cast(ops.reshape(sample_weight, (-1,)),
                                                                             self.dtype)
        self.true_positives.assign_add(ops.sum(weight * truth * predicted))
        self.false_positives.assign_add(ops.sum(weight * (1.0 - truth) * predicted))
        self.false_negatives.assign_add(ops.sum(weight * truth * (1.0 - predicted)))

    def result(self):
        tp = self.true_positives
        return ops.divide(2.0 * tp, ops.maximum(2.0 * tp + self.false_positives + self.false_negatives, 1e-12))

    def reset_state(self):
        for variable in self.variables:
            variable.assign(ops.zeros(variable.shape))

    def get_config(self):
        return {**super().get_config(), "threshold": self.threshold}


def _f1_reference(y_true, y_pred, weight=None, threshold=0.5):
    truth = (np.ravel(y_true) > 0.5).astype(np.float64)
    predicted = (np.ravel(y_pred) > threshold).astype(np.float64)
    weight = np.ones_like(truth) if weight is None else np.ravel(weight).astype(np.float64)
    tp = np.sum(weight * truth * predicted)
    fp = np.sum(weight * (1 - truth) * predicted)
    fn = np.sum(weight * truth * (1 - predicted))
    return 2 * tp / max(2 * tp + fp + fn, 1e-12)


def _batches(seed=0):
    rng = np.random.default_rng(seed)
    return [((rng.random(n) > 0.5).astype("float32"), rng.random(n).astype("float32"), rng.random(n).astype("float32"))
            for n in (7, 12, 5)]


def test_custom_metric_accumulates_like_numpy(backend):
    metric = BinaryF1(threshold=0.4)
    batches = _batches()
    for y, p, w in batches:
        metric.update_state(y, p, sample_weight=w)
    all_y, all_p, all_w = (np.concatenate(parts) for parts in zip(*batches))
    np.testing.assert_allclose(float(ops.to_numpy(metric.result())), _f1_reference(all_y, all_p, all_w, 0.4),
                               rtol=RTOL)
    assert [v.path for v in metric.variables] == ["true_positives", "false_positives", "false_negatives"]
    metric.reset_state()
    assert float(ops.to_numpy(metric.result())) == 0.0
    metric.update_state(batches[0][0], batches[0][1])
    np.testing.assert_allclose(float(ops.to_numpy(metric.result())),
                               _f1_reference(batches[0][0], batches[0][1], threshold=0.4), rtol=RTOL)


def test_custom_metric_pure_form_leaves_the_metric_alone(backend):
    metric = BinaryF1()
    y, p, _ = _batches()[1]
    state = metric.update_state(metric.init_state(), y, p)
    assert sorted(state) == ["false_negatives", "false_positives", "true_positives"]
    np.testing.assert_allclose(float(ops.to_numpy(metric.result(state))), _f1_reference(y, p), rtol=RTOL)
    assert float(ops.to_numpy(metric.result())) == 0.0  # its own state never saw the batch
    np.testing.assert_allclose(float(ops.to_numpy(metric(y, p))), _f1_reference(y, p), rtol=RTOL)


def _classifier():
    inputs = ember.Input((3,))
    return ember.Model(inputs, layers.Dense(1, activation="sigmoid", name="out")(inputs))


def test_custom_metric_in_compile_equals_numpy_and_survives_save_and_load(backend, tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(48, 3)).astype("float32")
    y = (x[:, :1] + 0.3 * rng.normal(size=(48, 1)) > 0).astype("float32")
    model = _classifier()
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.SGD(0.1), loss="binary_crossentropy", metrics=[BinaryF1()])
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    assert "binary_f1" in history.history
    predictions = model.predict(x, verbose=0)
    logs = model.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
    np.testing.assert_allclose(logs["binary_f1"], _f1_reference(y, predictions), rtol=RTOL)
    path = tmp_path / "model.h5"
    model.save(path)
    loaded = ember.load_model(path)
    metric = loaded._training.trainer.compile_metrics.entries[0].metric
    assert type(metric) is BinaryF1 and metric.threshold == 0.5
    np.testing.assert_allclose(loaded.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)["binary_f1"],
                               logs["binary_f1"], rtol=RTOL)


KERAS_PAIRS = [
    ("BinaryAccuracy", {}, "binary"),
    ("AUC", {"num_thresholds": 50}, "binary"),
    ("Precision", {}, "binary"),
    ("Recall", {}, "binary"),
    ("MeanSquaredError", {}, "regression"),
    ("MeanAbsoluteError", {}, "regression"),
    ("SparseCategoricalAccuracy", {}, "sparse"),
    ("F1Score", {"threshold": 0.5}, "multilabel"),
]


def _keras_batches(kind, seed=2):
    rng = np.random.default_rng(seed)
    out = []
    for n in (6, 9):
        if kind == "binary":
            out.append(((rng.random((n, 1)) > 0.5).astype("float32"), rng.random((n, 1)).astype("float32")))
        elif kind == "regression":
            out.append((rng.normal(size=(n, 2)).astype("float32"), rng.normal(size=(n, 2)).astype("float32")))
        elif kind == "sparse":
            out.append((rng.integers(0, 3, size=(n, 1)).astype("int64"), rng.random((n, 3)).astype("float32")))
        else:
            out.append(((rng.random((n, 3)) > 0.5).astype("float32"), rng.random((n, 3)).astype("float32")))
    return out


@needs("keras")
@pytest.mark.parametrize("name, kwargs, kind", KERAS_PAIRS)
def test_built_in_metrics_used_directly_match_keras(backend, name, kwargs, kind):
    ours, theirs = getattr(ember.metrics, name)(**kwargs), getattr(keras.metrics, name)(**kwargs)
    for y, p in _keras_batches(kind):
        ours.update_state(y, p)
        theirs.update_state(y, p)
        np.testing.assert_allclose(np.asarray(ops.to_numpy(ours.result())),
                                   keras.ops.convert_to_numpy(theirs.result()), **FLOAT32_PAIR)
    ours.reset_state()
    theirs.reset_state()
    # exact: both report the result of zeroed variables
    np.testing.assert_array_equal(np.asarray(ops.to_numpy(ours.result())),
                                  keras.ops.convert_to_numpy(theirs.result()))


def test_mean_with_sample_weights_and_the_stateful_alias(backend):
    mean = ember.metrics.Mean()
    mean.update_state([1.0, 2.0, 3.0], sample_weight=[1.0, 0.0, 2.0])
    mean.update_state(5.0)
    assert float(ops.to_numpy(mean.result())) == pytest.approx((1 + 6 + 5) / 4)
    handle = ember.metrics.Mean().stateful()  # the earlier Ember-only wrapper keeps working
    handle.update_state([2.0, 4.0])
    assert float(ops.to_numpy(handle.result())) == 3.0


def test_metric_update_inside_a_tape_keeps_no_gradient_history(backend):
    mean = ember.metrics.Mean()
    x = ops.convert_to_tensor(np.array([1.0, 3.0], "float32"))
    with ember.GradientTape() as tape:
        tape.watch(x)
        loss = ops.sum(ops.square(x))
        mean.update_state(loss)
    np.testing.assert_allclose(ops.to_numpy(tape.gradient(loss, x)), [2.0, 6.0])
    if ember.get_backend() == "torch":
        assert not any(v.requires_grad for v in mean._stateful_state.values())
    assert float(ops.to_numpy(mean.result())) == 10.0


def test_add_variable_bad_input_names_the_metric_and_the_argument():
    ember.set_backend("numpy")

    class Twice(ember.metrics.Metric):
        def __init__(self, **kwargs):
            super().__init__(name="twice", **kwargs)
            self.a = self.add_variable(shape=(), name="a")
            self.b = self.add_variable(shape=(), name="a")

    with pytest.raises(ValueError, match="'twice'.*already exists"):
        Twice()

    class Mean2(ember.metrics.Metric):
        def __init__(self, **kwargs):
            super().__init__(name="m2", **kwargs)
            self.total = self.add_variable(shape=(), aggregation="mean", name="total")

    with pytest.raises(ValueError, match="m2: add_variable aggregation='mean'"):
        Mean2()
    metric = BinaryF1()
    metric.update_state([1.0], [0.9])
    with pytest.raises(RuntimeError, match="__init__"):
        metric.add_variable(shape=(), name="late")
    with pytest.raises(ValueError, match="binary_f1: state must be the dict init_state"):
        metric.result({"true_positives": ops.zeros(())})

    class Unreduced(ember.metrics.Metric):
        def __init__(self, **kwargs):
            super().__init__(name="unreduced", **kwargs)
            self.total = self.add_variable(shape=(), name="total")

        def update_state(self, values):
            self.total.assign_add(values)  # forgot ops.sum

        def result(self):
            return self.total

    unreduced = Unreduced()
    with pytest.raises(ValueError, match="assign expects shape"):
        unreduced.update_state([1.0, 2.0])
    assert float(ops.to_numpy(unreduced.result())) == 0.0  # a failing update changes nothing
