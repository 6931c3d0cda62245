"""PCA against scikit-learn (a test-only dependency) on its bundled datasets and random data.

The reference is always scikit-learn's PCA fitted on the float64 data; Ember fits the
float32 copy on every backend. Tolerances:

* explained variance / singular values: float32 rounding relative to the largest
  eigenvalue (``atol = 1e-5 * lambda_0``, rtol 1e-5);
* components: a singular vector is only determined to ``~eps * lambda_0 / gap`` where
  ``gap`` is the distance of its eigenvalue to the nearest other one (Davis–Kahan). The
  round-off behind ``eps`` grows with the dimension ``p`` of the eigenproblem like
  ``sqrt(p)`` (probabilistic rounding-error bound of a p-term inner product, Higham & Mary
  2019), and two independent solvers (Ember's and scikit-learn's) each contribute it, so
  component ``i`` is compared with ``atol = 10 * 2 * sqrt(p) * eps * lambda_0 / gap_i``: a
  safety factor of 10 over that model, derived from the dtype and the problem, never from
  what one CPU produced (measured errors stay below ``3 * eps * lambda_0 / gap_i`` in
  float32 and ``10 * eps * lambda_0 / gap_i`` in float64 on the machines tried). Components whose
  bound exceeds 1e-3 (near-degenerate eigenvalues) are not defined at float32 precision
  and are not compared one by one; the full reconstruction (inverse transform) checks
  the subspace they span;
* transforms: the component tolerance times the largest row norm of the centred data.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from ember import features, ops
from tests.helpers import assert_close, float64_device, needs, optional_import
from tests.tolerances import FLOAT32

# The reference and its bundled data sets; None on a core-only install, where the comparisons skip.
decomposition = optional_import("sklearn.decomposition")
sk_datasets = optional_import("sklearn.datasets")

EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)


def _random_data(seed=0, n=300, p=20):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, p)) @ rng.normal(size=(p, p)) + rng.normal(size=p) * 3


_LOADERS = {
    "iris": lambda: sk_datasets.load_iris().data,
    "digits": lambda: sk_datasets.load_digits().data,
    "breast_cancer": lambda: sk_datasets.load_breast_cancer().data,
    "random": _random_data,
}


@functools.cache
def _dataset(name):
    data = _LOADERS[name]()
    data.setflags(write=False)
    return data


DATASETS = {name: functools.partial(_dataset, name) for name in _LOADERS}


SAFETY = 10  # margin over the round-off model below; see the module docstring
SOLVERS = 2  # Ember's solver and scikit-learn's each contribute their own round-off


def _component_tolerances(reference, eps):
    """Per-component absolute tolerance ``SAFETY * SOLVERS * sqrt(p) * eps * lambda_0 / gap_i``.

    See the module docstring for where each factor comes from.
    """
    lam = reference.explained_variance_
    full = reference._all_variances
    gaps = np.array([np.min(np.abs(np.delete(full, i) - lam[i])) if len(full) > 1 else np.inf
                     for i in range(len(lam))])
    unit = SAFETY * SOLVERS * np.sqrt(len(full)) * eps
    return unit * full[0] / np.maximum(gaps, np.finfo(float).tiny) + unit


@functools.cache
def _cached_reference(name, **kwargs):
    return _reference(_dataset(name), **kwargs)


def _reference(x, **kwargs):
    """scikit-learn's PCA fitted on float64 ``x`` (plus the centred data, for the tolerances)."""
    sk = decomposition.PCA(**kwargs).fit(x)
    sk._all_variances = np.linalg.svd(x - x.mean(axis=0), compute_uv=False) ** 2 / (len(x) - 1)
    return sk


def _compare(pca, sk, x, eps=EPS32, dtype="float32"):
    lam0 = sk.explained_variance_[0]
    k = sk.n_components_
    assert pca.n_components_ == k
    assert_close(pca.explained_variance_, sk.explained_variance_, rtol=10 * eps, atol=100 * eps * lam0, dtype=dtype)
    assert_close(pca.explained_variance_ratio_, sk.explained_variance_ratio_, rtol=10 * eps, atol=100 * eps,
                 dtype=dtype)
    # Squared: sigma = sqrt((n - 1) * lambda) amplifies the round-off of tiny eigenvalues
    # (covariance_eigh), while sigma**2 has the eigenvalues' absolute accuracy.
    assert ops.dtype(pca.singular_values_) == dtype
    assert_close(ops.square(pca.singular_values_), sk.singular_values_ ** 2, rtol=10 * eps,
                 atol=100 * eps * sk.singular_values_[0] ** 2, dtype=dtype)
    assert_close(pca.mean_, sk.mean_, rtol=10 * eps, atol=10 * eps * np.abs(x).max(), dtype=dtype)
    tol = _component_tolerances(sk, eps)
    defined = tol < 1e-3
    assert defined[0], "the leading component must be well defined for this comparison"
    got = ops.to_numpy(pca.components_)
    # Same sign convention: a flipped component would differ by ~2, not by round-off.
    err = np.abs(got - sk.components_).max(axis=1)
    assert np.all(err[defined] <= tol[defined]), (err[defined], tol[defined])
    scale = np.linalg.norm(x - x.mean(axis=0), axis=1).max()
    got_t = ops.to_numpy(pca.transform(x.astype(dtype)))
    want_t = sk.transform(x)
    t_err = np.abs(got_t - want_t).max(axis=0)
    assert np.all(t_err[defined] <= (tol[defined] + 10 * eps) * scale), (t_err[defined], tol[defined] * scale)
    return defined


