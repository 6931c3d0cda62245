"""NumPy tapes: traced arrays, NumPy operators/functions on them, engine semantics and
higher-order derivatives, against torch autograd (float64) as the reference."""

from __future__ import annotations

import copy
import pickle
import weakref

import numpy as np
import pytest

import ember
from ember import ops
from ember.autodiff import GradientTape, numpy_engine, value_and_grad
from ember.autodiff.traced import TracedArray
from tests.helpers import needs, optional_import
from tests.tolerances import FLOAT64

# The reference; a core-only install runs the engine's own tests and skips the comparisons with torch.
torch = optional_import("torch")
F = optional_import("torch.nn.functional")


@pytest.fixture(autouse=True)
def _numpy_backend():
    ember.set_backend("numpy")
    yield


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=(5,))


def _torch(*arrays):
    return [torch.tensor(a, requires_grad=True) for a in arrays]


# ------------------------------------------------------------- Python operators
@needs("torch")
def test_operators_on_recorded_values_match_torch():
    x, w, b = _data()
    with GradientTape() as tape:
        tape.watch([x, w, b])
        h = ops.matmul(x, w)
        assert type(h) is TracedArray
        y = ops.sum(h * h + b)
    grads = tape.gradient(y, [x, w, b])
    xt, wt, bt = _torch(x, w, b)
    ((xt @ wt) ** 2 + bt).sum().backward()
    for got, want in zip(grads, (xt.grad, wt.grad, bt.grad)):
        assert type(got) is np.ndarray
        np.testing.assert_allclose(got, want.numpy(), **FLOAT64)


OPERATOR_CASES = [
    ("neg, sub, rsub", lambda h, b: -h - 1.0 + (2.0 - h) * b),
    ("div, rdiv", lambda h, b: h / 3.0 + 2.0 / (h * h + 1.0) + h / (b * b + 1.0)),
    ("pow", lambda h, b: h ** 2 + (h * h + 1.0) ** 0.5 + 2.0 ** h + (h * h + 1) ** b),
    ("abs, pos", lambda h, b: abs(h) + (+h)),
    ("matmul", lambda h, b: (h @ np.ones((5, 2))) @ np.ones(2)),
    ("indexing", lambda h, b: h[0] + h[1:3, ::2].sum() + h[:, 1] @ h[:, 2] + h[np.array([0, 0, 3])].sum(0)),
    ("methods", lambda h, b: h.T.sum(axis=1).max() + h.reshape(-1).mean() + h.reshape(5, 4).min(axis=0).sum()
     + h.transpose().var() + h.std(axis=1).sum() + h.prod(axis=0).sum() + h.cumsum(axis=1).sum()
     + h.flatten().sum() + h.ravel()[3] + h.squeeze().sum() + h.swapaxes(0, 1)[0].sum()
     + h.clip(-0.5, 0.5).sum() + h.dot(b).sum() + h.diagonal().sum() + h.take([1, 1]).sum()),
    ("iteration", lambda h, b: sum(row.sum() * i for i, row in enumerate(h))),
    ("astype", lambda h, b: h.astype(np.float64).sum() * 2.0 + h.astype(np.complex128).real.sum()),
    ("reduce methods of ufuncs", lambda h, b: np.add.reduce(h).sum() + np.maximum.reduce(h, axis=1).sum()
     + np.multiply.accumulate(h, axis=1).sum()),
]


@pytest.mark.parametrize("name,fn", OPERATOR_CASES, ids=[c[0] for c in OPERATOR_CASES])
def test_operator_and_method_gradients_match_finite_differences(name, fn):
    x, w, b = _data(1)

    def objective(xv, bv):
        return float(np.asarray(fn(xv @ w, bv)).sum())

    with GradientTape() as tape:
        tape.watch([x, b])
        h = ops.matmul(x, w)
        bb = ops.multiply(b, 1.0)
        y = fn(h, bb)
        y = y.sum() if np.ndim(y) else y
    gx, gb = tape.gradient(y, [x, b])
    for value, got in ((x, gx), (b, gb)):
        numeric = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            keep = value[idx]
            value[idx] = keep + 1e-6
            up = objective(x, b)
            value[idx] = keep - 1e-6
            down = objective(x, b)
            value[idx] = keep
            numeric[idx] = (up - down) / 2e-6
        got = np.zeros_like(value) if got is None else got
        # Central differences in float64, step h = 1e-6: truncation h**2 |f'''| / 6 ~ 1e-13; rounding of
        # up - down ~ u |f| / h = 1e-10 |f|, <= 1e-8 for these objectives (|f| <= 100). 100x that:
        np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-6)


