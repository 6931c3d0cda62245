"""The per-backend step builders' fused pieces give the numbers of the generic (op-by-op) path."""

from __future__ import annotations

import numpy as np
import optree
import pytest

import ember
from ember import layers, ops, optimizers
from tests.helpers import WeaklyRecorded
from tests.tolerances import FLOAT32_PAIR
from tests.training.step_paths import force_copy_path


def _logits_labels(n=16, c=5, dtype=np.float32):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, c)).astype(dtype) * 3, rng.integers(0, c, size=n)


def test_numpy_fused_sparse_crossentropy_equals_the_loss_and_its_tape_gradient():
    from ember.backends.numpy.training import sparse_crossentropy_from_logits

    logits, labels = _logits_labels()
    loss_fn = ember.losses.SparseCategoricalCrossentropy(from_logits=True)
    value, grad = ember.value_and_grad(lambda z: loss_fn(labels, z))(ops.convert_to_tensor(logits))
    fused_value, fused_grad = sparse_crossentropy_from_logits(labels.reshape(-1, 1), logits)
    np.testing.assert_allclose(fused_value, ops.to_numpy(value), **FLOAT32_PAIR)
    # each gradient element is (softmax - onehot) / 16: (|z - lse| + 3) u <= 25 u = 1.5e-6 relative per side, and
    # u / 16 = 4e-9 absolute where 1 - softmax cancels: rtol 1e-5, atol 1e-7
    np.testing.assert_allclose(fused_grad, ops.to_numpy(grad), rtol=1e-5, atol=1e-7)
    assert sparse_crossentropy_from_logits(labels.astype(np.float32), logits) is None  # generic path decides
    with pytest.raises(ValueError, match=r"class indices must be in \[0, 5\)"):
        sparse_crossentropy_from_logits(np.array([0, 7] * 8), logits)


# Logits (16, 5) as rows, or as (4 sequences, 4 positions, 5 classes); labels per row, or with a trailing 1.
FUSED_CASES = [((16, 5), (16,)), ((16, 5), (16, 1)), ((4, 4, 5), (4, 4)), ((4, 4, 5), (4, 4, 1))]


@pytest.mark.parametrize(("logits_shape", "labels_shape"), FUSED_CASES)
def test_torch_fused_loss_equals_the_generic_loss(torch_backend, monkeypatch, logits_shape, labels_shape):
    import torch

    from ember.backends.torch import training as torch_training
    from ember.backends.torch.training import _FusedLoss
    from ember.training.compile_utils import CompileLoss
    from ember.training.steps import fusable_sparse_crossentropy

    logits, labels = _logits_labels()
    logits, labels = logits.reshape(logits_shape), labels.reshape(labels_shape)
    generic = CompileLoss(ember.losses.SparseCategoricalCrossentropy(from_logits=True), None, ["out"])
    fused = _FusedLoss(generic, fusable_sparse_crossentropy(generic))
    assert fused.fused
    kernel_calls = []
    cross_entropy = torch_training.F.cross_entropy
    monkeypatch.setattr(torch_training.F, "cross_entropy",
                        lambda *args, **kwargs: kernel_calls.append(1) or cross_entropy(*args, **kwargs))
    results = []
    for fn in (fused, generic):
        z = torch.tensor(logits, requires_grad=True)
        value, _ = fn([torch.tensor(labels)], [z], [None])
        (grad,) = torch.autograd.grad(value, [z])
        results.append((float(value.detach()), grad.numpy()))
    assert kernel_calls == [1]  # the fused call went through the kernel, the generic one did not
    np.testing.assert_allclose(results[0][0], results[1][0], **FLOAT32_PAIR)
    # as in the NumPy test above: (softmax - onehot) / 16 element by element
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-7)
    assert not fusable_sparse_crossentropy(CompileLoss("sparse_categorical_crossentropy", None, ["out"]))  # probs


