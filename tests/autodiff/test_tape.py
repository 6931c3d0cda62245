"""``GradientTape`` on every backend: the TensorFlow API, nesting, and each engine's specifics.

References are equations written out in the test (derivatives by hand) evaluated in
NumPy float64, or torch autograd in float64 on the same input values.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import ops
from ember.autodiff import GradientTape, stop_gradient

RTOL, ATOL = 1e-5, 1e-6  # float32 results vs float64 references


def sample(shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)


def arr(values, dtype="float32"):
    return ops.convert_to_tensor(np.asarray(values, dtype=dtype))


def to_np(x):
    if getattr(type(x), "__ember_tensor__", False):
        return x.numpy()
    return ops.to_numpy(x)


def close(actual, expected, rtol=RTOL, atol=ATOL, dtype="float32"):
    assert actual is not None, "expected a gradient, got None"
    if dtype is not None:
        assert ops.dtype(actual) == dtype
    got = to_np(actual)
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=rtol, atol=atol)


# ------------------------------------------------------------------------ basics


def test_gradient_of_a_simple_function(backend):
    xv = sample((3,))
    x = arr(xv)
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.multiply(ops.sin(x), x))
    close(tape.gradient(y, x), np.cos(xv.astype(np.float64)) * xv + np.sin(xv.astype(np.float64)))


def test_gradient_has_the_structure_of_sources(backend):
    a, b, c = arr(sample((2, 3), 1)), arr(sample((3,), 2)), arr(sample((), 3))
    with GradientTape() as tape:
        tape.watch({"a": a, "rest": [b, c]})
        y = ops.sum(ops.multiply(ops.add(a, b), c))
    grads = tape.gradient(y, {"a": a, "rest": [b, c]})
    assert set(grads) == {"a", "rest"} and isinstance(grads["rest"], list) and len(grads["rest"]) == 2
    av, bv, cv = (to_np(v).astype(np.float64) for v in (a, b, c))
    close(grads["a"], np.full((2, 3), cv))
    close(grads["rest"][0], np.full((3,), 2 * cv))
    close(grads["rest"][1], np.sum(av + bv))
    # a tuple of sources gives a tuple; a single source gives a single array
    as_tuple = GradientTape()
    with as_tuple:
        as_tuple.watch((a, b))
        y = ops.sum(ops.multiply(a, b))
    grads = as_tuple.gradient(y, (a, b))
    assert isinstance(grads, tuple) and len(grads) == 2
    close(grads[0], np.broadcast_to(bv, (2, 3)))


def test_watch_ember_tensors(backend):
    xv = sample((2, 2), 4)
    x = ember.Tensor(xv)
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.square(x))  # ops accept Tensors
        z = (x * x).sum() if hasattr(x, "sum") else ops.sum(x * x)  # Tensor operators
    grad = tape.gradient([y, z], x)
    assert isinstance(grad, ember.Tensor)
    np.testing.assert_allclose(grad.numpy(), 4 * xv.astype(np.float64), rtol=RTOL)
    assert tape.watched_variables() == (x,)


def test_output_gradients_weight_the_targets(backend):
    xv, wv = sample((3,), 5), np.array([1.0, -2.0, 0.5], np.float32)
    x = arr(xv)
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.square(x)
    close(tape.gradient(y, x, output_gradients=arr(wv)), 2 * xv.astype(np.float64) * wv)


def test_several_targets_are_summed(backend):
    xv = sample((2,), 6)
    x = arr(xv)
    with GradientTape() as tape:
        tape.watch(x)
        y1 = ops.sum(ops.square(x))
        y2 = ops.exp(x)
    x64 = xv.astype(np.float64)
    close(tape.gradient([y1, y2], x), 2 * x64 + np.exp(x64))


def test_target_may_be_the_source(backend):
    x = arr(sample((2,), 7))
    with GradientTape() as tape:
        tape.watch(x)
    close(tape.gradient(x, x), np.ones(2))


def test_unconnected_gradients(backend):
    x, z = arr(sample((3,), 8)), arr(sample((2, 2), 9))
    with GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = ops.sum(ops.multiply(x, 3.0))
    gx, gz = tape.gradient(y, [x, z])
    close(gx, np.full(3, 3.0))
    assert gz is None
    gx, gz = tape.gradient(y, [x, z], unconnected_gradients="zero")
    close(gz, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="nan")


def test_unwatched_source_gives_none(backend):
    x, w = arr(sample((3,), 10)), arr(sample((3,), 11))
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.multiply(x, w))
    gx, gw = tape.gradient(y, [x, w])
    close(gx, to_np(w))
    assert gw is None


def test_nothing_watched_gives_none(backend):
    """TensorFlow: the gradient for a source the tape never watched is None, whatever the target."""
    x, w = arr(sample((3,), 10)), arr(sample((3,), 11))
    with GradientTape() as tape:
        y = ops.sum(ops.multiply(x, w))
    assert tape.gradient(y, [x, w]) == [None, None]
    with GradientTape() as tape:
        y = ops.sum(ops.multiply(x, w))
    assert tape.gradient(y, x, unconnected_gradients="zero") is not None


def test_integer_source_is_a_type_error_naming_it(backend):
    x = arr(sample((3,), 12))
    n = arr([1, 2, 3], dtype="int32")
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.multiply(x, ops.cast(n, "float32")))
    with pytest.raises(TypeError, match="source 1 has dtype int32"):
        tape.gradient(y, [x, n])


def test_non_persistent_tape_computes_once(backend):
    x = arr(sample((2,), 13))
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.square(x))
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="persistent"):
        tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="persistent|once"):
        tape.jacobian(y, x)


def test_persistent_tape_computes_many_times(backend):
    xv = sample((3,), 14)
    x = arr(xv)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ops.square(x)
        s = ops.sum(y)
    x64 = xv.astype(np.float64)
    for _ in range(3):
        close(tape.gradient(s, x), 2 * x64)
    close(tape.gradient(y, x, output_gradients=arr([1.0, 0.0, 0.0])), [2 * x64[0], 0.0, 0.0])
    close(tape.jacobian(y, x), np.diag(2 * x64))
    close(tape.gradient(s, x), 2 * x64)


def test_repeated_and_intermediate_sources(backend):
    xv = sample((3,), 37)
    x = arr(xv)
    with GradientTape() as tape:
        tape.watch(x)
        h = ops.tanh(x)
        y = ops.sum(ops.multiply(h, h))
    g1, g2, gh = tape.gradient(y, [x, x, h])
    x64 = xv.astype(np.float64)
    expected = 2 * np.tanh(x64) * (1 - np.tanh(x64) ** 2)
    close(g1, expected)
    close(g2, expected)
    close(gh, 2 * np.tanh(x64))
    # watching a value the tape already tracks does not cut it off from earlier sources
    with GradientTape() as tape:
        tape.watch(x)
        h = ops.tanh(x)
        tape.watch(h)
        y = ops.sum(ops.multiply(h, h))
    gx, gh = tape.gradient(y, [x, h])
    close(gx, expected)
    close(gh, 2 * np.tanh(x64))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_gradient_keeps_the_source_dtype(backend, dtype):
    x = ops.cast(arr([0.5, -1.0, 2.0]), dtype)
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.multiply(ops.square(x), 3.0))
    grad = tape.gradient(y, x)
    assert ops.dtype(grad) == dtype and ops.shape(grad) == (3,)
    # exact: every value on the way (3, 6x, 1.5 ... 12) is a small integer times a power of 2, in every dtype
    np.testing.assert_array_equal(ops.to_numpy(grad).astype(np.float64), [3.0, -6.0, 12.0])


# --------------------------------------------------------------------- jacobians


def test_jacobian_shapes_and_values(backend):
    wv, vv = sample((2, 3), 15), sample((3,), 16)
    w, v = arr(wv), arr(vv)
    with GradientTape(persistent=True) as tape:
        tape.watch([w, v])
        y = ops.tanh(ops.matmul(w, v))  # (2,)
        unused = arr(sample((4,), 17))
        tape.watch(unused)
    jw, jv, ju = tape.jacobian(y, [w, v, unused])
    w64, v64 = wv.astype(np.float64), vv.astype(np.float64)
    d = 1 - np.tanh(w64 @ v64) ** 2  # (2,)
    expected_jw = np.zeros((2, 2, 3))
    for i in range(2):
        expected_jw[i, i, :] = d[i] * v64
    close(jw, expected_jw)
    close(jv, d[:, None] * w64)
    assert ju is None
    close(tape.jacobian(y, unused, unconnected_gradients="zero"), np.zeros((2, 4)))


def test_batch_jacobian(backend):
    xv, wv = sample((4, 3), 18), sample((3, 2), 19)
    x, w = arr(xv), arr(wv)
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.tanh(ops.matmul(x, w))  # (4, 2)
    jac = tape.batch_jacobian(y, x)
    x64, w64 = xv.astype(np.float64), wv.astype(np.float64)
    d = 1 - np.tanh(x64 @ w64) ** 2  # (4, 2)
    close(jac, d[:, :, None] * w64.T[None, :, :])


# ------------------------------------------------------------ tape bookkeeping


def test_watched_variables_in_watch_order(backend):
    a, b, c = arr([1.0]), arr([2.0]), arr([3.0])
    with GradientTape() as tape:
        tape.watch(b)
        tape.watch({"x": a, "y": [c]})
    watched = tape.watched_variables()
    assert len(watched) == 3 and watched[0] is b and watched[1] is a and watched[2] is c


def test_watch_rejects_non_arrays(backend):
    with GradientTape() as tape:
        with pytest.raises(TypeError, match="watch"):
            tape.watch("not an array")


def test_stop_recording(backend):
    xv = sample((3,), 20)
    x = arr(xv)
    with GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            frozen = ops.square(x)
        y = ops.sum(ops.add(ops.multiply(x, 3.0), frozen))
    close(tape.gradient(y, x), np.full(3, 3.0))
    with pytest.raises(RuntimeError, match="not recording"):
        with tape.stop_recording():
            pass


def test_reset_forgets_everything(backend):
    x = arr(sample((2,), 21))
    with GradientTape() as tape:
        tape.watch(x)
        before = ops.sum(ops.square(x))
        tape.reset()
        assert tape.watched_variables() == ()
        tape.watch(x)
        after = ops.sum(ops.multiply(x, 5.0))
    if backend != "torch":  # only what ran after the reset is on the record
        assert [node.op for node in tape.graph] == ["multiply", "sum"]
    close(tape.gradient(after, x), np.full(2, 5.0))
    del before


def test_stop_gradient(backend):
    xv = sample((3,), 22)
    x = arr(xv)
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.multiply(x, stop_gradient(x)))
        z = ops.sum(ops.multiply(x, ops.stop_gradient(x)))
    close(tape.gradient([y, z], x), 2 * xv.astype(np.float64))


def test_tape_graph_lists_recorded_ops_in_order(backend):
    x, w, c = arr(sample((2, 3), 23)), arr(sample((3, 2), 24)), arr(sample((2,), 25))
    with GradientTape() as tape:
        tape.watch([x, w])
        y = ops.sum(ops.add(ops.matmul(x, w), c))
        ops.add(c, c)  # untracked inputs: not recorded
    names = [node.op for node in tape.graph]
    if backend == "torch":
        assert names == []  # torch records natively
    else:
        assert names == ["matmul", "add", "sum"]
        node = tape.graph[0]
        assert node.in_slots[0] is not None and node.in_slots[1] is not None
    tape.gradient(y, x)


def test_tape_on_another_backend_is_an_error(backend):
    other = "numpy" if backend != "numpy" else ("torch" if ember.backends.is_installed("torch") else None)
    if other is None:
        pytest.skip("needs a second backend")
    tape = GradientTape()
    with tape:
        tape.watch(arr([1.0]))
    with ember.using_backend(other):
        with pytest.raises(RuntimeError, match="backend"):
            with tape:
                pass


# ------------------------------------------------------------------ nested tapes


def test_second_derivative_of_cube(backend):
    x = arr(3.0)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = ops.multiply(ops.multiply(x, x), x)
        dy = inner.gradient(y, x)
    close(dy, 27.0)
    close(outer.gradient(dy, x), 18.0)


def test_third_derivative_through_three_tapes(backend):
    xv = np.float32(0.7)
    x = arr(xv)
    with GradientTape() as t3:
        t3.watch(x)
        with GradientTape() as t2:
            t2.watch(x)
            with GradientTape() as t1:
                t1.watch(x)
                y = ops.sin(x)
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    x64 = np.float64(xv)
    close(d1, np.cos(x64))
    close(d2, -np.sin(x64))
    close(d3, -np.cos(x64))


def test_hessian_vector_product(backend):
    torch = pytest.importorskip("torch")
    xv, vv, av = sample((4,), 26), sample((4,), 27), sample((3, 4), 28)
    x, v, a = arr(xv), arr(vv), arr(av)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = ops.sum(ops.square(ops.tanh(ops.matmul(a, x))))
        g = inner.gradient(y, x)
        gv = ops.sum(ops.multiply(g, v))
    hvp = outer.gradient(gv, x)

    xt = torch.tensor(xv, dtype=torch.float64, requires_grad=True)
    at, vt = torch.tensor(av, dtype=torch.float64), torch.tensor(vv, dtype=torch.float64)
    (gt,) = torch.autograd.grad(torch.tanh(at @ xt).square().sum(), xt, create_graph=True)
    (expected,) = torch.autograd.grad((gt * vt).sum(), xt)
    close(g, gt.detach().cpu().numpy())
    close(hvp, expected.numpy())


def test_nested_gradient_depends_on_an_outer_only_value(backend):
    """The inner gradient 2*x*w^2 depends on w, which only the outer tape watches."""
    xv, wv = np.float32(1.5), np.float32(-0.5)
    x, w = arr(xv), arr(wv)
    with GradientTape() as outer:
        outer.watch(w)
        with GradientTape() as inner:
            inner.watch(x)
            y = ops.square(ops.multiply(x, w))
        gx = inner.gradient(y, x)
    close(gx, 2 * xv * wv**2)
    close(outer.gradient(gx, w), 4 * np.float64(xv) * wv)


def test_gradient_inside_the_tape_block(backend):
    x = arr(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ops.multiply(x, x)
        g = tape.gradient(y, x)  # the tape pauses itself meanwhile
        z = ops.multiply(y, 3.0)
    close(g, 4.0)
    close(tape.gradient(z, x), 12.0)


# ---------------------------------------------------------- native code in tapes


def test_operators_on_recorded_results(backend):
    """Python operators on arrays the tape tracks are differentiated (native on torch/MLX)."""
    xv, wv, bv = sample((2, 3), 29), sample((3, 2), 30), sample((2,), 31)
    x, w, b = arr(xv), arr(wv), arr(bv)
    with GradientTape() as tape:
        tape.watch([x, w, b])
        h = ops.matmul(x, w)  # a recorded result (NumPy's operators are seen on these)
        y = ops.sum((h * 2.0 + b) ** 2 - h / 4.0)
    x64, w64, b64 = (v.astype(np.float64) for v in (xv, wv, bv))
    h64 = x64 @ w64
    dh = 2 * (2 * h64 + b64) * 2 - 0.25
    gx, gw, gb = tape.gradient(y, [x, w, b])
    close(gx, dh @ w64.T)
    close(gw, x64.T @ dh)
    close(gb, np.sum(2 * (2 * h64 + b64), axis=0))


def test_linalg_without_an_mlx_gradient_names_the_op(backend):
    torch = pytest.importorskip("torch")
    av = (np.eye(3) * 3 + sample((3, 3), 32)).astype(np.float32)
    a = arr(av)
    with GradientTape() as tape:
        tape.watch(a)
        y = ops.sum(ops.linalg.inv(a))
    try:
        grad = tape.gradient(y, a)
    except NotImplementedError as error:
        assert backend == "mlx", f"{backend} has no gradient for linalg.inv: {error}"
        assert "linalg.inv" in str(error)
        return
    at = torch.tensor(av, dtype=torch.float64, requires_grad=True)
    (expected,) = torch.autograd.grad(torch.linalg.inv(at).sum(), at)
    close(grad, expected.numpy(), rtol=1e-4)  # inverse: float32 rounding grows with the condition number


def test_target_the_tape_cannot_see_is_an_error_on_recorded_backends(backend):
    xv = sample((3,), 33)
    x = arr(xv)
    with GradientTape() as tape:
        tape.watch(x)
        if backend == "numpy":
            y = np.sum(np.exp(np.asarray(x)))
        elif backend == "mlx":
            import mlx.core as mx

            y = mx.sum(mx.exp(x))
        else:
            import torch

            y = torch.sum(torch.exp(x))
    if backend == "torch":  # autograd sees every torch call
        close(tape.gradient(y, x), np.exp(xv.astype(np.float64)))
    else:
        with pytest.raises(ValueError, match="ember.ops"):
            tape.gradient(y, x)


def test_torch_watch_restores_requires_grad(torch_backend):
    import torch

    x = torch.tensor([1.0, 2.0])
    p = torch.tensor([3.0], requires_grad=True)
    with GradientTape() as tape:
        tape.watch([x, p])
        assert x.requires_grad
        y = (x * x).sum() + (p * 2).sum()
    gx, gp = tape.gradient(y, [x, p])
    assert torch.equal(gx, 2 * x.detach()) and torch.equal(gp, torch.tensor([2.0]))
    assert not x.requires_grad  # flipped back once the tape is done
    assert p.requires_grad  # it required grad before: untouched
    with GradientTape(persistent=True) as persistent:
        persistent.watch(x)
    assert x.requires_grad
    persistent.reset()
    assert not x.requires_grad
    # outside a tape nothing is tracked
    assert not (x * 2).requires_grad


def test_torch_nested_tapes_share_a_watched_tensor(torch_backend):
    import torch

    x = torch.tensor(2.0)
    with GradientTape() as outer, GradientTape() as inner:
        inner.watch(x)  # the inner tape flips the flag first
        outer.watch(x)
        y = x**3
    dy = inner.gradient(y, x)  # releasing the inner tape must not unwatch x for the outer one
    assert x.requires_grad
    close(outer.gradient(y, x), 12.0)
    close(dy, 12.0)
    assert not x.requires_grad


def test_mlx_operators_and_methods_are_recorded_and_unpatched(mlx_backend):
    import mlx.core as mx

    from ember.backends.mlx import autodiff as mlx_autodiff

    original_mul = mx.array.__mul__
    original_type = type(original_mul)
    xv, wv, bv = sample((2, 3), 34), sample((3, 2), 35), sample((2,), 36)
    x, w, b = mx.array(xv), mx.array(wv), mx.array(bv)
    with GradientTape() as tape:
        tape.watch([x, w, b])
        assert mlx_autodiff.is_patched()
        h = x @ w + b  # (2, 2)
        h = -(h * 0.5) - 1.0 + 2.0 * h
        h = (h**2 / 3.0).T.reshape(4)
        y = h[1:].sum() + abs(x[0]).sum() + x.square().mean() + (1.0 / (2.0 + w.exp())).sum()
        acc = mx.zeros((3,))
        for row in x:  # iteration yields recorded rows
            acc += row  # in-place operators record the out-of-place op
        y = y + (acc.astype(mx.float32) * b.sum()).sum()
    assert not mlx_autodiff.is_patched()
    assert type(mx.array.__mul__) is original_type and mx.array.__mul__ is original_mul
    assert [node.op for node in tape.graph][:3] == ["matmul", "add", "multiply"]
    gx, gw, gb = tape.gradient(y, [x, w, b])

    torch = pytest.importorskip("torch")
    xt, wt, bt = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (xv, wv, bv))
    ht = xt @ wt + bt
    ht = -(ht * 0.5) - 1.0 + 2.0 * ht
    ht = (ht**2 / 3.0).T.reshape(4)
    yt = ht[1:].sum() + xt[0].abs().sum() + xt.square().mean() + (1.0 / (2.0 + wt.exp())).sum()
    yt = yt + (xt.sum(0) * bt.sum()).sum()
    ex, ew, eb = torch.autograd.grad(yt, [xt, wt, bt])
    close(gx, ex.numpy())
    close(gw, ew.numpy())
    close(gb, eb.numpy())
    # outside a tape the operators are MLX's own again
    assert isinstance(x * 2, mx.array)


def test_mlx_patching_is_idempotent_and_restorable(mlx_backend):
    import mlx.core as mx

    from ember.backends.mlx import autodiff as mlx_autodiff

    original = {name: vars(mx.array)[name] for name in ("__add__", "__getitem__", "sum", "T")}
    mlx_autodiff.on_recording(True)
    mlx_autodiff.on_recording(True)
    try:
        assert vars(mx.array)["__add__"] is not original["__add__"]
        x = mx.array([1.0, 2.0])
        assert (x + 1).tolist() == [2.0, 3.0]  # nothing records: the original runs
    finally:
        mlx_autodiff.on_recording(False)
    mlx_autodiff.on_recording(False)
    assert {name: vars(mx.array)[name] for name in original} == original
    # an exception inside a tape still restores the operators
    with pytest.raises(ZeroDivisionError):
        with GradientTape() as tape:
            tape.watch(mx.array(1.0))
            raise ZeroDivisionError
    assert vars(mx.array)["__add__"] is original["__add__"]


def test_watching_a_variable_explicitly(backend):
    """``tape.watch(model.trainable_variables[0])`` with ``watch_accessed_variables=False``: that
    variable gets its gradient (equal to the one through every variable), the others None. (On NumPy
    the tape tried to re-point the variable at a view of its array: a Variable reads its owner's
    state and has nothing to re-point.)"""
    model = ember.Sequential([ember.Input((3,)), ember.layers.Dense(2)])
    model.build(seed=0)
    x = np.ones((4, 3), "float32")
    kernel = model.trainable_variables[0]
    with ember.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(kernel)
        loss = ops.sum(model(x))
    only, none = tape.gradient(loss, [kernel, model.trainable_variables[1]])
    assert none is None
    with ember.GradientTape() as tape:
        loss = ops.sum(model(x))
    every = tape.gradient(loss, model.trainable_variables)[0]
    np.testing.assert_array_equal(ops.to_numpy(only), ops.to_numpy(every))
