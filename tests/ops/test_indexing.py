"""Indexing, gather/scatter, slicing, one_hot, sorting and segment ops against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ember import dtypes, ops
from tests.helpers import PROPERTY, assert_close, assert_equal, f32, float_arrays, native, shapes

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

# ----------------------------------------------------------------- getitem

KEYS = {
    "int": 1,
    "negative int": -1,
    "two ints": (1, 2),
    "three ints (0-d)": (1, -2, 3),
    "slice": slice(0, 2),
    "reverse": slice(None, None, -1),
    "steps": (slice(None, None, 2), slice(None, None, -2)),
    "negative step with bounds": slice(3, 0, -1),
    "negative start": slice(-2, None),
    "clamped slice": slice(1, 100),
    "empty slice": slice(2, 1),
    "None": None,
    "None middle": (slice(None), None, 2),
    "Ellipsis": (Ellipsis, 1),
    "Ellipsis None": (1, Ellipsis, None),
    "Ellipsis middle": (0, Ellipsis, -1),
    "empty tuple": (),
    "int list": [0, 2],
    "int array negative": np.array([0, -1, 1]),
    "int array 2-d": np.array([[0, 1], [2, 0]]),
    "advanced pair": ([0, 1], [1, 2]),
    "advanced after slice": (slice(None), [1, 3]),
    "advanced with int": (1, [0, 3], slice(1, 4)),
    "bool mask full": X % 7 == 0,
    "bool mask first axis": np.array([True, False, True]),
    "bool mask second axis": (slice(None), np.array([True, False, False, True])),
    "slice then int": (slice(1, None), 0),
}


@pytest.mark.parametrize("label", list(KEYS))
def test_getitem_matches_numpy(backend, label):
    key = KEYS[label]
    assert_equal(ops.getitem(native(X), key), X[key], dtype="float32")


def test_getitem_with_native_index_arrays(backend):
    idx = native(np.array([2, 0], dtype=np.int32))
    assert_equal(ops.getitem(native(X), idx), X[[2, 0]], dtype="float32")
    mask = native(np.array([True, False, True]))
    assert_equal(ops.getitem(native(X), mask), X[np.array([True, False, True])], dtype="float32")
    assert_equal(ops.getitem(native(X), (slice(None), native(np.array([3], dtype=np.int64)))), X[:, [3]],
                 dtype="float32")


def test_getitem_on_zero_d_and_empty(backend):
    s = np.array(4.0, dtype=np.float32)
    assert_equal(ops.getitem(native(s), ()), s[()], dtype="float32")
    assert_equal(ops.getitem(native(s), None), s[None], dtype="float32")
    e = np.zeros((0, 3), np.float32)
    assert_equal(ops.getitem(native(e), (slice(None), 1)), e[:, 1], dtype="float32")


def test_getitem_slices_hypothesis(backend):
    @PROPERTY
    @given(x=float_arrays(shape=shapes(min_dims=1, max_dims=3, max_side=5)), data=st.data())
    def check(x, data):
        bound = st.none() | st.integers(-6, 6)
        step = st.none() | st.integers(-3, 3).filter(lambda s: s != 0)
        key = tuple(slice(data.draw(bound), data.draw(bound), data.draw(step)) for _ in range(x.ndim))
        assert_equal(ops.getitem(native(x), key), x[key], dtype="float32")

    check()


@pytest.mark.parametrize("key", [5, -4, (0, 4), (0, 0, 7), (Ellipsis, -6)])
def test_getitem_out_of_range_int_is_index_error(backend, key):
    with pytest.raises(IndexError) as info:
        ops.getitem(native(X), key)
    message = str(info.value)
    bad = key if isinstance(key, int) else key[-1]
    assert str(bad) in message, message


@pytest.mark.parametrize("key", [[0, 3], np.array([-4]), (slice(None), np.array([1, 4]))])
def test_getitem_out_of_range_array_is_index_error(backend, key):
    with pytest.raises(IndexError):
        ops.getitem(native(X), key)


# ------------------------------------------------------------ take / along axis


@pytest.mark.parametrize(
    ("indices", "axis"),
    [([0, 5, -1], None), ([[1, 0], [2, 2]], 0), ([3, -1, 0], 1), (np.array([4, 0]), -1), (2, 1)],
)
def test_take(backend, indices, axis):
    idx = np.asarray(indices, dtype=np.int32)
    assert_equal(ops.take(native(X), native(idx), axis=axis), np.take(X, idx, axis=axis), dtype="float32")
    assert_equal(ops.take(native(X), indices, axis=axis), np.take(X, indices, axis=axis), dtype="float32")


def test_take_empty_indices(backend):
    idx = np.zeros((0,), dtype=np.int32)
    assert_equal(ops.take(native(X), native(idx), axis=0), np.take(X, idx, axis=0), dtype="float32")


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take_along_axis(backend, axis):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    idx = np.argsort(x, axis=axis)
    assert_equal(ops.take_along_axis(native(x), native(idx), axis=axis), np.take_along_axis(x, idx, axis=axis),
                 dtype="float32")
    first = np.take(idx, [0], axis=axis)  # a size-1 index broadcasts along the axis
    assert_equal(ops.take_along_axis(native(x), native(first), axis=axis), np.take_along_axis(x, first, axis=axis),
                 dtype="float32")


# ------------------------------------------------------------- gather / scatter


def _gather_nd(x, indices):
    indices = np.asarray(indices)
    return x[tuple(np.moveaxis(indices, -1, 0))]


@pytest.mark.parametrize("indices", [[[1], [0]], [[1, 2], [0, 3], [2, 0]], [[2, 3, 4], [0, 0, 0]],
                                     [[[0, 1]], [[2, 2]]]])
def test_gather(backend, indices):
    idx = np.asarray(indices, dtype=np.int32)
    assert_equal(ops.gather(native(X), native(idx)), _gather_nd(X, idx), dtype="float32")


def test_scatter_adds_duplicates(backend):
    indices = np.array([[0, 1], [2, 2], [0, 1], [1, 0]], dtype=np.int32)
    updates = f32([1.0, 2.0, 3.5, -1.0])
    expected = np.zeros((3, 3))
    np.add.at(expected, tuple(indices.T), updates)
    assert_close(ops.scatter(native(indices), native(updates), (3, 3)), expected, dtype="float32")


def test_scatter_slices(backend):
    indices = np.array([[1], [3], [1]], dtype=np.int32)
    updates = f32(np.arange(6).reshape(3, 2))
    expected = np.zeros((4, 2))
    np.add.at(expected, tuple(indices.T), updates)
    assert_close(ops.scatter(native(indices), native(updates), (4, 2)), expected, dtype="float32")
    int_updates = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.int32)
    out = ops.scatter(native(indices), native(int_updates), (4, 2))
    expected = np.zeros((4, 2), np.int32)
    np.add.at(expected, tuple(indices.T), int_updates)
    assert_equal(out, expected, dtype="int32")


def test_scatter_update(backend):
    x = f32(np.arange(12).reshape(3, 4))
    indices = np.array([[0, 1], [2, 3], [1, 0]], dtype=np.int32)
    updates = f32([-1.0, -2.0, -3.0])
    expected = x.copy()
    expected[tuple(indices.T)] = updates
    native_x = native(x)
    assert_equal(ops.scatter_update(native_x, native(indices), native(updates)), expected, dtype="float32")
    assert_equal(native_x, x, dtype="float32")  # the input is not modified
    rows = np.array([[2], [0]], dtype=np.int32)
    row_updates = f32([[9, 9, 9, 9], [8, 8, 8, 8]])
    expected = x.copy()
    expected[[2, 0]] = row_updates
    assert_equal(ops.scatter_update(native(x), native(rows), native(row_updates)), expected, dtype="float32")


def test_scatter_add(backend):
    x = f32(np.arange(12).reshape(3, 4))
    indices = np.array([[0, 1], [2, 3], [0, 1]], dtype=np.int32)
    updates = f32([1.0, 2.0, 3.0])
    expected = x.astype(np.float64)
    np.add.at(expected, tuple(indices.T), updates)
    native_x = native(x)
    assert_close(ops.scatter_add(native_x, native(indices), native(updates)), expected, dtype="float32")
    assert_equal(native_x, x, dtype="float32")


@pytest.mark.parametrize(("start", "shape"), [((0, 0, 0), (3, 4, 5)), ((1, 2, 3), (2, 2, 2)), ((2, 0, 4), (1, 4, 1)),
                                              ((0, 1, 0), (3, 0, 5))])
def test_slice(backend, start, shape):
    key = tuple(slice(s, s + n) for s, n in zip(start, shape))
    assert_equal(ops.slice(native(X), start, shape), X[key], dtype="float32")


def test_slice_update(backend):
    updates = -np.ones((2, 2, 3), np.float32)
    expected = X.copy()
    expected[1:3, 2:4, 1:4] = updates
    native_x = native(X)
    assert_equal(ops.slice_update(native_x, (1, 2, 1), native(updates)), expected, dtype="float32")
    assert_equal(native_x, X, dtype="float32")


# ------------------------------------------------------------------- one_hot


def test_one_hot_out_of_range_gives_zero_row(backend):
    indices = np.array([0, 2, 3, -1, 1], dtype=np.int32)
    expected = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0], [0, 1, 0]], dtype=np.float32)
    assert_equal(ops.one_hot(native(indices), 3), expected, dtype="float32")


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_axis_and_dtype(backend, axis):
    indices = np.array([[0, 3], [1, 2]], dtype=np.int32)
    eye = np.eye(4, dtype=np.int32)
    expected = np.moveaxis(eye[indices], -1, axis)
    assert_equal(ops.one_hot(native(indices), 4, dtype="int32", axis=axis), expected, dtype="int32")


# -------------------------------------------------------------- top_k / sort


def test_top_k_sorted(backend):
    rng = np.random.default_rng(1)
    x = rng.permutation(24).reshape(2, 3, 4).astype(np.float32)
    values, indices = ops.top_k(native(x), 3)
    order = np.argsort(-x, axis=-1)[..., :3]
    assert_equal(values, np.take_along_axis(x, order, axis=-1), dtype="float32")
    assert_equal(indices, order, dtype="int32")


def test_top_k_unsorted_returns_same_set(backend):
    x = f32([[5.0, 1.0, 9.0, 3.0, 7.0]])
    values, indices = ops.top_k(native(x), 2, sorted=False)
    assert ops.dtype(indices) == "int32"
    assert sorted(ops.to_numpy(values)[0].tolist()) == [7.0, 9.0]
    assert sorted(ops.to_numpy(indices)[0].tolist()) == [2, 4]


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_sort_argsort(backend, axis):
    @PROPERTY
    @given(x=float_arrays(shape=shapes(min_dims=2, max_dims=3, max_side=5), low=-3, high=3))
    def check(x):
        x = np.round(x)  # ties: argsort must be stable
        assert_equal(ops.sort(native(x), axis=axis), np.sort(x, axis=axis), dtype="float32")
        assert_equal(ops.argsort(native(x), axis=axis), np.argsort(x, axis=axis, kind="stable"), dtype="int32")

    check()


def test_sort_integers_and_one_d(backend):
    x = np.array([3, -1, 2, 2, 0], dtype=np.int32)
    assert_equal(ops.sort(native(x)), np.sort(x), dtype="int32")
    assert_equal(ops.argsort(native(x)), np.argsort(x, kind="stable"), dtype="int32")


# --------------------------------------------------------------------- nonzero


@pytest.mark.parametrize("x", [np.array([0, 1, 0, 2]), np.array([[0.0, 1.5], [2.0, 0.0]]), np.zeros((2, 3)),
                               np.array([[True, False, True]]), np.zeros((0, 2))])
def test_nonzero(backend, x):
    result = ops.nonzero(native(x))
    expected = np.nonzero(x)
    assert isinstance(result, tuple) and len(result) == len(expected)
    for got, want in zip(result, expected):
        assert_equal(got, want, dtype="int32")


# ---------------------------------------------------------------------- segments


def test_segment_sum(backend):
    data = f32(np.arange(18).reshape(6, 3))
    ids = np.array([0, 0, 1, 3, 3, 3], dtype=np.int32)
    expected = np.zeros((4, 3))
    np.add.at(expected, ids, data)
    assert_close(ops.segment_sum(native(data), native(ids)), expected, dtype="float32")
    expected5 = np.concatenate([expected, np.zeros((1, 3))])
    assert_close(ops.segment_sum(native(data), native(ids), num_segments=5), expected5, dtype="float32")


def test_segment_sum_unsorted_ids_and_1d(backend):
    data = f32([1.0, 2.0, 3.0, 4.0, 5.0])
    ids = np.array([2, 0, 2, 1, 0], dtype=np.int32)
    assert_close(ops.segment_sum(native(data), native(ids), num_segments=3), [7.0, 4.0, 4.0], dtype="float32")


def test_segment_max(backend):
    data = f32([[1.0, -5.0], [3.0, -7.0], [2.0, 8.0], [-1.0, -1.0]])
    ids = np.array([1, 1, 3, 1], dtype=np.int32)
    lowest = dtypes.finfo("float32").min  # empty segments give the dtype's lowest value
    expected = np.array([[lowest, lowest], [3.0, -1.0], [lowest, lowest], [2.0, 8.0]])
    assert_equal(ops.segment_max(native(data), native(ids)), expected.astype(np.float32), dtype="float32")
    int_data = np.array([4, -2, 9], dtype=np.int32)
    out = ops.segment_max(native(int_data), native(np.array([0, 0, 2], dtype=np.int32)), num_segments=3)
    assert_equal(out, [4, dtypes.iinfo("int32").min, 9], dtype="int32")