def test_torch_fused_loss_leaves_labels_of_another_shape_to_the_generic_loss(torch_backend):
    """Labels that do not name one class per row of the logits get the generic loss's own answer."""
    import torch

    from ember.backends.torch.training import _FusedLoss
    from ember.training.compile_utils import CompileLoss
    from ember.training.steps import fusable_sparse_crossentropy

    logits, labels = _logits_labels()
    generic = CompileLoss(ember.losses.SparseCategoricalCrossentropy(from_logits=True), None, ["out"])
    fused = _FusedLoss(generic, fusable_sparse_crossentropy(generic))
    z = torch.tensor(logits.reshape(4, 4, 5))
    for fn in (fused, generic):
        with pytest.raises(ValueError):
            fn([torch.tensor(labels)], [z], [None])


@pytest.mark.parametrize(("logits_shape", "labels_shape"), FUSED_CASES)
def test_mlx_fused_loss_equals_the_generic_loss(logits_shape, labels_shape):
    """MLX's sparse cross-entropy from logits as ``mean(logsumexp - picked logit)``: the generic loss's
    value and gradient; anything it does not take (float labels, sample weights) goes to the generic one."""
    mx = pytest.importorskip("mlx.core")
    from ember.backends.mlx.training import _FusedLoss
    from ember.training.compile_utils import CompileLoss
    from ember.training.steps import fusable_sparse_crossentropy

    with ember.using_backend("mlx"):
        logits, labels = _logits_labels()
        logits = logits.reshape(logits_shape)
        generic = CompileLoss(ember.losses.SparseCategoricalCrossentropy(from_logits=True), None, ["out"])
        fused = _FusedLoss(generic, fusable_sparse_crossentropy(generic))
        assert fused.fused
        y = mx.array(labels.reshape(labels_shape))
        results = []
        for fn in (fused, generic):
            value, grad = mx.value_and_grad(lambda z, fn=fn: fn([y], [z], [None])[0])(mx.array(logits))
            results.append((float(value), np.array(grad)))
        np.testing.assert_allclose(results[0][0], results[1][0], **FLOAT32_PAIR)
        # as in the NumPy test above: (softmax - onehot) / 16 element by element
        np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-7)
        # A label out of range (the loops raise before the step) is clamped for the gather: a value
        # from inside the row, never memory outside it.
        bad = np.array(labels.reshape(labels_shape))
        bad.reshape(-1)[:2] = [7, -3]
        clamped = np.clip(bad, 0, 4)
        z = mx.array(logits)
        # exact: the same gather of the same (clamped) indices
        assert float(fused([mx.array(bad)], [z], [None])[0]) == float(fused([mx.array(clamped)], [z], [None])[0])
        weights = mx.array(np.linspace(0.5, 1.5, 16, dtype=np.float32).reshape(logits_shape[:-1]))
        for args in (([mx.array(labels.reshape(labels_shape).astype(np.float32))], [None]), ([y], [weights])):
            z = mx.array(logits)
            # exact: the fused loss hands these to the generic one
            assert float(fused(args[0], [z], args[1])[0]) == float(generic(args[0], [z], args[1])[0])


@pytest.mark.parametrize("shape", [(16, 3), (4, 5, 2)])
@pytest.mark.parametrize("loss", ["mse", "mean_squared_error", ember.losses.MeanSquaredError()], ids=repr)
def test_torch_fused_mean_squared_error_equals_the_generic_loss(torch_backend, loss, shape):
    """``F.mse_loss`` (one kernel) gives the generic loss's value and gradient; int targets are cast."""
    import torch

    from ember.backends.torch.training import _FusedLoss
    from ember.training.compile_utils import CompileLoss
    from ember.training.steps import fusable_mean_squared_error

    rng = np.random.default_rng(1)
    pred, target = rng.normal(size=shape).astype(np.float32), rng.integers(-2, 3, size=shape)
    generic = CompileLoss(loss, None, ["out"])
    fused = _FusedLoss(generic, False, fusable_mean_squared_error(generic))
    assert fused.fused_mse
    results = []
    for fn in (fused, generic):
        z = torch.tensor(pred, requires_grad=True)
        value, per_output = fn([torch.tensor(target)], [z], [None])
        (grad,) = torch.autograd.grad(value, [z])
        results.append((float(value.detach()), float(per_output[0].detach()), grad.numpy()))
    np.testing.assert_allclose(results[0][:2], results[1][:2], **FLOAT32_PAIR)
    # each element 2 (pred - target) / n: a correctly rounded difference and a scaling, 3 u relative per side
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-5, atol=1e-8)


