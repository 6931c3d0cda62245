"""Backend fast paths: torch's fused in-place step equals the pure path; MLX compiles the pure path."""

from __future__ import annotations

import numpy as np
import optree
import pytest

import ember
from ember import layers, ops, optimizers
from ember.training.optimizers import base
from tests.helpers import EPS32, adam_step_atol
from tests.tolerances import FLOAT32_PAIR

# The fused kernels reorder the float32 roundings of each step: per step and element the two paths
# can differ by a few (at most FAST_ROUNDINGS) units of eps32 of the largest magnitude in that
# update (the leaf's scale, not the element: p - lr * g cancels), and the differences add up over
# the steps.
FAST_ROUNDINGS = 4


def _fast_path_atol(want, steps):
    return FAST_ROUNDINGS * steps * EPS32 * float(np.abs(want).max(initial=0.0))
SHAPES = [(5, 4), (4,), (3, 2, 2)]


def _arrays(seed, steps):
    rng = np.random.default_rng(seed)
    params = {f"p{i}": rng.normal(size=s).astype(np.float32) for i, s in enumerate(SHAPES)}
    grads = [{k: rng.normal(size=v.shape).astype(np.float32) for k, v in params.items()} for _ in range(steps)]
    return params, grads


def _native(tree):
    return optree.tree_map(lambda x: None if x is None else ops.convert_to_tensor(np.array(x)), tree,
                           none_is_leaf=True)


def _numpy(tree):
    return optree.tree_map(ops.to_numpy, tree)