@needs("torch")
def test_numpy_functions_on_recorded_values_match_torch():
    x, w, b = _data(2)
    with GradientTape() as tape:
        tape.watch([x, w])
        h = ops.matmul(x, w)
        parts = [
            np.sum(np.exp(np.tanh(h))),
            np.mean(np.log(np.square(h) + 1.0), axis=0).sum(),
            np.max(np.maximum(h, 0.0)),
            np.concatenate([h, np.sin(h)], axis=1).sum(),
            np.stack([h, h * 2], axis=0).std(),
            np.where(h > 0, h, 0.1 * h).sum(),
            np.dot(h, np.ones(5)).sum(),
            np.einsum("ij,ij->", h, h),
            np.clip(h, -0.3, 0.4).sum(),
            np.reshape(np.transpose(h), (-1,))[7],
            np.linalg.norm(h),
            np.take(h, [0, 0, 2], axis=0).sum(),
            np.expand_dims(h, 0).squeeze(0).sum(),
        ]
        y = ops.sum(ops.stack(parts))
    gx, gw = tape.gradient(y, [x, w])
    xt, wt = _torch(x, w)
    ht = xt @ wt
    ref = [
        torch.exp(torch.tanh(ht)).sum(),
        torch.log(ht**2 + 1).mean(0).sum(),
        torch.relu(ht).max(),
        torch.cat([ht, torch.sin(ht)], 1).sum(),
        torch.stack([ht, ht * 2]).std(correction=0),
        torch.where(ht > 0, ht, 0.1 * ht).sum(),
        (ht @ torch.ones(5, dtype=torch.float64)).sum(),
        (ht * ht).sum(),
        torch.clamp(ht, -0.3, 0.4).sum(),
        ht.T.reshape(-1)[7],
        torch.linalg.vector_norm(ht),
        ht[[0, 0, 2]].sum(),
        ht.sum(),
    ]
    torch.stack(ref).sum().backward()
    np.testing.assert_allclose(gx, xt.grad.numpy(), **FLOAT64)
    np.testing.assert_allclose(gw, wt.grad.numpy(), **FLOAT64)


def test_comparisons_and_index_results_are_plain():
    x, w, _ = _data(3)
    with GradientTape() as tape:
        tape.watch(x)
        h = ops.matmul(x, w)
        assert type(h > 0) is np.ndarray
        assert type(np.argmax(h, axis=1)) is np.ndarray
        assert type(h.argmax()) is not TracedArray
        assert type(np.isnan(h)) is np.ndarray
        assert type(np.floor(h)) is np.ndarray
        assert np.shape(h) == (4, 5) and h.shape == (4, 5) and len(h) == 4


# ---------------------------------------------------------------- refusals
@pytest.mark.parametrize("make,name", [
    (lambda h: np.logaddexp(h, h), "numpy.logaddexp"),
    (lambda h: np.fliplr(h), "numpy.fliplr"),
    (lambda h: np.gradient(h), "numpy.gradient"),
    (lambda h: np.add.outer(h, h), "add.outer"),
    (lambda h: np.sum(h, dtype=np.float32), "numpy.sum"),
])
def test_unmapped_numpy_raises_naming_function_and_alternative(make, name):
    x, w, _ = _data(4)
    with GradientTape() as tape:
        tape.watch(x)
        h = ops.matmul(x, w)
        with pytest.raises(TypeError, match=name) as info:
            make(h)
        assert "ember.ops" in str(info.value)


