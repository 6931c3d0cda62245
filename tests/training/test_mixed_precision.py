"""Mixed-precision training: dtype policies through ``fit``, LossScaleOptimizer, checkpoints."""

from __future__ import annotations

import numpy as np
import optree
import pytest

import ember
from ember import layers, mixed_precision, ops, optimizers
from tests.helpers import needs, optional_import
from tests.tolerances import FLOAT32_PAIR

datasets = optional_import("sklearn.datasets")  # the digits; None on a core-only install, where those tests skip


@pytest.fixture(autouse=True)
def _reset_policy():
    yield
    mixed_precision.set_global_policy(None)


def _digits():
    digits = datasets.load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    return x[:1200], y[:1200], x[1200:], y[1200:]


def _mlp(policy):
    mixed_precision.set_global_policy(policy)
    try:
        return ember.Sequential([ember.Input((64,)), layers.Dense(32, activation="relu"),
                                 layers.Dense(10, activation="softmax")])
    finally:
        mixed_precision.set_global_policy(None)


def _accuracy(policy):
    x, y, x_test, y_test = _digits()
    model = _mlp(policy)
    model.build(seed=0)
    model.compile(optimizer=optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                  seed=0)
    model.fit(x, y, batch_size=64, epochs=6, verbose=0)
    assert {ops.dtype(v) for v in optree.tree_leaves(model.state)} == {"float32"}
    return model, model.evaluate(x_test, y_test, verbose=0, return_dict=True)["accuracy"]


@needs("sklearn.datasets")
@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_trains_digits_like_float32(backend, policy):
    _, reference = _accuracy("float32")
    model, accuracy = _accuracy(policy)
    assert reference > 0.85
    # The same band: 16-bit rounding of activations changes the trajectory, not what is learned.
    assert accuracy > reference - 0.05, (policy, accuracy, reference)
    assert isinstance(model.optimizer, optimizers.LossScaleOptimizer) == (policy == "mixed_float16")


def test_compile_wraps_only_float16_models_and_honours_auto_scale_loss():
    model = _mlp("mixed_float16")
    model.compile("adam", "mse")
    assert isinstance(model.optimizer, optimizers.LossScaleOptimizer)
    assert isinstance(model.optimizer.inner_optimizer, optimizers.Adam)
    model.compile("adam", "mse", auto_scale_loss=False)
    assert isinstance(model.optimizer, optimizers.Adam)
    _mlp_bf16 = _mlp("mixed_bfloat16")
    _mlp_bf16.compile("adam", "mse")
    assert isinstance(_mlp_bf16.optimizer, optimizers.Adam)
    with pytest.raises(TypeError, match="auto_scale_loss must be a bool"):
        model.compile("adam", "mse", auto_scale_loss="yes")


def test_loss_scale_optimizer_update_matches_the_rule(backend):
    """Against the rule written out: unscale, apply when finite (grow after N), else skip and halve."""
    opt = optimizers.LossScaleOptimizer(optimizers.SGD(0.5), initial_scale=4.0, dynamic_growth_steps=2)
    params = {"w": ops.convert_to_tensor(np.array([1.0, 2.0], np.float32))}
    state = opt.init(params)
    w, scale, counter, iterations = np.array([1.0, 2.0]), 4.0, 0, 0
    for grad in ([4.0, 8.0], [np.inf, 1.0], [2.0, 2.0], [np.nan, 0.0], [1.0, 1.0], [1.0, -1.0], [3.0, 3.0]):
        params, state = opt.apply_gradients({"w": ops.convert_to_tensor(np.array(grad, np.float32))}, state, params)
        if np.all(np.isfinite(grad)):
            w = w - 0.5 * np.array(grad) / scale
            counter, iterations = counter + 1, iterations + 1
            if counter >= 2:
                scale, counter = scale * 2, 0
        else:
            scale, counter = scale / 2, 0
        np.testing.assert_array_equal(ops.to_numpy(params["w"]), w)  # exact: sums of small dyadic fractions
        assert float(ops.to_numpy(state["dynamic_scale"])) == scale
        assert int(ops.to_numpy(state["step_counter"])) == counter
        assert int(ops.to_numpy(state["iterations"])) == iterations


