"""Merge layers: Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate, Dot.

References are NumPy float64 expressions written here. Keras's broadcasting rule for
merges is checked explicitly: an input of lower rank gets its missing axes right after
the batch axis (``(b, 4)`` merges with ``(b, 3, 4)`` as ``(b, 1, 4)``).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import ember
from ember import layers, ops
from tests.helpers import assert_close
from tests.layers.layer_test import run_layer_test

ELEMENTWISE = [
    (layers.Add, lambda xs: functools.reduce(np.add, xs)),
    (layers.Multiply, lambda xs: functools.reduce(np.multiply, xs)),
    (layers.Average, lambda xs: sum(xs) / len(xs)),
    (layers.Maximum, lambda xs: functools.reduce(np.maximum, xs)),
    (layers.Minimum, lambda xs: functools.reduce(np.minimum, xs)),
]


def _keras_align(xs):
    """Insert the missing axes of lower-rank inputs right after the batch axis."""
    rank = max(x.ndim for x in xs)
    return [x.reshape(x.shape[:1] + (1,) * (rank - x.ndim) + x.shape[1:]) for x in xs]


@pytest.mark.parametrize("cls, np_fn", ELEMENTWISE, ids=lambda v: getattr(v, "__name__", ""))
def test_elementwise_merge(cls, np_fn):
    run_layer_test(lambda: cls(name="merge"), [(2, 3), (2, 3), (2, 3)], reference=lambda p, xs: np_fn(xs),
                   expected_output_shape=(2, 3), supports_masking=True)


@pytest.mark.parametrize("cls, np_fn", ELEMENTWISE, ids=lambda v: getattr(v, "__name__", ""))
def test_elementwise_merge_broadcasts_like_keras(cls, np_fn):
    run_layer_test(lambda: cls(name="merge"), [(2, 3, 4), (2, 4), (2, 3, 1)],
                   reference=lambda p, xs: np_fn(_keras_align(xs)), expected_output_shape=(2, 3, 4),
                   supports_masking=True)


def test_subtract():
    run_layer_test(lambda: layers.Subtract(name="sub"), [(2, 3), (2, 3)], reference=lambda p, xs: xs[0] - xs[1],
                   supports_masking=True)
    run_layer_test(lambda: layers.Subtract(name="sub"), [(2, 1, 3), (2, 3)], supports_masking=True,
                   reference=lambda p, xs: xs[0] - xs[1][:, None, :], expected_output_shape=(2, 1, 3))


@pytest.mark.parametrize("axis, shapes, expected", [
    (-1, [(2, 3), (2, 4)], (2, 7)),
    (1, [(2, 3, 2), (2, 1, 2), (2, 2, 2)], (2, 6, 2)),
    (-2, [(2, 1, 3), (2, 2, 3)], (2, 3, 3)),
])
def test_concatenate(axis, shapes, expected):
    run_layer_test(lambda: layers.Concatenate(axis=axis, name="concat"), shapes, supports_masking=True,
                   reference=lambda p, xs: np.concatenate(xs, axis=axis), expected_output_shape=expected)


def _batch_dot(x1, x2, a1, a2):
    """Per-example tensordot written with explicit loops over the batch."""
    out = np.stack([np.tensordot(x1[b], x2[b], axes=(a1 - 1, a2 - 1)) for b in range(x1.shape[0])])
    return out.reshape(x1.shape[0], 1) if out.ndim == 1 else out


@pytest.mark.parametrize("axes, shapes, expected", [
    (1, [(2, 4), (2, 4)], (2, 1)),
    (-1, [(2, 3, 4), (2, 5, 4)], (2, 3, 5)),
    ((1, 2), [(2, 3, 4), (2, 5, 3)], (2, 4, 5)),
    ((2, 1), [(2, 3, 4), (2, 4)], (2, 3)),
])
def test_dot(axes, shapes, expected):
    a1, a2 = axes if isinstance(axes, tuple) else (axes, axes)

    def reference(p, xs):
        return _batch_dot(xs[0], xs[1], a1 % xs[0].ndim, a2 % xs[1].ndim)

    run_layer_test(lambda: layers.Dot(axes, name="dot"), shapes, reference=reference, expected_output_shape=expected)


def test_dot_normalize_is_cosine_similarity():
    def reference(p, xs):
        a, b = xs
        cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
        return cos[:, None]

    run_layer_test(lambda: layers.Dot(axes=-1, normalize=True, name="dot"), [(3, 4), (3, 4)], reference=reference)


def test_merge_masks(backend):
    a = ops.convert_to_tensor(np.array([[True, False, True]]))
    b = ops.convert_to_tensor(np.array([[True, True, False]]))
    x = [ops.ones((1, 3, 2)), ops.ones((1, 3, 2))]
    np.testing.assert_array_equal(ops.to_numpy(layers.Add().compute_mask(x, [a, b])), [[True, False, False]])
    np.testing.assert_array_equal(ops.to_numpy(layers.Add().compute_mask(x, [a, None])), [[True, False, True]])
    assert layers.Add().compute_mask(x, [None, None]) is None
    assert layers.Add().compute_mask(x, None) is None
    mask = layers.Concatenate(axis=1).compute_mask(x, [a, None])
    np.testing.assert_array_equal(ops.to_numpy(mask), [[True, False, True, True, True, True]])


# ----------------------------------------------------------------- bad input


def test_bad_input_names_the_layer_and_shapes(backend):
    a, b = ember.Input((3,)), ember.Input((4,))
    with pytest.raises(ValueError, match=r"'add_bad' \(Add\).*incompatible shapes \[\(None, 3\), \(None, 4\)\]"):
        layers.Add(name="add_bad")([a, b])
    layer = layers.Multiply(name="mul_bad")
    with pytest.raises(ValueError, match=r"'mul_bad' \(Multiply\).*\[\(2, 3\), \(2, 4\)\]"):
        layer.apply(layer.build([(None, 3), (None, 3)]), [ops.ones((2, 3)), ops.ones((2, 4))])
    with pytest.raises(ValueError, match=r"'mul_bad'.*different batch sizes.*\[\(2, 3\), \(5, 3\)\]"):
        layer.apply(layer.build([(None, 3), (None, 3)]), [ops.ones((2, 3)), ops.ones((5, 3))])
    with pytest.raises(ValueError, match=r"'mul_bad' \(Multiply\) must be called on a list"):
        layer(a)
    with pytest.raises(ValueError, match=r"'mul_bad' \(Multiply\) must be called on a list"):
        layer.apply({"params": {}, "buffers": {}}, ops.ones((2, 3)))
    with pytest.raises(ValueError, match=r"'sub_bad' \(Subtract\).*exactly 2 inputs, received 3"):
        layers.Subtract(name="sub_bad")([a, a, a])
    with pytest.raises(ValueError, match=r"'sub_bad' \(Subtract\).*exactly 2 inputs, received 1"):
        layers.Subtract(name="sub_bad").compute_output_shape([(None, 3)])
    with pytest.raises(ValueError, match=r"'max_bad' \(Maximum\).*at least 1 inputs, received 0"):
        layers.Maximum(name="max_bad").compute_output_shape([])


def test_concatenate_bad_input(backend):
    layer = layers.Concatenate(axis=-1, name="cat_bad")
    with pytest.raises(ValueError, match=r"'cat_bad'.*matching shapes.*\[\(None, 2, 3\), \(None, 4, 3\)\]"):
        layer([ember.Input((2, 3)), ember.Input((4, 3))])
    with pytest.raises(ValueError, match=r"'cat_bad'.*same rank.*\[\(None, 3\), \(None, 2, 3\)\]"):
        layer([ember.Input((3,)), ember.Input((2, 3))])
    with pytest.raises(ValueError, match=r"'cat_bad'.*matching shapes.*\[\(2, 3\), \(3, 3\)\]"):
        layer.apply({"params": {}, "buffers": {}}, [ops.ones((2, 3)), ops.ones((3, 3))])
    with pytest.raises(ValueError, match=r"'cat_axis'.*axis 3 is out of range.*rank 2"):
        layers.Concatenate(axis=3, name="cat_axis").compute_output_shape([(None, 3), (None, 3)])
    assert layer.compute_output_shape([(None, 2, None), (None, None, 3)]) == (None, 2, None)


def test_dot_bad_input(backend):
    with pytest.raises(ValueError, match="cannot include 0"):
        layers.Dot(axes=0)
    with pytest.raises(ValueError, match="pair of ints"):
        layers.Dot(axes=(1, 1, 1))
    layer = layers.Dot(axes=1, name="dot_bad")
    with pytest.raises(ValueError,
                       match=r"'dot_bad'.*size 3 at axis 1.*size 4 at axis 1.*\[\(None, 3\), \(None, 4\)\]"):
        layer([ember.Input((3,)), ember.Input((4,))])
    with pytest.raises(ValueError, match=r"'dot_bad'.*\[\(2, 3\), \(2, 4\)\]"):
        layer.apply({"params": {}, "buffers": {}}, [ops.ones((2, 3)), ops.ones((2, 4))])
    with pytest.raises(ValueError, match=r"'dot_bad'.*rank >= 2"):
        layer.compute_output_shape([(None,), (None, 3)])
    with pytest.raises(ValueError, match=r"'dot_bad'.*exactly 2 inputs, received 3"):
        layer.compute_output_shape([(None, 3)] * 3)


def test_merge_in_a_model_with_unknown_dims(backend):
    a, b = ember.Input((None, 4)), ember.Input((4,))
    y = layers.Add(name="add")([a, b])
    assert y.shape == (None, None, 4)
    model = ember.Model([a, b], y)
    model.build(seed=0)
    xa = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    xb = np.ones((2, 4), np.float32)
    assert_close(model([ops.convert_to_tensor(xa), ops.convert_to_tensor(xb)]), xa + xb[:, None, :])
