"""Shape and data-movement ops against NumPy (exact: no arithmetic involved)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ember import ops
from tests.helpers import PROPERTY, assert_equal, float_arrays, native, shapes


def _arange(shape, dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


# ------------------------------------------------------------------ hypothesis


def test_reshape(backend):
    @PROPERTY
    @given(x=float_arrays(), data=st.data())
    def check(x, data):
        size = x.size
        targets = [(-1,), (size,), (1, size), (size, 1), tuple(reversed(x.shape)), (1, -1, 1)]
        if size:
            divisors = [d for d in range(1, size + 1) if size % d == 0]
            d = data.draw(st.sampled_from(divisors))
            targets += [(d, -1), (-1, d), (d, size // d)]
        if size == 1:
            targets.append(())
        target = data.draw(st.sampled_from(targets))
        assert_equal(ops.reshape(native(x), target), x.reshape(target), dtype="float32")

    check()


def test_transpose(backend):
    @PROPERTY
    @given(x=float_arrays(max_dims=4), data=st.data())
    def check(x, data):
        axes = data.draw(st.none() | st.permutations(range(x.ndim)).map(tuple))
        if axes and data.draw(st.booleans()):
            axes = tuple(a - x.ndim for a in axes)  # negative axes
        assert_equal(ops.transpose(native(x), axes), np.transpose(x, axes), dtype="float32")

    check()


def test_expand_dims(backend):
    @PROPERTY
    @given(x=float_arrays(), data=st.data())
    def check(x, data):
        axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
        assert_equal(ops.expand_dims(native(x), axis), np.expand_dims(x, axis), dtype="float32")
        axes = data.draw(hnp.valid_tuple_axes(x.ndim + 2, min_size=2, max_size=2))
        assert_equal(ops.expand_dims(native(x), axes), np.expand_dims(x, axes), dtype="float32")

    check()


def test_squeeze(backend):
    @PROPERTY
    @given(x=float_arrays(shape=shapes(min_side=1, max_side=2, max_dims=4)), data=st.data())
    def check(x, data):
        ones = [i for i, n in enumerate(x.shape) if n == 1]
        axis = data.draw(st.none() | st.sampled_from(ones or [None])
                         | st.lists(st.sampled_from(ones or [0]), unique=True, min_size=1).map(tuple))
        if isinstance(axis, tuple) and not ones:
            axis = None
        assert_equal(ops.squeeze(native(x), axis), np.squeeze(x, axis), dtype="float32")

    check()


def test_flip(backend):
    @PROPERTY
    @given(x=float_arrays(), data=st.data())
    def check(x, data):
        choices = [st.none()]
        if x.ndim:
            choices += [st.integers(-x.ndim, x.ndim - 1), hnp.valid_tuple_axes(x.ndim, min_size=1)]
        axis = data.draw(st.one_of(*choices))
        assert_equal(ops.flip(native(x), axis), np.flip(x, axis), dtype="float32")

    check()


def test_moveaxis_swapaxes_ravel(backend):
    @PROPERTY
    @given(x=float_arrays(shape=shapes(min_dims=1, max_dims=4)), data=st.data())
    def check(x, data):
        axis = st.integers(-x.ndim, x.ndim - 1)
        source, destination = data.draw(axis), data.draw(axis)
        assert_equal(ops.moveaxis(native(x), source, destination), np.moveaxis(x, source, destination))
        a, b = data.draw(axis), data.draw(axis)
        assert_equal(ops.swapaxes(native(x), a, b), np.swapaxes(x, a, b), dtype="float32")
        assert_equal(ops.ravel(native(x)), np.ravel(x), dtype="float32")

    check()


def test_broadcast_to(backend):
    @PROPERTY
    @given(shapes_pair=hnp.mutually_broadcastable_shapes(num_shapes=1, max_dims=3, max_side=4), data=st.data())
    def check(shapes_pair, data):
        x = data.draw(float_arrays(shape=shapes_pair.input_shapes[0]))
        target = shapes_pair.result_shape
        assert_equal(ops.broadcast_to(native(x), target), np.broadcast_to(x, target), dtype="float32")

    check()


def test_concatenate_and_stack(backend):
    @PROPERTY
    @given(shape=shapes(min_dims=1, max_dims=3), count=st.integers(1, 3), data=st.data())
    def check(shape, count, data):
        axis = data.draw(st.integers(-len(shape), len(shape) - 1))
        pieces = []
        for _ in range(count):
            piece_shape = list(shape)
            piece_shape[axis] = data.draw(st.integers(0, 3))
            pieces.append(data.draw(float_arrays(shape=tuple(piece_shape))))
        assert_equal(ops.concatenate([native(p) for p in pieces], axis=axis),
                     np.concatenate(pieces, axis=axis), dtype="float32")
        same = [data.draw(float_arrays(shape=shape)) for _ in range(count)]
        stack_axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
        assert_equal(ops.stack([native(p) for p in same], axis=stack_axis), np.stack(same, axis=stack_axis),
                     dtype="float32")

    check()


# --------------------------------------------------------------- deterministic


@pytest.mark.parametrize(
    ("shape", "newshape"),
    [((2, 3), 6), ((2, 3), (3, -1)), ((), (1, 1)), ((1,), ()), ((0, 3), (3, 0)), ((0, 3), (-1, 3)),
     ((2, 3, 4), (4, -1, 2))],
)
def test_reshape_cases(backend, shape, newshape):
    x = _arange(shape)
    assert_equal(ops.reshape(native(x), newshape), x.reshape(newshape), dtype="float32")


def test_reshape_incompatible_is_value_error(backend):
    with pytest.raises(ValueError):
        ops.reshape(native(_arange((2, 3))), (4, 2))


def test_concatenate_axis_none_and_dtypes(backend):
    a, b = _arange((2, 2)), _arange((3,))
    assert_equal(ops.concatenate([native(a), native(b)], axis=None), np.concatenate([a, b], axis=None),
                 dtype="float32")
    i = np.arange(3, dtype=np.int32).reshape(1, 3)
    f = _arange((2, 3))
    assert_equal(ops.concatenate([native(i), native(f)]), np.concatenate([i, f]).astype(np.float32),
                 dtype="float32")
    assert_equal(ops.concatenate((native(i), native(i)), axis=-1), np.concatenate([i, i], axis=-1), dtype="int32")
    assert_equal(ops.stack([native(i[0]), native(i[0])]), np.stack([i[0], i[0]]), dtype="int32")


def test_stack_mismatched_shapes_is_value_error(backend):
    with pytest.raises(ValueError):
        ops.stack([native(_arange((2,))), native(_arange((3,)))])


@pytest.mark.parametrize(
    ("shape", "sections", "axis"),
    [((6,), 3, 0), ((6,), [1, 4], 0), ((4, 6), 2, 1), ((4, 6), [2], -1), ((4, 6), [0, 5, 5], 1),
     ((3, 4), 1, 0), ((4, 6), (2, 3), 0), ((6,), [], 0),
     # NumPy's slicing rules for points that are negative, past the end or decreasing
     ((6,), [-2], 0), ((6,), [4, 2], 0), ((6,), [2, 9], 0), ((4, 6), [-7, 3], 1)],
)
def test_split(backend, shape, sections, axis):
    x = _arange(shape)
    got = ops.split(native(x), sections, axis=axis)
    expected = np.split(x, sections, axis=axis)
    assert isinstance(got, (list, tuple)) and len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_equal(g, e, dtype="float32")


@pytest.mark.parametrize("points", [[1, 4], [0, 6, 6], [-2], [4, 2], [2, 9]])
def test_split_gradient_is_each_piece_s_own(backend, points):
    """Each piece's cotangent lands on its own span of ``x`` (float64 NumPy reference: piece ``i``
    weighted by ``i + 1``; cells in no piece, or in two overlapping ones, sum accordingly)."""
    import ember

    x = np.linspace(-1.0, 1.0, 6)
    expected = np.zeros(6)
    bounds = [0, *points, 6]
    for i in range(len(bounds) - 1):
        expected[slice(bounds[i], bounds[i + 1])] += i + 1

    def loss(v):
        pieces = ops.split(v, points, axis=0)
        return sum(ops.sum(piece) * (i + 1) for i, piece in enumerate(pieces))

    assert_equal(ember.grad(loss)(native(x.astype(np.float32))), expected, dtype="float32")


def test_split_unequal_sections_is_value_error(backend):
    with pytest.raises(ValueError):
        ops.split(native(_arange((7,))), 3)


@pytest.mark.parametrize(("shape", "repeats"), [((3,), 2), ((2, 3), (2, 1)), ((2, 3), (2,)), ((3,), (2, 2)),
                                                ((2, 1, 2), (1, 3, 1, 2)), ((), 3), ((0, 2), (2, 2))])
def test_tile(backend, shape, repeats):
    x = _arange(shape)
    assert_equal(ops.tile(native(x), repeats), np.tile(x, repeats), dtype="float32")


@pytest.mark.parametrize(("shape", "repeats", "axis"),
                         [((3,), 2, None), ((2, 3), 2, None), ((2, 3), 3, 1), ((2, 3), [1, 0, 2], 1),
                          ((2, 3), [2, 1], -2), ((2, 3), 0, 0), ((), 3, None)])
def test_repeat(backend, shape, repeats, axis):
    x = _arange(shape)
    assert_equal(ops.repeat(native(x), repeats, axis=axis), np.repeat(x, repeats, axis=axis), dtype="float32")


@pytest.mark.parametrize("mode", ["constant", "reflect", "symmetric", "edge"])
@pytest.mark.parametrize("pad_width", [1, (1, 2), ((1, 2), (2, 0)), ((0, 0), (2, 2)), [[1, 0], [0, 1]]])
def test_pad(backend, mode, pad_width):
    x = _arange((3, 4))
    assert_equal(ops.pad(native(x), pad_width, mode=mode), np.pad(x, pad_width, mode=mode), dtype="float32")


def test_pad_constant_values_and_int(backend):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert_equal(ops.pad(native(x), ((1, 1), (0, 2)), constant_values=-7),
                 np.pad(x, ((1, 1), (0, 2)), constant_values=-7), dtype="int32")
    y = _arange((2, 2, 2))
    assert_equal(ops.pad(native(y), 1, mode="reflect"), np.pad(y, 1, mode="reflect"), dtype="float32")
    assert_equal(ops.pad(native(y), ((0, 0), (1, 1), (0, 0)), constant_values=2.5),
                 np.pad(y, ((0, 0), (1, 1), (0, 0)), constant_values=2.5), dtype="float32")


@pytest.mark.parametrize(("shape", "target"), [((3,), (2, 3)), ((2, 1), (2, 4)), ((), (3, 2)), ((1, 3), (0, 3)),
                                               ((3, 1), (2, 3, 5))])
def test_broadcast_to_cases(backend, shape, target):
    x = _arange(shape)
    assert_equal(ops.broadcast_to(native(x), target), np.broadcast_to(x, target), dtype="float32")


def test_broadcast_to_incompatible_is_value_error(backend):
    with pytest.raises(ValueError):
        ops.broadcast_to(native(_arange((3,))), (2, 4))


def test_moveaxis_tuples(backend):
    x = _arange((2, 3, 4, 5))
    for source, destination in [((0, 1), (2, 3)), ((-1, 0), (0, -1)), ((1,), (3,))]:
        assert_equal(ops.moveaxis(native(x), source, destination), np.moveaxis(x, source, destination),
                     dtype="float32")


def test_squeeze_non_unit_axis_is_value_error(backend):
    with pytest.raises(ValueError):
        ops.squeeze(native(_arange((2, 1, 3))), axis=0)


def test_shape_ops_keep_integer_and_bool_dtypes(backend):
    i = np.arange(6, dtype=np.int64).reshape(2, 3)
    b = i % 2 == 0
    assert_equal(ops.transpose(native(i)), i.T, dtype="int64")
    assert_equal(ops.reshape(native(b), (3, 2)), b.reshape(3, 2), dtype="bool")
    assert_equal(ops.flip(native(b), 1), np.flip(b, 1), dtype="bool")
    assert_equal(ops.tile(native(i), 2), np.tile(i, 2), dtype="int64")