def test_loss_scale_optimizer_bad_arguments():
    with pytest.raises(TypeError, match="inner_optimizer must be an ember optimizer"):
        optimizers.LossScaleOptimizer("adam")
    with pytest.raises(ValueError, match="initial_scale must be a finite number > 0"):
        optimizers.LossScaleOptimizer(optimizers.SGD(), initial_scale=0)
    with pytest.raises(ValueError, match="dynamic_growth_steps must be an int >= 1"):
        optimizers.LossScaleOptimizer(optimizers.SGD(), dynamic_growth_steps=0)
    with pytest.raises(ValueError, match="set `learning_rate` on the inner optimizer"):
        optimizers.LossScaleOptimizer(optimizers.SGD(), learning_rate=0.1)
    opt = optimizers.LossScaleOptimizer(optimizers.Adam(0.003), initial_scale=256.0, dynamic_growth_steps=7)
    again = optimizers.deserialize(optimizers.serialize(opt))
    assert (again.initial_scale, again.dynamic_growth_steps, again.learning_rate) == (256.0, 7, 0.003)
    assert isinstance(again.inner_optimizer, optimizers.Adam)


@needs("sklearn.datasets")
def test_loss_scaling_recovers_from_an_injected_overflow(backend):
    """A scale of 2**40 overflows float16 gradients: each step is skipped and halves the scale until
    the gradients fit, then training goes on and the loss falls."""
    x, y, _, _ = _digits()
    model = _mlp("mixed_float16")
    model.build(seed=0)
    opt = optimizers.LossScaleOptimizer(optimizers.Adam(0.01), initial_scale=2.0 ** 40, dynamic_growth_steps=1000)
    trainer = ember.Trainer(model, optimizer=opt, loss="sparse_categorical_crossentropy")
    state = trainer.init_state(seed=0)
    before = [ops.to_numpy(v).copy() for v in optree.tree_leaves(state["model"]["params"])]
    state, logs = trainer.train_step(state, (x[:64], y[:64]))
    assert float(ops.to_numpy(state["optimizer"]["dynamic_scale"])) == 2.0 ** 39  # halved
    assert int(ops.to_numpy(state["optimizer"]["iterations"])) == 0  # the step was skipped
    for old, new in zip(before, optree.tree_leaves(state["model"]["params"])):
        np.testing.assert_array_equal(ops.to_numpy(new), old)
    first_loss = None
    for step in range(80):
        state = trainer.reset_metrics(state)
        batch = slice(64 * (step % 18), 64 * (step % 18 + 1))
        state, logs = trainer.train_step(state, (x[batch], y[batch]))
        first_loss = float(logs["loss"]) if first_loss is None else first_loss
    scale = float(ops.to_numpy(state["optimizer"]["dynamic_scale"]))
    applied = int(ops.to_numpy(state["optimizer"]["iterations"]))
    assert scale < 2.0 ** 20 and applied > 40, (scale, applied)
    assert float(logs["loss"]) < 0.5 * first_loss
    assert all(np.isfinite(ops.to_numpy(v)).all() for v in optree.tree_leaves(state["model"]["params"]))


@needs("sklearn.datasets")
def test_mixed_checkpoint_loads_on_every_backend(tmp_path):
    x, y, _, _ = _digits()
    ember.set_backend("numpy")
    model = _mlp("mixed_float16")
    model.build(seed=0)
    model.compile(optimizers.Adam(0.01), "sparse_categorical_crossentropy", seed=0)
    model.fit(x[:256], y[:256], batch_size=64, epochs=1, verbose=0)
    path = str(tmp_path / "mixed.h5")
    model.save(path)
    saved_scale = float(ops.to_numpy(model._training.opt_state["dynamic_scale"]))
    expected = model.predict(x[:8], verbose=0)
    for name in ember.backends.available():
        ember.set_backend(name)
        loaded = ember.load_model(path)
        assert [layer.dtype for layer in loaded.layers] == ["mixed_float16", "mixed_float16"]
        assert {ops.dtype(v) for v in optree.tree_leaves(loaded.state)} == {"float32"}
        assert isinstance(loaded.optimizer, optimizers.LossScaleOptimizer)
        opt_state = loaded._training.opt_state
        assert float(ops.to_numpy(opt_state["dynamic_scale"])) == saved_scale
        got = loaded.predict(x[:8], verbose=0)
        assert got.dtype == np.float16
        # float16 computations on different backends may round single results differently (one ulp).
        np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32), atol=2.0 ** -9)
        loaded.fit(x[:128], y[:128], batch_size=64, epochs=1, verbose=0)
        assert int(ops.to_numpy(loaded._training.opt_state["step_counter"])) >= 0