@needs("sklearn.decomposition", "sklearn.datasets")
@pytest.mark.parametrize("dataset", sorted(DATASETS))
@pytest.mark.parametrize("solver", ["full", "covariance_eigh"])
def test_exact_solvers_match_sklearn(backend, dataset, solver):
    x = DATASETS[dataset]()
    sk = _cached_reference(dataset, svd_solver=solver)
    pca = features.PCA(svd_solver=solver).fit(x.astype(np.float32))
    _compare(pca, sk, x)
    # All components: the reconstruction of inverse_transform(transform(x)) is x itself.
    recon = pca.inverse_transform(pca.transform(x.astype(np.float32)))
    assert_close(recon, sk.inverse_transform(sk.transform(x)), rtol=1e-5, atol=1e-5 * np.abs(x).max())
    assert_close(recon, x, rtol=1e-5, atol=1e-5 * np.abs(x).max())
    assert pca.n_samples_ == x.shape[0] and pca.n_features_in_ == x.shape[1]
    assert_close(pca.noise_variance_, np.asarray(sk.noise_variance_), atol=1e-5 * sk.explained_variance_[0])


@needs("sklearn.decomposition", "sklearn.datasets")
@pytest.mark.parametrize("dataset", ["iris", "random"])
def test_truncated_and_whitened_match_sklearn(backend, dataset):
    x = DATASETS[dataset]()
    k = 3
    for whiten in (False, True):
        sk = _cached_reference(dataset, n_components=k, whiten=whiten, svd_solver="full")
        pca = features.PCA(n_components=k, whiten=whiten, svd_solver="full").fit(x.astype(np.float32))
        defined = _compare(pca, sk, x)
        # fit_transform returns u * s (u * sqrt(n - 1) whitened), as scikit-learn.
        fitted = ops.to_numpy(features.PCA(n_components=k, whiten=whiten, svd_solver="full")
                              .fit_transform(x.astype(np.float32)))
        want = sk.transform(x)
        scale = np.abs(want).max()
        assert np.abs(fitted - want)[:, defined].max() <= 1e-4 * scale
        y = sk.transform(x)
        assert_close(pca.inverse_transform(y.astype(np.float32)), sk.inverse_transform(y),
                     rtol=1e-5, atol=1e-4 * np.abs(x).max())
        assert_close(pca.noise_variance_, np.asarray(sk.noise_variance_), rtol=1e-5,
                     atol=1e-5 * sk.explained_variance_[0])


@needs("sklearn.decomposition")
def test_auto_solver_follows_sklearn_rule():
    # scikit-learn's rule (PCA._fit): tall-and-skinny -> covariance_eigh; small -> full;
    # few components of a large matrix -> randomized; otherwise full.
    cases = [((10_000, 50), None, "covariance_eigh"), ((400, 300), None, "full"), ((800, 900), 10, "randomized"),
             ((800, 900), None, "full"), ((800, 900), 0.5, "full"), ((1000, 2000), 799, "randomized"),
             ((1000, 2000), 800, "full"), ((20_000, 1001), 5, "randomized")]
    for shape, k, solver in cases:
        assert features.PCA(k).solver_for(shape) == solver, (shape, k)
    rng = np.random.default_rng(0)
    for shape, k in (((600, 550), 5), ((2000, 30), None), ((100, 20), 3)):
        x = rng.normal(size=shape)
        assert features.PCA(k).solver_for(shape) == decomposition.PCA(k).fit(x)._fit_svd_solver


@needs("sklearn.decomposition", "sklearn.datasets")
def test_variance_fraction_picks_sklearn_count(backend):
    for name, fraction in (("digits", 0.95), ("breast_cancer", 0.8)):
        sk = _cached_reference(name, n_components=fraction, svd_solver="full")
        pca = features.PCA(fraction, svd_solver="full").fit(DATASETS[name]().astype(np.float32))
        assert pca.n_components_ == sk.n_components_, (name, fraction)
        assert_close(pca.explained_variance_ratio_, sk.explained_variance_ratio_, atol=1e-6)


