"""VJP rules of ``ops.nn``: activations, softmax, convolutions, pooling, moments.

Derivatives at kinks follow PyTorch: ``relu'(0) = 0``, ``relu6``/``hard_sigmoid`` pass
the cotangent only strictly inside their linear range, ``elu``/``selu`` use the
negative branch at 0. ``max_pool`` sends each window's cotangent to its first maximum
(row-major within the window, as PyTorch's CPU kernel).

Convolutions are vectorised and reuse ops: the input gradient of ``conv`` is a
``conv_transpose`` of the cotangent (for grouped convolutions, a stride-1 ``conv`` of
the dilated, padded cotangent with the flipped kernel), the kernel gradient is a
correlation of input and cotangent computed tap by tap (one ``tensordot`` per kernel
tap); ``conv_transpose``'s input gradient is a ``conv``. Padding follows the
TF/Keras rule of the forward ops ("same": the extra cell goes on the right/bottom).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ember import ops
from ember.autodiff.rules import axes_of, count_of, expand_reduced, needs, plain, register, scatter_flat

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# --------------------------------------------------------------------- activations
@register("nn.relu", unread_args=(0,))
def relu(g, out, x):
    # sign(relu(x)) is the 0/1 mask already in g's dtype: one pass, and a product is ~10x
    # faster than ops.where in NumPy.
    return (ops.multiply(g, np.sign(plain(out))),)


@register("nn.relu6")
def relu6(g, out, x):
    v = plain(x)
    return (ops.multiply(g, (v > 0) & (v < 6)),)


@register("nn.leaky_relu")
def leaky_relu(g, out, x, negative_slope=0.2):
    scale = (plain(x) > 0).astype(plain(g).dtype)
    scale *= 1.0 - negative_slope
    scale += negative_slope  # 1 where x > 0, negative_slope elsewhere
    return (ops.multiply(g, scale),)


@register("nn.elu")
def elu(g, out, x, alpha=1.0):
    return (ops.where(plain(x) > 0, g, ops.multiply(g, ops.add(out, alpha))),)


@register("nn.selu")
def selu(g, out, x):
    negative = ops.multiply(g, ops.add(out, _SELU_SCALE * _SELU_ALPHA))
    return (ops.where(plain(x) > 0, ops.multiply(g, _SELU_SCALE), negative),)


@register("nn.gelu")
def gelu(g, out, x, approximate=True):
    if approximate:
        c = math.sqrt(2.0 / math.pi)
        inner = ops.multiply(ops.add(x, ops.multiply(ops.power(x, 3), 0.044715)), c)
        t = ops.tanh(inner)
        d_inner = ops.multiply(ops.add(ops.multiply(ops.square(x), 3 * 0.044715), 1.0), c)
        derivative = ops.add(
            ops.multiply(ops.add(t, 1.0), 0.5),
            ops.multiply(ops.multiply(ops.multiply(x, 0.5), ops.subtract(1.0, ops.square(t))), d_inner),
        )
    else:
        cdf = ops.multiply(ops.add(ops.erf(ops.multiply(x, 1.0 / math.sqrt(2.0))), 1.0), 0.5)
        pdf = ops.multiply(ops.exp(ops.multiply(ops.square(x), -0.5)), 1.0 / math.sqrt(2.0 * math.pi))
        derivative = ops.add(cdf, ops.multiply(x, pdf))
    return (ops.multiply(g, derivative),)


@register("nn.silu")
def silu(g, out, x):
    s = ops.nn.sigmoid(x)
    return (ops.multiply(g, ops.multiply(s, ops.add(ops.multiply(x, ops.subtract(1.0, s)), 1.0))),)


@register("nn.sigmoid", unread_args=(0,))
def sigmoid(g, out, x):
    return (ops.multiply(g, ops.multiply(out, ops.subtract(1.0, out))),)


@register("nn.hard_sigmoid")
def hard_sigmoid(g, out, x):
    v = plain(x)
    return (ops.multiply(g, (((v > -3) & (v < 3)) / 6.0).astype(plain(g).dtype)),)


@register("nn.softplus")
def softplus(g, out, x):
    return (ops.multiply(g, ops.nn.sigmoid(x)),)


@register("nn.softsign")
def softsign(g, out, x):
    return (ops.divide(g, ops.square(ops.add(ops.abs(x), 1.0))),)


@register("nn.lecun_tanh")
def lecun_tanh(g, out, x):
    # out = 1.7159 tanh(0.666 x)  =>  out' = 0.666 (1.7159 - out^2 / 1.7159)
    return (ops.multiply(g, ops.multiply(ops.subtract(1.7159, ops.divide(ops.square(out), 1.7159)), 0.666)),)


@register("nn.softmax", unread_args=(0,))
def softmax(g, out, x, axis=-1):
    weighted = ops.sum(ops.multiply(g, out), axis=axis, keepdims=True)
    return (ops.multiply(out, ops.subtract(g, weighted)),)


@register("nn.log_softmax", unread_args=(0,))
def log_softmax(g, out, x, axis=-1):
    total = ops.sum(g, axis=axis, keepdims=True)
    return (ops.subtract(g, ops.multiply(ops.exp(out), total)),)


@register("nn.moments")
def moments(g, out, x, axes, keepdims=False):
    g_mean, g_var = g
    n = count_of(x.shape, axes_of(axes, x.ndim))
    grad = None
    if g_mean is not None:
        grad = ops.divide(expand_reduced(g_mean, x.shape, axes, keepdims), float(n))
    if g_var is not None:
        centered = ops.subtract(x, expand_reduced(out[0], x.shape, axes, keepdims))
        term = ops.multiply(ops.multiply(expand_reduced(g_var, x.shape, axes, keepdims), centered), 2.0 / n)
        grad = term if grad is None else ops.add(grad, term)
    return (grad,)


# ------------------------------------------------------------------ convolutions
def _tuple(value, n):
    if value is None:
        return None
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    return value * n if len(value) == 1 else value


def _geometry(n, k, s, d, padding):
    """(output size, left pad, right pad) of a conv/pool along one axis (TF/Keras rule)."""
    kd = (k - 1) * d + 1
    if padding == "valid":
        return (n - kd) // s + 1, 0, 0
    o = -(-n // s)
    total = max((o - 1) * s + kd - n, 0)
    return o, total // 2, total - total // 2


def _last(x):
    return ops.moveaxis(x, 1, -1)


def _first(x):
    return ops.moveaxis(x, -1, 1)


def _kernel_grad(conv_in, conv_out_grad, kernel_size, strides, dilation, pads, groups):
    """Correlation of a conv's input with its output cotangent: the kernel's cotangent."""
    n_spatial = len(kernel_size)
    if any(left or right for left, right in pads):
        conv_in = ops.pad(conv_in, [(0, 0)] + list(pads) + [(0, 0)])
    outputs = conv_out_grad.shape[1:-1]
    channels, filters = conv_in.shape[-1], conv_out_grad.shape[-1]
    summed = list(range(n_spatial + 1))
    taps = []
    for tap in np.ndindex(*kernel_size):
        index = (slice(None),) + tuple(
            slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dilation, outputs, strides)
        ) + (slice(None),)
        window = ops.getitem(conv_in, index)
        if groups == 1:
            taps.append(ops.tensordot(window, conv_out_grad, axes=(summed, summed)))
        else:
            w = ops.reshape(window, (-1, groups, channels // groups))
            gg = ops.reshape(conv_out_grad, (-1, groups, filters // groups))
            taps.append(ops.reshape(ops.einsum("bgc,bgf->cgf", w, gg), (channels // groups, filters)))
    return ops.reshape(ops.stack(taps, axis=0), tuple(kernel_size) + tuple(taps[0].shape))


def _dilate(x, axis, stride):
    """Insert ``stride - 1`` zeros between the entries of ``x`` along ``axis``."""
    if stride == 1:
        return x
    n = x.shape[axis]
    expanded = ops.expand_dims(x, axis + 1)
    zeros_shape = list(expanded.shape)
    zeros_shape[axis + 1] = stride - 1
    joined = ops.concatenate([expanded, np.zeros(zeros_shape, dtype=plain(x).dtype)], axis=axis + 1)
    merged_shape = list(x.shape)
    merged_shape[axis] = n * stride
    merged = ops.reshape(joined, tuple(merged_shape))
    index = [slice(None)] * x.ndim
    index[axis] = slice(0, (n - 1) * stride + 1)
    return ops.getitem(merged, tuple(index))


def _conv_input_grad_direct(g, kernel, input_shape, strides, dilation, pads, groups):
    """Input cotangent of a (grouped) conv: stride-1 conv of the dilated, padded cotangent."""
    n_spatial = len(strides)
    kernel_size = kernel.shape[:n_spatial]
    widths = [(0, 0)]
    for j in range(n_spatial):
        g = _dilate(g, 1 + j, strides[j])
    for j in range(n_spatial):
        left_pad = pads[j][0]
        n, o = input_shape[1 + j], g.shape[1 + j]
        left = (kernel_size[j] - 1) * dilation[j] - left_pad
        right = n + (kernel_size[j] - 1) * dilation[j] - left - o
        widths.append((left, right))
    widths.append((0, 0))
    if any(w < 0 for pair in widths for w in pair):
        crop = tuple(slice(max(-a, 0), g.shape[i] - max(-b, 0)) for i, (a, b) in enumerate(widths))
        g = ops.getitem(g, crop)
        widths = [(max(a, 0), max(b, 0)) for a, b in widths]
    g = ops.pad(g, widths)
    channels_per_group, filters = kernel.shape[-2], kernel.shape[-1]
    flipped = ops.flip(kernel, axis=tuple(range(n_spatial)))
    split = ops.reshape(flipped, tuple(kernel_size) + (channels_per_group, groups, filters // groups))
    order = tuple(range(n_spatial)) + (n_spatial + 2, n_spatial + 1, n_spatial)
    swapped_shape = tuple(kernel_size) + (filters // groups, groups * channels_per_group)
    swapped = ops.reshape(ops.transpose(split, order), swapped_shape)
    return ops.nn.conv(g, swapped, strides=1, padding="valid", data_format="channels_last", dilation_rate=dilation)


def _conv_geometry(g, inputs, kernel, strides, padding, data_format, dilation_rate):
    """What the rules of ``conv`` and ``conv_transpose`` read off their arguments: ``(channels_first,
    inputs and cotangent channels-last, spatial rank, padding in lower case, strides, dilation, kernel size)``."""
    first = data_format == "channels_first"
    x = _last(inputs) if first else inputs
    gl = _last(g) if first else g
    n_spatial = x.ndim - 2
    kernel_size = tuple(kernel.shape[:n_spatial])
    return (first, x, gl, n_spatial, padding.lower(), _tuple(strides, n_spatial), _tuple(dilation_rate, n_spatial),
            kernel_size)


@register("nn.conv")
def conv(g, out, inputs, kernel, strides=1, padding="valid", data_format="channels_last", dilation_rate=1):
    first, x, gl, n_spatial, padding, s, d, kernel_size = _conv_geometry(
        g, inputs, kernel, strides, padding, data_format, dilation_rate)
    groups = x.shape[-1] // kernel.shape[-2]
    geometry = [_geometry(x.shape[1 + j], kernel_size[j], s[j], d[j], padding) for j in range(n_spatial)]
    pads = [(left, right) for _, left, right in geometry]
    dx = dk = None
    if needs(0):
        if groups == 1:
            output_padding = []
            for j, (o, _, _) in enumerate(geometry):
                kd = (kernel_size[j] - 1) * d[j] + 1
                base = (o - 1) * s[j] + kd - (2 * (kd // 2) if padding == "same" else 0)
                output_padding.append(x.shape[1 + j] - base)
            dx = ops.nn.conv_transpose(gl, kernel, strides=s, padding=padding, output_padding=tuple(output_padding),
                                       data_format="channels_last", dilation_rate=d)
        else:
            dx = _conv_input_grad_direct(gl, kernel, x.shape, s, d, pads, groups)
        if first:
            dx = _first(dx)
    if needs(1):
        dk = _kernel_grad(x, gl, kernel_size, s, d, pads, groups)
    return (dx, dk)


@register("nn.conv_transpose")
def conv_transpose(g, out, inputs, kernel, strides=1, padding="valid", output_padding=None,
                   data_format="channels_last", dilation_rate=1):
    # conv_transpose scatters input cell o to output cells o * s + t * d - left (TF/Keras
    # placement, left = the "same" padding of the conv from the output back to the input),
    # so its adjoint is a valid conv of the cotangent padded by (left, right) where
    # right makes that conv land exactly on the input's size (negative: crop).
    first, x, gl, n_spatial, padding, s, d, kernel_size = _conv_geometry(
        g, inputs, kernel, strides, padding, data_format, dilation_rate)
    widths, crops = [(0, 0)], [slice(None)]
    for j in range(n_spatial):
        n, o = gl.shape[1 + j], x.shape[1 + j]
        kd = (kernel_size[j] - 1) * d[j] + 1
        left = max((o - 1) * s[j] + kd - n, 0) // 2 if padding == "same" else 0
        right = (o - 1) * s[j] + kd - n - left
        widths.append((left, max(right, 0)))
        crops.append(slice(0, n + right if right < 0 else None))
    widths.append((0, 0))
    crops.append(slice(None))
    if any(c.stop is not None for c in crops):
        gl = ops.getitem(gl, tuple(crops))
    if any(a or b for a, b in widths):
        gl = ops.pad(gl, widths)
    dx = dk = None
    if needs(0):
        dx = ops.nn.conv(gl, kernel, strides=s, padding="valid", data_format="channels_last", dilation_rate=d)
        if first:
            dx = _first(dx)
    if needs(1):
        dk = _kernel_grad(gl, x, kernel_size, s, d, [(0, 0)] * n_spatial, 1)
    return (dx, dk)


# ------------------------------------------------------------------------ pooling
def _pool_setup(inputs, pool_size, strides, padding, data_format):
    first = data_format == "channels_first"
    x = _last(inputs) if first else inputs
    n_spatial = x.ndim - 2
    k = _tuple(pool_size, n_spatial)
    s = _tuple(strides, n_spatial) if strides is not None else k
    geometry = [_geometry(x.shape[1 + j], k[j], s[j], 1, padding.lower()) for j in range(n_spatial)]
    return first, x, k, s, geometry


@register("nn.max_pool")
def max_pool(g, out, inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
    first, x, k, s, geometry = _pool_setup(inputs, pool_size, strides, padding, data_format)
    gl = _last(g) if first else g
    n_spatial = len(k)
    values = plain(x)
    pads = [(0, 0)] + [(left, right) for _, left, right in geometry] + [(0, 0)]
    if any(a or b for a, b in pads):
        values = np.pad(values, pads, constant_values=-np.inf)
    windows = sliding_window_view(values, k, axis=tuple(range(1, n_spatial + 1)))
    index = (slice(None),) + tuple(slice(0, (o - 1) * st + 1, st) for (o, _, _), st in zip(geometry, s))
    windows = windows[index]  # (B, *o, C, *k)
    arg = windows.reshape(windows.shape[: n_spatial + 2] + (-1,)).argmax(axis=-1)
    taps = np.unravel_index(arg, k)
    grids = np.indices(arg.shape, sparse=True)
    coords = [grids[0]]
    for j in range(n_spatial):
        coords.append(grids[1 + j] * s[j] + taps[j] - geometry[j][1])
    coords.append(grids[-1])
    flat = np.ravel_multi_index(tuple(np.broadcast_arrays(*coords)), x.shape)
    dx = scatter_flat(gl, x.shape, flat)
    return (_first(dx) if first else dx,)


@register("nn.avg_pool")
def avg_pool(g, out, inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
    first, x, k, s, geometry = _pool_setup(inputs, pool_size, strides, padding, data_format)
    gl = _last(g) if first else g
    n_spatial = len(k)
    spatial = tuple(x.shape[1:-1])
    outputs = tuple(o for o, _, _ in geometry)
    out_grid = np.indices(outputs).reshape(n_spatial, -1)  # (N, O)
    source_parts, target_parts = [], []
    counts = np.zeros(out_grid.shape[1])
    for tap in np.ndindex(*k):
        coords = [out_grid[j] * s[j] + tap[j] - geometry[j][1] for j in range(n_spatial)]
        valid = np.ones(out_grid.shape[1], dtype=bool)
        for j in range(n_spatial):
            valid &= (coords[j] >= 0) & (coords[j] < spatial[j])
        counts += valid
        source_parts.append(np.nonzero(valid)[0])
        target_parts.append(np.ravel_multi_index(tuple(c[valid] for c in coords), spatial))
    sources = np.concatenate(source_parts)
    targets = np.concatenate(target_parts)
    batch, channels = x.shape[0], x.shape[-1]
    g2 = ops.reshape(gl, (batch, -1, channels))
    scale = (1.0 / np.maximum(counts, 1)).astype(plain(g).dtype).reshape(1, -1, 1)
    contributions = ops.take(ops.multiply(g2, scale), sources, axis=1)
    summed = ops.segment_sum(ops.moveaxis(contributions, 1, 0), targets, num_segments=int(np.prod(spatial)))
    dx = ops.reshape(ops.moveaxis(summed, 0, 1), x.shape)
    return (_first(dx) if first else dx,)

