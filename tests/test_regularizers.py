"""``ember.regularizers``: penalty values against NumPy float64 formulas on every backend,
identifier resolution, configs, gradients and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ember
from ember import ops, regularizers
from ember.autodiff import value_and_grad
from ember.saving import register_serializable
from ember.serialization import deserialize, serialize
from tests.helpers import assert_close
from tests.tolerances import FLOAT32_PAIR

RNG = np.random.default_rng(0)
W = RNG.normal(size=(4, 3)).astype(np.float32)


def _value(regularizer, w):
    return float(ops.to_numpy(regularizer(ops.convert_to_tensor(w))))


def _orthogonal_reference(w, factor, mode):
    """Keras's formula written out: mean |cosine| between distinct rows (or columns), times factor."""
    w = np.asarray(w, dtype=np.float64)
    vectors = w if mode == "rows" else w.T
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-7)
    gram = unit @ unit.T
    n = gram.shape[0]
    off = np.abs(gram - np.diag(np.diag(gram))).sum()
    return factor * 0.5 * off / (n * (n - 1) / 2.0)


@pytest.mark.parametrize("regularizer, reference", [
    (regularizers.L1(0.3), lambda w: 0.3 * np.abs(w).sum()),
    (regularizers.L2(0.1), lambda w: 0.1 * np.square(w).sum()),
    (regularizers.L1L2(l1=0.02, l2=0.5), lambda w: 0.02 * np.abs(w).sum() + 0.5 * np.square(w).sum()),
    (regularizers.L1L2(), lambda w: 0.0),
    (regularizers.L1(), lambda w: 0.01 * np.abs(w).sum()),
    (regularizers.L2(), lambda w: 0.01 * np.square(w).sum()),
    (regularizers.OrthogonalRegularizer(0.7, "rows"), lambda w: _orthogonal_reference(w, 0.7, "rows")),
    (regularizers.OrthogonalRegularizer(0.7, "columns"), lambda w: _orthogonal_reference(w, 0.7, "columns")),
])
def test_values_match_numpy(backend, regularizer, reference):
    out = regularizer(ops.convert_to_tensor(W))
    assert ops.shape(out) == ()
    assert_close(out, reference(W.astype(np.float64)))


def test_values_keep_float64(backend):
    w64 = W.astype(np.float64)
    out = regularizers.L1L2(l1=0.1, l2=0.2)(ops.convert_to_tensor(w64))
    assert_close(out, 0.1 * np.abs(w64).sum() + 0.2 * np.square(w64).sum(), rtol=1e-10, atol=0, dtype="float64")


def test_orthogonal_regularizer_extremes(backend):
    reg = regularizers.OrthogonalRegularizer(factor=1.0)
    assert _value(reg, np.eye(3, dtype=np.float32)) == 0.0  # exact: unit rows, products of 0s and 1s
    # Identical rows: every cosine is 1, so the mean is 1 (float32: normalise, a 2-term dot, a mean of 6 values:
    # 10 roundings, 10 u = 6e-7).
    assert _value(reg, np.ones((3, 2), dtype=np.float32)) == pytest.approx(1.0, rel=1e-6)
    # A zero row contributes zero cosines instead of NaN.
    w = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]], dtype=np.float32)
    assert _value(reg, w) == pytest.approx(_orthogonal_reference(w, 1.0, "rows"), rel=1e-6)  # 2 / 6 in float32: u
    # A single row has no pairs: no penalty.
    assert _value(reg, np.ones((1, 4), dtype=np.float32)) == 0.0
    with pytest.raises(ValueError, match=r"OrthogonalRegularizer.*rank-2.*\(2, 2, 2\)"):
        reg(ops.ones((2, 2, 2)))


def test_l2_gradient(backend):
    reg = regularizers.L1L2(l1=0.1, l2=0.25)
    value, grad = value_and_grad(lambda w: reg(w))(ops.convert_to_tensor(W))
    w64 = W.astype(np.float64)
    assert_close(value, 0.1 * np.abs(w64).sum() + 0.25 * np.square(w64).sum())
    assert_close(grad, 0.1 * np.sign(w64) + 0.5 * w64)


def test_get_resolves_identifiers():
    assert regularizers.get(None) is None
    assert regularizers.get("l1") == regularizers.L1(0.01)
    assert regularizers.get("l2") == regularizers.L2(0.01)
    assert regularizers.get("l1_l2") == regularizers.L1L2(l1=0.01, l2=0.01)  # as Keras documents the string
    assert regularizers.get("L1L2") == regularizers.L1L2()
    assert regularizers.get("orthogonal_regularizer") == regularizers.OrthogonalRegularizer()
    reg = regularizers.L2(0.3)
    assert regularizers.get(reg) is reg
    assert regularizers.get(regularizers.L1) == regularizers.L1()
    assert regularizers.get({"class_name": "ember>L2", "config": {"l2": 0.3}}) == reg
    assert regularizers.get({"class_name": "L1", "config": {"l1": 0.2}}) == regularizers.L1(0.2)

    def custom(w):
        return ops.sum(w)

    assert regularizers.get(custom) is custom


