"""``compile(cuda_graphs=True)``: where it cannot run it says so (device, backend, alternative) and changes nothing.

Capturing and replaying a real graph needs a CUDA device: ``tests/test_cuda.py`` compares the graphed
step with the eager step there. Here, on the CPU: the errors, the pure pieces of
:mod:`ember.backends.torch.cuda_graphs`, and its bookkeeping (static tensors, copies in and out,
warm-up, capture, eager steps for other shapes, a new capture for a new fit) with a stand-in runtime
whose "graph" runs the recorded step again on replay.
"""

from __future__ import annotations

import importlib

import numpy as np
import optree
import pytest

import ember
from ember import layers
from ember.training.trainer import check_cuda_graphs

torch = pytest.importorskip("torch")  # torch's own feature: a core-only install skips the file
cuda_graphs = importlib.import_module("ember.backends.torch.cuda_graphs")  # imports torch: after the skip


def _model(*extra):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(4), *extra, layers.Dense(2)])
    model.build(seed=0)
    return model


def test_cuda_graphs_off_a_cuda_device_raises_naming_the_device_and_the_alternative(backend, torch_on_cpu):
    model = _model()
    model.compile(optimizer="sgd", loss="mse")
    trainer = model._training.trainer
    expected = "the model is on 'cpu'" if backend == "torch" else f"the active backend is {backend!r}"
    with pytest.raises(NotImplementedError, match=rf"cuda_graphs=True.*{expected}.*cuda_graphs=False"):
        model.compile(optimizer="adam", loss="mae", cuda_graphs=True)
    assert model._training.trainer is trainer  # the earlier compile stands
    with pytest.raises(NotImplementedError, match="cuda_graphs=True"):
        ember.Trainer(model, optimizer="sgd", loss="mse", cuda_graphs=True)


def test_cuda_graphs_must_be_a_bool(backend):
    model = _model()
    with pytest.raises(TypeError, match=r"cuda_graphs must be a bool, received 'yes'"):
        model.compile(optimizer="sgd", loss="mse", cuda_graphs="yes")
    assert not model.compiled


def test_the_check_names_each_unsupported_combination():
    check_cuda_graphs("torch", "cuda:1")  # supported: nothing raised
    with pytest.raises(NotImplementedError, match=r"the active backend is 'mlx' \(MLX compiles its step"):
        check_cuda_graphs("mlx", "gpu")
    with pytest.raises(NotImplementedError, match=r"the model is on 'mps'"):
        check_cuda_graphs("torch", "mps")
    with pytest.raises(NotImplementedError, match="ember.distribute"):
        check_cuda_graphs("torch", "cuda:0", distributed=True)
    with pytest.raises(NotImplementedError, match="LossScaleOptimizer.*mixed_bfloat16"):
        check_cuda_graphs("torch", "cuda:0", loss_scaled=True)


@pytest.mark.parametrize(("extra", "random"), [((), False), ((layers.BatchNormalization(),), False),
                                               ((layers.Dropout(0.5),), True), ((layers.GaussianNoise(0.1),), True)])
def test_random_layers_in_training_are_detected(torch_backend, extra, random):
    model = _model(*extra)
    model.compile(optimizer="sgd", loss="mse")
    trainer = model._training.trainer
    state = trainer.init_state(seed=0)
    x = torch.as_tensor(np.random.default_rng(0).normal(size=(8, 3)).astype("float32"))
    assert cuda_graphs.draws_randomness(trainer.core, state, (x, None, None)) is random


def test_static_tensors_never_share_memory():
    a = torch.zeros(3)
    b = torch.ones(2, 2).t()  # not contiguous
    owned = cuda_graphs._own_storage([a, a, b, 5, None])
    assert owned[0] is a and owned[1] is not a and torch.equal(owned[1], a)
    assert owned[2] is not b and owned[2].is_contiguous() and torch.equal(owned[2], b)
    assert owned[3:] == [5, None]
    weight = torch.zeros(2, requires_grad=True)
    assert cuda_graphs._own_storage([weight, weight])[1].requires_grad


