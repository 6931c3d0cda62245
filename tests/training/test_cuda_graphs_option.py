"""``compile(cuda_graphs=True)``: where it cannot run it says so (device, backend, alternative) and changes nothing.

The graphed step itself needs a CUDA device: ``tests/test_cuda.py`` compares it with the eager step
there. Here, on the CPU: the errors, and the pure pieces of :mod:`ember.backends.torch.cuda_graphs`.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember import layers
from ember.backends.torch import cuda_graphs
from ember.training.trainer import check_cuda_graphs


def _model(*extra):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(4), *extra, layers.Dense(2)])
    model.build(seed=0)
    return model


def test_cuda_graphs_off_a_cuda_device_raises_naming_the_device_and_the_alternative(backend):
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
