"""Neural-network ops of the MLX backend: activations, dense (``mx.addmm``), convolution, pooling, moments.

No ``lstm``/``gru``: MLX has no fused recurrent kernel, so ``ember.ops`` binds the
composites of :mod:`ember.ops.extra.composites` (traced op by op by the tapes and ``mx.compile``).

Layouts: Ember (like Keras) is channels-last with kernels ``(*spatial, in/groups, out)``;
MLX's ``conv_general`` is channels-last too but wants weights ``(out, *spatial, in/groups)``,
so kernels are transposed on the way in. ``data_format="channels_first"`` inputs are
moved to channels-last and back.
"""

from __future__ import annotations

import itertools
import math

import mlx.core as mx
import numpy as np

from ember.backends._common import check_dense_shapes
from ember.backends.mlx import _f64
from ember.backends.mlx import core as _core
from ember.backends.mlx._attention import dot_product_attention  # noqa: F401  (the op: mx.fast.sdpa)
from ember.backends.mlx._base import FLOATS, INEXACT, A, binary_same, floatx, inexact, normalize_axis, to_mx
from ember.backends.mlx._normalization import layer_norm  # noqa: F401  (the op: mx.fast.layer_norm)

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

# ---------------------------------------------------------------------------- activations


def relu(x):
    x = to_mx(x)
    if x.dtype == mx.bool_:  # max(bool, 0) is int32 by Ember's weak-scalar rule
        x = x.astype(mx.int32)
    return mx.maximum(x, 0)


def relu6(x):
    x = to_mx(x)
    if x.dtype == mx.bool_:
        x = x.astype(mx.int32)
    return mx.minimum(mx.maximum(x, 0), 6)


def leaky_relu(x, negative_slope=0.2):
    x = inexact(x)
    return mx.where(x > 0, x, x * negative_slope)


def elu(x, alpha=1.0):
    x = inexact(x)
    return mx.where(x > 0, x, mx.expm1(x) * alpha)


def selu(x):
    x = inexact(x)
    return mx.where(x > 0, x, mx.expm1(x) * _SELU_ALPHA) * _SELU_SCALE


def gelu(x, approximate=True):
    x = inexact(x)
    if approximate:
        return 0.5 * x * (1.0 + mx.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x))))
    return 0.5 * x * (1.0 + _core.erf(x * (1.0 / math.sqrt(2.0))))


def _sigmoid(x):
    return _f64.sigmoid(x) if x.itemsize == 8 and x.dtype == mx.float64 else mx.sigmoid(x)


def sigmoid(x):
    return _sigmoid(inexact(x))


def silu(x):
    x = inexact(x)
    return x * _sigmoid(x)


def hard_sigmoid(x):
    x = inexact(x)
    return mx.minimum(mx.maximum(x + 3.0, 0), 6.0) * (1.0 / 6.0)


def softplus(x):
    x = inexact(x)
    # log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), stable for large |x|; written with
    # `where` instead of maximum/abs so that mx.vjp gives the right gradient (0.5) at x == 0.
    positive = x > 0
    return mx.where(positive, x, 0.0) + mx.log1p(_core.exp(mx.where(positive, -x, x)))


def softsign(x):
    x = inexact(x)
    return x / (1.0 + mx.abs(x))


def tanh(x):
    return mx.tanh(inexact(x))


def lecun_tanh(x):
    return 1.7159 * mx.tanh(0.666 * inexact(x))


def _softmax_axes(x, axis):
    if isinstance(axis, (tuple, list)):
        return [normalize_axis(a, x.ndim) for a in axis]
    return [normalize_axis(axis, x.ndim)] if x.ndim else []


def softmax(x, axis=-1):
    x = inexact(x)
    if x.ndim == 0:
        return mx.ones_like(x)
    axes = _softmax_axes(x, axis)
    if x.dtype == mx.float64:
        return _f64.softmax(x, axes)
    return mx.softmax(x, axis=axes, precise=x.dtype in (mx.float16, mx.bfloat16))


def log_softmax(x, axis=-1):
    x = inexact(x)
    if x.ndim == 0:
        return mx.zeros_like(x)
    axes = _softmax_axes(x, axis)
    # (x - max) - log(sum(exp(x - max))): subtracting a full logsumexp from a large x
    # would round away the small result.
    peak = mx.stop_gradient(mx.max(x, axis=axes, keepdims=True))
    shifted = x - mx.where(mx.isfinite(peak), peak, mx.zeros((), dtype=x.dtype))
    return shifted - mx.log(mx.sum(_core.exp(shifted), axis=axes, keepdims=True))


