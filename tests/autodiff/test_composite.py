"""Gradients of whole models agree on every backend with torch autograd in float64.

Each model is written once with ``ember.ops`` (run on the backend under test, float32)
and once with plain torch (the reference, float64, on the same input values).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember import ops
from ember.autodiff import GradientTape, value_and_grad

torch = pytest.importorskip("torch")

# float32 results vs the float64 reference: ~1e-5 relative, with an absolute floor for
# entries that are sums of terms cancelling to near zero.
RTOL, ATOL = 1e-5, 1e-6


def sample(shape, seed, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def arr(values):
    return ops.convert_to_tensor(np.asarray(values))


def reference_grads(fn, arrays):
    """torch float64 gradients of ``fn(*tensors)`` w.r.t. every array."""
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    value = fn(*tensors)
    grads = torch.autograd.grad(value, tensors)
    return value.item(), [g.numpy() for g in grads]


def close(actual, expected, rtol=RTOL, atol=ATOL, dtype="float32"):
    assert actual is not None
    assert ops.dtype(actual) == dtype
    got = ops.to_numpy(actual).astype(np.float64)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


# ----------------------------------------------------------------------- MLP loss


def mlp_loss(params, x, y):
    h = ops.nn.relu(ops.add(ops.matmul(x, params["w1"]), params["b1"]))
    out = ops.add(ops.matmul(h, params["w2"]), params["b2"])
    return ops.mean(ops.square(ops.subtract(out, y)))


def mlp_reference(w1, b1, w2, b2, x, y):
    h = torch.relu(x @ w1 + b1)
    return ((h @ w2 + b2 - y) ** 2).mean()


def mlp_data(seed=0):
    return {
        "w1": sample((5, 16), seed, 0.5), "b1": sample((16,), seed + 1, 0.1),
        "w2": sample((16, 3), seed + 2, 0.5), "b2": sample((3,), seed + 3, 0.1),
    }, sample((8, 5), seed + 4), sample((8, 3), seed + 5)


def test_mlp_loss_gradient(backend):
    values, xv, yv = mlp_data()
    params = {k: arr(v) for k, v in values.items()}
    value, grads = value_and_grad(mlp_loss)(params, arr(xv), arr(yv))
    names = ["w1", "b1", "w2", "b2", "x"]
    expected_value, expected = reference_grads(
        lambda w1, b1, w2, b2, x: mlp_reference(w1, b1, w2, b2, x, torch.tensor(yv, dtype=torch.float64)),
        [values[k] for k in names[:4]] + [xv],
    )
    close(value, np.asarray(expected_value))
    for name, g in zip(names[:4], expected[:4]):
        close(grads[name], g)


def test_mlp_loss_gradient_float64(backend):
    values, xv, yv = mlp_data(10)
    if backend == "mlx" and ember.backends.default_device() == "gpu":
        # MLX has float64 only on its cpu device: the error must say so.
        with pytest.raises(TypeError, match="float64"):
            arr(xv.astype(np.float64))
        return
    params = {k: arr(v.astype(np.float64)) for k, v in values.items()}
    value, grads = value_and_grad(mlp_loss)(params, arr(xv.astype(np.float64)), arr(yv.astype(np.float64)))
    _, expected = reference_grads(
        lambda w1, b1, w2, b2: mlp_reference(
            w1, b1, w2, b2, torch.tensor(xv, dtype=torch.float64), torch.tensor(yv, dtype=torch.float64)
        ),
        [values[k] for k in ("w1", "b1", "w2", "b2")],
    )
    for name, g in zip(("w1", "b1", "w2", "b2"), expected):
        close(grads[name], g, rtol=1e-10, atol=1e-12, dtype="float64")


# ----------------------------------------------------------- softmax cross-entropy


def test_softmax_cross_entropy_gradient(backend):
    xv, wv, bv = sample((6, 4), 20), sample((4, 5), 21), sample((5,), 22, 0.1)
    labels = np.array([0, 3, 1, 4, 2, 3])
    onehot = np.eye(5, dtype=np.float32)[labels]
    x, w, b, t = arr(xv), arr(wv), arr(bv), arr(onehot)
    with GradientTape(persistent=True) as tape:
        tape.watch([w, b])
        logits = ops.add(ops.matmul(x, w), b)
        # the same loss twice: through log_softmax, and through softmax then log
        ce1 = ops.negative(ops.mean(ops.sum(ops.multiply(t, ops.nn.log_softmax(logits)), axis=-1)))
        ce2 = ops.negative(ops.mean(ops.sum(ops.multiply(t, ops.log(ops.nn.softmax(logits, axis=-1))), axis=-1)))

    def reference(w, b):
        logits = torch.tensor(xv, dtype=torch.float64) @ w + b
        return -(torch.tensor(onehot, dtype=torch.float64) * torch.log_softmax(logits, -1)).sum(-1).mean()

    expected_value, (gw, gb) = reference_grads(reference, [wv, bv])
    for ce in (ce1, ce2):
        close(ce, np.asarray(expected_value))
        got_w, got_b = tape.gradient(ce, [w, b])
        close(got_w, gw)
        close(got_b, gb)


# ------------------------------------------------------------ LSTM-like recurrence

STEPS, BATCH, INPUTS, UNITS = 10, 2, 3, 4


def lstm_loss(xs, wx, wh, b):
    h = ops.zeros((BATCH, UNITS))
    c = ops.zeros((BATCH, UNITS))
    for t in range(STEPS):
        z = ops.add(ops.add(ops.matmul(ops.getitem(xs, t), wx), ops.matmul(h, wh)), b)
        i, f, g, o = ops.split(z, 4, axis=-1)
        c = ops.add(ops.multiply(ops.nn.sigmoid(f), c), ops.multiply(ops.nn.sigmoid(i), ops.tanh(g)))
        h = ops.multiply(ops.nn.sigmoid(o), ops.tanh(c))
    return ops.sum(ops.square(h))


def lstm_reference(xs, wx, wh, b):
    h = torch.zeros((BATCH, UNITS), dtype=torch.float64)
    c = torch.zeros((BATCH, UNITS), dtype=torch.float64)
    for t in range(STEPS):
        z = xs[t] @ wx + h @ wh + b
        i, f, g, o = torch.split(z, UNITS, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
    return (h**2).sum()


def test_lstm_recurrence_gradient(backend):
    values = [
        sample((STEPS, BATCH, INPUTS), 30), sample((INPUTS, 4 * UNITS), 31, 0.5),
        sample((UNITS, 4 * UNITS), 32, 0.5), sample((4 * UNITS,), 33, 0.1),
    ]
    arrays = [arr(v) for v in values]
    with GradientTape() as tape:
        tape.watch(arrays)
        value = lstm_loss(*arrays)
    grads = tape.gradient(value, arrays)
    expected_value, expected = reference_grads(lstm_reference, values)
    close(value, np.asarray(expected_value))
    for got, want in zip(grads, expected):
        close(got, want)


# -------------------------------------------------------- Hessian-vector product


def test_hessian_vector_product_of_mlp_loss(backend):
    values, xv, yv = mlp_data(40)
    vv = sample(values["w1"].shape, 46)
    w1 = arr(values["w1"])
    rest = {k: arr(v) for k, v in values.items() if k != "w1"}
    x, y, v = arr(xv), arr(yv), arr(vv)
    # tanh instead of relu: relu's second derivative is zero almost everywhere
    def loss(w1):
        h = ops.tanh(ops.add(ops.matmul(x, w1), rest["b1"]))
        out = ops.add(ops.matmul(h, rest["w2"]), rest["b2"])
        return ops.mean(ops.square(ops.subtract(out, y)))

    with GradientTape() as outer:
        outer.watch(w1)
        with GradientTape() as inner:
            inner.watch(w1)
            value = loss(w1)
        g = inner.gradient(value, w1)
        gv = ops.sum(ops.multiply(g, v))
    hvp = outer.gradient(gv, w1)

    w1t = torch.tensor(values["w1"], dtype=torch.float64, requires_grad=True)
    t = {k: torch.tensor(val, dtype=torch.float64) for k, val in values.items()}
    xt, yt, vt = (torch.tensor(a, dtype=torch.float64) for a in (xv, yv, vv))
    ref = ((torch.tanh(xt @ w1t + t["b1"]) @ t["w2"] + t["b2"] - yt) ** 2).mean()
    (gt,) = torch.autograd.grad(ref, w1t, create_graph=True)
    (expected,) = torch.autograd.grad((gt * vt).sum(), w1t)
    close(g, gt.detach().cpu().numpy())
    close(hvp, expected.numpy())


# --------------------------------------------------------------- property test


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.integers(1, 4), inputs=st.integers(1, 4), units=st.integers(1, 4), seed=st.integers(0, 2**16)
)
def test_dense_tanh_gradient_property(backend, batch, inputs, units, seed):
    xv, wv, bv = sample((batch, inputs), seed), sample((inputs, units), seed + 1), sample((units,), seed + 2)
    x, w, b = arr(xv), arr(wv), arr(bv)
    with GradientTape() as tape:
        tape.watch([x, w, b])
        value = ops.sum(ops.multiply(ops.tanh(ops.add(ops.matmul(x, w), b)), 0.5))
    got = tape.gradient(value, [x, w, b])
    _, expected = reference_grads(lambda x, w, b: (torch.tanh(x @ w + b) * 0.5).sum(), [xv, wv, bv])
    for g, e in zip(got, expected):
        close(g, e)