class ReplayingRuntime:
    """Stands in for CUDA: ``record`` keeps the function and ``replay`` runs it again on the static
    tensors, which is what a graph replay does; warm-ups and captures are counted."""

    def __init__(self):
        self.warmups = 0
        self.captures = 0

    def stream(self):
        return "side stream"

    def run_on(self, stream, fn):
        self.warmups += 1
        fn()

    def record(self, stream, fn):
        self.captures += 1

        class Graph:
            @staticmethod
            def replay():
                fn()

        return Graph()


def _graphed(model, runtime):
    """Install the graphed fit step on the CPU (compile refuses cuda_graphs=True off CUDA)."""
    graphed = cuda_graphs.install(model._training.trainer.steps)
    graphed.runtime = runtime
    return graphed


def _classifier(optimizer, *extra):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(8, activation="tanh"), *extra, layers.Dense(3)])
    model.build(seed=0)
    model.compile(optimizer=optimizer, loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], seed=0)
    return model


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_the_graphed_step_trains_as_the_eager_step(torch_backend, optimizer):
    """Warm-up, capture, replays with new batches, an epoch's smaller last batch (eager on the static
    tensors), a learning rate set by a callback and metrics reset each epoch (copied in), and a second
    fit (new static tensors: the state the first fit published is left as it was)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(44, 3)).astype("float32")  # 5 batches of 8, one of 4
    y = (np.arange(44) % 3).astype("int64")

    def train(runtime=None):
        model = _classifier(optimizer)
        if runtime is not None:
            _graphed(model, runtime)
        schedule = ember.callbacks.LearningRateScheduler(lambda epoch, lr: 0.05 / (epoch + 1))
        first = model.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[schedule]).history
        published = model.state
        snapshot = [leaf.detach().cpu().numpy().copy() for leaf in optree.tree_leaves(published)]
        second = model.fit(x, y, batch_size=8, epochs=1, verbose=0).history
        after = [leaf.detach().cpu().numpy().copy() for leaf in optree.tree_leaves(published)]
        return [np.asarray(w) for w in model.get_weights()], first, second, snapshot, after

    eager = train()
    runtime = ReplayingRuntime()
    graphed = train(runtime)
    # exact: a replay runs the step's own function again, on the same values copied into the static tensors
    for a, b in zip(graphed[0], eager[0]):
        np.testing.assert_array_equal(a, b)
    for key in ("loss", "accuracy"):
        np.testing.assert_array_equal(graphed[1][key], eager[1][key])
        np.testing.assert_array_equal(graphed[2][key], eager[2][key])
    for a, b in zip(graphed[3], graphed[4]):
        np.testing.assert_array_equal(a, b)  # the second fit did not write the first fit's published state
    # First fit: 3 warm-up steps, then one capture; second fit: new tensors, 1 warm-up, a new capture.
    assert (runtime.warmups, runtime.captures) == (cuda_graphs.WARMUP_STEPS + 1, 2)


def test_the_graphed_step_refuses_random_layers_before_any_step(torch_backend):
    model = _classifier("sgd", layers.Dropout(0.5))
    _graphed(model, ReplayingRuntime())
    before = [np.asarray(w) for w in model.get_weights()]
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
    with pytest.raises(NotImplementedError, match="random numbers in training.*cuda_graphs=False"):
        model.fit(x, np.zeros(16, "int64"), batch_size=8, epochs=1, verbose=0)
    for a, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(np.asarray(a), b)


def test_the_graphed_step_lets_go_of_the_weights_when_fit_ends(torch_backend):
    """Between fits the model handle alone holds the weights (the next fit may adopt them, no copy)."""
    model = _classifier("sgd")
    graphed = _graphed(model, ReplayingRuntime())
    x = np.random.default_rng(0).normal(size=(40, 3)).astype("float32")
    model.fit(x, np.zeros(40, "int64"), batch_size=8, epochs=1, verbose=0)
    assert graphed.graph is None and graphed._static == [] and graphed._static_batch == []
