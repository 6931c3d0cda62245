"""``ops.random``: shapes, dtypes, ranges, seeding and distribution sanity checks."""

from __future__ import annotations

import numpy as np
import pytest

from ember import ops
from tests.helpers import assert_equal, float64_device, native
from tests.tolerances import FLOAT32

N = 20000  # samples for the distribution checks: standard errors ~0.007


def _np(x):
    return ops.to_numpy(x).astype(np.float64)


# --------------------------------------------------------------- shapes, dtypes

CALLS = {
    "uniform": lambda shape, seed=None, **kw: ops.random.uniform(shape, seed=seed, **kw),
    "normal": lambda shape, seed=None, **kw: ops.random.normal(shape, seed=seed, **kw),
    "truncated_normal": lambda shape, seed=None, **kw: ops.random.truncated_normal(shape, seed=seed, **kw),
    "bernoulli": lambda shape, seed=None, **kw: ops.random.bernoulli(shape, 0.5, seed=seed, **kw),
    "randint": lambda shape, seed=None, **kw: ops.random.randint(shape, 0, 10, seed=seed, **kw),
}
DEFAULT_DTYPES = {"uniform": "float32", "normal": "float32", "truncated_normal": "float32", "bernoulli": "bool",
                  "randint": "int32"}


@pytest.mark.parametrize("shape", [(2, 3), (5,), (), (0, 4), [3, 1]])
@pytest.mark.parametrize("name", list(CALLS))
def test_shapes_and_default_dtypes(backend, name, shape):
    out = CALLS[name](shape, seed=3)
    assert ops.is_array(out)
    assert ops.shape(out) == tuple(shape)
    assert ops.dtype(out) == DEFAULT_DTYPES[name]


def test_int_shape(backend):
    assert ops.shape(ops.random.normal(4, seed=0)) == (4,)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", ["uniform", "normal", "truncated_normal"])
def test_float_dtypes(backend, name, dtype):
    with float64_device(backend):
        out = CALLS[name]((64,), seed=1, dtype=dtype)
    assert ops.dtype(out) == dtype
    assert np.all(np.isfinite(_np(out)))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
def test_randint_dtypes(backend, dtype):
    out = ops.random.randint((200,), 3, 7, dtype=dtype, seed=2)
    assert ops.dtype(out) == dtype
    values = _np(out)
    assert values.min() >= 3 and values.max() <= 6
    assert set(values.astype(int).tolist()) == {3, 4, 5, 6}


# --------------------------------------------------------------------- ranges


def test_uniform_range(backend):
    x = _np(ops.random.uniform((N,), minval=-3.0, maxval=-1.0, seed=4))
    assert x.min() >= -3.0 and x.max() < -1.0
    assert abs(x.mean() + 2.0) < 0.03
    assert abs(x.var() - 4.0 / 12.0) < 0.02
    unit = _np(ops.random.uniform((N,), seed=5))
    assert unit.min() >= 0.0 and unit.max() < 1.0


def test_normal_moments(backend):
    x = _np(ops.random.normal((N,), mean=2.0, stddev=3.0, seed=6))
    assert abs(x.mean() - 2.0) < 0.1
    assert abs(x.std() - 3.0) < 0.1


def test_truncated_normal_within_two_std(backend):
    x = _np(ops.random.truncated_normal((N,), mean=1.0, stddev=0.5, seed=7))
    assert np.all(np.abs(x - 1.0) <= 2 * 0.5)
    assert abs(x.mean() - 1.0) < 0.02
    # std of a standard normal truncated to [-2, 2] is 0.8796
    assert abs(x.std() - 0.8796 * 0.5) < 0.02


@pytest.mark.parametrize("p", [0.0, 0.3, 0.9, 1.0])
def test_bernoulli_mean(backend, p):
    x = _np(ops.random.bernoulli((N,), p, seed=8))
    assert abs(x.mean() - p) < 0.02


def test_randint_range(backend):
    x = _np(ops.random.randint((N,), -2, 3, seed=9))
    assert x.min() == -2 and x.max() == 2
    counts = np.bincount((x + 2).astype(int), minlength=5) / N
    # a frequency has standard error sqrt(p (1 - p) / N) = 0.0028; 6.5 of them per cell: a false failure
    # below 1e-9 over the cells
    np.testing.assert_allclose(counts, 0.2, atol=6.5 * np.sqrt(0.2 * 0.8 / N))


def test_categorical_peaked_logits(backend):
    logits = np.array([[0.0, 60.0, 0.0], [60.0, 0.0, 0.0], [0.0, 0.0, 60.0]], dtype=np.float32)
    out = ops.random.categorical(native(logits), 50, seed=10)
    assert ops.dtype(out) == "int32"
    assert_equal(out, np.repeat([[1], [0], [2]], 50, axis=1), dtype="int32")
    out64 = ops.random.categorical(native(logits), 5, dtype="int64", seed=10)
    assert ops.dtype(out64) == "int64" and ops.shape(out64) == (3, 5)


def test_categorical_frequencies(backend):
    probs = np.array([0.2, 0.5, 0.3])
    logits = np.log(probs)[None, :].astype(np.float32)
    out = _np(ops.random.categorical(native(logits), N, seed=11))
    assert out.shape == (1, N)
    freq = np.bincount(out[0].astype(int), minlength=3) / N
    # 6.5 standard errors sqrt(p (1 - p) / N) per cell, as in test_randint_range
    assert np.all(np.abs(freq - probs) <= 6.5 * np.sqrt(probs * (1 - probs) / N)), freq


