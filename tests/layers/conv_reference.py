"""NumPy float64 references for the convolution and pooling layer tests.

Written from the definitions (TF/Keras semantics), independently of Ember's backends:
loops run over kernel taps (never over pixels), and every array is channels-last
float64. ``to_last``/``to_first`` convert the channels-first test inputs.
"""

from __future__ import annotations

import math

import numpy as np


def to_last(x: np.ndarray) -> np.ndarray:
    return np.moveaxis(x, 1, -1)


def to_first(x: np.ndarray) -> np.ndarray:
    return np.moveaxis(x, -1, 1)


def tf_same_pads(n: int, window: int, stride: int) -> tuple[int, int]:
    """TF "same": output ceil(n / stride); the odd padding cell goes at the end."""
    out = math.ceil(n / stride)
    total = max((out - 1) * stride + window - n, 0)
    return total // 2, total - total // 2


def conv(x, kernel, strides, padding, dilation, groups=1):
    """Cross-correlation; ``kernel`` ``(*k, in // groups, filters)``; ``padding`` valid/same/causal."""
    nd = x.ndim - 2
    taps = kernel.shape[:nd]
    windows = [(k - 1) * d + 1 for k, d in zip(taps, dilation)]
    if padding == "same":
        pads = [tf_same_pads(n, w, s) for n, w, s in zip(x.shape[1:-1], windows, strides)]
    elif padding == "causal":
        pads = [(w - 1, 0) for w in windows]
    else:
        pads = [(0, 0)] * nd
    xp = np.pad(x, [(0, 0)] + pads + [(0, 0)])
    outs = [(n - w) // s + 1 for n, w, s in zip(xp.shape[1:-1], windows, strides)]
    filters = kernel.shape[-1]
    per_in, per_out = kernel.shape[-2], filters // groups
    y = np.zeros((x.shape[0], *outs, filters))
    for tap in np.ndindex(*taps):
        index = tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dilation, outs, strides))
        patch = xp[(slice(None),) + index]
        for g in range(groups):
            y[..., g * per_out:(g + 1) * per_out] += (
                patch[..., g * per_in:(g + 1) * per_in] @ kernel[tap][:, g * per_out:(g + 1) * per_out])
    return y


def conv_transpose_length(n, k, s, padding, output_padding, d):
    """Keras's output length of a transposed convolution."""
    window = (k - 1) * d + 1
    if padding == "valid":
        extra = max(s - window, 0) if output_padding is None else output_padding
        return (n - 1) * s + window + extra
    if output_padding is None:
        return n * s
    return (n - 1) * s + window % 2 + output_padding


def conv_transpose(x, kernel, strides, padding, output_padding, dilation):
    """TF's transposed convolution: the adjoint of :func:`conv` on an input of the output's length.

    ``kernel`` ``(*k, filters, in)``. Input cell ``m`` and tap ``t`` write to output cell
    ``m * s + t * d - pad_before`` where ``pad_before`` is the forward convolution's TF
    padding for that output length (0 for "valid").
    """
    nd = x.ndim - 2
    taps = kernel.shape[:nd]
    sizes = x.shape[1:-1]
    extras = [None] * nd if output_padding is None else list(output_padding)
    lengths = [conv_transpose_length(n, k, s, padding, e, d)
               for n, k, s, e, d in zip(sizes, taps, strides, extras, dilation)]
    befores = []
    for n, k, s, d, length in zip(sizes, taps, strides, dilation, lengths):
        window = (k - 1) * d + 1
        befores.append(0 if padding == "valid" else max((n - 1) * s + window - length, 0) // 2)
    # Scatter into a buffer wide enough for every write, then read the output window.
    full = [(n - 1) * s + (k - 1) * d + 1 for n, k, s, d in zip(sizes, taps, strides, dilation)]
    buffer = np.zeros((x.shape[0], *[max(f, b + length) for f, b, length in zip(full, befores, lengths)],
                       kernel.shape[-2]))
    for tap in np.ndindex(*taps):
        index = tuple(slice(t * d, t * d + (n - 1) * s + 1, s) for t, d, n, s in zip(tap, dilation, sizes, strides))
        buffer[(slice(None),) + index] += x @ kernel[tap].T
    window = tuple(slice(b, b + length) for b, length in zip(befores, lengths))
    return buffer[(slice(None),) + window]


def depthwise_conv(x, kernel, strides, padding, dilation):
    """``kernel`` ``(*k, in, multiplier)``: output channel ``c * multiplier + m``."""
    channels, multiplier = kernel.shape[-2:]
    outputs = [conv(x[..., c:c + 1], kernel[..., c:c + 1, m:m + 1], strides, padding, dilation)
               for c in range(channels) for m in range(multiplier)]
    return np.concatenate(outputs, axis=-1)


def pool(x, pool_size, strides, padding, mode):
    """Max / average pooling; "same" average pooling leaves padded cells out of the mean."""
    nd = x.ndim - 2
    pads = ([tf_same_pads(n, k, s) for n, k, s in zip(x.shape[1:-1], pool_size, strides)]
            if padding == "same" else [(0, 0)] * nd)
    width = [(0, 0)] + pads + [(0, 0)]
    xp = np.pad(x, width, constant_values=-np.inf if mode == "max" else 0.0)
    real = np.pad(np.ones(x.shape), width)
    outs = [(n - k) // s + 1 for n, k, s in zip(xp.shape[1:-1], pool_size, strides)]
    acc = np.full((x.shape[0], *outs, x.shape[-1]), -np.inf if mode == "max" else 0.0)
    count = np.zeros_like(acc)
    for tap in np.ndindex(*pool_size):
        index = (slice(None),) + tuple(slice(t, t + (o - 1) * s + 1, s) for t, o, s in zip(tap, outs, strides))
        if mode == "max":
            acc = np.maximum(acc, xp[index])
        else:
            acc = acc + xp[index]
            count = count + real[index]
    return acc if mode == "max" else acc / count