FAST_CASES = {
    "sgd": lambda: optimizers.SGD(0.1),
    "sgd_momentum_clipnorm": lambda: optimizers.SGD(0.05, momentum=0.9, clipnorm=0.8),
    "sgd_nesterov_wd": lambda: optimizers.SGD(0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
    "adam": lambda: optimizers.Adam(0.01),
    "adam_amsgrad_global_clip": lambda: optimizers.Adam(0.01, amsgrad=True, global_clipnorm=1.0),
    "adamw_schedule": lambda: optimizers.AdamW(optimizers.schedules.CosineDecay(0.0, 10, warmup_target=0.02,
                                                                                  warmup_steps=3), weight_decay=0.1),
    "adamax_clipvalue": lambda: optimizers.Adamax(0.01, clipvalue=0.5),
    "nadam": lambda: optimizers.Nadam(0.01, loss_scale_factor=4.0),
    "lamb": lambda: optimizers.Lamb(0.01, weight_decay=0.01),
    "rmsprop": lambda: optimizers.RMSprop(0.01),
    "rmsprop_centered_momentum": lambda: optimizers.RMSprop(0.01, momentum=0.5, centered=True),
    "adagrad": lambda: optimizers.Adagrad(0.1),
    "adadelta": lambda: optimizers.Adadelta(1.0),
    "lion": lambda: optimizers.Lion(0.01, weight_decay=0.1),
}


def _compare_fast_and_generic(make, steps=8, drop=None):
    params, grads = _arrays(0, steps)
    if drop is not None:
        for g in grads:
            g[drop] = None
    opt = make()
    generic_params, fast_params = _native(params), _native(params)
    generic_state, fast_state = opt.init(generic_params), opt.init(fast_params)
    for g in grads:
        generic_params, generic_state = opt.apply_gradients(_native(g), generic_state, generic_params)
        fast_params, fast_state = opt.apply_gradients_inplace(_native(g), fast_state, fast_params)
    for got, want in zip(optree.tree_leaves(_numpy((fast_params, fast_state))),
                         optree.tree_leaves(_numpy((generic_params, generic_state)))):
        np.testing.assert_allclose(got, want, rtol=0, atol=_fast_path_atol(want, steps))
    return fast_params, fast_state


@pytest.mark.parametrize("case", sorted(FAST_CASES))
def test_torch_fast_path_equals_generic_path(torch_backend, case):
    from ember.backends.torch import optim

    assert optim.supports(FAST_CASES[case]())
    _compare_fast_and_generic(FAST_CASES[case])


def test_torch_fast_path_updates_in_place_and_skips_none_grads(torch_backend):
    params, state = _compare_fast_and_generic(lambda: optimizers.Adam(0.01), steps=3, drop="p1")
    np.testing.assert_array_equal(ops.to_numpy(params["p1"]), _arrays(0, 3)[0]["p1"])
    assert np.all(ops.to_numpy(state["momentum"]["p1"]) == 0.0)
    opt = optimizers.Adam(0.1)
    tree = _native(_arrays(0, 1)[0])
    before = {k: v for k, v in tree.items()}
    state = opt.init(tree)
    new_tree, new_state = opt.apply_gradients_inplace(_native(_arrays(0, 1)[1][0]), state, tree)
    assert all(new_tree[k] is before[k] for k in tree)  # the same tensors, updated in place
    assert int(ops.to_numpy(new_state["iterations"])) == 1


def test_torch_fast_path_with_device_scalars(torch_backend, monkeypatch):
    """Accelerator scalars stay tensors (no host sync): force that branch on the CPU and compare."""
    import torch

    from ember.backends.torch import optim

    monkeypatch.setattr(optim, "_scalar", lambda v: v.to(torch.float32) if isinstance(v, torch.Tensor)
                        else torch.tensor(float(v)))
    for case in ("sgd_nesterov_wd", "adam_amsgrad_global_clip", "adamw_schedule", "nadam", "lamb",
                 "rmsprop_centered_momentum", "adamax_clipvalue", "adadelta"):
        _compare_fast_and_generic(FAST_CASES[case], steps=4)


def test_torch_fast_path_weight_decay_exclusions_and_float16(torch_backend):
    def make():
        opt = optimizers.AdamW(0.01, weight_decay=0.2, clipnorm=0.5)
        opt.exclude_from_weight_decay(var_names=["p1"])
        return opt

    _compare_fast_and_generic(make, steps=4)
    opt = optimizers.SGD(0.1, momentum=0.9, global_clipnorm=1.0)
    params = {"a": ops.ones((4,), dtype="float16"), "b": ops.ones((3,))}
    grads = {"a": ops.full((4,), 300.0, dtype="float16"), "b": ops.full((3,), 2.0)}
    generic, _ = opt.apply_gradients(grads, opt.init(params), params)
    copy = optree.tree_map(lambda x: x.clone(), params)
    fast, _ = opt.apply_gradients_inplace(grads, opt.init(copy), copy)
    assert ops.dtype(fast["a"]) == "float16"
    for key in params:  # the float16 norm (600) is accumulated in float32 on both paths
        # float16 results (u = 2**-11): each path rounds the update and the difference once, <= 2 u = 9.8e-4 apart
        np.testing.assert_allclose(ops.to_numpy(fast[key]).astype(np.float32),
                                   ops.to_numpy(generic[key]).astype(np.float32), rtol=1e-3)


def test_fast_path_only_on_torch(backend, monkeypatch):
    calls = []
    if backend == "torch":
        from ember.backends.torch import optim

        original = optim.apply_gradients_inplace
        monkeypatch.setattr(optim, "apply_gradients_inplace", lambda *a, **k: calls.append(1) or original(*a, **k))
    opt = optimizers.Adam(0.1)
    params = {"w": ops.ones((2,))}
    new, state = opt.apply_gradients_inplace({"w": ops.ones((2,))}, opt.init(params), params)
    np.testing.assert_allclose(ops.to_numpy(new["w"]), [0.9, 0.9], rtol=0, atol=adam_step_atol(0.1))
    assert len(calls) == (1 if backend == "torch" else 0)
    fast = base._fast_path()  # NumPy's kernels are out of place only; MLX compiles the generic path
    assert (fast is not None and fast.supports(opt)) == (backend == "torch")
    assert (fast is None) == (backend == "mlx")
    if backend != "torch":  # the pure path: the caller's arrays are untouched
        np.testing.assert_array_equal(ops.to_numpy(params["w"]), [1.0, 1.0])


def test_subclasses_use_the_generic_path(torch_backend):
    from ember.backends.torch import optim

    class MyAdam(optimizers.Adam):
        def update_variable(self, grad, param, slots, lr, step):
            return ops.subtract(param, grad), slots

    assert not optim.supports(MyAdam())
    params = {"w": ops.ones((2,))}
    opt = MyAdam()
    new, _ = opt.apply_gradients_inplace({"w": ops.ones((2,))}, opt.init(params), params)
    np.testing.assert_array_equal(ops.to_numpy(new["w"]), [0.0, 0.0])
    np.testing.assert_array_equal(ops.to_numpy(params["w"]), [1.0, 1.0])
    with pytest.raises(TypeError, match="MyAdam"):
        optim.apply_gradients_inplace(opt, [params["w"]], [params["w"]], {}, 1, 0.1)


@pytest.mark.parametrize("case", ["adamw_schedule", "nadam", "adam_amsgrad_global_clip", "lamb",
                                  "rmsprop_centered_momentum", "sgd_momentum_clipnorm", "lion"])
def test_mlx_compiled_step_equals_eager(mlx_backend, case):
    import mlx.core as mx

    opt = FAST_CASES[case]()
    params, grads = _arrays(1, 5)

    def step(g, state, p):
        return opt.apply_gradients(g, state, p)

    compiled = mx.compile(step)
    eager_params, compiled_params = _native(params), _native(params)
    eager_state, compiled_state = opt.init(eager_params), opt.init(compiled_params)
    for g in grads:
        eager_params, eager_state = step(_native(g), eager_state, eager_params)
        compiled_params, compiled_state = compiled(_native(g), compiled_state, compiled_params)
    for got, want in zip(optree.tree_leaves(_numpy((compiled_params, compiled_state))),
                         optree.tree_leaves(_numpy((eager_params, eager_state)))):
        # the same gradients, 5 steps: a fused kernel may round a few intermediates differently (20 u relative a
        # side, within FLOAT32_PAIR; slots summing terms of size <= 1.2: 2 * 20 u * 1.2 = 3e-6 absolute)
        np.testing.assert_allclose(got, want, rtol=FLOAT32_PAIR["rtol"], atol=3e-6)
    assert int(ops.to_numpy(compiled_state["iterations"])) == 5
    assert ember.get_backend() == "mlx"


IN_PLACE_CASES = ["sgd", "sgd_momentum_clipnorm", "sgd_nesterov_wd", "adam", "adam_amsgrad_global_clip",
                  "adamw_schedule"]


@pytest.mark.parametrize("case", IN_PLACE_CASES)
def test_torch_all_or_nothing_write_equals_apply_gradients_inplace_bit_for_bit(torch_backend, case, torch_on_cpu):
    """fit's two torch updates agree bit for bit: the all-or-nothing write (``plan_in_place`` then
    ``write_in_place``, into fit's own tensors) and ``apply_gradients_inplace`` (on the copies of the
    copy path); a param without a gradient and its slots are not written."""
    from ember.backends.torch import optim

    params, grads = _arrays(1, 5)
    for g in grads[::2]:
        g["p1"] = None
    opt = FAST_CASES[case]()
    if opt.weight_decay is not None:
        opt.exclude_from_weight_decay(var_names=["p2"])
    copied, written = _native(params), _native(params)
    copied_state, written_state = opt.init(copied), opt.init(written)
    arrays = optree.tree_leaves((written, written_state))
    for g in grads:
        copied, copied_state = opt.apply_gradients_inplace(_native(g), copied_state, copied)
        untouched = _numpy(written["p1"]) if g["p1"] is None else None
        optim.write_in_place(opt.plan_in_place(_native(g), written_state, written))
        if untouched is not None:
            np.testing.assert_array_equal(_numpy(written["p1"]), untouched)
    assert all(a is b for a, b in zip(optree.tree_leaves((written, written_state)), arrays))  # written in place
    for got, want in zip(optree.tree_leaves(_numpy((written, written_state))),
                         optree.tree_leaves(_numpy((copied, copied_state)))):
        np.testing.assert_array_equal(got, want)


def test_plan_in_place_needs_an_in_place_kernel(backend):
    params = {"w": ops.ones((2,))}
    opt = optimizers.SGD(0.1) if ember.get_backend() == "mlx" else optimizers.RMSprop(0.1)
    before = _numpy(params)
    with pytest.raises(TypeError, match=f"RMSprop.plan_in_place: no in-place kernel on the {ember.get_backend()}"
                       if ember.get_backend() != "mlx" else "SGD.plan_in_place: no in-place kernel on the mlx"):
        opt.plan_in_place({"w": ops.ones((2,))}, opt.init(params), params)
    np.testing.assert_array_equal(_numpy(params)["w"], before["w"])


NUMPY_IN_PLACE_CASES = {
    "sgd": lambda: optimizers.SGD(0.1),
    "sgd_momentum": lambda: optimizers.SGD(0.05, momentum=0.9),
    "sgd_nesterov_wd": lambda: optimizers.SGD(0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
    "adam": lambda: optimizers.Adam(0.01),
    "adam_amsgrad": lambda: optimizers.Adam(0.01, amsgrad=True),
    "adamw_schedule": FAST_CASES["adamw_schedule"],
}


@pytest.mark.parametrize("case", sorted(NUMPY_IN_PLACE_CASES))
def test_numpy_in_place_write_equals_generic_path(case):  # the autouse fixture selects NumPy
    """NumPy's all-or-nothing in-place update (fit's step: plan, then ufuncs only) gives the generic
    path's numbers within its rounding, in the given arrays; the step counter advances, and a param
    without a gradient and its slots are not written."""
    from ember.backends.numpy import optim

    params, grads = _arrays(3, 6)
    for g in grads[::2]:
        g["p1"] = None
    opt = NUMPY_IN_PLACE_CASES[case]()
    if opt.weight_decay is not None:
        opt.exclude_from_weight_decay(var_names=["p2"])
    assert optim.in_place_slots(opt, list(_native(params).values())) is not None
    generic, in_place = _native(params), _native(params)
    generic_state, in_place_state = opt.init(generic), opt.init(in_place)
    arrays = optree.tree_leaves((in_place, in_place_state))
    scratch = {key: np.full(value.shape, np.nan, np.float32) for key, value in params.items()}  # stale values
    for step, g in enumerate(grads, start=1):
        generic, generic_state = opt.apply_gradients(_native(g), generic_state, generic)
        untouched = np.copy(in_place["p1"]) if g["p1"] is None else None
        optim.write_in_place(opt.plan_in_place(_native(g), in_place_state, in_place, scratch))
        assert int(in_place_state["iterations"]) == step
        if untouched is not None:
            np.testing.assert_array_equal(in_place["p1"], untouched)
    assert all(a is b for a, b in zip(optree.tree_leaves((in_place, in_place_state)), arrays))  # written in place
    for got, want in zip(optree.tree_leaves(_numpy((in_place, in_place_state))),
                         optree.tree_leaves(_numpy((generic, generic_state)))):
        np.testing.assert_allclose(got, want, rtol=0, atol=_fast_path_atol(want, len(grads)))


def test_numpy_plan_in_place_copies_a_gradient_that_is_a_written_array():
    """A gradient sharing memory with a param or slot is read before anything is written."""
    from ember.backends.numpy import optim

    opt = optimizers.SGD(0.5, momentum=0.5)  # its step is proportional to the gradient (Adam's to its sign)
    params = {"a": np.linspace(-1.0, 1.0, 6, dtype=np.float32), "b": np.ones(3, np.float32)}
    state = opt.init(params)
    reference, reference_state = opt.apply_gradients({"a": params["b"][:2].repeat(3), "b": params["a"][::2] * 1},
                                                     state, params)
    grads = {"a": params["b"][:2].repeat(3), "b": params["a"][::2]}  # "b"'s gradient views param "a"
    optim.write_in_place(opt.plan_in_place(grads, state, params))
    np.testing.assert_allclose(params["b"], reference["b"], **FLOAT32_PAIR)  # in-place kernels against the pure ones
    np.testing.assert_allclose(params["a"], reference["a"], **FLOAT32_PAIR)


@pytest.mark.parametrize("spoil, error, match", [
    (lambda params, state: params["p0"].setflags(write=False), TypeError, "no in-place NumPy kernel for Adam"),
    (lambda params, state: state["momentum"].update(p1=state["momentum"]["p1"].astype(np.float64)), TypeError,
     "slots of their parameters' shape and dtype"),
    (lambda params, state: state.update(iterations=0), TypeError, "a 0-d array step counter"),
], ids=["read_only_param", "float64_slot", "int_counter"])
def test_numpy_plan_in_place_refuses_arrays_it_cannot_write_and_writes_nothing(spoil, error, match):
    params, grads = _arrays(4, 1)
    opt = optimizers.Adam(0.1)
    state = opt.init(params)
    spoil(params, state)
    before = optree.tree_map(np.copy, (params, state))
    with pytest.raises(error, match=match):
        opt.plan_in_place(grads[0], state, params)
    for got, want in zip(optree.tree_leaves((params, state)), optree.tree_leaves(before)):
        np.testing.assert_array_equal(got, want)


def test_numpy_plan_in_place_checks_its_scratch_arrays():
    params, grads = _arrays(5, 1)
    opt = optimizers.SGD(0.1)
    scratch = {key: np.empty(value.shape, np.float32) for key, value in params.items()}
    scratch["p2"] = np.empty((2, 2), np.float32)
    with pytest.raises(ValueError, match=r"scratch array 2 must be a writeable array of shape \(3, 2, 2\)"):
        opt.plan_in_place(grads[0], opt.init(params), params, scratch)


@pytest.mark.parametrize("name", ["numpy", "torch"])
def test_fused_kernels_follow_the_optimizer_class_not_its_subclasses(name, torch_on_cpu):
    """Backends find kernels by ``kernel_name`` (no import of the classes); a subclass runs the generic path."""
    ember.set_backend(name)
    fast = base._fast_path()

    class MyAdam(optimizers.Adam):
        pass

    leaves = [ops.ones((2,))]
    assert optimizers.Adam().kernel_name == optimizers.AdamW().kernel_name == "adam"
    assert fast.in_place_slots(optimizers.AdamW(), leaves) == ("momentum", "velocity")
    assert MyAdam().kernel_name is None and fast.in_place_slots(MyAdam(), leaves) is None
    assert not fast.supports(MyAdam())
    opt = MyAdam(0.1)
    params = {"w": ops.ones((2,))}
    with pytest.raises(TypeError, match="MyAdam.plan_in_place: no in-place kernel"):
        opt.plan_in_place({"w": ops.ones((2,))}, opt.init(params), params)


def test_fits_adam_writes_its_denominators_into_the_steps_own_gradients(torch_backend, monkeypatch):
    """After a fit's first step (which checks the state and makes its denominators anew), Adam's plan
    puts each denominator in that step's gradient: fit keeps no param-sized spare buffer through the
    backward pass. The weights are the reference fit's (test_fit_reference), checked there."""
    import torch

    from ember.backends.torch import optim as torch_optim

    plans = []
    write = torch_optim.write_in_place
    monkeypatch.setattr(torch_optim, "write_in_place", lambda plan: (plans.append(plan), write(plan))[1])
    model = ember.Sequential([ember.Input((3,)), layers.Dense(4), layers.Dense(1)])
    model.build(seed=0)
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)
    model.fit(rng.normal(size=(32, 3)).astype("float32"), rng.normal(size=(32, 1)).astype("float32"),
              batch_size=8, epochs=1, verbose=0)
    assert len(plans) == 4
    for plan in plans[1:]:
        kind, _, grads, _, scratch = plan[:5]
        assert kind == "adam"
        assert all(d is g for d, g in zip(scratch, grads))
    assert all(isinstance(d, torch.Tensor) for d in plans[0][4])


def test_reusable_gradients_refuse_shared_memory_other_layouts_and_graph_tensors(torch_backend):
    import torch

    from ember.backends.torch.optim import reusable_gradients

    v = [torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(3, 2), torch.zeros(2, 3), torch.zeros(2)]
    g = torch.ones(2, 3)
    transposed = torch.ones(2, 3).t().contiguous().t()  # shape (2, 3), other strides
    graph = torch.ones(2, requires_grad=True)
    got = reusable_gradients([g, g, torch.ones(3, 2), transposed, graph], v)
    assert got[0] is g
    assert got[1] is None  # the same tensor again: both denominators would share one memory
    assert got[2] is not None
    assert got[3] is None  # other strides than the moment's
    assert got[4] is None  # part of an autograd graph
    assert reusable_gradients([None], [torch.zeros(1)]) == [None]