def test_permutation_of_int(backend):
    out = ops.random.permutation(50, seed=12)
    assert ops.dtype(out) == "int32"
    values = ops.to_numpy(out)
    assert sorted(values.tolist()) == list(range(50))
    assert values.tolist() != list(range(50))


def test_permutation_of_array_permutes_rows(backend):
    x = np.arange(40, dtype=np.float32).reshape(20, 2)
    out = ops.to_numpy(ops.random.permutation(native(x), seed=13))
    assert out.shape == (20, 2)
    assert sorted(out[:, 0].tolist()) == x[:, 0].tolist()
    np.testing.assert_array_equal(out[:, 1], out[:, 0] + 1)  # rows move whole
    assert out[:, 0].tolist() != x[:, 0].tolist()


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_shuffle_along_axis(backend, axis):
    x = np.arange(60, dtype=np.float32).reshape(6, 10)
    out = ops.to_numpy(ops.random.shuffle(native(x), axis=axis, seed=14))
    assert out.shape == x.shape
    np.testing.assert_array_equal(np.sort(out, axis=axis), x)
    assert not np.array_equal(out, x)
    # only the chosen axis is permuted: whole rows (axis 0) or whole columns move (x[i, j] = 10 i + j)
    if axis == 0:
        np.testing.assert_array_equal(out - out[:, :1], np.broadcast_to(np.arange(10), x.shape))
    else:
        np.testing.assert_array_equal(out - out[:1], np.broadcast_to(10 * np.arange(6)[:, None], x.shape))


# -------------------------------------------------------------------- seeding


@pytest.mark.parametrize("name", list(CALLS))
def test_same_seed_same_numbers(backend, name):
    a = ops.to_numpy(CALLS[name]((100,), seed=42))
    b = ops.to_numpy(CALLS[name]((100,), seed=42))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", list(CALLS))
def test_different_seeds_differ(backend, name):
    a = ops.to_numpy(CALLS[name]((100,), seed=1))
    b = ops.to_numpy(CALLS[name]((100,), seed=2))
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("name", list(CALLS))
def test_seed_none_advances_and_set_seed_resets(backend, name):
    ops.random.set_seed(123)
    first = ops.to_numpy(CALLS[name]((100,)))
    second = ops.to_numpy(CALLS[name]((100,)))
    assert not np.array_equal(first, second), "seed=None must draw fresh numbers each call"
    ops.random.set_seed(123)
    again = ops.to_numpy(CALLS[name]((100,)))
    np.testing.assert_array_equal(first, again)


def test_set_seed_does_not_change_seeded_calls(backend):
    a = ops.to_numpy(ops.random.normal((10,), seed=5))
    ops.random.set_seed(999)
    ops.random.normal((10,))
    b = ops.to_numpy(ops.random.normal((10,), seed=5))
    np.testing.assert_array_equal(a, b)


def test_seeded_ops_other_than_samplers(backend):
    x = native(np.arange(20, dtype=np.float32))
    logits = native(np.zeros((2, 5), np.float32))
    pairs = {
        "permutation": lambda s: ops.random.permutation(20, seed=s),
        "shuffle": lambda s: ops.random.shuffle(x, seed=s),
        "dropout": lambda s: ops.random.dropout(x, 0.5, seed=s),
        "categorical": lambda s: ops.random.categorical(logits, 10, seed=s),
    }
    for label, call in pairs.items():
        np.testing.assert_array_equal(ops.to_numpy(call(7)), ops.to_numpy(call(7)), err_msg=label)
        assert not np.array_equal(ops.to_numpy(call(7)), ops.to_numpy(call(8))), label


# -------------------------------------------------------------------- dropout


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.8])
def test_dropout_rate_and_scale(backend, rate):
    x = np.full((N,), 2.0, dtype=np.float32)
    out = ops.random.dropout(native(x), rate, seed=15)
    assert ops.dtype(out) == "float32"
    values = _np(out)
    dropped = values == 0
    assert abs(dropped.mean() - rate) < 0.02
    np.testing.assert_allclose(values[~dropped], 2.0 / (1 - rate), **FLOAT32)


def test_dropout_rate_zero_is_identity(backend):
    x = np.arange(10, dtype=np.float32)
    assert_equal(ops.random.dropout(native(x), 0.0, seed=1), x, dtype="float32")


def test_dropout_noise_shape_broadcasts_mask(backend):
    x = np.ones((50, 8), dtype=np.float32)
    out = _np(ops.random.dropout(native(x), 0.5, noise_shape=(1, 8), seed=16))
    # one mask row shared by every row: whole columns are kept or dropped
    assert np.all(out == out[:1])
    assert set(np.unique(out).tolist()) <= {0.0, 2.0}


def test_dropout_keeps_low_precision_dtype(backend):
    x = native(np.ones((100,), np.float32), dtype="float16")
    out = ops.random.dropout(x, 0.5, seed=3)
    assert ops.dtype(out) == "float16"
    assert set(np.unique(_np(out)).tolist()) <= {0.0, 2.0}