def test_only_plain_mean_squared_error_is_fused():
    from ember.training.compile_utils import CompileLoss
    from ember.training.steps import fusable_mean_squared_error

    class Scaled(ember.losses.MeanSquaredError):
        pass

    for loss in (ember.losses.MeanSquaredError(reduction="sum"), Scaled(), "mae", ember.losses.Huber()):
        assert not fusable_mean_squared_error(CompileLoss(loss, None, ["out"])), loss
    assert not fusable_mean_squared_error(CompileLoss(["mse", "mse"], None, ["a", "b"]))


def test_fused_loss_takes_the_generic_path_for_other_inputs(backend):
    """Sample weights (and regularizers) go through the generic losses, with the same results."""
    model = ember.Sequential([ember.Input((4,)), layers.Dense(3, name="d")])
    model.build(seed=0)
    x = np.random.default_rng(1).normal(size=(8, 4)).astype(np.float32)
    y = np.arange(8) % 3
    weights = np.linspace(0.5, 1.5, 8).astype(np.float32)
    kernels = []
    for loss in (ember.losses.SparseCategoricalCrossentropy(from_logits=True),
                 ember.losses.LossFunctionWrapper(ember.losses.sparse_categorical_crossentropy, from_logits=True)):
        trainer = ember.Trainer(model, optimizer=optimizers.SGD(0.5), loss=loss)
        state = trainer.init_state()
        for batch in ((x, y), (x, y, weights)):
            state, _ = trainer.train_step(state, batch)
        kernels.append(ops.to_numpy(state["model"]["params"]["d"]["kernel"]))
    # two SGD steps move the kernel by 0.5 times gradients that agree within FLOAT32_PAIR (|0.5 g| <= |kernel|)
    np.testing.assert_allclose(kernels[0], kernels[1], **FLOAT32_PAIR)


