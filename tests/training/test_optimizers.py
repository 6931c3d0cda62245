"""Optimizers: Keras 3 math on every backend, against NumPy float64 and torch.optim.

References:
* ``tests/training/optimizer_reference.py``: the Keras 3 formulas in NumPy float64 (with
  Keras's defaults, epsilon placement included);
* ``torch.optim``'s optimizer of the same semantics. Keras and torch place epsilon
  differently for Adam, AdamW, Adamax, RMSprop and Adagrad (Keras: ``sqrt(v) + eps`` before
  the bias correction, or ``sqrt(v + eps)``), so those comparisons run both with
  ``epsilon = 0``, where the formulas coincide exactly; Nadam (torch ``momentum_decay=1``),
  SGD and Adadelta compare with equal epsilons.

Every run: 20 steps of a fixed gradient sequence on a small params tree, float32.
"""

from __future__ import annotations

import numpy as np
import optree
import pytest

import ember
from ember import ops, optimizers
from tests.helpers import adam_step_atol
from tests.tolerances import FLOAT32
from tests.training import optimizer_reference as ref

RTOL, ATOL = 1e-5, 1e-6  # float32 after 20 steps; atol for entries that pass near zero
STEPS = 20
SHAPES = {"dense": {"bias": (3,), "kernel": (4, 3)}, "scale": (2,)}


def _problem(seed=0, steps=STEPS):
    rng = np.random.default_rng(seed)
    leaves, treedef = optree.tree_flatten(SHAPES, is_leaf=lambda x: isinstance(x, tuple))
    params = [rng.normal(size=s).astype(np.float32) for s in leaves]
    grads = [[rng.normal(size=s).astype(np.float32) for s in leaves] for _ in range(steps)]
    return treedef, params, grads


def _run_ember(opt, treedef, params, grad_steps):
    tree = treedef.unflatten([ops.convert_to_tensor(p) for p in params])
    state = opt.init(tree)
    for grads in grad_steps:
        g = treedef.unflatten([None if x is None else ops.convert_to_tensor(x) for x in grads])
        tree, state = opt.apply_gradients(g, state, tree)
    return [ops.to_numpy(p) for p in treedef.flatten_up_to(tree)], state


def _assert_params(got, expected, rtol=RTOL, atol=ATOL):
    for g, e in zip(got, expected):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


# name -> (Ember class name, Ember/Keras hyper-parameters)
NUMPY_CASES = {
    "sgd": ("SGD", {"learning_rate": 0.1}),
    "sgd_momentum": ("SGD", {"learning_rate": 0.05, "momentum": 0.9}),
    "sgd_nesterov": ("SGD", {"learning_rate": 0.05, "momentum": 0.9, "nesterov": True}),
    "adam": ("Adam", {"learning_rate": 0.01}),
    "adam_amsgrad": ("Adam", {"learning_rate": 0.01, "amsgrad": True}),
    "adamw": ("AdamW", {"learning_rate": 0.01, "weight_decay": 0.1}),
    "adamax": ("Adamax", {"learning_rate": 0.01}),
    "nadam": ("Nadam", {"learning_rate": 0.01}),
    "lamb": ("Lamb", {"learning_rate": 0.01}),
    "rmsprop": ("RMSprop", {"learning_rate": 0.01}),
    "rmsprop_centered_momentum": ("RMSprop", {"learning_rate": 0.01, "momentum": 0.5, "centered": True}),
    "adagrad": ("Adagrad", {"learning_rate": 0.1}),
    "adadelta": ("Adadelta", {"learning_rate": 1.0}),
    "lion": ("Lion", {"learning_rate": 0.01}),
}


@pytest.mark.parametrize("case", sorted(NUMPY_CASES))
def test_matches_keras_formula_in_float64(backend, case):
    kind, hyper = NUMPY_CASES[case]
    treedef, params, grads = _problem()
    got, _ = _run_ember(getattr(optimizers, kind)(**hyper), treedef, params, grads)
    wd = hyper.get("weight_decay")
    expected = ref.run(kind, hyper, params, grads, weight_decay=wd)
    _assert_params(got, expected)