def test_unmapped_methods_views_and_in_place_writes_raise():
    x, w, _ = _data(5)
    with GradientTape() as tape:
        tape.watch(x)
        h = ops.matmul(x, w)
        with pytest.raises(TypeError, match="cannot record"):
            h.compress([True, False, True, True], axis=0)
        with pytest.raises(TypeError, match="cannot record"):
            h.view()
        with pytest.raises(TypeError, match="in-place"):
            np.add(h, 1.0, out=h)
        with pytest.raises(TypeError, match="item assignment"):
            h[0, 0] = 1.0
        with pytest.raises(TypeError, match="in place"):
            h.sort()


# ------------------------------------------------------------ outside a tape
def test_traced_array_outside_a_tape_is_plain():
    x, w, _ = _data(6)
    with GradientTape() as tape:
        tape.watch(x)
        h = ops.matmul(x, w)
        y = ops.sum(h)
    assert type(h) is TracedArray
    for result in (h + 1, -h, h @ np.ones(5), np.sum(h, axis=0), np.exp(h), h.sum(axis=1), h.T, h[0], h[:, 1:],
                   h.reshape(-1), h.copy(), copy.deepcopy(h), np.asarray(h), h.astype(np.float32),
                   np.concatenate([h, h]), next(iter(h))):
        assert type(result) is np.ndarray, type(result)
    np.testing.assert_allclose(h + 1, x @ w + 1)
    assert float(y) == pytest.approx(float(np.sum(x @ w)))
    assert repr(h).startswith("array(") and "Traced" not in repr(h) and "Traced" not in str(y)
    assert f"{y:.3f}" == f"{float(np.sum(x @ w)):.3f}"
    restored = pickle.loads(pickle.dumps(h))
    assert type(restored) is np.ndarray and np.array_equal(restored, h)
    h2 = h.copy()
    h2 += 1.0  # in-place outside a tape works on plain arrays
    h[0, 0] = 5.0  # and on the traced array itself
    assert h[0, 0] == 5.0
    out = np.empty_like(np.asarray(h))
    np.add(h, 1.0, out=out)
    assert out[0, 0] == 6.0


def test_traced_values_from_an_old_tape_are_constants_in_a_new_one():
    x, w, _ = _data(7)
    with GradientTape() as first:
        first.watch(x)
        h = ops.matmul(x, w)
    with GradientTape() as second:
        second.watch(w)
        y = ops.sum(ops.multiply(h, ops.matmul(x, w)))
    np.testing.assert_allclose(second.gradient(y, w), x.T @ np.asarray(h), **FLOAT64)


# ------------------------------------------------------------ engine semantics
def test_untracked_target_raises_with_the_remedy():
    x, _, _ = _data(8)
    with GradientTape() as tape:
        tape.watch(x)
        y = np.sum(x * 2.0)  # plain NumPy on the plain source: invisible
    with pytest.raises(ValueError, match="ember.ops"):
        tape.gradient(y, x)


def test_unconnected_sources_give_none_or_zeros():
    x, w, b = _data(9)
    with GradientTape(persistent=True) as tape:
        tape.watch([x, b])
        y = ops.sum(ops.matmul(x, w))
    assert tape.gradient(y, b) is None
    np.testing.assert_array_equal(tape.gradient(y, b, unconnected_gradients="zero"), np.zeros_like(b))
    np.testing.assert_allclose(tape.gradient(y, x), np.ones((4, 5)) @ w.T, **FLOAT64)


def test_integer_paths_carry_no_gradient():
    x = np.array([1.5, 2.5])
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.cast(ops.multiply(x, 2.0), "int32"))
    assert tape.gradient(y, x) is None


def test_watching_an_intermediate_keeps_the_chain():
    x = np.array([1.0, 2.0])
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = ops.multiply(x, 3.0)
        tape.watch(h)
        y = ops.sum(ops.square(h))
    np.testing.assert_allclose(tape.gradient(y, h), 2 * 3.0 * x, **FLOAT64)
    np.testing.assert_allclose(tape.gradient(y, x), 18.0 * x, **FLOAT64)
    gx, gh = tape.gradient(y, [x, h])
    np.testing.assert_allclose(gx, 18.0 * x, **FLOAT64)


