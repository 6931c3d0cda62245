"""one_hot, scatter and the segment reductions against NumPy references written here."""

from __future__ import annotations

import numpy as np
import pytest

from ember import features, ops
from tests.helpers import assert_close, assert_equal

# ------------------------------------------------------------------------------- one_hot


def _one_hot_reference(indices, depth):
    indices = np.asarray(indices)
    return (indices[..., None] == np.arange(depth)).astype(np.float32)


def test_one_hot(backend):
    indices = np.array([[0, 3, 1], [-1, 4, 2]])
    assert_equal(features.one_hot(indices, 4), _one_hot_reference(indices, 4), dtype="float32")
    assert_equal(features.one_hot(indices, 4, dtype="int32"), _one_hot_reference(indices, 4).astype(np.int32),
                 dtype="int32")
    assert_equal(features.one_hot(indices, 4, axis=0), np.moveaxis(_one_hot_reference(indices, 4), -1, 0))
    # Out-of-range and negative indices give all-zero rows, as Keras.
    assert_equal(ops.sum(features.one_hot(indices, 4), axis=-1), [[1, 1, 1], [0, 0, 1]])
    assert_equal(features.one_hot(np.array([2, 0], np.int64), 3), _one_hot_reference([2, 0], 3))


def test_one_hot_strict(backend):
    assert_equal(features.one_hot([0, 2], 3, strict=True), _one_hot_reference([0, 2], 3))
    with pytest.raises(ValueError, match=r"strict=True and 2 indices are outside \[0, 3\): \[-1, 3\]"):
        features.one_hot([[0, -1], [3, 1]], 3, strict=True)


def test_one_hot_bad_input(backend):
    with pytest.raises(TypeError, match="one_hot: indices must have an integer dtype, received float32"):
        features.one_hot(np.array([0.0, 1.0], np.float32), 3)
    with pytest.raises(TypeError, match="depth must be an int"):
        features.one_hot([0], 2.0)
    with pytest.raises(ValueError, match="depth must be >= 1"):
        features.one_hot([0], 0)
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        features.one_hot([[0]], 2, axis=3)


# ------------------------------------------------------------------------------- scatter


def _scatter_reference(indices, updates, shape, reduction):
    """Loop over the updates: sum / max / min / mean per addressed position; 0 where none lands."""
    indices, updates = np.asarray(indices), np.asarray(updates)
    k = indices.shape[-1]
    flat_idx = indices.reshape(-1, k)
    flat_upd = updates.reshape((-1,) + tuple(shape[k:]))
    groups = {}
    for position, value in zip(map(tuple, flat_idx), flat_upd):
        position = tuple(int(i) % d for i, d in zip(position, shape))
        groups.setdefault(position, []).append(value.astype(np.float64))
    out = np.zeros(shape, np.float64)
    reduce = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean}[reduction]
    for position, values in groups.items():
        out[position] = reduce(np.stack(values), axis=0)
    return out


@pytest.mark.parametrize("reduction", ["sum", "max", "min", "mean"])
def test_scatter_matches_reference(backend, reduction):
    rng = np.random.default_rng(0)
    shape = (4, 3, 2)
    indices = np.stack([rng.integers(-4, 4, size=(5, 2)), rng.integers(-3, 3, size=(5, 2))], axis=-1)
    updates = rng.normal(size=(5, 2, 2)).astype(np.float32)  # indices.shape[:-1] + shape[2:]
    got = features.scatter(indices, updates, shape, reduction=reduction)
    assert_close(got, _scatter_reference(indices, updates, shape, reduction), dtype="float32")
    full = np.array([[0, 1, 0], [3, 2, 1], [0, 1, 0]])  # k = rank: scalar updates
    values = np.array([1.5, -2.0, 4.0], np.float32)
    assert_close(features.scatter(full, values, shape, reduction=reduction),
                 _scatter_reference(full, values, shape, reduction))