@needs("sklearn.datasets")
@pytest.mark.parametrize("jit_compile", ["auto", False])
def test_loss_scaled_fit_runs_the_backends_steps_and_equals_its_inner_optimizer(backend, jit_compile):
    """A LossScaleOptimizer trains on the backend's own steps (MLX's ``mx.compile``d one with "auto",
    torch's fused eager step, NumPy's): on a float32 model whose gradients never overflow, a scale
    of 2**10 is exact, so its weights are its inner Adam's; the scale doubles every 3 finite steps."""
    x, y, _, _ = _digits()
    models = {}
    for name, opt in [("scaled", optimizers.LossScaleOptimizer(optimizers.Adam(0.01), initial_scale=2.0 ** 10,
                                                               dynamic_growth_steps=3)),
                      ("plain", optimizers.Adam(0.01))]:
        model = _mlp(None)
        model.build(seed=0)
        model.compile(opt, "sparse_categorical_crossentropy", jit_compile=jit_compile, seed=0)
        model.fit(x[:384], y[:384], batch_size=64, epochs=1, shuffle=False, verbose=0)
        models[name] = model
    steps = models["scaled"]._training.trainer.steps
    assert type(steps).__module__.startswith(f"ember.backends.{ember.backends.get_backend()}.")
    opt_state = models["scaled"]._training.opt_state
    assert float(ops.to_numpy(opt_state["dynamic_scale"])) == 2.0 ** 12  # 6 finite steps: doubled twice
    assert int(ops.to_numpy(opt_state["iterations"])) == 6
    # The steps' arithmetic may differ (the scaled step's own path): once the weights differ by rounding, Adam's
    # update lr m/(sqrt(v) + eps), invariant to the gradients' scale, moves by <= lr * 2e-5 a step for gradients
    # FLOAT32_PAIR apart: 6 * 0.01 * 2e-5 = 1.2e-6 absolute, on top of FLOAT32_PAIR.
    drift = 6 * 0.01 * FLOAT32_PAIR["rtol"]
    for got, want in zip(optree.tree_leaves(models["scaled"].state), optree.tree_leaves(models["plain"].state)):
        np.testing.assert_allclose(ops.to_numpy(got), ops.to_numpy(want), rtol=FLOAT32_PAIR["rtol"],
                                   atol=FLOAT32_PAIR["atol"] + drift)


@needs("sklearn.datasets")
def test_fit_skips_overflowing_steps_and_halves_the_scale(backend):
    """Through ``fit`` (each backend's fit step, in place where it writes in place): a scale of 2**40
    overflows the float16 gradients, so every step is skipped (weights, slots and ``iterations``
    unchanged) and halves the scale."""
    x, y, _, _ = _digits()
    model = _mlp("mixed_float16")
    model.build(seed=0)
    model.compile(optimizers.LossScaleOptimizer(optimizers.Adam(0.01), initial_scale=2.0 ** 40),
                  "sparse_categorical_crossentropy", seed=0)
    before = [ops.to_numpy(v).copy() for v in optree.tree_leaves(model.state)]
    model.fit(x[:192], y[:192], batch_size=64, epochs=1, verbose=0)
    opt_state = model._training.opt_state
    assert float(ops.to_numpy(opt_state["dynamic_scale"])) == 2.0 ** 37
    assert int(ops.to_numpy(opt_state["iterations"])) == 0
    for old, new in zip(before, optree.tree_leaves(model.state)):
        np.testing.assert_array_equal(ops.to_numpy(new), old)
    assert all(not np.any(ops.to_numpy(v)) for v in optree.tree_leaves(
        {k: v for k, v in opt_state.items() if k in ("momentum", "velocity")}))


