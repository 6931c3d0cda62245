"""Vectorized ``jacobian``/``batch_jacobian`` equal the per-row loop and a hand-derived Jacobian."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import ops

RNG = np.random.default_rng(3)
X = RNG.normal(size=(4, 3)).astype(np.float32)
W = RNG.normal(size=(3, 5)).astype(np.float32)
RTOL, ATOL = 1e-5, 1e-6


def _tape(x, w, unused):
    with ember.GradientTape(persistent=True) as tape:
        tape.watch([x, w, unused])
        y = ops.tanh(ops.matmul(x, w))
    return tape, y


def _reference():
    x, w = X.astype(np.float64), W.astype(np.float64)
    d = 1 - np.tanh(x @ w) ** 2  # (b, o)
    batch = np.einsum("bo,io->boi", d, w)  # d y[b, o] / d x[b, i]
    full_x = np.zeros((4, 5, 4, 3))
    for b in range(4):
        full_x[b, :, b, :] = batch[b]
    full_w = np.zeros((4, 5, 3, 5))
    for o in range(5):
        full_w[:, o, :, o] = d[:, o:o + 1] * x
    return batch, full_x, full_w


@pytest.mark.parametrize("vectorized", [True, False])
def test_jacobians_match_the_hand_derived_ones(backend, vectorized):
    x, w, unused = (ops.convert_to_tensor(a) for a in (X, W, np.ones(2, np.float32)))
    tape, y = _tape(x, w, unused)
    if not vectorized:  # the per-row path every engine falls back to
        tape._engine.batched_vjp = lambda *args, **kwargs: NotImplemented
    batch, full_x, full_w = _reference()
    np.testing.assert_allclose(ops.to_numpy(tape.batch_jacobian(y, x)), batch, rtol=RTOL, atol=ATOL)
    jx, jw, ju = tape.jacobian(y, [x, w, unused])
    np.testing.assert_allclose(ops.to_numpy(jx), full_x, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(ops.to_numpy(jw), full_w, rtol=RTOL, atol=ATOL)
    assert ju is None
    (zero,) = tape.jacobian(y, [unused], unconnected_gradients="zero")
    assert ops.shape(zero) == (4, 5, 2) and not np.any(ops.to_numpy(zero))


def test_jacobian_through_a_custom_gradient(backend):
    @ember.custom_gradient
    def double_grad(x):
        return ops.multiply(x, 1.0), lambda g: ops.multiply(g, 2.0)

    x = ops.convert_to_tensor(np.array([1.0, 2.0, 3.0], np.float32))
    with ember.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ops.square(double_grad(x))
    np.testing.assert_allclose(ops.to_numpy(tape.jacobian(y, x)), np.diag([4.0, 8.0, 12.0]), rtol=RTOL)


def test_jacobian_of_a_gradient_inside_an_outer_tape(backend):
    """Higher order: the Hessian of sum(x^3) is diag(6x) (the loop path records for the outer tape)."""
    x = ops.convert_to_tensor(np.array([1.0, -2.0], np.float32))
    with ember.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with ember.GradientTape() as inner:
            inner.watch(x)
            y = ops.sum(ops.multiply(ops.square(x), x))
        g = inner.gradient(y, x)
    np.testing.assert_allclose(ops.to_numpy(outer.jacobian(g, x)), np.diag([6.0, -12.0]), rtol=RTOL)
