"""Batched VJPs on NumPy: a Jacobian is one backward pass that equals the per-row loop.

The reference is the per-row loop (one ``gradient`` per output row, the path every
engine falls back to), in float64 with a tolerance of a few hundred ulps: batching
only regroups the same sums. Graphs mix batch-aware rules (Dense, tanh, softmax,
reductions, reshape/transpose) with rules that fall back to one call per cotangent
(conv, max, tile, a custom gradient).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import ops
from ember.autodiff.rules import batched as batched_rules

RTOL = 200 * np.finfo(np.float64).eps
RNG = np.random.default_rng(21)


def _arrays(*shapes):
    return [ops.convert_to_tensor(RNG.normal(size=shape)) for shape in shapes]


def _dense_softmax(x, w1, b1, w2):
    h = ops.tanh(ops.add(ops.matmul(x, w1), b1))
    return ops.nn.softmax(ops.matmul(h, w2), axis=1)


def _reductions_and_shapes(x, w1, b1, w2):
    h = ops.nn.sigmoid(ops.matmul(x, w1))  # (4, 5)
    t = ops.transpose(ops.reshape(ops.multiply(h, b1), (2, 2, 5)), (2, 0, 1))  # (5, 2, 2)
    centred = ops.subtract(t, ops.mean(t, axis=0, keepdims=True))
    return ops.add(ops.sum(ops.square(centred), axis=(1, 2)), ops.matmul(ops.nn.relu(b1), w2)[:5])


def _fallback_mix(x, w1, b1, w2):
    h = ops.matmul(x, w1)  # (4, 5)
    picked = ops.getitem(h, (slice(None), slice(1, 4)))  # (4, 3)
    joined = ops.concatenate([picked, ops.exp(picked)], axis=1)  # (4, 6)
    return ops.nn.log_softmax(ops.add(joined, ops.max(joined, axis=0)), axis=-1)  # max: per-row fallback


def _indexing_and_joins(x, w1, b1, w2):
    h = ops.tanh(ops.matmul(x, w1))  # (4, 5)
    gathered = ops.getitem(h, (np.array([0, 2, 2, 3]), slice(None)))  # repeated rows: scatter-add
    strided = ops.getitem(h, (slice(None, None, -2), None, Ellipsis))  # (2, 1, 5)
    stacked = ops.stack([gathered[:2], ops.reshape(strided, (2, 5))], axis=-1)  # (2, 5, 2)
    flat = ops.concatenate([stacked, ops.expand_dims(ops.broadcast_to(b1, (2, 5)), -1)], axis=None)  # (30,)
    return ops.multiply(flat, ops.concatenate([h[1], h[3], b1, b1, b1, b1], axis=0))


def _batched_matmul(x, w1, b1, w2):
    stacked = ops.reshape(ops.tile(x, (2, 1)), (2, 4, 3))  # (2, 4, 3)
    return ops.matmul(ops.matmul(stacked, ops.expand_dims(w1, 0)), b1)  # (2, 4)


def _stacked_list(x, w1, b1, w2):
    rows = ops.convert_to_tensor([ops.sum(ops.matmul(x, w1), axis=0), ops.multiply(b1, 2.0)])  # (2, 5)
    return ops.nn.softmax(rows, axis=0)


def _vector_matmuls(x, w1, b1, w2):
    v = ops.matmul(ops.getitem(x, 0), w1)  # 1-D @ 2-D -> (5,)
    s = ops.matmul(v, b1)  # 1-D @ 1-D -> ()
    u = ops.matmul(w2, ops.tanh(ops.getitem(w2, 0)))  # 2-D @ 1-D -> (5,)
    return ops.multiply(ops.add(v, u), s)


GRAPHS = {
    "vector_matmuls": _vector_matmuls,
    "stacked_list": _stacked_list,
    "dense_tanh_softmax": _dense_softmax,
    "reductions_and_shapes": _reductions_and_shapes,
    "fallback_mix": _fallback_mix,
    "indexing_and_joins": _indexing_and_joins,
    "batched_matmul": _batched_matmul,
}


def _jacobians(fn, values, vectorized, batch=False):
    with ember.GradientTape(persistent=True) as tape:
        tape.watch(values)
        y = fn(*values)
    if not vectorized:
        tape._engine.batched_vjp = lambda *args, **kwargs: NotImplemented
    if batch:
        return [tape.batch_jacobian(y, values[0])]
    return tape.jacobian(y, values)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_batched_jacobian_equals_the_per_row_loop_numpy(name):
    ember.set_backend("numpy")
    values = _arrays((4, 3), (3, 5), (5,), (5, 7))
    fn = GRAPHS[name]
    expected = _jacobians(fn, values, vectorized=False)
    got = _jacobians(fn, values, vectorized=True)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if e is None:
            assert g is None
            continue
        assert g.shape == e.shape and g.dtype == np.float64
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=RTOL * max(1.0, float(np.abs(e).max())))


def test_batch_jacobian_of_a_conv_layer_equals_the_loop_numpy():
    ember.set_backend("numpy")
    x, kernel, w = _arrays((2, 5, 5, 1), (3, 3, 1, 2), (18, 4))

    def fn(x, kernel, w):
        features = ops.nn.relu(ops.nn.conv(x, kernel, padding="valid"))  # (2, 3, 3, 2)
        return ops.nn.softmax(ops.matmul(ops.reshape(features, (2, 18)), w))

    (expected,) = _jacobians(fn, [x, kernel, w], vectorized=False, batch=True)
    (got,) = _jacobians(fn, [x, kernel, w], vectorized=True, batch=True)
    assert got.shape == (2, 4, 5, 5, 1)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=RTOL * float(np.abs(expected).max()))


def test_batch_aware_rules_run_once_per_jacobian_numpy(monkeypatch):
    """The batched pass calls matmul's and softmax's rules once, not once per output row."""
    ember.set_backend("numpy")
    calls = []
    for op in ("matmul", "nn.softmax"):
        rule = batched_rules.BATCHED_RULES[op]
        monkeypatch.setitem(batched_rules.BATCHED_RULES, op,
                            lambda *args, _rule=rule, _op=op, **kwargs: calls.append(_op) or _rule(*args, **kwargs))
    values = _arrays((4, 3), (3, 5), (5,), (5, 7))
    jx = _jacobians(_dense_softmax, values, vectorized=True)[0]
    assert jx.shape == (4, 7, 4, 3)
    assert sorted(calls) == ["matmul", "matmul", "nn.softmax"]


def test_a_rule_that_is_not_batch_aware_runs_per_cotangent_numpy(monkeypatch):
    ember.set_backend("numpy")
    monkeypatch.delitem(batched_rules.BATCHED_RULES, "matmul")  # now matmul falls back to the loop
    values = _arrays((4, 3), (3, 5), (5,), (5, 7))
    expected = _jacobians(_dense_softmax, values, vectorized=False)
    got = _jacobians(_dense_softmax, values, vectorized=True)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=RTOL)


def test_batched_vjp_rejects_cotangents_of_the_wrong_shape_numpy():
    ember.set_backend("numpy")
    (x,) = _arrays((3,))
    with ember.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ops.tanh(x)
    with pytest.raises(ValueError, match=r"do not match the target's shape \(3,\)"):
        tape._engine.batched_vjp(y, [x], np.ones((2, 4)), create_graph=False)


def test_dense_softmax_jacobian_on_every_backend(backend):
    """The same mixed graph gives the same Jacobian vectorized and per row on every backend."""
    x, w1, b1, w2 = (ops.convert_to_tensor(RNG.normal(size=s).astype(np.float32))
                     for s in ((2, 3), (3, 4), (4,), (4, 5)))
    expected = _jacobians(_dense_softmax, [x, w1, b1, w2], vectorized=False)
    got = _jacobians(_dense_softmax, [x, w1, b1, w2], vectorized=True)
    for g, e in zip(got, expected):
        e = ops.to_numpy(e)
        # float32: the loop and the batch sum the same few terms in different orders
        np.testing.assert_allclose(ops.to_numpy(g), e, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(e).max())))
