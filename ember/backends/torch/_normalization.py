"""``nn.layer_norm`` and ``nn.fused_batch_norm`` on torch: ``F.layer_norm`` and ``torch.native_batch_norm``.

Each is one fused kernel and one autograd node, which saves fewer tensors for the backward pass
than the composite (:mod:`ember.ops.extra.normalization`).

* ``layer_norm``: ``F.layer_norm`` normalizes trailing axes; other axes are moved to the end
  first (``movedim``, a view) and back after.
* ``fused_batch_norm``: ``torch.native_batch_norm`` in training mode computes the batch
  statistics and the normalization in one pass pair. Its only way to return the statistics is
  the running-average update, so it gets fresh zero "running" buffers and ``momentum=1.0``:
  the running mean becomes the batch mean exactly, the running variance torch's *unbiased*
  batch variance, scaled by ``(n - 1) / n`` to the biased one Keras (and Ember) uses. Given the
  layer's moving averages, the kernel updates copies of them instead (torch's momentum is one
  minus Keras's), and the variance's average is corrected from torch's unbiased term to
  Keras's biased one (two small kernels, where the layer spent six on the averages). With fewer than
  two values per feature (no unbiased variance) the statistics come from ``torch.var_mean``.
  Channels-last inputs contiguous in memory go to the kernel as ``(N, C)`` rows (a view).

Example:
    >>> import torch
    >>> from ember.backends.torch._normalization import fused_batch_norm
    >>> y, mean, variance = fused_batch_norm(torch.tensor([[0.0, 1.0], [2.0, 5.0]]), epsilon=0.0)
    >>> y.tolist(), mean.tolist(), variance.tolist()
    ([[-1.0, -1.0], [1.0, 1.0]], [1.0, 3.0], [1.0, 4.0])
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ember.backends._normalization_checks import check_batch_norm, check_layer_norm, check_moving
from ember.backends.torch._base import HALF, dtype_name, native


def _param(value, name: str, dtype: torch.dtype) -> torch.Tensor | None:
    if value is None:
        return None
    t = native(value, name)
    return t if t.dtype is dtype else t.to(dtype)


def _shape(t: torch.Tensor | None) -> tuple | None:
    return None if t is None else tuple(t.shape)


def layer_norm(x, gamma=None, beta=None, axis=-1, epsilon=1e-3):
    t = native(x, "x")
    g, b = (None if p is None else native(p, name) for p, name in ((gamma, "gamma"), (beta, "beta")))
    axes = check_layer_norm(tuple(t.shape), axis, _shape(g), _shape(b), epsilon, dtype_name(t.dtype))
    g, b = _param(g, "gamma", t.dtype), _param(b, "beta", t.dtype)
    rank, count = t.ndim, len(axes)
    trailing = tuple(range(rank - count, rank))
    moved = t if axes == trailing else t.movedim(axes, trailing)
    y = F.layer_norm(moved, moved.shape[rank - count:], g, b, float(epsilon))
    return y if axes == trailing else y.movedim(trailing, axes)


def _unfused_batch_norm(t, g, b, feature, epsilon):
    """The statistics by ``torch.var_mean`` (fewer than two values per feature)."""
    reduction = tuple(a for a in range(t.ndim) if a != feature)
    variance, mean = torch.var_mean(t, dim=reduction, correction=0)
    view = [1] * t.ndim
    view[feature] = -1
    inv = torch.rsqrt(variance + epsilon)
    if g is not None:
        inv = inv * g
    offset = -mean * inv
    if b is not None:
        offset = offset + b
    return t * inv.view(view) + offset.view(view), mean.detach(), variance.detach()


def fused_batch_norm(x, gamma=None, beta=None, axis=-1, epsilon=1e-3, moving_mean=None, moving_variance=None,
                     momentum=0.99):
    t = native(x, "x")
    g, b = (None if p is None else native(p, name) for p, name in ((gamma, "gamma"), (beta, "beta")))
    feature = check_batch_norm(tuple(t.shape), axis, _shape(g), _shape(b), epsilon, dtype_name(t.dtype))
    mean_shape = None if moving_mean is None else tuple(native(moving_mean, "moving_mean").shape)
    var_shape = None if moving_variance is None else tuple(native(moving_variance, "moving_variance").shape)
    moving = check_moving(mean_shape, var_shape, momentum, tuple(t.shape), feature)
    if moving:
        old_mean, old_var = native(moving_mean, "moving_mean"), native(moving_variance, "moving_variance")
    out_dtype = t.dtype
    if out_dtype in HALF:  # statistics in float32, as the composite's moments
        t = t.to(torch.float32)
    g, b = _param(g, "gamma", t.dtype), _param(b, "beta", t.dtype)
    channels = t.shape[feature]
    count = t.numel() // channels if channels else 0
    if count < 2:
        y, mean, variance = _unfused_batch_norm(t, g, b, feature, float(epsilon))
        if moving:
            mean, variance = _moving_average(old_mean, mean, momentum), _moving_average(old_var, variance, momentum)
            return (y if out_dtype is t.dtype else y.to(out_dtype)), mean, variance
    else:
        last = feature == t.ndim - 1
        rows = last and t.is_contiguous()
        kernel_input = t.reshape(-1, channels) if rows else t if feature == 1 else t.movedim(feature, 1)
        if moving:  # the kernel updates copies of the moving averages (torch's momentum is 1 - Keras's)
            mean, variance = old_mean.to(t.dtype, copy=True), old_var.to(t.dtype, copy=True)
            weight = 1.0 - float(momentum)
        else:  # the kernel's "running" statistics, from zero with momentum 1: the batch's own
            mean = torch.zeros(channels, dtype=t.dtype, device=t.device)
            variance = torch.zeros(channels, dtype=t.dtype, device=t.device)
            weight = 1.0
        y, _, _ = torch.native_batch_norm(kernel_input, g, b, mean, variance, True, weight, float(epsilon))
        y = y.view(t.shape) if rows else y if feature == 1 else y.movedim(1, feature)
        if moving:
            # torch averages the unbiased batch variance v * n / (n - 1), Keras the biased v: from
            # r = m * old + (1 - m) * v * n / (n - 1), Keras's m * old + (1 - m) * v is
            # (1 - 1 / n) * (r + m / (n - 1) * old), exactly.
            old = old_var if old_var.dtype is t.dtype else old_var.to(t.dtype)
            variance = torch.add(variance, old, alpha=float(momentum) / (count - 1))
            variance.mul_((count - 1) / count)
            if mean.dtype is not old_mean.dtype:  # the kernel ran in float32 for a half-precision average
                mean, variance = mean.to(old_mean.dtype), variance.to(old_var.dtype)
            return (y if out_dtype is t.dtype else y.to(out_dtype)), mean, variance
        variance = variance * ((count - 1) / count)
    if out_dtype is not t.dtype:
        y, mean, variance = y.to(out_dtype), mean.to(out_dtype), variance.to(out_dtype)
    return y, mean, variance


def _moving_average(moving: torch.Tensor, batch: torch.Tensor, momentum: float) -> torch.Tensor:
    """``momentum * moving + (1 - momentum) * batch`` in ``moving``'s dtype (no gradient)."""
    return torch.lerp(batch.detach(), moving.to(batch.dtype), float(momentum)).to(moving.dtype)