# ---------------------------------------------------------------------------- convolution


def _per_axis(value, n, name, op):
    if isinstance(value, (int, np.integer)):
        values = (int(value),) * n
    else:
        values = tuple(int(v) for v in value)
        if len(values) == 1:
            values = values * n
    if len(values) != n or any(v < 1 for v in values):
        raise ValueError(f"{op}: {name} must be a positive int or a tuple of {n} positive ints, received {value!r}")
    return values


def _padding_mode(padding, op):
    mode = padding.lower() if isinstance(padding, str) else padding
    if mode not in ("valid", "same"):
        raise ValueError(f"{op}: padding must be 'valid' or 'same', received {padding!r}")
    return mode


def _channels_last(x, data_format, op):
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{op}: data_format must be 'channels_last' or 'channels_first', received {data_format!r}")
    if data_format == "channels_first":
        return mx.moveaxis(x, 1, -1)
    return x


def _restore(y, data_format):
    return mx.moveaxis(y, -1, 1) if data_format == "channels_first" else y


def _same_padding(size, kernel, stride, dilation=1):
    """TF/Keras 'same': output ceil(size / stride), the odd extra cell on the high side."""
    effective = (kernel - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


def _conv_inputs(inputs, kernel, op):
    x, w = binary_same(inputs, kernel)
    if x.dtype not in INEXACT:
        x, w = x.astype(floatx()), w.astype(floatx())
    n = x.ndim - 2
    if n not in (1, 2, 3) or w.ndim != n + 2:
        raise ValueError(f"{op}: expected inputs of rank 3-5 and a kernel of rank inputs.ndim, received shapes "
                         f"{tuple(x.shape)} and {tuple(w.shape)}")
    return x, w, n


def conv(inputs, kernel, strides=1, padding="valid", data_format="channels_last", dilation_rate=1):
    x, w, n = _conv_inputs(inputs, kernel, "conv")
    x = _channels_last(x, data_format, "conv")
    mode = _padding_mode(padding, "conv")
    strides = _per_axis(strides, n, "strides", "conv")
    dilation = _per_axis(dilation_rate, n, "dilation_rate", "conv")
    in_channels, per_group, out_channels = x.shape[-1], w.shape[-2], w.shape[-1]
    if per_group == 0 or in_channels % per_group:
        raise ValueError(f"conv: input channels {in_channels} are not a multiple of the kernel's input channels "
                         f"{per_group} (kernel shape {tuple(w.shape)})")
    groups = in_channels // per_group
    if out_channels % groups:
        raise ValueError(f"conv: output channels {out_channels} are not divisible by groups={groups}")
    spatial = x.shape[1:-1]
    kernel_size = w.shape[:-2]
    if mode == "same":
        pads = [_same_padding(spatial[i], kernel_size[i], strides[i], dilation[i]) for i in range(n)]
    else:
        pads = [(0, 0)] * n
        for i in range(n):
            if (kernel_size[i] - 1) * dilation[i] + 1 > spatial[i]:
                raise ValueError(f"conv: the (dilated) kernel {tuple(kernel_size)} is larger than the input "
                                 f"{tuple(spatial)} with padding='valid'")
    # Keras kernel (*k, in/groups, out) -> MLX weight (out, *k, in/groups).
    weight = mx.transpose(w, [n + 1, *range(n), n])
    padding_pair = ([p[0] for p in pads], [p[1] for p in pads])
    if n == 3 and groups > 1:
        # MLX's 3-D convolution has no groups: one convolution per group (a loop over groups).
        per_out = out_channels // groups
        y = mx.concatenate([
            mx.conv_general(x[..., g * per_group:(g + 1) * per_group], weight[g * per_out:(g + 1) * per_out],
                            stride=list(strides), padding=padding_pair, kernel_dilation=list(dilation))
            for g in range(groups)
        ], axis=-1)
    else:
        y = mx.conv_general(x, weight, stride=list(strides), padding=padding_pair, kernel_dilation=list(dilation),
                            groups=groups)
    return _restore(y, data_format)


def _transpose_padding(kernel, stride, dilation, mode, output_padding):
    """Keras's placement of a transposed convolution's padding (low, high) on the dilated input."""
    effective = (kernel - 1) * dilation + 1
    if mode == "valid":
        extra = max(effective, stride) - effective if output_padding is None else output_padding
        return effective - 1, effective - 1 + extra
    if output_padding is None:
        total = stride + effective - 2
    else:
        total = effective + effective % 2 - 2 + output_padding
    low = min(total // 2 + total % 2, effective - 1)
    return low, total - low


def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None, data_format="channels_last",
                   dilation_rate=1):
    x, w, n = _conv_inputs(inputs, kernel, "conv_transpose")
    x = _channels_last(x, data_format, "conv_transpose")
    mode = _padding_mode(padding, "conv_transpose")
    strides = _per_axis(strides, n, "strides", "conv_transpose")
    dilation = _per_axis(dilation_rate, n, "dilation_rate", "conv_transpose")
    if output_padding is None:
        extras = (None,) * n
    else:
        extras = (int(output_padding),) * n if isinstance(output_padding, (int, np.integer)) else tuple(
            int(v) for v in output_padding)
        if len(extras) != n:
            raise ValueError(f"conv_transpose: output_padding must be an int or {n} ints, received {output_padding!r}")
    if w.shape[-1] != x.shape[-1]:
        raise ValueError(f"conv_transpose: kernel {tuple(w.shape)} expects {w.shape[-1]} input channels, "
                         f"inputs have {x.shape[-1]}")
    kernel_size = w.shape[:-2]
    pads = [_transpose_padding(kernel_size[i], strides[i], dilation[i], mode, extras[i]) for i in range(n)]
    # A transposed convolution is a stride-1 *convolution* (flipped kernel) of the input dilated by
    # ``strides``. Keras kernel (*k, out, in) -> MLX weight (out, *k, in).
    weight = mx.transpose(w, [n, *range(n), n + 1])
    low = [max(p[0], 0) for p in pads]
    # High padding past the kernel's reach only appends zero outputs, and mx.conv_general's
    # VJP w.r.t. an input-dilated input has the wrong shape when given such padding
    # (MLX 0.32): pad the output with those zeros instead.
    reach = [(kernel_size[i] - 1) * dilation[i] for i in range(n)]
    high = [min(max(p[1], 0), r) for p, r in zip(pads, reach)]
    zeros = [max(p[1], 0) - h for p, h in zip(pads, high)]
    y = mx.conv_general(x, weight, stride=1, padding=(low, high), kernel_dilation=list(dilation),
                        input_dilation=list(strides), flip=True)
    if any(zeros):
        y = mx.pad(y, [(0, 0)] + [(0, z) for z in zeros] + [(0, 0)])
    if any(p[0] < 0 or p[1] < 0 for p in pads):  # negative padding: crop the output instead
        key = [slice(None)]
        for i, (lo, hi) in enumerate(pads):
            key.append(slice(-lo if lo < 0 else 0, y.shape[i + 1] + hi if hi < 0 else None))
        y = y[tuple(key)]
    return _restore(y, data_format)


# -------------------------------------------------------------------------------- pooling


def _pool_setup(inputs, pool_size, strides, padding, data_format, op):
    x = to_mx(inputs)
    n = x.ndim - 2
    if n not in (1, 2, 3):
        raise ValueError(f"{op}: expected inputs of rank 3-5, received shape {tuple(x.shape)}")
    x = _channels_last(x, data_format, op)
    mode = _padding_mode(padding, op)
    pool = _per_axis(pool_size, n, "pool_size", op)
    steps = pool if strides is None else _per_axis(strides, n, "strides", op)
    spatial = x.shape[1:-1]
    if mode == "same":
        pads = [_same_padding(spatial[i], pool[i], steps[i]) for i in range(n)]
    else:
        pads = [(0, 0)] * n
        for i in range(n):
            if pool[i] > spatial[i]:
                raise ValueError(f"{op}: pool_size {pool} is larger than the input {tuple(spatial)} with "
                                 "padding='valid'")
    out = [(spatial[i] + pads[i][0] + pads[i][1] - pool[i]) // steps[i] + 1 for i in range(n)]
    return x, n, pool, steps, pads, out


def _windows_reduce(x, n, pool, steps, out, combine, reduce_axes):
    """Combine the pooling windows of a (padded) channels-last ``x``.

    Non-overlapping windows (stride == pool) reshape into a window axis per spatial axis and
    reduce; otherwise one strided slice per kernel tap is combined (loop over taps, not pixels).
    """
    if steps == pool:
        key = [slice(None)] + [slice(0, out[i] * pool[i]) for i in range(n)] + [slice(None)]
        cropped = x[tuple(key)]
        shape = [x.shape[0]]
        for i in range(n):
            shape += [out[i], pool[i]]
        shape.append(x.shape[-1])
        return reduce_axes(mx.reshape(cropped, shape), [2 + 2 * i for i in range(n)])
    result = None
    for taps in itertools.product(*(range(p) for p in pool)):
        key = [slice(None)]
        for i, t in enumerate(taps):
            key.append(slice(t, t + (out[i] - 1) * steps[i] + 1, steps[i]))
        key.append(slice(None))
        window = x[tuple(key)]
        result = window if result is None else combine(result, window)
    return result


def _lowest(dtype):
    if dtype in FLOATS:
        return -math.inf
    if dtype == mx.bool_:
        return False
    return int(np.iinfo(str(dtype).rsplit(".", 1)[-1]).min)


def max_pool(inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
    x, n, pool, steps, pads, out = _pool_setup(inputs, pool_size, strides, padding, data_format, "max_pool")
    if any(p != (0, 0) for p in pads):
        x = mx.pad(x, [(0, 0), *pads, (0, 0)], constant_values=mx.array(_lowest(x.dtype), dtype=x.dtype))
    y = _windows_reduce(x, n, pool, steps, out, mx.maximum, lambda a, axes: mx.max(a, axis=axes))
    return _restore(y, data_format)


def _window_counts(spatial, pool, steps, pads, out):
    """Number of real (unpadded) cells in each window: a separable product over spatial axes."""
    counts = np.ones((), dtype=np.float64)
    for i in range(len(spatial)):
        starts = np.arange(out[i]) * steps[i] - pads[i][0]
        taps = np.arange(pool[i])
        positions = starts[:, None] + taps[None, :]
        valid = ((positions >= 0) & (positions < spatial[i])).sum(axis=1)
        counts = np.multiply.outer(counts, valid)
    return counts


def avg_pool(inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
    x, n, pool, steps, pads, out = _pool_setup(inputs, pool_size, strides, padding, data_format, "avg_pool")
    if x.dtype not in INEXACT:
        x = x.astype(floatx())
    spatial = x.shape[1:-1]
    padded = any(p != (0, 0) for p in pads)
    if padded:
        x = mx.pad(x, [(0, 0), *pads, (0, 0)])
    total = _windows_reduce(x, n, pool, steps, out, mx.add, lambda a, axes: mx.sum(a, axis=axes))
    if padded:
        counts = _window_counts(spatial, pool, steps, pads, out)
        y = total / mx.array(counts.reshape((1, *out, 1)).astype(np.float32)).astype(x.dtype)
    else:
        y = total * (1.0 / math.prod(pool))
    return _restore(y, data_format)


# -------------------------------------------------------------------------------- dense
_ADDMM_DTYPES = (mx.float32, mx.float16, mx.bfloat16)  # float64 goes through matmul's CPU path


def dense(inputs, kernel, bias=None):
    x, w, b = inputs, kernel, bias
    if (type(x) is A and type(w) is A and x.dtype == w.dtype and x.dtype in _ADDMM_DTYPES and w.ndim == 2
            and x.ndim >= 2 and x.shape[-1] == w.shape[0]
            and (b is None or (type(b) is A and b.dtype == x.dtype and b.shape == w.shape[1:]))):
        if x.ndim == 2:  # one GEMM with the bias (one primitive in a compiled step)
            return mx.matmul(x, w) if b is None else mx.addmm(b, x, w)
        rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])  # explicit: no -1 to infer for empty inputs
        out = mx.matmul(rows, w) if b is None else mx.addmm(b, rows, w)
        return out.reshape(*x.shape[:-1], w.shape[1])
    x, w = to_mx(inputs, "inputs"), to_mx(kernel, "kernel")
    b = None if bias is None else to_mx(bias, "bias")
    check_dense_shapes(tuple(x.shape), tuple(w.shape), None if b is None else tuple(b.shape))
    y = _core.matmul(x, w)
    return y if b is None else _core.add(y, b)


# ------------------------------------------------------------------------------- moments


def moments(x, axes, keepdims=False):
    x = inexact(x)
    low_precision = x.dtype in (mx.float16, mx.bfloat16)
    work = x.astype(mx.float32) if low_precision else x
    mean = _core.mean(work, axis=axes, keepdims=True)
    variance = _core.mean(mx.square(work - mean), axis=axes, keepdims=True)
    if not keepdims:
        squeeze_axes = list(range(x.ndim)) if axes is None else [
            normalize_axis(a, x.ndim) for a in (axes if isinstance(axes, (tuple, list)) else (axes,))]
        mean = mx.squeeze(mean, squeeze_axes)
        variance = mx.squeeze(variance, squeeze_axes)
    if low_precision:
        mean, variance = mean.astype(x.dtype), variance.astype(x.dtype)
    return mean, variance
