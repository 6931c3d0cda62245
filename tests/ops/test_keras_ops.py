"""The Keras-compatible ops of ``ember.ops.extra`` against NumPy float64 and Keras 3 (torch backend).

Each case runs on every backend with the same float32 inputs; NumPy-compatible ops are
compared with NumPy in float64, the others with ``keras.ops`` on the same inputs.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

import ember
from ember import ops

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")

RTOL, ATOL = 1e-5, 1e-6  # float32 results against float64 / float32 references

rng = np.random.default_rng(0)
X = rng.normal(size=(3, 4)).astype(np.float32)
Y = rng.normal(size=(3, 4)).astype(np.float32)
POS = (np.abs(X) + 0.5).astype(np.float32)
NAN = X.copy()
NAN[0, 1] = np.nan
NAN[2, :] = np.nan
V = rng.normal(size=(5,)).astype(np.float32)
W = rng.normal(size=(3,)).astype(np.float32)
SQ = (rng.normal(size=(3, 3)) + 3 * np.eye(3)).astype(np.float32)
SPD = (SQ @ SQ.T + np.eye(3)).astype(np.float32)
INTS = np.array([[1, 3, 0], [2, 2, 4]], dtype=np.int32)
IMG = rng.normal(size=(2, 5, 6, 3)).astype(np.float32)
SPECIAL = np.array([-np.inf, -1.5, -0.0, 0.0, 2.5, np.inf, np.nan], dtype=np.float32)

# (name, args, kwargs, NumPy reference on float64 copies of args)
NUMPY_CASES = [
    ("absolute", (X,), {}, np.absolute), ("fabs", (X,), {}, np.fabs), ("amax", (X,), {"axis": 1}, None),
    ("amin", (X,), {"axis": 0}, None), ("true_divide", (X, POS), {}, None), ("cbrt", (X,), {}, None),
    ("deg2rad", (X,), {}, None), ("rad2deg", (X,), {}, None), ("exp2", (X,), {}, None),
    ("fmax", (NAN, Y), {}, None), ("fmin", (NAN, Y), {}, None), ("fmod", (X * 5, POS), {}, None),
    ("heaviside", (np.round(X), Y), {}, None), ("hypot", (X, Y), {}, None), ("isneginf", (SPECIAL,), {}, None),
    ("isposinf", (SPECIAL,), {}, None), ("isreal", (X,), {}, None), ("logaddexp", (X * 30, Y), {}, None),
    ("logaddexp2", (X, Y * 40), {}, None),
    ("nan_to_num", (SPECIAL,), {"nan": 1.0, "posinf": 9.0, "neginf": -9.0}, None),
    ("ptp", (X,), {"axis": 1}, None), ("signbit", (SPECIAL[:-1],), {}, None), ("sinc", (np.append(X, 0),), {}, None),
    ("trunc", (X * 3,), {}, None), ("angle", (X,), {}, None),
    ("ldexp", (X, np.arange(12, dtype=np.int32).reshape(3, 4) % 5 - 2), {}, None),
    ("average", (X,), {"axis": 1, "weights": POS[0]}, None), ("nansum", (NAN,), {"axis": 1}, None),
    ("nanprod", (NAN,), {"axis": 0}, None), ("nanmean", (NAN[:2],), {"axis": 1}, None),
    ("nanvar", (NAN[:2],), {"axis": 1}, None), ("nanstd", (NAN[:2],), {"axis": 1}, None),
    ("nanmax", (NAN[:2],), {"axis": 1}, None), ("nanmin", (NAN,), {}, None),
    ("nanargmax", (NAN[:2],), {"axis": 1}, None),
    ("nanargmin", (NAN[:2],), {"axis": 1}, None), ("nancumsum", (NAN,), {"axis": 1}, None),
    ("nancumprod", (NAN,), {"axis": 0}, None), ("nanmedian", (NAN[:2],), {"axis": 1}, None),
    ("nanquantile", (NAN[:2],), {"q": 0.3, "axis": 1, "keepdims": True}, None),
    ("nanpercentile", (NAN,), {"q": [10.0, 70.0]}, None), ("erfc", (X,), {}, None),
    ("append", (X, Y), {"axis": 0}, None), ("append", (X, V), {}, None), ("hstack", ([X, Y],), {}, None),
    ("vstack", ([V, V],), {}, None), ("dstack", ([X, Y],), {}, None), ("diagflat", (W,), {"k": 1}, None),
    ("fliplr", (X,), {}, None), ("flipud", (X,), {}, None), ("roll", (X,), {"shift": 2, "axis": 1}, None),
    ("roll", (X,), {"shift": -5}, None), ("rot90", (X,), {}, None),
    ("rot90", (IMG[0],), {"k": 3, "axes": (1, 2)}, None),
    ("rot90", (X,), {"k": 2}, None), ("tril", (X,), {"k": 1}, None), ("triu", (X,), {"k": -1}, None),
    ("vander", (W,), {"N": 4}, None), ("vander", (W,), {"increasing": True}, None), ("diff", (X,), {"n": 2}, None),
    ("diff", (X,), {"axis": 0}, None), ("trapezoid", (X,), {"dx": 0.5}, None),
    ("trapezoid", (X,), {"x": np.cumsum(POS[0])}, None), ("kron", (X[:2, :2], SQ), {}, None),
    ("inner", (X, Y), {}, None), ("vdot", (X, Y), {}, None), ("cross", (SQ, SQ[::-1]), {}, None),
    ("correlate", (V, W), {}, None), ("correlate", (V, W), {"mode": "same"}, None),
    ("correlate", (W, V), {"mode": "full"}, None), ("corrcoef", (X,), {}, None),
    ("searchsorted", (np.sort(V), X), {}, None), ("searchsorted", (np.sort(V), X), {"side": "right"}, None),
    ("digitize", (X, np.sort(W)), {}, None), ("bincount", (INTS[0],), {"minlength": 6}, None),
    ("isin", (INTS, np.array([2, 4])), {}, None), ("kaiser", (7, 3.0), {}, None), ("bartlett", (5,), {}, None),
    ("blackman", (6,), {}, None), ("hamming", (6,), {}, None), ("hanning", (6,), {}, None),
    ("bitwise_and", (INTS, 6), {}, None), ("bitwise_or", (INTS, INTS[::-1]), {}, None),
    ("bitwise_xor", (INTS, 3), {}, None), ("bitwise_invert", (INTS,), {}, None),
    ("left_shift", (INTS, 2), {}, None), ("right_shift", (INTS * 9, 1), {}, None), ("gcd", (INTS * 6, 4), {}, None),
    ("lcm", (INTS + 1, 4), {}, None), ("nextafter", (X, Y), {}, None), ("logspace", (0.0, 2.0, 5), {}, None),
    ("geomspace", (1.0, 1000.0, 4), {}, None), ("tri", (3, 4, 1), {}, None),
    ("i0", (np.concatenate([X.ravel() * 12, [29.5, 30.5, -45.0, 80.0]]).astype(np.float32),), {}, None),
]


def _numpy_reference(name, args, kwargs):
    args64 = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype == np.float32 else a for a in args]
    args64 = [[b.astype(np.float64) for b in a] if isinstance(a, list) and isinstance(a[0], np.ndarray) else a
              for a in args64]
    if name == "nextafter":  # the next float32, not float64
        return np.nextafter(*args)
    renamed = {"bitwise_invert": np.invert, "erfc": np.vectorize(math.erfc),
               "trapezoid": getattr(np, "trapezoid", None) or np.trapz}
    function = renamed.get(name, getattr(np, name, None))
    return function(*args64, **kwargs)


def _ember_args(args):
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(ops.convert_to_tensor(a))
        elif isinstance(a, list) and a and isinstance(a[0], np.ndarray):
            out.append([ops.convert_to_tensor(b) for b in a])
        else:
            out.append(a)
    return out


def _check(actual, expected, rtol=RTOL, atol=ATOL):
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _check(a, e, rtol, atol)
        return
    actual = np.asarray(ops.to_numpy(actual))
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype == bool or np.issubdtype(expected.dtype, np.integer):
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name, args, kwargs, _", NUMPY_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(NUMPY_CASES)])
def test_numpy_compatible_ops_match_numpy_float64(backend, name, args, kwargs, _):
    expected = _numpy_reference(name, args, kwargs)
    actual = getattr(ops, name)(*_ember_args(args), **kwargs)
    _check(actual, expected)


KERAS_CASES = [
    ("celu", (X,), {"alpha": 0.7}), ("glu", (X,), {}), ("hard_shrink", (X,), {}), ("hard_silu", (X * 4,), {}),
    ("hard_swish", (X * 4,), {}), ("hard_tanh", (X * 2,), {}), ("log_sigmoid", (X * 10,), {}),
    ("soft_shrink", (X,), {"threshold": 0.3}), ("sparse_plus", (X * 2,), {}), ("sparse_sigmoid", (X * 2,), {}),
("squareplus", (X,), {"b": 2}),
    ("swish", (X,), {}), ("tanh_shrink", (X,), {}), ("threshold", (X, 0.1, -2.0), {}),
    ("relu", (X,), {}), ("relu6", (X * 8,), {}), ("leaky_relu", (X,), {"negative_slope": 0.1}), ("elu", (X,), {}),
    ("selu", (X,), {}), ("gelu", (X,), {}), ("silu", (X,), {}), ("sigmoid", (X,), {}), ("softplus", (X,), {}),
    ("softsign", (X,), {}), ("softmax", (X,), {"axis": 0}), ("log_softmax", (X,), {}),
    ("normalize", (X,), {}), ("normalize", (X,), {"axis": 0, "order": 1}),
    ("batch_normalization", (X, W.mean() + X[0], POS[1], -1), {"offset": Y[0], "scale": POS[2]}),
    ("layer_normalization", (X,), {"gamma": POS[0], "beta": Y[0], "epsilon": 1e-3}),
    ("rms_normalization", (X,), {"scale": POS[0], "epsilon": 1e-6}),
    ("binary_crossentropy", (np.abs(np.sign(X)) * (X > 0), 1 / (1 + np.exp(-Y))), {}),
    ("binary_crossentropy", ((X > 0).astype(np.float32), Y), {"from_logits": True}),
    ("categorical_crossentropy",
     (np.eye(4, dtype=np.float32)[[0, 2, 3]], np.exp(X) / np.exp(X).sum(1, keepdims=True)), {}),
    ("categorical_crossentropy", (np.eye(4, dtype=np.float32)[[0, 2, 3]], X), {"from_logits": True}),
    ("sparse_categorical_crossentropy", (np.array([1, 0, 3]), X), {"from_logits": True}),
    ("multi_hot", (INTS,), {"num_classes": 5}), ("one_hot", (INTS[0],), {"num_classes": 5}),
    ("depthwise_conv", (IMG, rng.normal(size=(3, 3, 3, 2)).astype(np.float32)), {"padding": "same"}),
    ("separable_conv", (IMG, rng.normal(size=(2, 2, 3, 2)).astype(np.float32),
                        rng.normal(size=(1, 1, 6, 4)).astype(np.float32)), {"strides": 2}),
    ("average_pool", (IMG, 2), {}), ("adaptive_average_pool", (IMG, (2, 4)), {}),
    ("adaptive_max_pool", (IMG, 3), {}), ("adaptive_average_pool", (IMG[:, 0], 3), {}),
    ("dot_product_attention", (IMG[:, :, :2], IMG[:, :4, 2:4], IMG[:, :4, 4:6]), {}),
    ("dot_product_attention", (IMG[:, :4, :2], IMG[:, :4, 2:4], IMG[:, :4, 4:6]), {"is_causal": True, "scale": 0.3}),
    ("psnr", (X, Y, 2.0), {}), ("in_top_k", (np.array([1, 0, 3]), X, 2), {}),
    ("depth_to_space", (rng.normal(size=(1, 2, 3, 8)).astype(np.float32), 2), {}),
    ("space_to_depth", (IMG[:, :4, :6], 2), {}), ("extract_sequences", (X, 2, 1), {}),
    ("unfold", (np.transpose(IMG, (0, 3, 1, 2)), 2), {"stride": 2, "padding": 1}),
    ("segment_min", (X, np.array([0, 0, 1])), {"num_segments": 2}),
    ("segment_prod", (X, np.array([0, 1, 1])), {"num_segments": 2}),
    ("cholesky_inverse", (np.linalg.cholesky(SPD),), {}), ("logdet", (SPD,), {}), ("matrix_rank", (X,), {}),
    ("solve_triangular", (SQ, X[:, :2]), {"lower": True}), ("cdist", (X, Y[:2]), {}),
    ("solve", (SQ, X), {}), ("median", (X,), {"axis": 1}), ("norm", (X,), {}), ("select", (
        [X > 0.5, X < -0.5], [X, Y]), {"default": 7.0}), ("saturate_cast", (X * 300, "int8"), {}),
    ("divide_no_nan", (X, np.where(Y > 0, Y, 0)), {}), ("allclose", (X, X + 1e-9), {}),
]


def _keras_args(args):
    out = []
    for a in args:
        if isinstance(a, list) and a and isinstance(a[0], np.ndarray):
            out.append([keras.ops.convert_to_tensor(b) for b in a])
        else:
            out.append(keras.ops.convert_to_tensor(a) if isinstance(a, np.ndarray) else a)
    return out


@pytest.mark.parametrize("name, args, kwargs", KERAS_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(KERAS_CASES)])
def test_ops_match_keras(backend, name, args, kwargs):
    expected = keras.ops.convert_to_numpy(getattr(keras.ops, name)(*_keras_args(args), **kwargs))
    actual = getattr(ops, name)(*_ember_args(args), **kwargs)
    # Keras computes in float32 too: two float32 results, each within ~1e-6 of the exact value.
    _check(actual, expected, rtol=2e-5, atol=2e-6)


def _sparsemax_reference(z):
    """Sparsemax of each row by the sort-based closed form (Martins & Astudillo, 2016), float64."""
    out = np.zeros_like(z)
    for i, row in enumerate(z):
        ordered = np.sort(row)[::-1]
        k = np.arange(1, len(row) + 1)
        support = k[1 + k * ordered > np.cumsum(ordered)].max()
        tau = (ordered[:support].sum() - 1) / support
        out[i] = np.maximum(row - tau, 0)
    return out


def test_sparsemax_projects_onto_the_simplex(backend):
    # Against the closed form in float64 (keras.ops.sparsemax on torch gives rows summing to 0 here).
    z = (X * 2).astype(np.float64)
    _check(ops.sparsemax(ops.convert_to_tensor(X * 2)), _sparsemax_reference(z))
    _check(ops.sparsemax(ops.convert_to_tensor(X), axis=0), _sparsemax_reference(X.T.astype(np.float64)).T)


def test_lu_factor_reconstructs_the_matrix(backend):
    lu, pivots = ops.lu_factor(ops.convert_to_tensor(SQ.astype(np.float64) if backend != "mlx" else SQ))
    lu, pivots = np.asarray(ops.to_numpy(lu), np.float64), np.asarray(ops.to_numpy(pivots))
    lower, upper = np.tril(lu, -1) + np.eye(3), np.triu(lu)
    permuted = SQ.astype(np.float64).copy()
    for i, p in enumerate(pivots):
        permuted[[i, p]] = permuted[[p, i]]
    # L U = P A within 3 u |L| |U| (Higham 2002, Thm 9.3), |L| <= 1, |U| <= 4: 3 u * 12 = 2.2e-6 in float32
    # (MLX; float64 elsewhere) -> 1e-5, relative and absolute
    np.testing.assert_allclose(lower @ upper, permuted, rtol=1e-5, atol=1e-5)


def test_unique_and_unravel_and_argpartition(backend):
    values, inverse, counts = ops.unique(ops.convert_to_tensor(INTS), return_inverse=True, return_counts=True)
    ref_values, ref_inverse, ref_counts = np.unique(INTS, return_inverse=True, return_counts=True)
    _check(values, ref_values)
    _check(inverse, ref_inverse.reshape(INTS.shape))
    _check(counts, ref_counts)
    _check(ops.unique(ops.convert_to_tensor(INTS[0]), size=5, fill_value=-1), np.array([0, 1, 3, -1, -1]))
    _check(ops.unravel_index(ops.convert_to_tensor([5, 7]), (3, 4)), np.unravel_index([5, 7], (3, 4)))
    order = np.asarray(ops.to_numpy(ops.argpartition(ops.convert_to_tensor(V), 2)))
    assert np.all(V[order[:2]] <= np.sort(V)[2]) and np.all(V[order[3:]] >= np.sort(V)[2])


def test_histogram_and_meshgrid_and_splits(backend):
    counts, edges = ops.histogram(ops.convert_to_tensor(X), bins=4)
    ref_counts, ref_edges = np.histogram(X, bins=4)
    _check(counts, ref_counts)
    _check(edges, ref_edges.astype(np.float32))
    for indexing in ("xy", "ij"):
        _check(ops.meshgrid(ops.convert_to_tensor(V), ops.convert_to_tensor(W), indexing=indexing),
               np.meshgrid(V, W, indexing=indexing))
    _check(ops.array_split(ops.convert_to_tensor(V), 3), np.array_split(V, 3))
    _check(ops.hsplit(ops.convert_to_tensor(X), 2), np.hsplit(X, 2))
    _check(ops.vsplit(ops.convert_to_tensor(X), [1]), np.vsplit(X, [1]))
    _check(ops.dsplit(ops.convert_to_tensor(IMG), 3), np.dsplit(IMG, 3))
    _check(ops.unstack(ops.convert_to_tensor(X), axis=1), list(np.moveaxis(X, 1, 0)))


def test_control_flow_and_aliases(backend):
    x = ops.convert_to_tensor(X)
    assert ops.cond(ops.convert_to_tensor(True), lambda: 1, lambda: 2) == 1
    assert ops.switch(5, [lambda v: v + 1, lambda v: v * 10], 3) == 30
    assert ops.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + i), (0, 0)) == (4, 6)
    carry, ys = ops.scan(lambda c, row: (ops.add(c, row), ops.multiply(c, 2.0)), ops.zeros((4,)), x)
    _check(carry, X.sum(0))
    _check(ys, 2 * np.concatenate([np.zeros((1, 4)), np.cumsum(X, 0)[:-1]]))
    _check(ops.associative_scan(ops.add, x, axis=1), np.cumsum(X, axis=1))
    _check(ops.associative_scan(ops.add, x, reverse=True), np.cumsum(X[::-1], 0)[::-1])
    _check(ops.map(lambda row: ops.sum(row), x), X.sum(1))
    _check(ops.vectorized_map(lambda row: ops.max(row), x), X.max(1))
    _check(ops.vectorize(lambda a, b: ops.add(a, b))(x, ops.convert_to_tensor(V[:4])), X + V[:4])
    _check(ops.vectorize(lambda a: ops.sum(a), signature="(n)->()")(x), X.sum(1))
    _check(ops.copy(x), X)
    _check(ops.identity(2), np.eye(2))
    _check(ops.empty((2, 1)), np.zeros((2, 1)))
    _check(ops.get_item(x, (1, slice(None, 2))), X[1, :2])
    assert ops.is_tensor(x) and not ops.is_tensor(X if backend != "numpy" else [1.0])
    np.testing.assert_array_equal(ops.convert_to_numpy(x), X)


def test_gradients_flow_through_composite_ops(backend):
    x = ops.convert_to_tensor(X)

    def loss(value):
        return ops.sum(ops.add(ops.nanmean(value, axis=1), ops.sum(ops.glu(value), axis=1)))

    grad = ember.grad(loss)(x)
    a, b = X[:, :2].astype(np.float64), X[:, 2:].astype(np.float64)
    sig = 1 / (1 + np.exp(-b))
    expected = np.concatenate([sig, a * sig * (1 - sig)], axis=1) + 1 / 4
    _check(grad, expected)


def test_bad_inputs_name_the_op(backend):
    with pytest.raises(ValueError, match="glu"):
        ops.glu(ops.ones((2, 3)))
    with pytest.raises(ValueError, match="one_hot: give the class count"):
        ops.one_hot(ops.convert_to_tensor([1]))
    with pytest.raises(TypeError, match="bitwise_and"):
        ops.bitwise_and(ops.ones((2,)), 1)
    with pytest.raises(ValueError, match="correlate"):
        ops.correlate(ops.ones((2, 2)), ops.ones((2,)))
    with pytest.raises(ValueError, match="flash_attention"):
        ops.dot_product_attention(ops.ones((1, 2, 1, 2)), ops.ones((1, 2, 1, 2)), ops.ones((1, 2, 1, 2)),
                                  flash_attention=True)
    with pytest.raises(ValueError, match="adaptive_max_pool"):
        ops.adaptive_max_pool(ops.ones((1, 4, 1)), 0)
    with pytest.raises(ValueError, match="unravel_index"):
        ops.unravel_index(ops.convert_to_tensor([12]), (3, 4))