def test_defaults_and_none_arguments():
    assert regularizers.L1(None).l1 == 0.01
    assert regularizers.L2(None).l2 == 0.01
    assert regularizers.L1L2(None, None) == regularizers.L1L2(0.0, 0.0)
    assert regularizers.L1L2(l2=0.1).l1 == 0.0  # Keras: L1L2(l2=...) has no L1 part
    assert regularizers.L2(1).l2 == 1.0 and isinstance(regularizers.L2(1).l2, float)


@pytest.mark.parametrize("regularizer", [
    regularizers.L1(0.5), regularizers.L2(0.25), regularizers.L1L2(0.1, 0.2),
    regularizers.OrthogonalRegularizer(0.3, "columns"),
])
def test_config_round_trip(regularizer):
    config = regularizer.get_config()
    assert type(regularizer).from_config(config) == regularizer
    data = json.loads(json.dumps(serialize(regularizer)))
    assert data["class_name"] == f"ember>{type(regularizer).__name__}"
    assert deserialize(data) == regularizer
    assert regularizers.get(data) == regularizer
    assert hash(regularizer) == hash(deserialize(data))  # usable in layer treespecs


def test_custom_regularizer_subclass_serializes():
    @register_serializable(package="tests")
    class Scaled(regularizers.Regularizer):
        def __init__(self, factor=1.0):
            self.factor = factor

        def __call__(self, x):
            return ops.multiply(self.factor, ops.sum(x))

        def get_config(self):
            return {"factor": self.factor}

    rebuilt = regularizers.get(json.loads(json.dumps(serialize(Scaled(2.0)))))
    assert isinstance(rebuilt, Scaled) and rebuilt.factor == 2.0
    assert float(ops.to_numpy(rebuilt(ops.ones((3,))))) == 6.0
    assert regularizers.Regularizer()(ops.ones((2,))) == 0.0
    with pytest.raises(NotImplementedError, match="get_config"):
        regularizers.Regularizer().get_config()


@pytest.mark.parametrize("make, message", [
    (lambda: regularizers.L1(-0.1), r"L1: l1 must be a non-negative finite float, received -0.1"),
    (lambda: regularizers.L2(float("nan")), r"L2: l2 must be a non-negative finite float"),
    (lambda: regularizers.L2(float("inf")), r"L2: l2"),
    (lambda: regularizers.L1L2(l1="0.1"), r"L1L2: l1 .*'0.1'"),
    (lambda: regularizers.L1L2(l2=True), r"L1L2: l2 .*True"),
    (lambda: regularizers.OrthogonalRegularizer(-1.0), r"OrthogonalRegularizer: factor"),
    (lambda: regularizers.OrthogonalRegularizer(0.1, mode="diag"),
     r"mode must be 'rows' or 'columns', received 'diag'"),
    (lambda: regularizers.get("l3"), r"regularizer: unknown regularizer 'l3'; expected one of .*'l1_l2'"),
    (lambda: regularizers.get({"l2": 0.1}), r"keys 'class_name' and 'config'"),
    (lambda: regularizers.get({"class_name": "ember>NoSuch", "config": {}}), r"unknown class"),
])
def test_bad_arguments_raise_value_error(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_types_raise_type_error():
    with pytest.raises(TypeError, match=r"Dense: kernel_regularizer: expected a regularizer name.*received 3"):
        regularizers.get(3, "Dense: kernel_regularizer")
    with pytest.raises(TypeError, match=r"expected a Regularizer subclass, received class int"):
        regularizers.get(int)


def test_regularizers_are_immutable():
    reg = regularizers.L2(0.1)
    with pytest.raises(AttributeError):
        reg.l2 = 0.5
    assert ember.regularizers is regularizers


def test_lowercase_regularizer_names_match_keras(backend):
    import os

    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    x = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    for ours, theirs in [(regularizers.l1(0.1), keras.regularizers.l1(0.1)),
                         (regularizers.l2(0.2), keras.regularizers.l2(0.2)),
                         (regularizers.l1_l2(l1=0.1, l2=0.3), keras.regularizers.l1_l2(l1=0.1, l2=0.3)),
                         (regularizers.orthogonal_regularizer(0.1), keras.regularizers.orthogonal_regularizer(0.1))]:
        expected = float(keras.ops.convert_to_numpy(theirs(keras.ops.convert_to_tensor(x))))
        np.testing.assert_allclose(float(ops.to_numpy(ours(ops.convert_to_tensor(x)))), expected, **FLOAT32_PAIR)
