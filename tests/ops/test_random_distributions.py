"""``ember.random.gamma/beta/binomial`` and ``SeedGenerator`` against SciPy's distributions.

Samples are seeded, so each check is deterministic per backend; a Kolmogorov-Smirnov
(continuous) or chi-square (binomial) test at p > 1e-4 checks the whole distribution.
"""

from __future__ import annotations

import numpy as np
import pytest

from ember import ops, random
from tests.helpers import needs, optional_import

stats = optional_import("scipy.stats")  # the reference distributions; None on a core-only install

N = 4000


def _sample(value):
    return np.asarray(ops.to_numpy(value), dtype=np.float64)


@needs("scipy.stats")
@pytest.mark.parametrize("alpha", [0.4, 1.0, 3.5])
def test_gamma_follows_the_gamma_distribution(backend, alpha):
    x = _sample(random.gamma((N,), alpha=alpha, seed=11))
    assert x.shape == (N,) and np.all(x >= 0)
    assert stats.kstest(x, stats.gamma(alpha).cdf).pvalue > 1e-4


@needs("scipy.stats")
def test_beta_follows_the_beta_distribution(backend):
    x = _sample(random.beta((N,), 2.0, 0.7, seed=5))
    assert np.all((x >= 0) & (x <= 1))
    assert stats.kstest(x, stats.beta(2.0, 0.7).cdf).pvalue > 1e-4


@needs("scipy.stats")
def test_binomial_follows_the_binomial_distribution(backend):
    x = _sample(random.binomial((N,), 8, 0.35, seed=2))
    counts = np.bincount(x.astype(int), minlength=9)
    expected = N * stats.binom(8, 0.35).pmf(np.arange(9))
    keep = expected > 5  # the chi-square approximation needs >= 5 expected per cell
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_array_parameters_broadcast_and_seeds_repeat(backend):
    alpha = ops.convert_to_tensor([[0.5], [4.0]])
    x = random.gamma((2, 3), alpha=alpha, seed=1)
    assert ops.shape(x) == (2, 3)
    np.testing.assert_array_equal(ops.to_numpy(x), ops.to_numpy(random.gamma((2, 3), alpha=alpha, seed=1)))
    counts = _sample(random.binomial((2, 500), ops.convert_to_tensor([[0.0], [3.0]]), 0.5, seed=3))
    assert np.all(counts[0] == 0) and counts[1].max() <= 3


def test_seed_generator_advances_and_repeats(backend):
    first, second = random.SeedGenerator(4), random.SeedGenerator(4)
    a = ops.to_numpy(random.uniform((3,), seed=first))
    b = ops.to_numpy(random.uniform((3,), seed=first))
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, ops.to_numpy(random.uniform((3,), seed=second)))
    np.testing.assert_array_equal(ops.to_numpy(random.gamma((3,), 2.0, seed=random.SeedGenerator(9))),
                                  ops.to_numpy(random.gamma((3,), 2.0, seed=random.SeedGenerator(9))))


def test_bad_parameters_are_refused(backend):
    with pytest.raises(ValueError, match="random.gamma: alpha must be > 0"):
        random.gamma((2,), alpha=-1.0)
    with pytest.raises(ValueError, match="random.binomial"):
        random.binomial((2,), 3, 1.5)
    with pytest.raises(TypeError, match="random.beta: dtype"):
        random.beta((2,), 1.0, 1.0, dtype="int32")
    with pytest.raises(TypeError, match="SeedGenerator"):
        random.SeedGenerator("abc")
