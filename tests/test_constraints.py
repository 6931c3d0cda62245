"""``ember.constraints``: projections against NumPy float64 formulas (Keras's) on every
backend, identifier resolution, configs, ``apply_constraints`` and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ember import constraints, ops
from ember.serialization import deserialize, serialize
from tests.helpers import assert_close
from tests.tolerances import FLOAT32

EPS = 1e-7  # Keras's backend.epsilon(), added to the norms
RNG = np.random.default_rng(3)
W = (RNG.normal(size=(5, 4)) * np.array([0.1, 0.5, 2.0, 5.0])).astype(np.float32)  # norms below and above 1
KERNEL = RNG.normal(size=(3, 3, 2, 4)).astype(np.float32)  # a channels-last Conv2D kernel


def _norms(w, axis):
    return np.sqrt(np.sum(np.square(w), axis=axis, keepdims=True))


def _max_norm(w, max_value, axis):
    n = _norms(w, axis)
    return w * (np.clip(n, 0, max_value) / (EPS + n))


def _min_max_norm(w, low, high, rate, axis):
    n = _norms(w, axis)
    desired = rate * np.clip(n, low, high) + (1 - rate) * n
    return w * (desired / (EPS + n))


@pytest.mark.parametrize("constraint, w, reference", [
    (constraints.MaxNorm(1.0), W, lambda w: _max_norm(w, 1.0, 0)),
    (constraints.MaxNorm(), W, lambda w: _max_norm(w, 2.0, 0)),
    (constraints.MaxNorm(1.5, axis=1), W, lambda w: _max_norm(w, 1.5, 1)),
    (constraints.MaxNorm(1.0, axis=[0, 1, 2]), KERNEL, lambda w: _max_norm(w, 1.0, (0, 1, 2))),
    (constraints.NonNeg(), W, lambda w: np.maximum(w, 0.0)),
    (constraints.UnitNorm(), W, lambda w: w / (EPS + _norms(w, 0))),
    (constraints.UnitNorm(axis=(0, 1, 2)), KERNEL, lambda w: w / (EPS + _norms(w, (0, 1, 2)))),
    (constraints.MinMaxNorm(), W, lambda w: _min_max_norm(w, 0.0, 1.0, 1.0, 0)),
    (constraints.MinMaxNorm(0.5, 3.0, rate=0.5, axis=1), W, lambda w: _min_max_norm(w, 0.5, 3.0, 0.5, 1)),
    (constraints.Constraint(), W, lambda w: w),
])
def test_projections_match_numpy(backend, constraint, w, reference):
    out = constraint(ops.convert_to_tensor(w))
    assert_close(out, reference(w.astype(np.float64)))


def test_projections_enforce_the_bounds(backend):
    norms = np.linalg.norm(ops.to_numpy(constraints.MaxNorm(1.0)(ops.convert_to_tensor(W))), axis=0)
    assert np.all(norms <= 1.0 + 1e-6)
    assert norms[0] == pytest.approx(np.linalg.norm(W[:, 0]), rel=1e-5)  # a small column is left alone
    norms = np.linalg.norm(ops.to_numpy(constraints.MinMaxNorm(0.5, 2.0)(ops.convert_to_tensor(W))), axis=0)
    assert np.all((norms >= 0.5 - 1e-5) & (norms <= 2.0 + 1e-5))
    norms = np.linalg.norm(ops.to_numpy(constraints.UnitNorm()(ops.convert_to_tensor(W))), axis=0)
    np.testing.assert_allclose(norms, 1.0, **FLOAT32)


def test_get_resolves_identifiers():
    assert constraints.get(None) is None
    assert constraints.get("max_norm") == constraints.MaxNorm(2.0, 0)
    assert constraints.get("non_neg") == constraints.NonNeg()
    assert constraints.get("unit_norm") == constraints.UnitNorm()
    assert constraints.get("min_max_norm") == constraints.MinMaxNorm()
    assert constraints.get("MaxNorm") == constraints.MaxNorm()
    c = constraints.MaxNorm(3.0)
    assert constraints.get(c) is c
    assert constraints.get(constraints.UnitNorm) == constraints.UnitNorm()
    assert constraints.get({"class_name": "ember>UnitNorm", "config": {"axis": 1}}) == constraints.UnitNorm(1)

    def clip(w):
        return ops.clip(w, -1.0, 1.0)

    assert constraints.get(clip) is clip


@pytest.mark.parametrize("constraint", [
    constraints.MaxNorm(1.5, axis=[0, 1, 2]), constraints.NonNeg(), constraints.UnitNorm(axis=1),
    constraints.MinMaxNorm(0.1, 2.0, 0.5, axis=0),
])
def test_config_round_trip(constraint):
    config = constraint.get_config()
    assert type(constraint).from_config(config) == constraint
    data = json.loads(json.dumps(serialize(constraint)))
    assert data["class_name"] == f"ember>{type(constraint).__name__}"
    assert deserialize(data) == constraint
    assert hash(deserialize(data)) == hash(constraint)


def test_apply_constraints_nested_and_pure(backend):
    kernel = ops.convert_to_tensor(W)
    bias = ops.convert_to_tensor(np.array([-1.0, 2.0], dtype=np.float32))
    inner = ops.ones((2,))
    params = {"dense": {"kernel": kernel, "bias": bias}, "block": {"inner": {"w": inner}}}
    spec = {"dense": {"kernel": constraints.MaxNorm(1.0), "bias": constraints.NonNeg()}}
    new = constraints.apply_constraints(spec, params)
    assert_close(new["dense"]["kernel"], _max_norm(W.astype(np.float64), 1.0, 0))
    assert_close(new["dense"]["bias"], np.array([0.0, 2.0]))
    assert new["block"] is params["block"]  # unconstrained entries pass through
    assert params["dense"]["kernel"] is kernel and params["dense"]["bias"] is bias  # input dict unchanged
    np.testing.assert_array_equal(ops.to_numpy(bias), [-1.0, 2.0])
    assert constraints.apply_constraints({}, params) is params
    with pytest.raises(ValueError, match=r"apply_constraints: a constraint is given for 'gamma'.*\['bias', 'kernel'\]"):
        constraints.apply_constraints({"dense": {"gamma": constraints.NonNeg()}}, params)


@pytest.mark.parametrize("make, error, message", [
    (lambda: constraints.MaxNorm(-1.0), ValueError,
     r"MaxNorm: max_value must be a finite number >= 0.0, received -1.0"),
    (lambda: constraints.MaxNorm(1.0, axis="0"), TypeError, r"MaxNorm: axis must be an int or a non-empty list"),
    (lambda: constraints.UnitNorm(axis=[0, 0]), ValueError, r"UnitNorm: axis must not repeat"),
    (lambda: constraints.MinMaxNorm(2.0, 1.0), ValueError, r"max_value \(1.0\) must be >= min_value \(2.0\)"),
    (lambda: constraints.MinMaxNorm(rate=1.5), ValueError, r"rate must be in \[0, 1\]"),
    (lambda: constraints.get("max"), ValueError,
         r"unknown constraint 'max' \(did you mean 'max_norm'\?\); expected one of .*'max_norm'"),
    (lambda: constraints.get(1.0), TypeError, r"expected a constraint name.*received 1.0"),
    (lambda: constraints.get(dict), TypeError, r"expected a Constraint subclass"),
])
def test_bad_arguments(make, error, message):
    with pytest.raises(error, match=message):
        make()
