"""NumPy backend: convolution and pooling (used by ``nn``), vectorised with window views.

Layout: everything is computed channels-last, ``(batch, *spatial, channels)``;
channels-first inputs are moved there and back with ``moveaxis`` (views).

A convolution takes ``sliding_window_view`` over the padded spatial axes, which
gives ``(batch, *out_full, channels, *window)``; strides and dilation are then
plain slices of that view. The windows are copied once into an im2col matrix per
group, ``(groups, batch * out, taps * channels_per_group)`` (channels innermost, so
the copy moves contiguous runs), and multiplied with the kernel laid out as
``(groups, taps * channels_per_group, out_per_group)`` in a
single batched ``matmul`` (BLAS). Output channel ``g * out_per_group + j`` belongs
to group ``g`` (TensorFlow's grouping).

A transposed convolution is, by definition, the stride-dilated input padded as
Keras/JAX do and correlated with the spatially flipped, channel-swapped kernel.
It is computed in the equivalent scatter form (no multiplications by the inserted
zeros): one matmul gives every (input cell, tap) product, one strided add per tap
accumulates them into the full output, and the Keras padding becomes a crop of it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ember.backends.numpy._base import BF16, F32, HALF, binary, floatx, to_native

_FORMATS = ("channels_last", "channels_first")


def _tuple(value, n, argument, op, minimum=1):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        values = (int(value),) * n
    else:
        try:
            values = tuple(int(v) for v in value)
        except TypeError:
            raise TypeError(f"{op}: {argument} must be an int or a tuple of {n} ints, received {value!r}") from None
        if len(values) != n:
            raise ValueError(f"{op}: {argument} must have {n} entries (one per spatial axis), received {value!r}")
    if values and min(values) < minimum:
        raise ValueError(f"{op}: {argument} entries must be >= {minimum}, received {value!r}")
    return values



def _spatial_rank(x, op, argument="inputs"):
    n = x.ndim - 2
    if n not in (1, 2, 3):
        raise ValueError(
            f"{op}: {argument} must be (batch, *spatial, channels) with 1 to 3 spatial axes, "
            f"received shape {x.shape}"
        )
    return n


def _check_format(data_format, op):
    if data_format not in _FORMATS:
        raise ValueError(f"{op}: data_format must be one of {_FORMATS}, received {data_format!r}")
    return data_format == "channels_first"


def _check_padding(padding, op):
    padding = padding.lower() if isinstance(padding, str) else padding
    if padding not in ("valid", "same"):
        raise ValueError(f"{op}: padding must be 'valid' or 'same', received {padding!r}")
    return padding


def _pads(sizes, windows, strides, padding, op):
    """Per-axis ``(before, after)`` padding (TF/Keras: the extra cell goes after)."""
    pads = []
    for axis, (size, window, stride) in enumerate(zip(sizes, windows, strides)):
        if padding == "same":
            out = -(-size // stride)
            total = max((out - 1) * stride + window - size, 0)
            pads.append((total // 2, total - total // 2))
        else:
            if size < window:
                raise ValueError(
                    f"{op}: spatial axis {axis} has size {size}, smaller than the window {window} "
                    f"(with 'valid' padding the output would be empty)"
                )
            pads.append((0, 0))
    return pads


def _pad_spatial(x, pads, value=0):
    if not any(before or after for before, after in pads):
        return x
    return np.pad(x, [(0, 0)] + list(pads) + [(0, 0)], mode="constant", constant_values=value)


def _windows(x, window, strides, dilation):
    """``(batch, *out, channels, *taps)`` view of a padded channels-last ``x``."""
    n = len(window)
    view = sliding_window_view(x, window, axis=tuple(range(1, n + 1)))
    index = (
        (slice(None),)
        + tuple(slice(None, None, s) for s in strides)
        + (slice(None),)
        + tuple(slice(None, None, d) for d in dilation)
    )
    return view[index]


def _compute_pair(inputs, kernel):
    x, k = binary(inputs, kernel)
    if x.dtype.kind in "biu":
        target = floatx()
        x, k = x.astype(target), k.astype(target)
    final = x.dtype if x.dtype in HALF else None
    if final is not None:
        x, k = x.astype(F32), k.astype(F32)
    return x, k, final


def _conv_args(op, inputs, kernel, strides, padding, data_format, dilation_rate):
    """The arguments ``conv`` and ``conv_transpose`` share, checked: ``(x, kernel, final dtype or None,
    spatial rank, channels_first, padding, strides, dilation)`` (``x`` and ``kernel`` in their compute dtype)."""
    x, k, final = _compute_pair(inputs, kernel)
    n = _spatial_rank(x, op)
    if k.ndim != n + 2:
        raise ValueError(f"{op}: kernel must have rank {n + 2} for inputs of rank {x.ndim}, received shape {k.shape}")
    channels_first = _check_format(data_format, op)
    padding = _check_padding(padding, op)
    return (x, k, final, n, channels_first, padding, _tuple(strides, n, "strides", op),
            _tuple(dilation_rate, n, "dilation_rate", op))


def _correlate(x, kernel, strides, dilation, groups):
    """Valid, grouped cross-correlation of a padded channels-last ``x``."""
    n = x.ndim - 2
    taps = kernel.shape[:n]
    window = tuple((t - 1) * d + 1 for t, d in zip(taps, dilation))
    cols = _windows(x, window, strides, dilation)  # (B, *O, C, *taps)
    batch, out_shape = cols.shape[0], cols.shape[1 : n + 1]
    per_group = kernel.shape[-2]
    out_per_group = kernel.shape[-1] // groups
    # Channels innermost, (B, *O, *taps, C), so the im2col copy moves contiguous runs.
    cols = np.moveaxis(cols, n + 1, -1).reshape((batch,) + out_shape + taps + (groups, per_group))
    cols = np.moveaxis(cols, -2, 0).reshape(groups, batch * math.prod(out_shape), math.prod(taps) * per_group)
    w = kernel.reshape(taps + (per_group, groups, out_per_group))
    w = np.moveaxis(w, n + 1, 0).reshape(groups, math.prod(taps) * per_group, out_per_group)
    result = np.matmul(cols, w)  # (G, B*O, out_per_group)
    return result.transpose(1, 0, 2).reshape((batch,) + out_shape + (groups * out_per_group,))


def conv(inputs, kernel, strides=1, padding="valid", data_format="channels_last", dilation_rate=1):
    op = "conv"
    x, k, final, n, channels_first, padding, strides, dilation = _conv_args(
        op, inputs, kernel, strides, padding, data_format, dilation_rate)
    if channels_first:
        x = np.moveaxis(x, 1, -1)
    in_channels, per_group, out_channels = x.shape[-1], k.shape[-2], k.shape[-1]
    if per_group == 0 or in_channels % per_group:
        raise ValueError(
            f"{op}: input channels ({in_channels}) must be a multiple of kernel.shape[-2] ({per_group})"
        )
    groups = in_channels // per_group
    if out_channels % groups:
        raise ValueError(f"{op}: output channels ({out_channels}) must be a multiple of groups ({groups})")
    window = tuple((t - 1) * d + 1 for t, d in zip(k.shape[:n], dilation))
    x = _pad_spatial(x, _pads(x.shape[1:-1], window, strides, padding, op))
    result = _correlate(x, k, strides, dilation, groups)
    if channels_first:
        result = np.moveaxis(result, -1, 1)
    return result if final is None else result.astype(final)


def _transpose_pads(window, stride, padding, output_padding):
    """``(left, right)`` padding of the stride-dilated input, as Keras's JAX backend computes it."""
    if padding == "valid":
        extra = max(window, stride) - window if output_padding is None else output_padding
        return window - 1, window - 1 + extra
    if output_padding is None:
        total = stride + window - 2
    else:
        total = window + window % 2 - 2 + output_padding
    left = min(total // 2 + total % 2, window - 1)
    return left, total - left


def conv_transpose(
    inputs, kernel, strides=1, padding="valid", output_padding=None, data_format="channels_last", dilation_rate=1
):
    op = "conv_transpose"
    x, k, final, n, channels_first, padding, strides, dilation = _conv_args(
        op, inputs, kernel, strides, padding, data_format, dilation_rate)
    if output_padding is None:
        extras = (None,) * n
    else:
        extras = _tuple(output_padding, n, "output_padding", op, minimum=0)
    if channels_first:
        x = np.moveaxis(x, 1, -1)
    if k.shape[-1] != x.shape[-1]:
        raise ValueError(
            f"{op}: kernel must be (*kernel_spatial, out_channels, in_channels={x.shape[-1]}), "
            f"received shape {k.shape}"
        )
    batch, sizes = x.shape[0], x.shape[1:-1]
    taps, out_channels = k.shape[:n], k.shape[-2]
    windows = tuple((t - 1) * d + 1 for t, d in zip(taps, dilation))
    # Scatter form: input cell m, tap u lands on full[m * stride + u * dilation]; one
    # matmul gives every (cell, tap) product, then one strided add per tap.
    full_sizes = tuple((size - 1) * st + w if size else 0 for size, st, w in zip(sizes, strides, windows))
    full = np.zeros((batch,) + full_sizes + (out_channels,), x.dtype)
    kernel = k.reshape((-1, out_channels, x.shape[-1]))  # (taps, out, in)
    products = np.matmul(x.reshape(-1, x.shape[-1]), kernel.transpose(2, 0, 1).reshape(x.shape[-1], -1))
    products = products.reshape((batch,) + sizes + (kernel.shape[0], out_channels))
    for t, tap in enumerate(np.ndindex(*taps)):
        target = tuple(
            slice(u * d, u * d + (size - 1) * st + 1, st) for u, d, size, st in zip(tap, dilation, sizes, strides)
        )
        full[(slice(None),) + target] += products[..., t, :]
    # Keras/JAX pad the stride-dilated input by (left, right) and correlate with the
    # flipped kernel; that result is ``full`` read from offset ``window - 1 - left``.
    crops, pads = [], []
    for size, full_size, w, st, extra in zip(sizes, full_sizes, windows, strides, extras):
        left, right = _transpose_pads(w, st, padding, extra)
        length = (size - 1) * st + 2 + left + right - w if size else 0
        start = w - 1 - left
        crops.append(slice(start, start + length))
        pads.append((0, max(start + length - full_size, 0)))
    result = _pad_spatial(full, pads)[(slice(None),) + tuple(crops)]
    if channels_first:
        result = np.moveaxis(result, -1, 1)
    return result if final is None else result.astype(final)


def _pool_setup(inputs, pool_size, strides, padding, data_format, op):
    x = to_native(inputs)
    n = _spatial_rank(x, op)
    channels_first = _check_format(data_format, op)
    padding = _check_padding(padding, op)
    pool = _tuple(pool_size, n, "pool_size", op)
    strides = pool if strides is None else _tuple(strides, n, "strides", op)
    if channels_first:
        x = np.moveaxis(x, 1, -1)
    return x, n, channels_first, pool, strides, _pads(x.shape[1:-1], pool, strides, padding, op)


def _lowest(dt):
    if dt.kind == "b":
        return False
    if dt.kind in "iu":
        return np.iinfo(dt).min
    return -np.inf


def max_pool(inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
    x, n, channels_first, pool, strides, pads = _pool_setup(
        inputs, pool_size, strides, padding, data_format, "max_pool"
    )
    final = BF16 if x.dtype == BF16 else None
    if final is not None:
        x = x.astype(F32)
    x = _pad_spatial(x, pads, _lowest(x.dtype))
    result = np.max(_windows(x, pool, strides, (1,) * n), axis=tuple(range(-n, 0)))
    if channels_first:
        result = np.moveaxis(result, -1, 1)
    return result if final is None else result.astype(final)


def avg_pool(inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
    x, n, channels_first, pool, strides, pads = _pool_setup(
        inputs, pool_size, strides, padding, data_format, "avg_pool"
    )
    if x.dtype.kind in "biu":
        x = x.astype(floatx())
    final = x.dtype if x.dtype in HALF else None
    if final is not None:
        x = x.astype(F32)
    spatial = x.shape[1:-1]
    x = _pad_spatial(x, pads)
    taps = tuple(range(-n, 0))
    total = np.sum(_windows(x, pool, strides, (1,) * n), axis=taps)
    if any(before or after for before, after in pads):
        # Only real cells count: window sums over a padded ones-array give the divisor.
        ones = _pad_spatial(np.ones((1,) + spatial + (1,), x.dtype), pads)
        count = np.sum(_windows(ones, pool, strides, (1,) * n), axis=taps)
        result = total / count
    else:
        result = total / math.prod(pool)
    if channels_first:
        result = np.moveaxis(result, -1, 1)
    return result if final is None else result.astype(final)

