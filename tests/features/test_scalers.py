"""StandardScaler/standardize, MinMaxScaler, Normalizer/normalize against scikit-learn.

References are scikit-learn's transformers and functions on the float64 data; Ember
runs on the float32 copy, so values agree to float32 rounding (``rtol 1e-5``, ``atol``
scaled by the data's magnitude where the result is a difference of large numbers).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import features, ops
from tests.helpers import EPS32, assert_close

# scikit-learn is the reference and the data of (nearly) every test: a core-only install skips the file.
preprocessing = pytest.importorskip("sklearn.preprocessing")
sk_datasets = pytest.importorskip("sklearn.datasets")


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 6)) * [1, 10, 100, 0.01, 5, 3] + [0, 5, -50, 1, 0, 2]
    x[:, 4] = 0.1  # a constant column whose value float32 cannot represent exactly
    x[:, 5] = 0.0  # an all-zero column
    return {"iris": sk_datasets.load_iris().data, "breast_cancer": sk_datasets.load_breast_cancer().data, "random": x}


DATA = _data()


@pytest.mark.parametrize("name", sorted(DATA))
@pytest.mark.parametrize("with_mean, with_std", [(True, True), (True, False), (False, True), (False, False)])
def test_standard_scaler_matches_sklearn(backend, name, with_mean, with_std):
    x = DATA[name]
    sk = preprocessing.StandardScaler(with_mean=with_mean, with_std=with_std).fit(x)
    scaler = features.StandardScaler(with_mean=with_mean, with_std=with_std).fit(x.astype(np.float32))
    for attribute in ("mean_", "var_", "scale_"):
        want = getattr(sk, attribute)
        got = getattr(scaler, attribute)
        if want is None:
            assert got is None, attribute
        else:
            assert_close(got, want, rtol=1e-5, atol=1e-6 * np.abs(x).max() ** (2 if attribute == "var_" else 1))
    assert scaler.n_samples_seen_ == sk.n_samples_seen_ and scaler.n_features_in_ == x.shape[1]
    got = scaler.transform(x.astype(np.float32))
    # Centring cancels: the input's own float32 rounding (eps * |x|) survives, relative to
    # each column's scale.
    column_atol = 1e-5 + 4 * np.finfo(np.float32).eps * np.abs(x).max(axis=0) / (sk.scale_ if with_std else 1)
    want = sk.transform(x)
    assert np.all(np.abs(ops.to_numpy(got) - want) <= 1e-5 * np.abs(want) + column_atol)
    assert not np.isnan(ops.to_numpy(got)).any()
    assert_close(scaler.inverse_transform(got), x, rtol=1e-5, atol=1e-5 * np.abs(x).max())


def test_constant_columns_become_zero(backend):
    x = DATA["random"].astype(np.float32)
    got = ops.to_numpy(features.StandardScaler().fit_transform(x))
    np.testing.assert_array_equal(got[:, 4:], 0.0)
    np.testing.assert_array_equal(ops.to_numpy(features.StandardScaler().fit(x).scale_)[4:], 1.0)
    got = ops.to_numpy(features.standardize(x))
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got[:, 4:], 0.0)


@pytest.mark.parametrize("axis", [0, 1])
def test_standardize_matches_sklearn_scale(backend, axis):
    x = DATA["iris"]
    assert_close(features.standardize(x.astype(np.float32), axis=axis), preprocessing.scale(x, axis=axis),
                 rtol=1e-5, atol=1e-5)
    assert_close(features.standardize(x.astype(np.float32), axis=axis, with_std=False),
                 preprocessing.scale(x, axis=axis, with_std=False), rtol=1e-5, atol=1e-5)


def test_standardize_over_several_axes(backend):
    x = np.random.default_rng(1).normal(size=(4, 3, 5)) * 3 + 1
    mean = x.mean(axis=(0, 2), keepdims=True)
    std = x.std(axis=(0, 2), keepdims=True)
    assert_close(features.standardize(x.astype(np.float32), axis=(0, -1)), (x - mean) / std, atol=1e-5)
    assert ops.dtype(features.standardize([[1, 2], [3, 4]])) == "float32"  # integers -> floatx()
    with pytest.raises(ValueError, match="axis 2 is out of range for an input of rank 2"):
        features.standardize(np.ones((2, 2)), axis=2)


@pytest.mark.parametrize("name", sorted(DATA))
@pytest.mark.parametrize("feature_range", [(0, 1), (-1, 3)])
def test_minmax_scaler_matches_sklearn(backend, name, feature_range):
    x = DATA[name]
    sk = preprocessing.MinMaxScaler(feature_range=feature_range).fit(x)
    scaler = features.MinMaxScaler(feature_range=feature_range).fit(x.astype(np.float32))
    magnitude = np.abs(x).max()
    for attribute in ("data_min_", "data_max_", "data_range_"):
        assert_close(getattr(scaler, attribute), getattr(sk, attribute), rtol=1e-6, atol=1e-7 * magnitude)
    assert_close(scaler.scale_, sk.scale_, rtol=1e-5)
    assert_close(scaler.min_, sk.min_, rtol=1e-5, atol=1e-5)
    got = scaler.transform(x.astype(np.float32))
    # x * scale_ + min_ in float32 cancels when a column sits far from zero relative to its range
    # (min_ = -72 for an output in [-1, 3]): the input's rounding and the two operations leave up
    # to ~eps32 * (|x| * scale_ + |min_|) per column; 4 is the safety factor.
    want = sk.transform(x)
    column_atol = 4 * EPS32 * (np.abs(x).max(axis=0) * sk.scale_ + np.abs(sk.min_))
    assert np.all(np.abs(ops.to_numpy(got) - want) <= 1e-5 * np.abs(want) + column_atol)
    assert_close(scaler.inverse_transform(got), x, rtol=1e-5, atol=1e-5 * magnitude)


def test_minmax_clip_and_constant_column(backend):
    x = np.array([[0.0, 3.0], [2.0, 3.0]], np.float32)
    scaler = features.MinMaxScaler(clip=True).fit(x)
    sk = preprocessing.MinMaxScaler(clip=True).fit(x.astype(np.float64))
    new = np.array([[-1.0, 3.0], [5.0, 4.0]], np.float32)
    assert_close(scaler.transform(new), sk.transform(new.astype(np.float64)))
    assert_close(features.MinMaxScaler().fit(x).transform(new), [[-0.5, 0.0], [2.5, 1.0]])


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_normalize_matches_sklearn(backend, norm):
    x = np.vstack([DATA["iris"][:20] - 3, np.zeros((1, 4))])
    want = preprocessing.normalize(x, norm=norm)
    assert_close(features.normalize(x.astype(np.float32), norm=norm), want)
    assert_close(features.normalize(x.astype(np.float32), norm=norm, axis=0),
                 preprocessing.normalize(x, norm=norm, axis=0))
    normalizer = features.Normalizer(norm=norm).fit(x.astype(np.float32))
    assert_close(normalizer.transform(x.astype(np.float32)), want)
    assert normalizer.n_features_in_ == 4
    np.testing.assert_array_equal(ops.to_numpy(normalizer.transform(x.astype(np.float32)))[-1], 0.0)


def test_normalize_any_rank(backend):
    x = np.random.default_rng(2).normal(size=(2, 3, 4))
    want = x / np.linalg.norm(x, axis=1, keepdims=True)
    assert_close(features.normalize(x.astype(np.float32), axis=1), want)


# --------------------------------------------------------------------------- bad input


def test_scaler_bad_input(backend):
    x = DATA["iris"].astype(np.float32)
    for scaler in (features.StandardScaler(), features.MinMaxScaler(), features.Normalizer()):
        name = type(scaler).__name__
        with pytest.raises(features.NotFittedError, match=f"This {name} instance is not fitted yet"):
            scaler.transform(x)
        scaler.fit(x)
        with pytest.raises(ValueError, match=f"x has 3 features, but {name} was fitted with 4 features"):
            scaler.transform(x[:, :3])
        bad = x.copy()
        bad[0, 0] = np.nan
        with pytest.raises(ValueError, match=f"{name}.fit: input x contains NaN"):
            scaler.fit(bad)
        assert scaler.n_features_in_ == 4  # the failed fit left the state alone
        with pytest.raises(ValueError, match="expected a 2-D array"):
            scaler.transform(x[0])
    with pytest.raises(ValueError, match="norm must be one of"):
        features.normalize(x, norm="l3")
    with pytest.raises(ValueError, match="norm must be one of"):
        features.Normalizer(norm="L2")
    with pytest.raises(ValueError, match="feature_range must satisfy lo < hi"):
        features.MinMaxScaler(feature_range=(1, 0))
    with pytest.raises(TypeError, match="feature_range must be a pair"):
        features.MinMaxScaler(feature_range=(0, 1, 2))
    with pytest.raises(TypeError, match="with_mean must be a bool"):
        features.StandardScaler(with_mean="yes")


def test_complex_and_foreign_inputs_are_type_errors(backend):
    with pytest.raises(TypeError, match="complex"):
        features.StandardScaler().fit(np.ones((3, 2), np.complex64))
    other = "numpy" if backend != "numpy" else "torch"
    foreign = ember.Tensor(np.ones((3, 2), np.float32)).to_backend(other) if ember.backends.is_installed(other) \
        else None
    if foreign is not None:
        with pytest.raises(TypeError, match="StandardScaler.fit"):
            features.StandardScaler().fit(foreign)