@pytest.mark.parametrize("make", [
    lambda: optimizers.SGD(0.1),
    lambda: optimizers.SGD(0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    lambda: optimizers.SGD(0.1, momentum=0.5),
    lambda: optimizers.Adam(0.01),
    lambda: optimizers.Adam(0.01, amsgrad=True),
    lambda: optimizers.AdamW(0.01, weight_decay=0.1),
    lambda: optimizers.Adam(optimizers.schedules.ExponentialDecay(0.01, 2, 0.5)),
], ids=["sgd", "sgd_nesterov_wd", "sgd_momentum", "adam", "adam_amsgrad", "adamw", "adam_schedule"])
def test_numpy_copy_path_update_equals_the_pure_optimizer(make):
    """The fused update on copies (fit's copy path, and train_step's) leaves its input intact and gives the
    pure optimizer's numbers."""
    from ember.backends.numpy import training

    rng = np.random.default_rng(0)
    params = {"a": {"kernel": rng.normal(size=(3, 4)).astype(np.float32), "bias": np.zeros(4, np.float32)}}
    opt = make()
    if isinstance(opt, optimizers.AdamW):
        opt.exclude_from_weight_decay(var_names=["bias"])
    model = ember.Sequential([ember.Input((3,)), layers.Dense(4, name="a")])
    model.build(seed=0)
    steps = ember.Trainer(model, optimizer=opt, loss="mse").steps
    assert isinstance(steps, training.NumpySteps)
    pure_params, pure_state = params, opt.init(params)
    own, own_state = optree.tree_map(np.copy, (params, opt.init(params)))
    steps.core.prepare_mask(own)
    for _ in range(5):
        grads = optree.tree_map(lambda p: rng.normal(size=p.shape).astype(np.float32), params)
        pure_params, pure_state = opt.apply_gradients(grads, pure_state, pure_params)
        before = optree.tree_map(np.copy, (own, own_state))
        new, new_state = steps._updated_copy(own, own_state, grads, optree.tree_structure(own))
        for got, want in zip(optree.tree_leaves((own, own_state)), optree.tree_leaves(before)):
            np.testing.assert_array_equal(got, want)  # the given arrays are only read
        own, own_state = new, new_state
    # The same gradients, 5 steps a side of ~4 roundings: slots sum <= 5 terms (|terms| summing to <= 1.2 for
    # |g| <= 3; v has no cancellation): 2 sides * 20 u * 1.2 = 3e-6 absolute, 20 u relative (within FLOAT32_PAIR's
    # rtol); the parameters also round once a step, and Adam's alpha (host float64 against float32, both by expm1)
    # differs by a few u of an update <= 3 lr: 1e-8.
    tol = {"rtol": FLOAT32_PAIR["rtol"], "atol": 3e-6}
    for got, want in zip(optree.tree_leaves(own), optree.tree_leaves(pure_params)):
        np.testing.assert_allclose(got, want, **tol)
    for name in opt.slot_initializers():
        for got, want in zip(optree.tree_leaves(own_state[name]), optree.tree_leaves(pure_state[name])):
            np.testing.assert_allclose(got, want, **tol)


def test_numpy_clipping_optimizers_take_the_pure_path():
    from ember.backends.numpy import optim

    leaves = [np.zeros(2, np.float32)]
    assert optim.in_place_slots(optimizers.Adam(clipnorm=1.0), leaves) is None
    assert optim.in_place_slots(optimizers.RMSprop(), leaves) is None
    assert optim.in_place_slots(optimizers.SGD(), [np.zeros(2, np.float16)]) is None


class _ParamArrays(ember.callbacks.Callback):
    """The ``id()`` of every param and optimizer-slot array after each step (ids only: holding the
    arrays would make fit copy them; the out-of-place path makes a new step counter each step)."""

    def __init__(self):
        super().__init__()
        self.ids = []

    def on_train_batch_end(self, batch, logs=None):
        live = self.model._training.live_state.state
        slots = {k: v for k, v in live["optimizer"].items() if k not in ("iterations", "learning_rate")}
        self.ids.append(tuple(id(a) for a in optree.tree_leaves((live["model"]["params"], slots))))


@pytest.mark.parametrize("make", [lambda: optimizers.Adam(0.01, amsgrad=True),
                                  lambda: optimizers.AdamW(0.01, weight_decay=0.1),
                                  lambda: optimizers.SGD(0.1),
                                  lambda: optimizers.SGD(0.1, momentum=0.9, nesterov=True, weight_decay=0.01)],
                         ids=["adam_amsgrad", "adamw", "sgd", "sgd_nesterov_wd"])
def test_numpy_fit_in_place_update_equals_the_copy_path(make, monkeypatch):
    """NumPy's fit writes SGD/Adam/AdamW updates in place under held signals, into one set of arrays
    (no second copy of params and slots); sent down the copy path (new arrays each step) it gives the
    same weights and optimizer state bit for bit."""
    from ember.backends.numpy import training

    written = []
    write = training.NumpySteps._write_in_place
    monkeypatch.setattr(training.NumpySteps, "_write_in_place", lambda self, *a: written.append(1) or write(self, *a))
    results, steps, routed = [], 6, []
    for in_place in (True, False):
        if not in_place:
            routed = force_copy_path(monkeypatch, "numpy")
        model = ember.Sequential([ember.Input((4,)), layers.Dense(5, name="d"), layers.Dense(3, name="out")])
        model.build(seed=0)
        model.compile(optimizer=make(), loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True))
        x = np.random.default_rng(2).normal(size=(24, 4)).astype(np.float32)
        arrays = _ParamArrays()
        model.fit(x, np.arange(24) % 3, batch_size=8, epochs=2, verbose=0, shuffle=False, callbacks=[arrays])
        results.append([np.array(leaf) for leaf in optree.tree_leaves((model.state, model._training.opt_state))])
        assert len(written) == steps  # only the in-place run writes into its state
        if in_place:
            assert len(set(arrays.ids)) == 1  # one set of arrays
        else:  # new arrays every step (made while the last step's are alive, so their ids differ)
            assert len(routed) == steps and all(a != b for a, b in zip(arrays.ids, arrays.ids[1:]))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, want)