def _torch_cases():
    torch = pytest.importorskip("torch")
    o = torch.optim
    return {
        # name: (Ember optimizer, torch optimizer factory)
        "sgd": (optimizers.SGD(0.1), lambda p: o.SGD(p, lr=0.1)),
        "sgd_momentum": (optimizers.SGD(0.05, momentum=0.9), lambda p: o.SGD(p, lr=0.05, momentum=0.9)),
        "sgd_nesterov": (optimizers.SGD(0.05, momentum=0.9, nesterov=True),
                         lambda p: o.SGD(p, lr=0.05, momentum=0.9, nesterov=True)),
        "adam": (optimizers.Adam(0.01, epsilon=0.0), lambda p: o.Adam(p, lr=0.01, eps=0.0)),
        "adam_amsgrad": (optimizers.Adam(0.01, epsilon=0.0, amsgrad=True),
                         lambda p: o.Adam(p, lr=0.01, eps=0.0, amsgrad=True)),
        "adamw": (optimizers.AdamW(0.01, weight_decay=0.1, epsilon=0.0),
                  lambda p: o.AdamW(p, lr=0.01, weight_decay=0.1, eps=0.0)),
        "adamax": (optimizers.Adamax(0.01, epsilon=0.0), lambda p: o.Adamax(p, lr=0.01, eps=0.0)),
        "nadam": (optimizers.Nadam(0.01), lambda p: o.NAdam(p, lr=0.01, eps=1e-7, momentum_decay=1.0)),
        "rmsprop": (optimizers.RMSprop(0.01, epsilon=0.0), lambda p: o.RMSprop(p, lr=0.01, alpha=0.9, eps=0.0)),
        "rmsprop_centered_momentum": (
            optimizers.RMSprop(0.01, momentum=0.5, centered=True, epsilon=0.0),
            lambda p: o.RMSprop(p, lr=0.01, alpha=0.9, eps=0.0, momentum=0.5, centered=True)),
        "adagrad": (optimizers.Adagrad(0.1, epsilon=0.0),
                    lambda p: o.Adagrad(p, lr=0.1, initial_accumulator_value=0.1, eps=0.0)),
        "adadelta": (optimizers.Adadelta(1.0), lambda p: o.Adadelta(p, lr=1.0, rho=0.95, eps=1e-7)),
    }


TORCH_CASES = ("sgd", "sgd_momentum", "sgd_nesterov", "adam", "adam_amsgrad", "adamw", "adamax", "nadam",
               "rmsprop", "rmsprop_centered_momentum", "adagrad", "adadelta")


@pytest.mark.parametrize("case", TORCH_CASES)
def test_matches_torch_optim(backend, case):
    torch = pytest.importorskip("torch")
    opt, make_torch = _torch_cases()[case]
    treedef, params, grads = _problem(seed=1)
    got, _ = _run_ember(opt, treedef, params, grads)
    tensors = [torch.tensor(p, requires_grad=True) for p in params]
    reference = make_torch(tensors)
    for step in grads:
        for t, g in zip(tensors, step):
            t.grad = torch.tensor(g)
        reference.step()
    _assert_params(got, [t.detach().cpu().numpy() for t in tensors])


def test_lion_matches_keras_formula_with_clipping_and_decay(backend):
    treedef, params, grads = _problem(seed=2)
    opt = optimizers.Lion(0.02, beta_1=0.8, beta_2=0.95, weight_decay=0.05, global_clipnorm=1.5)
    got, _ = _run_ember(opt, treedef, params, grads)
    expected = ref.run("Lion", {"learning_rate": 0.02, "beta_1": 0.8, "beta_2": 0.95}, params, grads,
                       clip_args={"global_clipnorm": 1.5}, weight_decay=0.05)
    _assert_params(got, expected)


# --------------------------------------------------------------------------- clipping, decay


@pytest.mark.parametrize("clip_args", [{"clipnorm": 0.7}, {"clipvalue": 0.3}, {"global_clipnorm": 1.2}],
                         ids=lambda c: next(iter(c)))