@needs("sklearn.datasets")
def test_loss_scaled_compiled_torch_step_equals_the_eager_step(torch_backend):
    """``jit_compile=True`` with a LossScaleOptimizer: the scale is an input of the one compiled graph
    (no graph break), and 12 steps give the eager step's weights and scale. (A float32 model: Inductor
    computes float16 arithmetic in float32, so a float16 model's weights would differ by rounding.)"""
    import torch

    x, y, _, _ = _digits()
    results = {}
    for jit in (False, True):
        model = _mlp(None)
        model.build(seed=0)
        model.compile(optimizers.LossScaleOptimizer(optimizers.Adam(0.01), initial_scale=2.0 ** 8,
                                                    dynamic_growth_steps=4),
                      "sparse_categorical_crossentropy", jit_compile=jit, seed=0)
        torch._dynamo.utils.counters.clear()
        model.fit(x[:768], y[:768], batch_size=64, epochs=1, shuffle=False, verbose=0)
        results[jit] = model
    steps = results[True]._training.trainer.steps
    assert type(steps).__name__ == "CompiledTorchSteps" and steps.fallback_reason is None
    assert dict(torch._dynamo.utils.counters["graph_break"]) == {}
    for key in ("dynamic_scale", "iterations", "step_counter"):
        assert float(ops.to_numpy(results[True]._training.opt_state[key])) == float(
            ops.to_numpy(results[False]._training.opt_state[key]))
    assert float(ops.to_numpy(results[True]._training.opt_state["dynamic_scale"])) == 2.0 ** 11
    # Inductor fuses the float32 arithmetic (FLOAT32_PAIR apart); over 12 Adam steps the update, invariant to the
    # gradients' scale, moves by <= lr * 2e-5 a step: 12 * 0.01 * 2e-5 = 2.4e-6 absolute, on top of FLOAT32_PAIR.
    drift = 12 * 0.01 * FLOAT32_PAIR["rtol"]
    for got, want in zip(optree.tree_leaves(results[True].state), optree.tree_leaves(results[False].state)):
        np.testing.assert_allclose(ops.to_numpy(got), ops.to_numpy(want), rtol=FLOAT32_PAIR["rtol"],
                                   atol=FLOAT32_PAIR["atol"] + drift)


@pytest.mark.parametrize("overflow", [False, True])
def test_loss_scale_in_place_update_equals_the_pure_update(torch_backend, overflow):
    """On the CPU the skip decision is read on the host and a finite step runs the inner optimizer's
    fused in-place kernels: the pure update's params, slots, scale and counter (an overflowing step
    writes nothing)."""
    import torch

    rng = np.random.default_rng(0)
    params = {"w": torch.tensor(rng.normal(size=(5, 3)), dtype=torch.float32),
              "b": torch.tensor(rng.normal(size=(3,)), dtype=torch.float32)}
    grads = {"w": torch.tensor(rng.normal(size=(5, 3)) * 512, dtype=torch.float32),
             "b": torch.tensor([1.0, float("inf") if overflow else 2.0, 3.0])}
    opt = optimizers.LossScaleOptimizer(optimizers.Adam(0.01), initial_scale=512.0, dynamic_growth_steps=1)
    state = opt.init(params)
    pure_params, pure_state = opt.apply_gradients(grads, state, params)
    owned_params = {k: v.clone() for k, v in params.items()}
    owned_state = optree.tree_map(lambda v: v.clone(), state)
    new_params, new_state = opt.apply_gradients_inplace(grads, owned_state, owned_params)
    assert (new_params["w"] is owned_params["w"]) and float(new_state["dynamic_scale"]) == (256.0 if overflow
                                                                                                 else 1024.0)
    for got, want in zip(optree.tree_leaves((new_params, new_state)), optree.tree_leaves((pure_params, pure_state))):
        np.testing.assert_allclose(ops.to_numpy(got), ops.to_numpy(want), **FLOAT32_PAIR)  # one step, two kernels
    if overflow:  # nothing written
        np.testing.assert_array_equal(owned_params["w"].numpy(), params["w"].numpy())
