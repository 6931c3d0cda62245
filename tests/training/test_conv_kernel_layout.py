"""torch's fit keeps convolution kernels in the memory order its convolutions read (``TorchSteps.own``).

A Conv2D/Conv3D kernel has Keras's shape ``(*k, in, out)``; stored in that order, torch reordered it in
every forward and backward pass and handed back a weight gradient in another memory order than the
kernel's, so Adam ran on mismatched strides. ``fit`` now stores each declared conv kernel (and the
optimizer slots that mirror it) as torch's channels-last weight: same shape, same values.

References: the NumPy backend's own convolution and Ember's engine train the same float64 model on the
same data (an implementation independent of torch's), and ``torch.Tensor.is_contiguous`` states the
memory order.
"""

from __future__ import annotations

import numpy as np
import optree
import pytest

import ember
from ember import layers

torch = pytest.importorskip("torch")


def _model(rank: int) -> ember.Sequential:
    conv = layers.Conv2D if rank == 2 else layers.Conv3D
    shape = (6, 6, 3) if rank == 2 else (4, 4, 4, 3)
    model = ember.Sequential([ember.Input(shape, dtype="float64"),
                              conv(4, 3, padding="same", activation="relu", dtype="float64"),
                              layers.Flatten(dtype="float64"), layers.Dense(2, dtype="float64")])
    model.build(seed=3)
    return model


def _conv_kernel(model: ember.Sequential):
    """The convolution's kernel (the first layer's params, under its structural state key)."""
    return next(iter(model.state["params"].values()))["kernel"]


def _data(rank: int):
    rng = np.random.default_rng(0)
    shape = (8, 6, 6, 3) if rank == 2 else (8, 4, 4, 4, 3)
    return rng.normal(size=shape), rng.normal(size=(8, 2))


def _fit(backend: str, rank: int):
    with ember.using_backend(backend):
        model = _model(rank)
        model.compile(optimizer=ember.optimizers.Adam(0.01), loss="mse")
        x, y = _data(rank)
        model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        kernel = _conv_kernel(model)
        return kernel, optree.tree_map(lambda a: np.asarray(ember.ops.to_numpy(a)), model.state["params"])


@pytest.mark.parametrize("rank", [2, 3])
def test_fit_stores_conv_kernels_as_torch_channels_last_with_the_same_training(rank):
    kernel, trained = _fit("torch", rank)
    _, reference = _fit("numpy", rank)
    order = (rank + 1, *range(rank), rank)  # (out, *k, in): the (out, in, *k) view is channels-last
    assert tuple(kernel.shape) == (*(3,) * rank, 3, 4)
    assert kernel.permute(order).is_contiguous()
    fmt = torch.channels_last if rank == 2 else torch.channels_last_3d
    assert kernel.permute(rank + 1, rank, *range(rank)).is_contiguous(memory_format=fmt)
    for got, want in zip(optree.tree_leaves(trained), optree.tree_leaves(reference)):
        # float64 on both backends, 4 Adam steps: only the summation order of the convolutions differs
        # (~1e-16 relative per op); 1e-10 is far below any layout error (a transposed kernel is O(1) off).
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_the_optimizer_slots_of_a_conv_kernel_follow_its_layout(torch_backend):
    model = _model(2)
    model.compile(optimizer=ember.optimizers.Adam(0.01), loss="mse")
    x, y = _data(2)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    kernel = _conv_kernel(model)
    slots = [leaf for leaf in optree.tree_leaves(model._training.opt_state)
             if isinstance(leaf, torch.Tensor) and leaf.shape == kernel.shape]
    assert not kernel.is_contiguous()  # stored channels-last, not in Keras's order
    assert len(slots) == 2  # Adam's first and second moments
    for slot in slots:
        assert slot.stride() == kernel.stride()


def test_a_conv1d_kernel_and_dense_kernels_keep_their_layout(torch_backend):
    model = ember.Sequential([ember.Input((8, 3)), layers.Conv1D(4, 3), layers.Flatten(), layers.Dense(2)])
    model.build(seed=0)
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(1)
    model.fit(rng.normal(size=(8, 8, 3)).astype("float32"), rng.normal(size=(8, 2)).astype("float32"),
              epochs=1, verbose=0)
    for leaf in optree.tree_leaves(model.state["params"]):
        assert leaf.is_contiguous()