def test_numpy_fit_takes_the_copy_path_for_constraints(monkeypatch):
    """A constrained model's step (like other optimizers') writes new arrays, never its state's."""
    from ember.backends.numpy import training

    monkeypatch.setattr(training.NumpySteps, "_write_in_place", lambda *a: pytest.fail("written in place"))
    model = ember.Sequential([ember.Input((4,)), layers.Dense(3, kernel_constraint="non_neg", name="d")])
    model.build(seed=0)
    model.compile(optimizer=optimizers.Adam(0.1), loss="mse")
    model.fit(np.ones((8, 4), np.float32), np.ones((8, 3), np.float32), batch_size=4, epochs=1, verbose=0)
    assert ops.to_numpy(model.state["params"]["d"]["kernel"]).min() >= 0.0


@pytest.mark.parametrize("make", [lambda: optimizers.Adam(0.01, amsgrad=True),
                                  lambda: optimizers.AdamW(0.01, weight_decay=0.1),
                                  lambda: optimizers.SGD(0.1, momentum=0.9, nesterov=True)],
                         ids=["adam_amsgrad", "adamw", "sgd_nesterov"])
def test_torch_fit_in_place_update_equals_the_copy_path(torch_backend, make, monkeypatch, torch_on_cpu):
    """torch's fit updates in place under held signals; sent down the copy path (new tensors each step)
    it gives the same weights bit for bit."""
    results, routed = [], []
    for in_place in (True, False):
        if not in_place:
            routed = force_copy_path(monkeypatch, "torch")
        model = ember.Sequential([ember.Input((4,)), layers.Dense(5, name="d"), layers.Dense(3, name="out")])
        model.build(seed=0)
        model.compile(optimizer=make(), loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True))
        x = np.random.default_rng(2).normal(size=(24, 4)).astype(np.float32)
        model.fit(x, np.arange(24) % 3, batch_size=8, epochs=2, verbose=0, shuffle=False)
        results.append([ops.to_numpy(leaf) for leaf in optree.tree_leaves(model.state)])
    assert len(routed) == 6
    for got, want in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, want)


def test_torch_step_counter_reads_the_device_counter_once_per_change(torch_backend, monkeypatch):
    """On an accelerator fit counts Adam's steps on the host (torch's _StepCounter): the device counter
    is read on the first step and again only when something else changed it (simulated on the CPU)."""
    import torch

    from ember.backends.torch import _base
    from ember.backends.torch.training import _StepCounter

    monkeypatch.setattr(_base, "host_reads_free", lambda device: False)
    reads = []
    monkeypatch.setattr(torch.Tensor, "__int__", lambda self: reads.append(1) or int(self.item()))
    counter, iterations = _StepCounter(), torch.tensor(5)

    def take_step():
        step = counter.next(iterations)
        iterations.add_(1)  # the in-place write
        counter._known = (iterations, iterations._version, step)  # as _write_in_place records it
        return step

    assert [take_step() for _ in range(3)] == [6, 7, 8] and len(reads) == 1
    iterations.copy_(torch.tensor(0))  # changed elsewhere, in place: read again
    assert take_step() == 1 and len(reads) == 2
    iterations = torch.tensor(41)  # another counter (a new fit's state): read again
    assert take_step() == 42 and len(reads) == 3
    counter.clear()
    assert counter.next(iterations) == 43 and len(reads) == 4
    monkeypatch.setattr(_base, "host_reads_free", lambda device: True)
    iterations.add_(1)  # the CPU: read every step (no wait), whatever was recorded
    assert counter.next(iterations) == 44 and len(reads) == 5
    assert counter.next(torch.tensor(7)) == 8 and len(reads) == 6