@pytest.mark.parametrize("reduction", ["sum", "max", "min"])
def test_scatter_integers(backend, reduction):
    info = np.iinfo(np.int32)
    indices = np.array([[0], [0], [2], [2]])
    updates = np.array([info.min, 5, info.max, -3], np.int32)
    want = _scatter_reference(indices, updates.astype(np.int64), (3,), reduction)
    if reduction == "sum":
        want = want.astype(np.int64).astype(np.int32)  # int32 wrap-around, as NumPy
    assert_equal(features.scatter(indices, updates, (3,), reduction=reduction), want.astype(np.int32),
                 dtype="int32")
    assert_close(features.scatter(indices, updates[:, None].astype(np.int32) % 7, (3, 1), reduction="mean"),
                 _scatter_reference(indices, updates[:, None] % 7, (3, 1), "mean"), dtype="float32")


def test_scatter_bad_input(backend):
    with pytest.raises(IndexError, match="scatter: index 4 .* is out of bounds for axis 0 with size 3"):
        features.scatter([[1], [4]], [1.0, 2.0], (3,))
    with pytest.raises(IndexError, match="index -4"):
        features.scatter([[-4]], [1.0], (3,), reduction="max")
    with pytest.raises(ValueError, match=r"updates must have shape indices.shape\[:-1\] \+ shape\[1:\] = \(2, 2\)"):
        features.scatter([[1], [0]], [1.0, 2.0], (3, 2))
    with pytest.raises(ValueError, match="reduction must be one of"):
        features.scatter([[0]], [1.0], (3,), reduction="prod")
    with pytest.raises(ValueError, match="1 <= k <= len"):
        features.scatter([[0, 0]], [1.0], (3,))
    with pytest.raises(TypeError, match="indices must have an integer dtype"):
        features.scatter(np.array([[0.0]]), [1.0], (3,))


# ------------------------------------------------------------------------------ segments


def _segment_reference(data, ids, num, reduction, empty):
    data, ids = np.asarray(data), np.asarray(ids)
    data = data.reshape((ids.size,) + data.shape[ids.ndim:]).astype(np.float64)
    ids = ids.reshape(-1)
    out = np.full((num,) + data.shape[1:], empty, np.float64)
    reduce = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean}[reduction]
    for s in range(num):
        rows = data[ids == s]
        if len(rows):
            out[s] = reduce(rows, axis=0)
    return out


def test_segment_reductions(backend):
    rng = np.random.default_rng(1)
    data = rng.normal(size=(7, 3)).astype(np.float32)
    ids = np.array([0, 2, 2, 0, 5, 2, -1])  # segment 1, 3, 4 empty; -1 dropped
    lowest, highest = np.finfo(np.float32).min, np.finfo(np.float32).max
    assert_close(features.segment_sum(data, ids), _segment_reference(data, ids, 6, "sum", 0.0))
    assert_close(features.segment_mean(data, ids), _segment_reference(data, ids, 6, "mean", 0.0))
    assert_close(features.segment_max(data, ids), _segment_reference(data, ids, 6, "max", lowest))
    assert_close(features.segment_min(data, ids), _segment_reference(data, ids, 6, "min", highest))
    assert_close(features.segment_sum(data, ids, num_segments=3), _segment_reference(data, ids, 3, "sum", 0.0))
    nested_ids = ids[:6].reshape(2, 3)
    assert_close(features.segment_mean(data[:6].reshape(2, 3, 3), nested_ids),
                 _segment_reference(data[:6].reshape(2, 3, 3), nested_ids, 6, "mean", 0.0))


def test_segment_integers(backend):
    data = np.array([3, -7, 2, 9], np.int32)
    ids = np.array([1, 1, 0, 3])
    info = np.iinfo(np.int32)
    assert_equal(features.segment_max(data, ids), [2, 3, info.min, 9], dtype="int32")
    assert_equal(features.segment_min(data, ids), [2, -7, info.max, 9], dtype="int32")
    assert_close(features.segment_mean(data, ids), [2.0, -2.0, 0.0, 9.0], dtype="float32")
    assert_equal(features.segment_sum(data, ids, sorted=False), [2, -4, 0, 9], dtype="int32")


def test_segment_bad_input(backend):
    with pytest.raises(ValueError, match=r"segment_ids shape \(2,\) must be a \(non-empty\) prefix of data shape"):
        features.segment_sum(np.ones((3, 2)), [0, 1])
    with pytest.raises(TypeError, match="segment_ids must have an integer dtype"):
        features.segment_mean(np.ones(2), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="num_segments must be None or an int >= 0"):
        features.segment_max(np.ones(2), [0, 1], num_segments=-1)