def test_same_source_twice_gets_distinct_writable_arrays():
    x = np.array([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.broadcast_to(x, (3, 2)))
    g1, g2 = tape.gradient(y, [x, x])
    assert g1 is not g2 and g1.flags.writeable and g2.flags.writeable
    np.testing.assert_array_equal(g1, [3.0, 3.0])
    g1 += 1.0
    assert g2[0] == 3.0


def test_plain_numpy_view_of_a_source_raises():
    x, w, _ = _data(10)
    with GradientTape() as tape:
        tape.watch([x, w])
        y = ops.sum(ops.multiply(ops.matmul(x, w), x[:, :1]))  # x[:, :1] is plain NumPy
    with pytest.raises(ValueError, match="plain NumPy view"):
        tape.gradient(y, [x, w])


def test_a_path_cut_by_plain_numpy_raises():
    x, w, _ = _data(11)
    w2 = np.ones((5, 2))
    with GradientTape() as tape:
        tape.watch([w, w2])
        h = ops.matmul(x, w)
        r = np.maximum(np.asarray(h), 0.0)  # np.asarray leaves the tape
        y = ops.sum(ops.matmul(r, w2))
    with pytest.raises(ValueError, match="never used again"):
        tape.gradient(y, [w, w2])


@needs("torch")
def test_ops_bound_before_the_tape_still_record_through_traced_arrays():
    x, w, _ = _data(12)
    relu = ops.nn.relu  # the plain backend function; TracedArray routes its NumPy calls
    with GradientTape() as tape:
        tape.watch(w)
        y = ops.sum(relu(ops.matmul(x, w)))
    got = tape.gradient(y, w)
    wt = torch.tensor(w, requires_grad=True)
    torch.relu(torch.tensor(x) @ wt).sum().backward()
    np.testing.assert_allclose(got, wt.grad.numpy(), **FLOAT64)


def test_results_no_rule_reads_are_freed_early():
    x, w, b = _data(16)
    with GradientTape() as tape:
        tape.watch([w, b])
        h = ops.matmul(x, w)  # only feeds the bias add, whose rule reads shapes only
        alive = weakref.ref(h)
        y = ops.sum(ops.add(h, b))
        del h
    assert alive() is None
    gw, gb = tape.gradient(y, [w, b])
    np.testing.assert_allclose(gw, x.T @ np.ones((4, 5)), **FLOAT64)
    np.testing.assert_allclose(gb, np.full(5, 4.0), **FLOAT64)


def test_graph_stop_recording_and_persistence():
    x = np.array([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.multiply(x, x)
        with tape.stop_recording():
            z = ops.multiply(y, 2.0)
        total = ops.sum(ops.add(y, z))
    assert [n.op for n in tape.graph] == ["multiply", "add", "sum"]
    np.testing.assert_allclose(tape.gradient(total, x), 2 * x, **FLOAT64)  # z is a constant
    with pytest.raises(RuntimeError):
        tape.gradient(total, x)


def test_keyword_arguments_are_differentiated():
    x, w, _ = _data(13)
    with GradientTape() as tape:
        tape.watch([x, w])
        y = ops.sum(ops.matmul(x1=x, x2=w))
    gx, gw = tape.gradient(y, [x, w])
    np.testing.assert_allclose(gx, np.ones((4, 5)) @ w.T, **FLOAT64)
    np.testing.assert_allclose(gw, x.T @ np.ones((4, 5)), **FLOAT64)


def test_jacobian_and_value_and_grad_on_numpy():
    x = np.array([1.0, 2.0, 3.0])
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ops.multiply(x, x)
    np.testing.assert_allclose(tape.jacobian(y, x), np.diag(2 * x), **FLOAT64)
    value, grads = value_and_grad(lambda p: ops.sum(ops.exp(p["w"])))({"w": x})
    np.testing.assert_allclose(grads["w"], np.exp(x), **FLOAT64)


def test_prepare_args_and_wrap_output_hooks():
    plain = np.ones(3)
    traced = numpy_engine.wrap_output(plain)
    assert type(traced) is TracedArray and traced._plain is plain
    args = numpy_engine.prepare_args((traced, [traced, 1.0], 2))
    assert args[0] is plain and args[1][0] is plain and args[2] == 2
    untouched = (plain, [plain])
    assert numpy_engine.prepare_args(untouched) is untouched
    pair = numpy_engine.wrap_output((plain, plain))
    assert isinstance(pair, tuple) and all(type(p) is TracedArray for p in pair)


# -------------------------------------------------------------- higher order
def test_second_derivative_of_cube():
    for value in (np.array(3.0), np.array([-1.0, 0.5, 2.0])):
        with GradientTape() as outer:
            outer.watch(value)
            with GradientTape() as inner:
                inner.watch(value)
                y = ops.sum(ops.multiply(ops.multiply(value, value), value))
            dy = inner.gradient(y, value)
        np.testing.assert_allclose(outer.gradient(dy, value), 6 * value, **FLOAT64)


def test_third_derivative_with_operators():
    x = np.array([0.7, -1.3])
    with GradientTape() as t3:
        t3.watch(x)
        with GradientTape() as t2:
            t2.watch(x)
            with GradientTape() as t1:
                t1.watch(x)
                y = ops.sum(ops.sin(x) * ops.exp(x))
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    # (sin x e^x)''' = 2 e^x (cos x - sin x)
    np.testing.assert_allclose(d3, 2 * np.exp(x) * (np.cos(x) - np.sin(x)), **FLOAT64)


@needs("torch")
def test_hessian_vector_product_of_an_mlp_matches_torch_double_backward():
    rng = np.random.default_rng(14)
    x = rng.normal(size=(6, 4))
    labels = np.eye(3)[rng.integers(0, 3, size=6)]
    w1, b1, w2, b2 = rng.normal(size=(4, 5)), rng.normal(size=(5,)), rng.normal(size=(5, 3)), rng.normal(size=(3,))
    params = [w1, b1, w2, b2]
    vectors = [rng.normal(size=p.shape) for p in params]

    def loss(w1, b1, w2, b2):
        h = ops.tanh(ops.add(ops.matmul(x, w1), b1))
        logits = ops.add(ops.matmul(h, w2), b2)
        return ops.mean(ops.negative(ops.sum(ops.multiply(ops.nn.log_softmax(logits), labels), axis=1)))

    with GradientTape() as outer:
        outer.watch(params)
        with GradientTape() as inner:
            inner.watch(params)
            value = loss(*params)
        grads = inner.gradient(value, params)
    hvp = outer.gradient(grads, params, output_gradients=vectors)

    tparams = _torch(*params)
    th = torch.tanh(torch.tensor(x) @ tparams[0] + tparams[1])
    tlogits = th @ tparams[2] + tparams[3]
    tloss = -(torch.log_softmax(tlogits, 1) * torch.tensor(labels)).sum(1).mean()
    tgrads = torch.autograd.grad(tloss, tparams, create_graph=True)
    thvp = torch.autograd.grad(tgrads, tparams, grad_outputs=[torch.tensor(v) for v in vectors])
    for got, g, want, tg in zip(hvp, grads, thvp, tgrads):
        np.testing.assert_allclose(np.asarray(g), tg.detach().cpu().numpy(), **FLOAT64)
        np.testing.assert_allclose(got, want.numpy(), **FLOAT64)


@needs("torch")
def test_hessian_of_a_reduction_chain_via_jacobian():
    x = np.array([0.3, -0.7, 1.1])
    with GradientTape(persistent=True) as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = ops.logsumexp(ops.multiply(x, x))
        g = inner.gradient(y, x)
    hessian = outer.jacobian(g, x)
    xt = torch.tensor(x)
    want = torch.autograd.functional.hessian(lambda v: torch.logsumexp(v * v, 0), xt)
    np.testing.assert_allclose(hessian, want.numpy(), **FLOAT64)


SECOND_ORDER = [
    ("softmax", lambda x: ops.nn.softmax(ops.multiply(x, x), axis=-1), lambda x: torch.softmax(x * x, -1)),
    ("norm", lambda x: ops.linalg.norm(ops.add(x, 1.0), axis=1), lambda x: torch.linalg.vector_norm(x + 1.0, dim=1)),
    ("power", lambda x: ops.power(ops.add(ops.square(x), 1.0), ops.sin(x)), lambda x: (x * x + 1.0) ** torch.sin(x)),
    ("getitem", lambda x: ops.exp(ops.getitem(x, (np.array([0, 0, 2]), slice(1, None)))),
     lambda x: torch.exp(x[[0, 0, 2], 1:])),
    ("cumprod", lambda x: ops.cumprod(ops.add(x, 2.0), axis=1), lambda x: torch.cumprod(x + 2.0, 1)),
    ("einsum", lambda x: ops.einsum("ij,kj->ik", ops.tanh(x), x),
     lambda x: torch.einsum("ij,kj->ik", torch.tanh(x), x)),
    ("max_pool", lambda x: ops.nn.max_pool(ops.reshape(ops.square(x), (1, 3, 4, 1)), 2, strides=1),
     lambda x: F.max_pool2d((x * x).reshape(1, 1, 3, 4), 2, 1).reshape(1, 2, 3, 1)),
    ("conv", lambda x: ops.nn.conv(ops.reshape(ops.sin(x), (1, 3, 4, 1)),
                                   ops.reshape(ops.getitem(x, (0, slice(0, 4))), (2, 2, 1, 1)), padding="same"),
     lambda x: F.conv2d(F.pad(torch.sin(x).reshape(1, 1, 3, 4), (0, 1, 0, 1)),
                        x[0, :4].reshape(1, 1, 2, 2)).reshape(1, 3, 4, 1)),
    ("logsumexp", lambda x: ops.logsumexp(ops.multiply(x, x), axis=0), lambda x: torch.logsumexp(x * x, 0)),
    ("var", lambda x: ops.var(ops.exp(x), axis=1, ddof=1), lambda x: torch.var(torch.exp(x), 1)),
    ("inv", lambda x: ops.linalg.inv(ops.add(ops.getitem(x, (slice(None), slice(0, 3))), 3 * np.eye(3))),
     lambda x: torch.linalg.inv(x[:, :3] + 3 * torch.eye(3, dtype=x.dtype))),
    ("where", lambda x: ops.where(np.array([[True, False, True, False]] * 3), ops.sin(x), ops.square(x)),
     lambda x: torch.where(torch.tensor([[True, False, True, False]] * 3), torch.sin(x), x * x)),
]


@needs("torch")
@pytest.mark.parametrize("name,fn,torch_fn", SECOND_ORDER, ids=[c[0] for c in SECOND_ORDER])
def test_second_order_rules_match_torch_double_backward(name, fn, torch_fn):
    rng = np.random.default_rng(15)
    x = rng.uniform(-1, 1, size=(3, 4))
    v = rng.normal(size=(3, 4))
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            out = fn(x)
            weights = rng.normal(size=np.shape(out))
            y = ops.sum(ops.multiply(out, weights))
        g = inner.gradient(y, x)
    hvp = outer.gradient(g, x, output_gradients=v)
    xt = torch.tensor(x, requires_grad=True)
    (gt,) = torch.autograd.grad((torch_fn(xt) * torch.tensor(weights)).sum(), xt, create_graph=True)
    (hvp_t,) = torch.autograd.grad(gt, xt, grad_outputs=torch.tensor(v))
    np.testing.assert_allclose(np.asarray(g), gt.detach().cpu().numpy(), **FLOAT64)
    np.testing.assert_allclose(hvp, hvp_t.numpy(), **FLOAT64)