def _adamw_without_bias_decay():
    optimizer = optimizers.AdamW(0.01, weight_decay=0.1)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    return optimizer


@pytest.mark.parametrize("make", [_adamw_without_bias_decay, lambda: optimizers.SGD(0.1, momentum=0.9)],
                         ids=["adamw_excluding_bias", "sgd_momentum"])
def test_torch_fit_plans_from_the_state_it_holds_after_a_callback_replaces_it(torch_backend, make, monkeypatch,
                                                                             torch_on_cpu):
    """fit's in-place update keeps flat views of its state between steps (torch's _UpdateLayout); a
    callback that replaces the weights mid-epoch gives a new state, which the next step plans from:
    the same weights and slots, bit for bit, as the copy path (which keeps no views)."""
    from ember.training.callbacks._monitor import copy_state

    class Rewind(ember.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 0:
                self.snapshot = copy_state(self.model.state)
            if batch == 2:
                self.model.state = copy_state(self.snapshot)

    results, plans = [], []
    plan_in_place = optimizers.Optimizer.plan_in_place
    monkeypatch.setattr(optimizers.Optimizer, "plan_in_place",
                        lambda self, *args, **kwargs: plans.append(1) or plan_in_place(self, *args, **kwargs))
    for held in (True, False):
        if not held:
            force_copy_path(monkeypatch, "torch")
        model = ember.Sequential([ember.Input((4,)), layers.Dense(5, name="d"), layers.Dense(3, name="out")])
        model.build(seed=0)
        model.compile(optimizer=make(), loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True))
        x = np.random.default_rng(2).normal(size=(32, 4)).astype(np.float32)
        model.fit(x, np.arange(32) % 3, batch_size=8, epochs=2, verbose=0, shuffle=False, callbacks=[Rewind()])
        results.append([ops.to_numpy(leaf) for leaf in optree.tree_leaves((model.state, model._training.opt_state))])
        if held:  # checked plans: the first step, and the first after each of the two rewinds
            assert len(plans) == 3
    for got, want in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("make", [lambda: optimizers.Adam(0.01),
                                  lambda: optimizers.AdamW(0.01, weight_decay=0.1, amsgrad=True),
                                  lambda: optimizers.Adam(optimizers.schedules.ExponentialDecay(0.01, 2, 0.5)),
                                  lambda: optimizers.SGD(0.05, momentum=0.9, nesterov=True, weight_decay=0.01)])
def test_torch_accelerator_update_equals_the_cpu_update(torch_backend, make, monkeypatch):
    """fit's in-place update as it runs on a GPU (multi-tensor kernels, device factors, the host step
    counter), forced on the CPU, gives the CPU path's weights within float32 rounding."""
    from ember.backends.torch import _base

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(48, 6)).astype("float32"), rng.integers(0, 3, 48)

    def train():
        model = ember.Sequential([ember.Input((6,)), layers.Dense(8, activation="relu"), layers.Dense(3)])
        model.build(seed=0)
        model.compile(optimizer=make(), loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), seed=0)
        model.fit(x, y, batch_size=16, epochs=2, verbose=0)
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)  # a second fit: the counter is read again
        return [np.asarray(w) for w in model.get_weights()]

    on_cpu = train()
    monkeypatch.setattr(_base, "host_reads_free", lambda device: False)
    # The same CPU kernels compute the gradients; only the update's arithmetic differs (device factors against host
    # ones, bias corrections by expm1 on both): a few u of an update <= 3 lr, 9 steps * 2 sides * 6 u * 0.03 = 2e-8,
    # and the parameters' own rounding each step: FLOAT32_PAIR
    for got, expected in zip(train(), on_cpu):
        np.testing.assert_allclose(got, expected, **FLOAT32_PAIR)


