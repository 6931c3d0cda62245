"""Augmented assignment on traced values inside a tape (issue 18 item 5), on every backend.

``loss += penalty`` and ``y *= 2`` rebind the name to the op's result (as on TensorFlow, JAX
and MLX tensors); the gradients are compared with torch autograd in float64.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import ops
from tests.helpers import needs, optional_import
from tests.tolerances import FLOAT32

torch = optional_import("torch")  # the reference; a core-only install skips the tests that need it


def _reference(xv, wv):
    x = torch.tensor(xv, dtype=torch.float64, requires_grad=True)
    w = torch.tensor(wv, dtype=torch.float64, requires_grad=True)
    h = torch.tanh(x @ w)
    h = h * 2.0
    h = h - 0.5
    h = h / 3.0
    h = h ** 2
    loss = h.sum()
    loss = loss + (w * w).sum()
    return [g.numpy() for g in torch.autograd.grad(loss, [x, w])]


@needs("torch")
def test_augmented_assignment_records_the_out_of_place_op(backend):
    rng = np.random.default_rng(0)
    xv, wv = rng.normal(size=(4, 3)).astype("float32"), rng.normal(size=(3, 2)).astype("float32")
    x, w = ops.convert_to_tensor(xv), ops.convert_to_tensor(wv)
    with ember.GradientTape() as tape:
        tape.watch([x, w])
        h = ops.tanh(ops.matmul(x, w))
        h *= 2.0
        h -= 0.5
        h /= 3.0
        h **= 2
        loss = ops.sum(h)
        loss += ops.sum(ops.square(w))  # the Keras idiom: add a penalty to the loss
    grads = tape.gradient(loss, [x, w])
    for grad, expected in zip(grads, _reference(xv, wv)):
        np.testing.assert_allclose(ops.to_numpy(grad), expected, **FLOAT32)
    np.testing.assert_array_equal(ops.to_numpy(x), xv)  # the sources are untouched


def test_augmented_assignment_keeps_other_names_on_the_old_value(backend):
    x = ops.convert_to_tensor(np.array([1.0, 2.0], "float32"))
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = ops.square(x)
        before = y
        if ember.get_backend() == "torch":
            before = y.clone()  # torch updates a non-leaf tensor in place (its own semantics)
        y += x
        loss = ops.sum(y) + ops.sum(before)
    # d/dx [sum(x^2 + x) + sum(x^2)] = 4x + 1
    np.testing.assert_allclose(ops.to_numpy(tape.gradient(loss, x)), [5.0, 9.0], rtol=1e-6)


def test_numpy_explicit_out_on_a_traced_array_is_still_refused():
    ember.set_backend("numpy")
    x = np.array([1.0, 2.0])
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = ops.square(x)
        with pytest.raises(TypeError, match="in-place"):
            np.add(y, 1.0, out=y)


def test_torch_in_place_operators_are_torch_s_own_outside_a_tape(torch_backend):
    original = torch.Tensor.__iadd__
    with ember.GradientTape():
        assert torch.Tensor.__iadd__ is not original
        plain = torch.zeros(2)
        alias = plain
        plain += 1.0  # no grad required: torch's in-place update
        assert alias is plain
    assert torch.Tensor.__iadd__ is original and "__iadd__" not in torch.Tensor.__dict__