@needs("sklearn.decomposition", "sklearn.datasets")
def test_randomized_matches_sklearn(backend):
    x = DATASETS["digits"]()
    for k in (2, 10):  # n_iter 7 (k < 0.1 * 64) and 4
        sk = _cached_reference("digits", n_components=k, svd_solver="randomized", random_state=0)
        pca = features.PCA(k, svd_solver="randomized", random_state=0).fit(x.astype(np.float32))
        assert pca.n_components_ == k
        # The same Gaussian test matrix as scikit-learn (RandomState(0)) spans the same subspace in exact
        # arithmetic: only float32 round-off differs, the explained-variance model of the module docstring.
        lam0 = sk.explained_variance_[0]
        np.testing.assert_allclose(ops.to_numpy(pca.explained_variance_), sk.explained_variance_, rtol=10 * EPS32,
                                   atol=100 * EPS32 * lam0)
        np.testing.assert_allclose(ops.to_numpy(pca.explained_variance_ratio_), sk.explained_variance_ratio_,
                                   rtol=10 * EPS32, atol=100 * EPS32)
        # The leading components are well separated: directions and signs agree too.
        np.testing.assert_allclose(ops.to_numpy(pca.components_)[:2], sk.components_[:2], atol=1e-3)
        assert_close(pca.noise_variance_, np.asarray(sk.noise_variance_), rtol=1e-3)
    wide = _random_data(n=40, p=120)  # n < p: the transposed path
    sk = decomposition.PCA(5, svd_solver="randomized", random_state=3).fit(wide)
    pca = features.PCA(5, svd_solver="randomized", random_state=3).fit(wide.astype(np.float32))
    np.testing.assert_allclose(ops.to_numpy(pca.explained_variance_), sk.explained_variance_, rtol=10 * EPS32,
                               atol=100 * EPS32 * sk.explained_variance_[0])  # as above: round-off only
    # Davis-Kahan as in the module docstring: 2 * 10 * sqrt(p) * eps * lambda_0 / gap = 2.8e-4 for the two
    # leading components (p = 120, gaps >= 0.09 lambda_0), rounded up to 1e-3.
    np.testing.assert_allclose(np.abs(ops.to_numpy(pca.components_) - sk.components_).max(axis=1)[:2], 0,
                               atol=1e-3)


@needs("sklearn.decomposition", "sklearn.datasets")
def test_randomized_without_n_components_keeps_all(backend):
    x = DATASETS["iris"]()
    sk = decomposition.PCA(svd_solver="randomized", random_state=0).fit(x)
    pca = features.PCA(svd_solver="randomized", random_state=0).fit(x.astype(np.float32))
    assert pca.n_components_ == sk.n_components_ == 4
    # The sketch spans all 4 columns and is scikit-learn's: float32 round-off only (module docstring).
    np.testing.assert_allclose(ops.to_numpy(pca.explained_variance_), sk.explained_variance_, rtol=10 * EPS32,
                               atol=100 * EPS32 * sk.explained_variance_[0])
    assert float(ops.to_numpy(pca.noise_variance_)) == 0.0


@needs("sklearn.decomposition")
def test_randomized_is_deterministic_across_backends(backend):
    x = _random_data(seed=4, n=200, p=30).astype(np.float32)
    pca = features.PCA(4, svd_solver="randomized", random_state=7).fit(x)
    again = features.PCA(4, svd_solver="randomized", random_state=7).fit(x)
    assert_close(pca.components_, ops.to_numpy(again.components_), rtol=0, atol=0)
    exact = decomposition.PCA(4, svd_solver="full").fit(x.astype(np.float64))
    # Against the exact solver, subspace iteration (q = 4, sketch l = 14) leaves a relative eigenvalue error
    # <= C**2 (lambda_15 / lambda_4)**9 = 1.7e-6 C**2 (Halko et al. 2011, Sec. 10; Gu 2015), C**2 =
    # |Omega_2|**2 |Omega_1^+|**2 ~ 30 for a Gaussian sketch: 5e-5, x20 for the sketch's tail -> 1e-3.
    np.testing.assert_allclose(ops.to_numpy(pca.explained_variance_), exact.explained_variance_, rtol=1e-3)


@needs("sklearn.decomposition", "sklearn.datasets")
def test_float64_matches_sklearn_to_float64_precision(backend):
    with float64_device(backend):
        for name in ("iris", "random"):
            x = DATASETS[name]()
            for solver in ("full", "covariance_eigh"):
                sk = _cached_reference(name, svd_solver=solver)
                pca = features.PCA(svd_solver=solver).fit(x)
                _compare(pca, sk, x, eps=EPS64, dtype="float64")