def test_torch_gradients_of_scalar_equal_autograd(torch_backend):
    """The step's direct call into the autograd engine gives ``torch.autograd.grad``'s gradients
    (None for a leaf the loss does not use) and leaves the graph freed, as ``grad`` does."""
    import torch

    from ember.backends.torch.training import gradients_of_scalar

    rng = np.random.default_rng(0)
    w = torch.tensor(rng.normal(size=(4, 3)), requires_grad=True)
    b = torch.tensor(rng.normal(size=(3,)), requires_grad=True)
    unused = torch.zeros(2, requires_grad=True)
    x = torch.tensor(rng.normal(size=(5, 4)))

    def loss():
        return torch.tanh(x @ w + b).pow(2).mean()

    expected = torch.autograd.grad(loss(), [w, b, unused], allow_unused=True)
    value = loss()
    found = gradients_of_scalar(value, [w, b, unused])
    assert found[2] is None and expected[2] is None
    for a, e in zip(found[:2], expected[:2]):
        np.testing.assert_array_equal(a.numpy(), e.numpy())
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        gradients_of_scalar(value, [w])


def test_torch_gradients_of_scalar_leaves_other_losses_to_autograd(torch_backend):
    """A loss the engine call does not take gives ``torch.autograd.grad``'s own result or error."""
    import torch

    from ember.backends.torch.training import gradients_of_scalar

    w = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        gradients_of_scalar(w * 2.0, [w])  # not a scalar
    with pytest.raises(RuntimeError, match="does not require grad"):
        gradients_of_scalar(torch.ones(()), [w])  # not connected to the leaves

    class Traced(torch.Tensor):
        """A tensor subclass: torch's override dispatch must see it."""

    (grad,) = gradients_of_scalar((w * w).sum().as_subclass(Traced), [w])
    np.testing.assert_array_equal(grad.numpy(), [2.0, 2.0, 2.0])


def test_torch_loss_tracker_equals_the_generic_one(torch_backend):
    """Torch's native loss tracker gives the generic ops' totals (a loss of another dtype is cast)."""
    import torch

    from ember.backends.torch.training import _accumulate
    from ember.training.steps import StepCore

    tracker = {"total": torch.tensor(1.5), "count": torch.tensor(8.0)}
    for value in (torch.tensor(0.25), torch.tensor(0.25, dtype=torch.float64)):
        native = _accumulate(StepCore.accumulate, tracker, value, 24.0)
        generic = StepCore.accumulate(tracker, value, 24.0)
        for key in ("total", "count"):
            assert native[key].dtype == torch.float32
            assert float(native[key]) == float(generic[key])
    assert float(tracker["total"]) == 1.5  # not written in place


@pytest.mark.parametrize(("metrics", "held"), [([], False), (["accuracy"], True)])
def test_torch_step_keeps_the_predictions_through_backward_only_for_metrics(torch_backend, monkeypatch, metrics,
                                                                            held):
    """With no metric to read them, the predictions (a language model's logits) are not held while the
    backward pass runs; the fused cross-entropy keeps its own softmax, not the logits."""
    from ember.backends.torch import training as torch_training

    alive = []
    gradients_of_scalar = torch_training.gradients_of_scalar

    def checked(loss, leaves):
        alive.append(WeaklyRecorded.refs[-1]() is not None)
        return gradients_of_scalar(loss, leaves)

    model = ember.Sequential([ember.Input((6,)), layers.Dense(5), WeaklyRecorded()])
    model.build(seed=0)
    model.compile(optimizer=optimizers.SGD(0.1), metrics=metrics,
                  loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True))
    monkeypatch.setattr(torch_training, "gradients_of_scalar", checked)
    monkeypatch.setattr(WeaklyRecorded, "refs", [])
    x = np.random.default_rng(0).normal(size=(8, 6)).astype(np.float32)
    history = model.fit(x, np.arange(8) % 5, batch_size=8, epochs=1, verbose=0)
    assert alive == [held]
    assert ("accuracy" in history.history) is held