def test_gradient_clipping_matches_numpy(backend, clip_args):
    treedef, params, grads = _problem(seed=3, steps=5)
    grads[1][0] = np.zeros_like(grads[1][0])  # a zero gradient: clipnorm must not divide by zero
    opt = optimizers.SGD(1.0, **clip_args)
    got, _ = _run_ember(opt, treedef, params, grads)
    expected = ref.run("SGD", {"learning_rate": 1.0}, params, grads, clip_args=clip_args)
    _assert_params(got, expected)
    # one step of SGD(lr=1) moves each param by exactly minus its clipped gradient
    step, _ = _run_ember(opt, treedef, params, grads[:1])
    clipped = ref.clip([g.astype(np.float64) for g in grads[0]], **clip_args)
    _assert_params([p - s for p, s in zip(params, step)], clipped)


def test_clipping_functions(backend):
    from ember.training.optimizers import clip_by_global_norm, clip_by_norm, global_norm

    a, b = ops.convert_to_tensor(np.array([3.0, 0.0], np.float32)), ops.convert_to_tensor(np.float32([4.0]))
    # exact: sqrt(9 + 16) = 5 and the clipped values (a factor 0.5) are representable
    np.testing.assert_array_equal(ops.to_numpy(global_norm([a, None, b])), 5.0)
    ca, cb = clip_by_global_norm([a, b], 2.5)
    np.testing.assert_array_equal(ops.to_numpy(ca), [1.5, 0.0])
    np.testing.assert_array_equal(ops.to_numpy(cb), [2.0])
    np.testing.assert_array_equal(ops.to_numpy(clip_by_norm(a, 10.0)), [3.0, 0.0])
    zero = clip_by_global_norm([ops.zeros((2,))], 1.0)[0]
    assert np.all(ops.to_numpy(zero) == 0.0)
    with np.errstate(invalid="ignore"):  # inf - inf on the NumPy backend
        inf = clip_by_global_norm([ops.convert_to_tensor(np.float32([np.inf, 1.0]))], 1.0)[0]
    assert np.all(np.isnan(ops.to_numpy(inf)))  # Keras: a non-finite global norm gives NaN


def test_weight_decay_is_decoupled_like_keras(backend):
    treedef, params, grads = _problem(seed=4, steps=6)
    hyper = {"learning_rate": 0.05, "momentum": 0.5}
    got, _ = _run_ember(optimizers.SGD(**hyper, weight_decay=0.2), treedef, params, grads)
    _assert_params(got, ref.run("SGD", hyper, params, grads, weight_decay=0.2))
    got, _ = _run_ember(optimizers.Adam(0.01, weight_decay=0.2), treedef, params, grads)
    _assert_params(got, ref.run("Adam", {"learning_rate": 0.01}, params, grads, weight_decay=0.2))


def test_exclude_from_weight_decay_by_path(backend):
    opt = optimizers.AdamW(0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["bias"])
    params = {"dense": {"bias": ops.ones((2,)), "kernel": ops.ones((2,))}}
    grads = {"dense": {"bias": ops.zeros((2,)), "kernel": ops.zeros((2,))}}
    new, _ = opt.apply_gradients(grads, opt.init(params), params)
    np.testing.assert_allclose(ops.to_numpy(new["dense"]["bias"]), [1.0, 1.0])
    np.testing.assert_allclose(ops.to_numpy(new["dense"]["kernel"]), [0.95, 0.95], **FLOAT32)
    with pytest.raises(TypeError, match="var_names"):
        opt.exclude_from_weight_decay(var_list=[params["dense"]["bias"]])


def test_schedule_learning_rate_sees_iterations_before_the_update(backend):
    schedule = optimizers.schedules.ExponentialDecay(0.1, decay_steps=3, decay_rate=0.5)
    treedef, params, grads = _problem(seed=5, steps=8)
    got, state = _run_ember(optimizers.Adam(schedule, weight_decay=0.1), treedef, params, grads)
    lr_at = lambda i: ref.exponential_decay(i, 0.1, 3, 0.5)  # noqa: E731
    _assert_params(got, ref.run("Adam", {}, params, grads, lr_at=lr_at, weight_decay=0.1))
    assert "learning_rate" not in state and int(ops.to_numpy(state["iterations"])) == 8


