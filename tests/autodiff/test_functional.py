"""``value_and_grad`` / ``grad`` / ``jacobian`` / ``vjp`` over pytrees on every backend.

References: derivatives written out by hand in NumPy float64, or torch autograd in float64.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import ops
from ember.autodiff import grad, jacobian, value_and_grad, vjp

RTOL, ATOL = 1e-5, 1e-6  # float32 results vs float64 references


def sample(shape, seed=0):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=shape).astype(np.float32)


def arr(values):
    return ops.convert_to_tensor(np.asarray(values, dtype=np.float32))


def close(actual, expected, rtol=RTOL, atol=ATOL):
    assert actual is not None
    assert ops.dtype(actual) == "float32"
    got = ops.to_numpy(actual).astype(np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def loss(params, x):
    """sum((x @ w + b)^2) with ``params = {"w": w, "b": b}``."""
    out = ops.add(ops.matmul(x, params["w"]), params["b"])
    return ops.sum(ops.square(out))


def reference(wv, bv, xv):
    w, b, x = (v.astype(np.float64) for v in (wv, bv, xv))
    out = x @ w + b
    return np.sum(out**2), x.T @ (2 * out), np.sum(2 * out, axis=0), 2 * out @ w.T


def test_value_and_grad_over_a_dict(backend):
    wv, bv, xv = sample((3, 2), 1), sample((2,), 2), sample((4, 3), 3)
    params = {"w": arr(wv), "b": arr(bv)}
    value, grads = value_and_grad(loss)(params, arr(xv))
    expected_value, gw, gb, _ = reference(wv, bv, xv)
    close(value, expected_value)
    assert set(grads) == {"w", "b"}
    close(grads["w"], gw)
    close(grads["b"], gb)


def test_value_and_grad_argnums_tuple_and_negative(backend):
    wv, bv, xv = sample((3, 2), 4), sample((2,), 5), sample((4, 3), 6)
    params, x = {"w": arr(wv), "b": arr(bv)}, arr(xv)
    _, gw, gb, gx = reference(wv, bv, xv)
    value, grads = value_and_grad(loss, argnums=(0, 1))(params, x)
    assert isinstance(grads, tuple) and len(grads) == 2
    close(grads[0]["w"], gw)
    close(grads[1], gx)
    _, only_x = value_and_grad(loss, argnums=-1)(params, x)
    close(only_x, gx)
    with pytest.raises(ValueError, match="argnums"):
        value_and_grad(loss, argnums=2)(params, x)


def test_value_and_grad_has_aux(backend):
    wv, bv, xv = sample((3, 2), 7), sample((2,), 8), sample((4, 3), 9)

    def with_aux(params, x):
        value = loss(params, x)
        return value, {"doubled": ops.multiply(value, 2.0), "note": "aux passes through"}

    (value, aux), grads = value_and_grad(with_aux, has_aux=True)({"w": arr(wv), "b": arr(bv)}, arr(xv))
    expected_value, gw, _, _ = reference(wv, bv, xv)
    close(value, expected_value)
    close(aux["doubled"], 2 * expected_value, rtol=2e-5)
    assert aux["note"] == "aux passes through"
    close(grads["w"], gw)
    with pytest.raises(ValueError, match="has_aux"):
        value_and_grad(lambda p, x: loss(p, x), has_aux=True)({"w": arr(wv), "b": arr(bv)}, arr(xv))


def test_nested_lists_and_dicts(backend):
    av, bv, cv = sample((2,), 10), sample((2,), 11), sample((), 12)
    tree = {"layers": [{"k": arr(av)}, {"k": arr(bv)}], "scale": arr(cv)}

    def fn(tree):
        first, second = tree["layers"]
        return ops.sum(ops.multiply(ops.multiply(first["k"], second["k"]), tree["scale"]))

    grads = grad(fn)(tree)
    assert isinstance(grads["layers"], list) and len(grads["layers"]) == 2
    a, b, c = (v.astype(np.float64) for v in (av, bv, cv))
    close(grads["layers"][0]["k"], b * c)
    close(grads["layers"][1]["k"], a * c)
    close(grads["scale"], np.sum(a * b))


def test_grad_and_grad_with_aux(backend):
    xv = sample((3,), 13)
    g = grad(lambda x: ops.sum(ops.exp(x)))(arr(xv))
    close(g, np.exp(xv.astype(np.float64)))
    g, aux = grad(lambda x: (ops.sum(ops.square(x)), 42), has_aux=True)(arr(xv))
    close(g, 2 * xv.astype(np.float64))
    assert aux == 42


def test_unused_argument_gets_zeros(backend):
    xv, yv = sample((2,), 14), sample((3,), 15)
    gx, gy = grad(lambda x, y: ops.sum(ops.square(x)), argnums=(0, 1))(arr(xv), arr(yv))
    close(gx, 2 * xv.astype(np.float64))
    close(gy, np.zeros(3))


def test_jacobian(backend):
    torch = pytest.importorskip("torch")
    av, xv = sample((3, 4), 16), sample((4,), 17)
    a = arr(av)
    jac = jacobian(lambda x: ops.tanh(ops.matmul(a, x)))(arr(xv))
    expected = torch.autograd.functional.jacobian(
        lambda x: torch.tanh(torch.tensor(av, dtype=torch.float64) @ x), torch.tensor(xv, dtype=torch.float64)
    )
    close(jac, expected.numpy())
    ja, jx = jacobian(lambda a, x: ops.multiply(a, x), argnums=(0, 1))(arr(av[0]), arr(xv))
    close(ja, np.diag(xv.astype(np.float64)))
    close(jx, np.diag(av[0].astype(np.float64)))


def test_vjp(backend):
    xv, yv = sample((3,), 18), sample((3,), 19)
    outputs, vjp_fn = vjp(lambda x, y: {"p": ops.multiply(x, y), "s": ops.sin(x)}, arr(xv), arr(yv))
    x, y = xv.astype(np.float64), yv.astype(np.float64)
    close(outputs["p"], x * y)
    cp, cs = sample((3,), 20), sample((3,), 21)
    for _ in range(2):  # callable more than once
        gx, gy = vjp_fn({"p": arr(cp), "s": arr(cs)})
        close(gx, cp * y + cs * np.cos(x))
        close(gy, cp * x)
    with pytest.raises(ValueError, match="structure"):
        vjp_fn([arr(cp)])


def test_value_and_grad_of_ember_tensors(backend):
    xv = sample((2, 2), 22)
    value, g = value_and_grad(lambda x: (x * x).sum() if hasattr(x, "sum") else ops.sum(x * x))(ember.Tensor(xv))
    assert isinstance(g, ember.Tensor)
    np.testing.assert_allclose(g.numpy(), 2 * xv.astype(np.float64), rtol=RTOL)
