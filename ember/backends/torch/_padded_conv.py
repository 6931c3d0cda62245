"""A convolution of a zero-padded input that keeps the input, not its padded copy, for the backward pass.

Keras's ``padding="same"`` with an even total padding is the convolution's own symmetric
``padding``; with an odd total (a stride-2 3x3 convolution on an even size: TensorFlow's rule puts the
odd pixel on the right) torch's convolutions cannot pad, so the input is padded first. As plain ops,
autograd keeps that padded copy for the convolution's backward pass beside the input the layer before
already keeps (a ResNet-18 step: 32 MiB). :func:`padded_conv` keeps only the input and pads it again in
the backward pass (one copy, the cost of the forward's pad). Gradients of gradients work: the backward
is made of differentiable ops (``F.pad`` and ``convolution_backward``).

Example:
    >>> import torch
    >>> from ember.backends.torch._padded_conv import padded_conv
    >>> x = torch.ones(1, 1, 4, 4, requires_grad=True)
    >>> y = padded_conv(x, torch.ones(1, 1, 3, 3), [0, 1, 0, 1], (2, 2), (1, 1), 1)
    >>> y.detach().reshape(-1).tolist()
    [9.0, 6.0, 6.0, 4.0]
    >>> y.sum().backward(); x.grad.reshape(-1).tolist()[:4]
    [1.0, 1.0, 2.0, 1.0]
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


class _PaddedConv(torch.autograd.Function):
    """``conv(F.pad(x, fpad), w)`` saving ``x`` and ``w`` only (see the module docstring)."""

    @staticmethod
    def forward(x: torch.Tensor, w: torch.Tensor, fpad: list[int], stride: tuple, dilation: tuple,
                groups: int) -> torch.Tensor:
        return _CONV[x.ndim - 2](F.pad(x, fpad), w, None, stride, 0, dilation, groups)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
        x, w, fpad, stride, dilation, groups = inputs
        ctx.save_for_backward(x, w)
        ctx.geometry = (fpad, stride, dilation, groups)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        x, w = ctx.saved_tensors
        fpad, stride, dilation, groups = ctx.geometry
        nd = x.ndim - 2
        want_x, want_w = ctx.needs_input_grad[:2]
        grad_padded, grad_w, _ = torch.ops.aten.convolution_backward(
            grad, F.pad(x, fpad), w, None, list(stride), [0] * nd, list(dilation), False, [0] * nd, groups,
            [want_x, want_w, False])
        grad_x = F.pad(grad_padded, [-width for width in fpad]) if want_x else None  # the padding's cells cropped
        return grad_x, grad_w, None, None, None, None


def padded_conv(x: torch.Tensor, w: torch.Tensor, fpad: list[int], stride: tuple, dilation: tuple,
                groups: int) -> torch.Tensor:
    """The convolution of ``x`` (channels first) zero-padded by ``fpad`` (``F.pad``'s order) with the
    torch weight ``w``, no padding of its own; autograd keeps ``x``, not the padded copy."""
    return _PaddedConv.apply(x, w, fpad, stride, dilation, groups)