def test_randomized_svd_function(backend):
    x = _random_data(seed=1, n=60, p=25).astype(np.float32)
    u, s, vh = features.randomized_svd(x, 5, random_state=0)
    u_ref, s_ref, vh_ref = np.linalg.svd(x.astype(np.float64), full_matrices=False)
    # Convergence (sigma_16 / sigma_5)**18 = 2e-10 is far below round-off: a float32 op against float64.
    np.testing.assert_allclose(ops.to_numpy(s), s_ref[:5], **FLOAT32)
    # flip_sign decides on u's columns: the largest |entry| of each column is positive.
    got_u = ops.to_numpy(u)
    assert np.all(got_u[np.abs(got_u).argmax(axis=0), np.arange(5)] > 0)
    # Singular vectors converge more slowly than the values (Halko et al. Sec. 10): 1e-4 relative.
    want = (u_ref[:, :5] * s_ref[:5]) @ vh_ref[:5]
    assert_close(ops.matmul(ops.multiply(u, s), vh), want, rtol=0, atol=1e-4 * np.abs(want).max())
    with pytest.raises(ValueError, match="n_components must be an int in"):
        features.randomized_svd(x, 26)


# --------------------------------------------------------------------------- bad input


def test_n_components_larger_than_rank(backend):
    x = np.random.default_rng(0).normal(size=(10, 4)).astype(np.float32)
    for solver in ("full", "covariance_eigh", "randomized", "auto"):
        with pytest.raises(ValueError, match=r"n_components=5 must be between 1 and min\(n_samples, n_features\)=4"):
            features.PCA(5, svd_solver=solver).fit(x)
    with pytest.raises(ValueError, match=r"min\(n_samples, n_features\)=3"):
        features.PCA(4).fit(x[:3])


def test_not_fitted(backend):
    pca = features.PCA(2)
    assert not pca.is_fitted and pca.state is None
    with pytest.raises(features.NotFittedError, match=r"PCA instance is not fitted yet: call fit\(x\) before "
                                                        r"calling transform\(\)"):
        pca.transform(np.ones((2, 3)))
    with pytest.raises(features.NotFittedError, match="inverse_transform"):
        pca.inverse_transform(np.ones((2, 2)))
    with pytest.raises(features.NotFittedError, match="before reading components_"):
        pca.components_  # noqa: B018
    assert not hasattr(pca, "explained_variance_")
    assert isinstance(features.NotFittedError("x"), ValueError)


def test_wrong_feature_count_and_shapes(backend):
    x = np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32)
    pca = features.PCA(2).fit(x)
    with pytest.raises(ValueError, match="x has 3 features, but PCA was fitted with 4 features"):
        pca.transform(x[:, :3])
    with pytest.raises(ValueError, match=r"inverse_transform expects 2 columns \(n_components_\)"):
        pca.inverse_transform(x)
    with pytest.raises(ValueError, match=r"expected a 2-D array \(n_samples, n_features\), received shape \(4,\)"):
        pca.transform(x[0])
    with pytest.raises(ValueError, match="at least 2 sample"):
        features.PCA().fit(x[:1])


def test_non_finite_input(backend):
    x = np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32)
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="PCA.fit: input x contains NaN"):
        features.PCA(2).fit(bad)
    pca = features.PCA(2).fit(x)
    with pytest.raises(ValueError, match="PCA.transform: input x contains NaN"):
        pca.transform(bad)
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="contains infinity"):
        pca.transform(bad)


def test_failed_fit_keeps_previous_state(backend):
    x = np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32)
    pca = features.PCA(4).fit(x)
    before = ops.to_numpy(pca.components_)
    with pytest.raises(ValueError):
        pca.fit(x[:3])  # n_components=4 > min(3, 4)
    np.testing.assert_array_equal(ops.to_numpy(pca.components_), before)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"n_components": 0}, ValueError, "n_components must be None, an int >= 1 or a float in"),
    ({"n_components": 1.0}, ValueError, "n_components must be None"),
    ({"n_components": "mle"}, TypeError, "n_components must be None"),
    ({"n_components": True}, TypeError, "n_components"),
    ({"svd_solver": "arpack"}, ValueError, "use 'randomized'"),
    ({"whiten": 1}, TypeError, "whiten must be a bool"),
    ({"random_state": 1.5}, TypeError, "random_state must be None or an int"),
    ({"iterated_power": -1}, ValueError, "iterated_power"),
    ({"n_oversamples": -1}, ValueError, "n_oversamples"),
])
def test_bad_config(kwargs, error, match):
    with pytest.raises(error, match=match):
        features.PCA(**kwargs)


def test_fraction_needs_exact_solver():
    x = np.random.default_rng(0).normal(size=(20, 4))
    with pytest.raises(ValueError, match="needs svd_solver='full' or 'covariance_eigh'"):
        features.PCA(0.5, svd_solver="randomized").fit(x)
