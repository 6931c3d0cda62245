"""torch's convolution of an input padded by Keras's "same" rule with the odd pixel on the right
(``ember.backends.torch._padded_conv``): the values and gradients, first and second order, of plain
``F.pad`` then ``F.conv*d`` under torch autograd in float64, also under ``torch.func.grad`` and
``torch.compile``; and autograd keeps the input, not its padded copy."""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

import ember
from ember import ops
from tests.tolerances import FLOAT64

os.environ.setdefault("KERAS_BACKEND", "torch")  # Keras 3 is the reference for ops.conv
torch = pytest.importorskip("torch")  # a core-only install skips the file
F = torch.nn.functional
padded_conv = importlib.import_module("ember.backends.torch._padded_conv").padded_conv

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}

# (input shape (N, C, *spatial), weight shape (out, C / groups, *k), F.pad widths, stride, dilation, groups)
CASES = [
    ((2, 3, 8), (4, 3, 3), [0, 1], (2,), (1,), 1),
    ((2, 4, 8, 6), (6, 2, 3, 3), [0, 1, 0, 1], (2, 2), (1, 1), 2),
    ((1, 2, 7, 8), (3, 2, 2, 4), [1, 2, 0, 1], (1, 2), (1, 1), 1),
    ((1, 2, 9, 9), (2, 2, 3, 3), [1, 2, 1, 2], (2, 2), (2, 2), 1),
    ((1, 2, 6, 6, 6), (2, 2, 3, 3, 3), [0, 1, 0, 1, 0, 1], (2, 2, 2), (1, 1, 1), 1),
]


def _operands(x_shape, w_shape):
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.normal(size=x_shape), requires_grad=True)
    w = torch.tensor(rng.normal(size=w_shape), requires_grad=True)
    return x, w


def _reference(x, w, fpad, stride, dilation, groups):
    return _CONV[x.ndim - 2](F.pad(x, fpad), w, None, stride, 0, dilation, groups)


@pytest.mark.parametrize(("x_shape", "w_shape", "fpad", "stride", "dilation", "groups"), CASES)
def test_values_and_gradients_of_both_orders_are_plain_autograd_s(x_shape, w_shape, fpad, stride, dilation, groups):
    results = []
    for conv in (padded_conv, _reference):
        x, w = _operands(x_shape, w_shape)
        y = conv(x, w, fpad, stride, dilation, groups)
        cotangent = torch.linspace(-1.0, 1.0, y.numel(), dtype=torch.float64).reshape(y.shape)
        gx, gw = torch.autograd.grad(y, (x, w), cotangent, create_graph=True)
        # a second-order term: the gradient of a function of the first-order gradients
        hx, hw = torch.autograd.grad((gx ** 2).sum() + (gw ** 3).sum(), (x, w))
        results.append([t.detach().numpy() for t in (y, gx, gw, hx, hw)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, **FLOAT64)


def test_under_func_grad_and_compile_as_plain_autograd():
    """The compiled train step differentiates with ``torch.func.grad`` inside ``torch.compile``."""
    x_shape, w_shape, fpad, stride, dilation, groups = CASES[1]
    x, w = _operands(x_shape, w_shape)

    def loss(conv):
        return lambda weight: (conv(x.detach(), weight, fpad, stride, dilation, groups) ** 2).sum()

    want = torch.func.grad(loss(_reference))(w.detach())
    np.testing.assert_allclose(torch.func.grad(loss(padded_conv))(w.detach()).numpy(), want.numpy(), **FLOAT64)
    compiled = torch.compile(torch.func.grad(loss(padded_conv)), backend="eager", fullgraph=True)
    np.testing.assert_allclose(compiled(w.detach()).numpy(), want.numpy(), **FLOAT64)


def _saved_elements(run):
    """The elements of every tensor autograd keeps for the backward pass while ``run`` builds the graph."""
    saved = []

    def pack(tensor):
        saved.append(tensor.numel())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        run()
    return sum(saved)


def test_autograd_keeps_the_input_not_its_padded_copy(torch_backend):
    """A stride-2 3x3 "same" convolution of an even-sized channels-last input (ResNet's downsampling) keeps
    the input and the kernel only; plain ``F.pad`` then the convolution keeps the padded copy instead."""
    images = torch.randn(2, 8, 8, 3, requires_grad=True)     # Keras layout (batch, rows, cols, channels)
    kernel = torch.randn(3, 3, 3, 4, requires_grad=True)     # (*k, in, out)
    ours = _saved_elements(lambda: ops.conv(images, kernel, strides=2, padding="same"))
    assert ours == images.numel() + kernel.numel()
    x = images.permute(0, 3, 1, 2)
    plain = _saved_elements(lambda: _reference(x, kernel.permute(3, 2, 0, 1), [0, 1, 0, 1], (2, 2), (1, 1), 1))
    assert plain == 2 * 3 * 9 * 9 + kernel.numel()  # the padded (9, 9) copy


def test_ops_conv_same_with_the_odd_pixel_right_is_keras_s(torch_backend):
    """``ops.conv`` through the padded convolution gives Keras 3's ``ops.conv`` (torch backend) and its
    gradients, in float64."""
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(1)
    images, kernel = rng.normal(size=(2, 8, 8, 3)), rng.normal(size=(3, 3, 3, 4))
    ours = [torch.tensor(a, requires_grad=True) for a in (images, kernel)]
    theirs = [keras.ops.convert_to_tensor(a, dtype="float64").requires_grad_() for a in (images, kernel)]
    y = ops.conv(ours[0], ours[1], strides=2, padding="same")
    want = keras.ops.conv(theirs[0], theirs[1], strides=2, padding="same")
    np.testing.assert_allclose(ember.ops.to_numpy(y), keras.ops.convert_to_numpy(want), **FLOAT64)
    y.sum().backward()
    want.sum().backward()
    for got, reference in zip(ours, theirs):
        np.testing.assert_allclose(got.grad.numpy(), keras.ops.convert_to_numpy(reference.grad), **FLOAT64)
