"""``ember.ops.nn`` on torch: activations, convolutions and pooling via ``torch.nn.functional``.

Layout conversions (Ember/Keras conventions -> torch's):

* Data: Ember defaults to ``channels_last`` ``(batch, *spatial, channels)``; torch's
  conv/pool kernels take ``(batch, channels, *spatial)``. We ``permute`` in and out.
  The permuted view of a contiguous NHWC tensor has torch's ``channels_last`` memory
  format, which the CPU/CUDA conv kernels consume directly, so for 2-D no copy is made.
* Conv kernel: Keras ``(*kernel_spatial, in_channels // groups, out_channels)`` ->
  torch ``(out_channels, in_channels // groups, *kernel_spatial)``:
  ``permute(nd + 1, nd, 0, ..., nd - 1)``.
* Transposed-conv kernel: Keras ``(*kernel_spatial, out_channels, in_channels)`` ->
  torch ``(in_channels, out_channels, *kernel_spatial)``: the same permutation.
* ``"same"`` padding follows TF/Keras placement: total padding
  ``max((ceil(n / s) - 1) * s + k_eff - n, 0)`` with the odd pixel on the right/bottom.
  torch pads symmetrically, so asymmetric cases are padded explicitly with ``F.pad``.
* ``avg_pool`` with ``"same"`` excludes padded cells from each window's count
  (``count_include_pad=False`` cannot express asymmetric padding): it divides a
  sum-pool of the zero-padded input by a sum-pool of the zero-padded ones-mask.
* ``dense``: ``torch.addmm(bias, x, kernel)`` (``torch.nn.Linear``'s GEMM with the bias folded
  in; inputs of more than two axes are folded into rows first); Keras's ``(features, units)``
  kernel is the ``mat2`` operand as it is, no transpose.
* ``lstm`` (Keras weights -> ``torch.lstm``'s): ``w_ih = kernel.T`` ``(4u, features)``,
  ``w_hh = recurrent_kernel.T`` ``(4u, u)``, ``b_ih = bias``, ``b_hh = 0`` (torch adds two
  biases, Keras has one); the gate order i, f, c, o is torch's i, f, g, o.
* ``gru`` (Keras reset_after=True -> ``torch.gru``'s): the gate blocks z, r, h become
  torch's r, z, n, ``rzn(w) = concat([w[..., u:2u], w[..., :u], w[..., 2u:]])``;
  ``w_ih = rzn(kernel).T``, ``w_hh = rzn(recurrent_kernel).T``, ``b_ih = rzn(bias[0])``,
  ``b_hh = rzn(bias[1])``. torch's ``h = (1 - z) * n + z * h`` is Keras's update.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from ember.backends._common import check_dense_shapes, normalize_axes, normalize_axis
from ember.backends._rnn_checks import check_rnn_dtypes, check_rnn_shapes
from ember.backends.torch._attention import dot_product_attention  # noqa: F401  (the op: F.sdpa)
from ember.backends.torch._base import (
    COMPLEX,
    FLOATING,
    HALF,
    INEXACT,
    Tensor,
    binary_tensors,
    dtype_name,
    floatx,
    native,
    to_float,
)
from ember.backends.torch._elementwise import add, float_unary
from ember.backends.torch._normalization import fused_batch_norm, layer_norm  # noqa: F401  (the ops: fused kernels)
from ember.backends.torch._padded_conv import padded_conv
from ember.backends.torch._products import matmul

# ------------------------------------------------------------------------ activations


def relu(x):
    if type(x) is not Tensor:
        x = native(x)
    if x.dtype is torch.bool:  # max(bool, 0) is int32 by Ember's weak-scalar rule
        x = x.to(torch.int32)
    return torch.relu(x)


def relu6(x):
    if type(x) is not Tensor:
        x = native(x)
    if x.dtype is torch.bool:
        x = x.to(torch.int32)
    return torch.clamp(x, 0, 6)


def leaky_relu(x, negative_slope=0.2):
    return F.leaky_relu(to_float(x), negative_slope)


def elu(x, alpha=1.0):
    return F.elu(to_float(x), alpha)


selu = float_unary(F.selu, "selu")
silu = float_unary(F.silu, "silu")
sigmoid = float_unary(torch.sigmoid, "sigmoid")
hard_sigmoid = float_unary(F.hardsigmoid, "hard_sigmoid")
softsign = float_unary(F.softsign, "softsign")
tanh = float_unary(torch.tanh, "tanh")


def gelu(x, approximate=True):
    return F.gelu(to_float(x), approximate="tanh" if approximate else "none")


def softplus(x):
    x = to_float(x)
    # Above the threshold softplus(x) == x to the dtype's precision (exp(-x) < eps).
    return F.softplus(x, threshold=40.0 if x.dtype is torch.float64 else 20.0)


def lecun_tanh(x):
    return 1.7159 * torch.tanh(0.666 * to_float(x))


def softmax(x, axis=-1):
    x = to_float(x)
    if isinstance(axis, (tuple, list)):
        axes = normalize_axes(axis, x.ndim)
        shifted = x - torch.amax(x, dim=axes, keepdim=True).detach()
        e = torch.exp(shifted)
        return e / torch.sum(e, dim=axes, keepdim=True)
    return torch.softmax(x, dim=normalize_axis(axis, x.ndim) if x.ndim else 0)


def log_softmax(x, axis=-1):
    x = to_float(x)
    if isinstance(axis, (tuple, list)):
        axes = normalize_axes(axis, x.ndim)
        return x - torch.logsumexp(x, dim=axes, keepdim=True)
    return torch.log_softmax(x, dim=normalize_axis(axis, x.ndim) if x.ndim else 0)


# ------------------------------------------------------------------ layout helpers


def _tuple(value, n: int, name: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    values = tuple(int(v) for v in value)
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise ValueError(f"{name}: expected an int or {n} values, received {value!r}")
    return values


def _padding(padding, op: str) -> str:
    mode = padding.lower() if isinstance(padding, str) else padding
    if mode not in ("valid", "same"):
        raise ValueError(f"{op}: padding must be 'valid' or 'same', received {padding!r}")
    return mode


def _channels_first(data_format, op: str) -> bool:
    fmt = data_format.lower() if isinstance(data_format, str) else data_format
    if fmt not in ("channels_last", "channels_first"):
        raise ValueError(f"{op}: data_format must be 'channels_last' or 'channels_first', received {data_format!r}")
    return fmt == "channels_first"


def _to_nc(x: Tensor, nd: int) -> Tensor:
    """(batch, *spatial, channels) -> (batch, channels, *spatial)."""
    return x.permute(0, nd + 1, *range(1, nd + 1))


def _to_nlc(x: Tensor, nd: int) -> Tensor:
    """(batch, channels, *spatial) -> (batch, *spatial, channels)."""
    return x.permute(0, *range(2, nd + 2), 1)


def _rank(x: Tensor, op: str) -> int:
    nd = x.ndim - 2
    if nd not in (1, 2, 3):
        raise ValueError(
            f"{op}: expected a (batch, *spatial, channels) input with 1-3 spatial axes, received shape {tuple(x.shape)}"
        )
    return nd


def _same_pads(sizes, kernel, strides) -> list[tuple[int, int]]:
    """TF "same" padding per spatial axis: (left, right), the odd pixel on the right."""
    pads = []
    for n, k, s in zip(sizes, kernel, strides):
        out = -(-n // s)
        total = max((out - 1) * s + k - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def _fpad(pads) -> list[int]:
    # F.pad lists (left, right) pairs starting from the LAST spatial axis.
    return [w for pair in reversed(pads) for w in pair]


def _compute_dtype(x: Tensor) -> torch.dtype:
    """float32 for half types on the CPU, where some torch kernels lack them."""
    return torch.float32 if x.dtype in HALF and x.device.type == "cpu" else x.dtype


# ----------------------------------------------------------------------- convolution

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _conv_operands(inputs, kernel, op: str):
    x, w = binary_tensors(inputs, kernel)
    if x.dtype not in FLOATING:
        if x.dtype in COMPLEX:
            raise TypeError(f"{op}: complex inputs are not supported")
        x, w = x.to(floatx()), w.to(floatx())
    nd = _rank(x, op)
    if w.ndim != nd + 2:
        raise ValueError(f"{op}: kernel must have rank {nd + 2} for a {nd}-D input, received shape {tuple(w.shape)}")
    return x, w, nd


def conv(inputs, kernel, strides=1, padding="valid", data_format="channels_last", dilation_rate=1):
    x, w, nd = _conv_operands(inputs, kernel, "conv")
    first = _channels_first(data_format, "conv")
    mode = _padding(padding, "conv")
    strides = _tuple(strides, nd, "conv strides")
    dilation = _tuple(dilation_rate, nd, "conv dilation_rate")
    xc = x if first else _to_nc(x, nd)
    in_channels = xc.shape[1]
    per_group = w.shape[-2]
    if per_group == 0 or in_channels % per_group:
        raise ValueError(
            f"conv: input channels ({in_channels}) must be a multiple of the kernel's input "
            f"channels ({per_group}); kernel shape {tuple(w.shape)}"
        )
    groups = in_channels // per_group
    if w.shape[-1] % groups:
        raise ValueError(f"conv: output channels ({w.shape[-1]}) must be divisible by groups ({groups})")
    # Keras kernel (*k, in/groups, out) -> torch weight (out, in/groups, *k).
    wt = w.permute(nd + 1, nd, *range(nd))
    pad_arg: int | tuple[int, ...] = 0
    padded = None
    if mode == "same":
        effective = [(k - 1) * d + 1 for k, d in zip(wt.shape[2:], dilation)]
        pads = _same_pads(xc.shape[2:], effective, strides)
        if all(a == b for a, b in pads):
            pad_arg = tuple(a for a, _ in pads)
        else:  # the odd pixel on the right: padded first, and the padded copy not kept for the backward
            padded = (_fpad(pads), strides, dilation, groups)
    try:
        if padded is not None:
            y = padded_conv(xc, wt, *padded)
        else:
            y = _CONV[nd](xc, wt, None, strides, pad_arg, dilation, groups)
    except RuntimeError as error:
        raise ValueError(f"conv: input {tuple(x.shape)} and kernel {tuple(w.shape)} do not fit ({error})") from None
    return y if first else _to_nlc(y, nd)


def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None, data_format="channels_last",
                   dilation_rate=1):
    x, w, nd = _conv_operands(inputs, kernel, "conv_transpose")
    first = _channels_first(data_format, "conv_transpose")
    mode = _padding(padding, "conv_transpose")
    strides = _tuple(strides, nd, "conv_transpose strides")
    dilation = _tuple(dilation_rate, nd, "conv_transpose dilation_rate")
    extra = None if output_padding is None else _tuple(output_padding, nd, "conv_transpose output_padding")
    xc = x if first else _to_nc(x, nd)
    if w.shape[-1] != xc.shape[1]:
        raise ValueError(
            f"conv_transpose: kernel (*k, out, in) has {w.shape[-1]} input channels but the input has {xc.shape[1]}"
        )
    # Keras kernel (*k, out, in) -> torch conv_transpose weight (in, out, *k).
    wt = w.permute(nd + 1, nd, *range(nd))
    # The full transposed conv (no cropping): length (n - 1) * s + k_eff per axis.
    full = _CONV_T[nd](xc, wt, None, strides, 0, 0, 1, dilation)
    # Crop/extend it to Keras's output (the padding rule of Keras's JAX backend, which
    # matches TF's conv2d_transpose): in that formulation the stride-dilated input is
    # padded by (left, right) and correlated with the flipped kernel; the full result
    # corresponds to left = right = k_eff - 1, so we drop k_eff - 1 - left cells on the
    # left and keep `length` cells (zero-extending on the right when needed).
    pads = []
    for axis_ in range(nd):
        n = xc.shape[2 + axis_]
        s = strides[axis_]
        k_eff = (wt.shape[2 + axis_] - 1) * dilation[axis_] + 1
        op = None if extra is None else extra[axis_]
        if mode == "valid":
            op = max(k_eff, s) - k_eff if op is None else op
            left, right = k_eff - 1, k_eff - 1 + op
        else:
            total = s + k_eff - 2 if op is None else k_eff + k_eff % 2 - 2 + op
            left = min(total // 2 + total % 2, k_eff - 1)
            right = total - left
        length = (n - 1) * s + 1 + left + right - k_eff + 1
        crop = k_eff - 1 - left
        full_length = full.shape[2 + axis_]
        pads.append((-crop, length - (full_length - crop)))
    y = F.pad(full, _fpad(pads)) if any(a or b for a, b in pads) else full
    return y if first else _to_nlc(y, nd)


# ---------------------------------------------------------------------------- pooling

_MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def _pool_setup(inputs, pool_size, strides, padding, data_format, op):
    x = native(inputs)
    nd = _rank(x, op)
    first = _channels_first(data_format, op)
    mode = _padding(padding, op)
    window = _tuple(pool_size, nd, f"{op} pool_size")
    step = window if strides is None else _tuple(strides, nd, f"{op} strides")
    xc = x if first else _to_nc(x, nd)
    pads = _same_pads(xc.shape[2:], window, step) if mode == "same" else [(0, 0)] * nd
    return x, xc, nd, first, window, step, pads


def max_pool(inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
    x, xc, nd, first, window, step, pads = _pool_setup(inputs, pool_size, strides, padding, data_format, "max_pool")
    out_dtype = xc.dtype
    if out_dtype in FLOATING:
        compute = out_dtype
        low = -math.inf
    else:  # torch has no integer max-pool kernels: exact in float64 for int32 and smaller
        compute = torch.float32 if xc.device.type == "mps" else torch.float64
        low = -math.inf
    if compute is not out_dtype:
        xc = xc.to(compute)
    if any(a or b for a, b in pads):
        xc = F.pad(xc, _fpad(pads), value=low)
    try:
        y = _MAX_POOL[nd](xc, window, step)
    except RuntimeError as error:
        raise ValueError(f"max_pool: input {tuple(x.shape)} does not fit pool {window} ({error})") from None
    if y.dtype is not out_dtype:
        y = y.to(out_dtype)
    return y if first else _to_nlc(y, nd)


def avg_pool(inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
    x, xc, nd, first, window, step, pads = _pool_setup(inputs, pool_size, strides, padding, data_format, "avg_pool")
    if xc.dtype not in FLOATING:
        xc = xc.to(floatx())
    out_dtype = xc.dtype
    compute = _compute_dtype(xc) if nd == 3 else out_dtype
    if compute is not out_dtype:
        xc = xc.to(compute)
    pool = _AVG_POOL[nd]
    try:
        if any(a or b for a, b in pads):
            flat = _fpad(pads)
            # mean over real cells only = (window sum) / (number of real cells in window)
            sums = pool(F.pad(xc, flat), window, step)
            mask = torch.ones((1, 1) + tuple(xc.shape[2:]), dtype=compute, device=xc.device)
            counts = pool(F.pad(mask, flat), window, step)
            y = sums / counts
        else:
            y = pool(xc, window, step)
    except RuntimeError as error:
        raise ValueError(f"avg_pool: input {tuple(x.shape)} does not fit pool {window} ({error})") from None
    if y.dtype is not out_dtype:
        y = y.to(out_dtype)
    return y if first else _to_nlc(y, nd)


# -------------------------------------------------------------------------------- dense


def dense(inputs, kernel, bias=None):
    x, w, b = inputs, kernel, bias
    if (type(x) is Tensor and type(w) is Tensor and x.dtype is w.dtype and x.dtype in INEXACT and w.ndim == 2
            and x.ndim >= 2 and x.shape[-1] == w.shape[0]
            and (b is None or (type(b) is Tensor and b.dtype is x.dtype and b.shape == w.shape[1:]))):
        try:  # one GEMM with the bias, one autograd node (torch.nn.Linear's kernel)
            if x.ndim == 2:
                return torch.mm(x, w) if b is None else torch.addmm(b, x, w)
            rows = x.reshape(-1, x.shape[-1])
            out = torch.mm(rows, w) if b is None else torch.addmm(b, rows, w)
            return out.reshape(x.shape[:-1] + w.shape[1:])
        except RuntimeError:  # e.g. operands on two devices: the general path raises matmul's error
            return _dense_as_two_ops(inputs, kernel, bias)
    return _dense_as_two_ops(inputs, kernel, bias)


def _dense_as_two_ops(inputs, kernel, bias):
    """``dense`` for any operands: checked shapes, then ``matmul`` and ``add`` with their dtype rules."""
    x, w = native(inputs, "inputs"), native(kernel, "kernel")
    b = None if bias is None else native(bias, "bias")
    check_dense_shapes(tuple(x.shape), tuple(w.shape), None if b is None else tuple(b.shape))
    y = matmul(x, w)
    return y if b is None else add(y, b)


# ------------------------------------------------------------------------------ moments


def moments(x, axes, keepdims=False):
    x = to_float(x)
    out_dtype = x.dtype
    if x.dtype in HALF:  # accumulate in float32, as Keras does, then cast back
        x = x.to(torch.float32)
    dims = tuple(range(x.ndim)) if axes is None else normalize_axes(axes, x.ndim)
    if not dims:
        return x.to(out_dtype), torch.zeros_like(x, dtype=out_dtype)
    variance, mean = torch.var_mean(x, dim=dims, correction=0, keepdim=keepdims)
    return mean.to(out_dtype), variance.to(out_dtype)


# ------------------------------------------------------------------- recurrent layers


def _rnn_operands(op, named):
    """Native tensors of one floating dtype (None stays None)."""
    # The first (the input) is a required argument: only later ones (bias, initial states) may be None.
    tensors: list[Any] = [None if value is None else native(value, name) for name, value in named]
    dtype = tensors[0].dtype
    if dtype not in FLOATING or any(t is not None and t.dtype is not dtype for t in tensors):
        check_rnn_dtypes(op, [(n, dtype_name(t.dtype)) for (n, _), t in zip(named, tensors) if t is not None])
    return tensors


def _rnn_weights(x, w_ih, w_hh, b_ih, b_hh):
    """torch's weight list ``[w_ih, w_hh(, b_ih, b_hh)]``. On CUDA they are views of one
    contiguous buffer in that order (cuDNN's layout for one layer and direction), so cuDNN
    neither copies them on every call nor warns about it; the concatenation is differentiable."""
    weights = [w_ih, w_hh] + ([b_ih, b_hh] if b_ih is not None else [])
    if x.device.type != "cuda":
        return weights
    flat = torch.cat([w.reshape(-1) for w in weights])
    return [part.view(w.shape) for part, w in zip(flat.split([w.numel() for w in weights]), weights)]


def lstm(inputs, initial_h, initial_c, kernel, recurrent_kernel, bias=None, *, go_backwards=False,
         time_major=False):
    # torch's fused LSTM (oneDNN on the CPU for float32, cuDNN on CUDA), differentiable
    # through autograd. Layout conversion in the module docstring.
    x, h0, c0, w, r, b = _rnn_operands("nn.lstm", [
        ("inputs", inputs), ("initial_h", initial_h), ("initial_c", initial_c), ("kernel", kernel),
        ("recurrent_kernel", recurrent_kernel), ("bias", bias)])
    check_rnn_shapes("nn.lstm", 4, tuple(x.shape), [("initial_h", tuple(h0.shape)), ("initial_c", tuple(c0.shape))],
                     tuple(w.shape), tuple(r.shape), None if b is None else tuple(b.shape), time_major)
    if go_backwards:
        x = x.flip(0 if time_major else 1)
    weights = _rnn_weights(x, w.t(), r.t(), b, None if b is None else torch.zeros_like(b))
    out, h, c = torch.lstm(x, (h0.unsqueeze(0), c0.unsqueeze(0)), weights, b is not None, 1, 0.0,
                           torch.is_grad_enabled(), False, not time_major)
    return out, h.squeeze(0), c.squeeze(0)


def _zrh_to_rzn(w, units):
    """Keras's GRU gate blocks z, r, h (last axis) in torch's order r, z, n."""
    return torch.cat((w[..., units:2 * units], w[..., :units], w[..., 2 * units:]), -1)


def gru(inputs, initial_h, kernel, recurrent_kernel, bias=None, *, go_backwards=False, time_major=False):
    # torch's fused GRU (cuDNN on CUDA), differentiable through autograd. Layout conversion
    # in the module docstring.
    x, h0, w, r, b = _rnn_operands("nn.gru", [
        ("inputs", inputs), ("initial_h", initial_h), ("kernel", kernel), ("recurrent_kernel", recurrent_kernel),
        ("bias", bias)])
    check_rnn_shapes("nn.gru", 3, tuple(x.shape), [("initial_h", tuple(h0.shape))], tuple(w.shape), tuple(r.shape),
                     None if b is None else tuple(b.shape), time_major, bias_rows=2)
    if go_backwards:
        x = x.flip(0 if time_major else 1)
    units = r.shape[0]
    b_ih = b_hh = None
    if b is not None:
        b = _zrh_to_rzn(b, units)
        b_ih, b_hh = b[0], b[1]
    weights = _rnn_weights(x, _zrh_to_rzn(w, units).t(), _zrh_to_rzn(r, units).t(), b_ih, b_hh)
    out, h = torch.gru(x, h0.unsqueeze(0), weights, b is not None, 1, 0.0, torch.is_grad_enabled(), False,
                       not time_major)
    return out, h.squeeze(0)