def test_set_learning_rate_changes_a_running_state(backend):
    opt = optimizers.SGD(1.0)
    params = {"w": ops.ones((1,))}
    state = opt.set_learning_rate(opt.init(params), 0.25)
    params, state = opt.apply_gradients({"w": ops.ones((1,))}, state, params)
    np.testing.assert_allclose(ops.to_numpy(params["w"]), [0.75])
    assert opt.learning_rate == 0.25
    scheduled = optimizers.SGD(optimizers.schedules.InverseTimeDecay(1.0, 1, 1.0))
    with pytest.raises(TypeError, match="schedule"):
        scheduled.learning_rate = 0.1


# --------------------------------------------------------------------------- state semantics


def test_none_grads_leave_params_and_slots_unchanged(backend):
    treedef, params, grads = _problem(seed=6, steps=4)
    for step in grads:
        step[1] = None  # dense/kernel never gets a gradient
    opt = optimizers.Adam(0.05)
    got, state = _run_ember(opt, treedef, params, grads)
    np.testing.assert_array_equal(got[1], params[1])
    kernel_slots = [ops.to_numpy(state[s]["dense"]["kernel"]) for s in ("momentum", "velocity")]
    assert all(np.all(s == 0.0) for s in kernel_slots)
    expected = ref.run("Adam", {"learning_rate": 0.05}, params, grads)
    _assert_params(got, expected)
    assert int(ops.to_numpy(state["iterations"])) == 4
    tree = treedef.unflatten([ops.convert_to_tensor(p) for p in params])
    with pytest.raises(ValueError, match="no gradients"):
        opt.apply_gradients(optree.tree_map(lambda _: None, tree), opt.init(tree), tree)


def test_state_is_a_pytree_and_apply_is_functional(backend):
    treedef, params, grads = _problem(seed=7, steps=1)
    opt = optimizers.Nadam(0.1)
    tree = treedef.unflatten([ops.convert_to_tensor(p) for p in params])
    gtree = treedef.unflatten([ops.convert_to_tensor(g) for g in grads[0]])
    state = opt.init(tree)
    assert set(state) == {"iterations", "learning_rate", "momentum", "velocity", "u_product"}
    assert ops.dtype(state["iterations"]) == ("int32" if backend == "mlx" else "int64")
    leaves, spec = optree.tree_flatten(state)
    assert all(ops.is_array(leaf) for leaf in leaves)
    rebuilt = optree.tree_unflatten(spec, leaves)
    assert optree.tree_structure(rebuilt) == spec
    before = [np.array(ops.to_numpy(x)) for x in optree.tree_leaves((gtree, state, tree))]
    new_tree, new_state = opt.apply_gradients(gtree, state, tree)
    after = [ops.to_numpy(x) for x in optree.tree_leaves((gtree, state, tree))]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)
    assert optree.tree_structure(new_state) == spec and optree.tree_structure(new_tree) == treedef
    # the rebuilt state continues exactly like the original
    again, _ = opt.apply_gradients(gtree, rebuilt, tree)
    for x, y in zip(optree.tree_leaves(again), optree.tree_leaves(new_tree)):
        np.testing.assert_array_equal(ops.to_numpy(x), ops.to_numpy(y))


def test_bad_input_names_the_problem(backend):
    opt = optimizers.SGD(0.1, momentum=0.9)
    params = {"w": ops.ones((2,))}
    state = opt.init(params)
    with pytest.raises(ValueError, match="mirror params"):
        opt.apply_gradients({"v": ops.ones((2,))}, state, params)
    with pytest.raises(ValueError, match=r"'w'.*\(3,\).*\(2,\)"):
        opt.apply_gradients({"w": ops.ones((3,))}, state, params)
    with pytest.raises(ValueError, match="accumulator"):
        optimizers.Adagrad().apply_gradients({"w": ops.ones((2,))}, {"iterations": state["iterations"]}, params)
    with pytest.raises(TypeError, match="floating"):
        opt.init({"w": ops.ones((2,), dtype="int32")})
    with pytest.raises(TypeError, match="native"):
        opt.init({"w": [1.0, 2.0]})


def test_float16_params_and_mixed_dtypes(backend):
    params = {"a": ops.ones((3,), dtype="float16"), "b": ops.ones((3,), dtype="float32")}
    grads = {"a": ops.full((3,), 0.5, dtype="float32"), "b": ops.full((3,), 0.5, dtype="float32")}
    opt = optimizers.Adam(0.1, clipnorm=10.0)
    new, state = opt.apply_gradients(grads, opt.init(params), params)
    assert ops.dtype(new["a"]) == "float16" and ops.dtype(state["momentum"]["a"]) == "float16"
    # float16 (u = 2**-11 = 4.9e-4): ~6 roundings of an update of size 0.1, then the result's own (of 0.9):
    # 0.6 u + 0.9 u = 7.3e-4 absolute, 8.1e-4 of 0.9 -> rtol 1e-3
    np.testing.assert_allclose(ops.to_numpy(new["a"]).astype(np.float64), 0.9, rtol=1e-3)
    np.testing.assert_allclose(ops.to_numpy(new["b"]), 0.9, rtol=0, atol=adam_step_atol(0.1))


# --------------------------------------------------------------------------- config and registry


@pytest.mark.parametrize("cls", optimizers.ALL_OPTIMIZERS, ids=lambda c: c.__name__)
def test_config_round_trip(cls):
    from ember import serialization

    opt = cls(learning_rate=0.05, clipnorm=1.0) if cls is not optimizers.AdamW else cls(0.05, weight_decay=0.01)
    config = opt.get_config()
    assert config["learning_rate"] == 0.05
    assert cls.from_config(config).get_config() == config
    data = serialization.serialize(opt)
    assert data["class_name"] == f"ember>{cls.__name__}"
    assert type(serialization.deserialize(data)) is cls
    assert optimizers.get(optimizers.serialize(opt)).get_config() == config
    assert type(optimizers.get(cls.__name__.lower())) is cls and type(optimizers.get(cls.__name__)) is cls


def test_config_with_schedule_and_keras_style_names():
    schedule = optimizers.schedules.CosineDecay(0.01, 100, alpha=0.1, warmup_target=0.1, warmup_steps=10)
    opt = optimizers.AdamW(learning_rate=schedule, weight_decay=0.01, amsgrad=True, name="opt")
    config = opt.get_config()
    assert config["learning_rate"]["class_name"] == "ember>CosineDecay"
    clone = optimizers.AdamW.from_config(config)
    assert clone.get_config() == config and isinstance(clone.learning_rate, optimizers.schedules.CosineDecay)
    keras_style = {"class_name": "adam", "config": {"learning_rate": 0.002, "beta_1": 0.8, "use_ema": False,
                                                    "ema_momentum": 0.99, "gradient_accumulation_steps": None}}
    assert optimizers.get(keras_style).beta_1 == 0.8
    assert optimizers.get(None) is None and optimizers.get(opt) is opt


def test_unknown_names_and_bad_arguments():
    with pytest.raises(ValueError, match=r"unknown optimizer 'adamm'.*'adam'.*'sgd'"):
        optimizers.get("adamm")
    with pytest.raises(TypeError, match="optimizer"):
        optimizers.get(3.0)
    with pytest.raises(ValueError, match="only one of"):
        optimizers.Adam(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(ValueError, match=r"momentum.*\[0.0, 1.0\]"):
        optimizers.SGD(momentum=1.5)
    with pytest.raises(ValueError, match="beta_1"):
        optimizers.Lion(beta_1=0.0)
    with pytest.raises(ValueError, match="weight_decay"):
        optimizers.AdamW(weight_decay=None)
    with pytest.raises(ValueError, match="learning_rate"):
        optimizers.Adam(learning_rate="fast")
    with pytest.raises(NotImplementedError, match="use_ema"):
        optimizers.Adam(use_ema=True)
    with pytest.raises(TypeError, match="unknown argument"):
        optimizers.Adam(betas=(0.9, 0.99))


def test_public_namespace():
    import ember.optimizers.schedules as schedules_module
    from ember.optimizers.schedules import CosineDecay

    assert ember.optimizers.schedules is schedules_module and CosineDecay is schedules_module.CosineDecay
    assert ember.optimizers.Adam is optimizers.Adam
