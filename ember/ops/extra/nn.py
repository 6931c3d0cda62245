"""Activations, normalizations, losses, pooling and attention of ``keras.ops``, built from protocol ops.

The activations Ember's backends already implement (``ops.nn.relu``, ...) are also bound
at the top of ``ember.ops`` by :mod:`ember.ops.extra.forward`; this module adds the ones
they lack and the rest of Keras's ``ops.nn`` functions.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.to_numpy(ops.hard_tanh(ops.convert_to_tensor([-3.0, 0.5, 2.0]))).tolist()
    [-1.0, 0.5, 1.0]
"""

from __future__ import annotations

import math as _math
from typing import Any

from ember import dtypes, global_settings, ops

__all__ = [
    "celu", "glu", "hard_shrink", "hard_silu", "hard_swish", "hard_tanh", "log_sigmoid", "soft_shrink",
    "sparse_plus", "sparse_sigmoid", "sparsemax", "squareplus", "swish", "tanh_shrink", "threshold",
    "normalize", "batch_normalization", "layer_normalization", "rms_normalization", "binary_crossentropy",
    "categorical_crossentropy", "sparse_categorical_crossentropy", "multi_hot", "depthwise_conv",
    "separable_conv", "average_pool", "adaptive_average_pool", "adaptive_max_pool", "dot_product_attention",
    "psnr", "in_top_k", "depth_to_space", "space_to_depth", "extract_sequences", "unfold", "segment_min",
    "segment_prod",
]



def _float(x: Any) -> Any:
    x = x if ops.is_array(x) else ops.convert_to_tensor(x)
    return x if dtypes.is_float(ops.dtype(x)) else ops.cast(x, dtypes.floatx())


def celu(x, alpha=1.0):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.celu(ops.convert_to_tensor([-1.0, 0.0, 2.0]))).astype(float).round(4).tolist()
        [-0.6321, 0.0, 2.0]
    """
    x = _float(x)
    negative = ops.multiply(alpha, ops.expm1(ops.divide(ops.minimum(x, 0.0), alpha)))
    return ops.add(ops.maximum(x, 0.0), negative)


def glu(x, axis=-1):
    """Gated linear unit: the first half of ``axis`` times the sigmoid of the second half.

    Raises:
        ValueError: an odd length along ``axis``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.glu(ops.convert_to_tensor([[1.0, 0.0], [4.0, 0.0]]))).tolist()
        [[0.5], [2.0]]
    """
    x = _float(x)
    if ops.shape(x)[axis] % 2:
        raise ValueError(f"glu: axis {axis} must have an even length, received shape {ops.shape(x)}")
    a, b = ops.split(x, 2, axis=axis)
    return ops.multiply(a, ops.nn.sigmoid(b))


def hard_shrink(x, threshold=0.5):
    """``x`` where ``|x| > threshold``, else 0.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.hard_shrink(ops.convert_to_tensor([-1.0, 0.25, 0.75]))).tolist()
        [-1.0, 0.0, 0.75]
    """
    x = _float(x)
    return ops.where(ops.greater(ops.abs(x), threshold), x, ops.zeros_like(x))


def _hard_sigmoid(x):
    return ops.clip(ops.add(ops.divide(x, 6.0), 0.5), 0.0, 1.0)


def hard_silu(x):
    """``x * relu6(x + 3) / 6`` (Keras's hard SiLU / hard swish).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.hard_silu(ops.convert_to_tensor([0.0, 1.5, 3.0]))).tolist()
        [0.0, 1.125, 3.0]
    """
    x = _float(x)
    return ops.multiply(x, _hard_sigmoid(x))


def hard_swish(x):
    """Alias of :func:`hard_silu`.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.hard_swish(ops.convert_to_tensor([0.0, 1.5, 3.0]))).tolist()
        [0.0, 1.125, 3.0]
    """
    return hard_silu(x)


def hard_tanh(x):
    """``clip(x, -1, 1)``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.hard_tanh(ops.convert_to_tensor([-2.0, 0.5, 3.0]))).tolist()
        [-1.0, 0.5, 1.0]
    """
    return ops.clip(_float(x), -1.0, 1.0)


def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``, stable for large ``|x|``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.log_sigmoid(ops.convert_to_tensor([0.0, -100.0]))).astype(float).round(4).tolist()
        [-0.6931, -100.0]
    """
    return ops.negative(ops.nn.softplus(ops.negative(_float(x))))


def soft_shrink(x, threshold=0.5):
    """``x - threshold`` above ``threshold``, ``x + threshold`` below ``-threshold``, else 0.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.soft_shrink(ops.convert_to_tensor([-1.0, 0.25, 1.0]))).tolist()
        [-0.5, 0.0, 0.5]
    """
    x = _float(x)
    shrunk = ops.where(ops.greater(x, threshold), ops.subtract(x, threshold), ops.add(x, threshold))
    return ops.where(ops.greater(ops.abs(x), threshold), shrunk, ops.zeros_like(x))


def sparse_plus(x):
    """0 for ``x <= -1``, ``x`` for ``x >= 1``, ``(x + 1)**2 / 4`` between.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.sparse_plus(ops.convert_to_tensor([-2.0, 0.0, 2.0]))).tolist()
        [0.0, 0.25, 2.0]
    """
    x = _float(x)
    middle = ops.divide(ops.square(ops.add(x, 1.0)), 4.0)
    return ops.where(ops.less_equal(x, -1.0), ops.zeros_like(x), ops.where(ops.greater_equal(x, 1.0), x, middle))


def sparse_sigmoid(x):
    """0 for ``x <= -1``, 1 for ``x >= 1``, ``(x + 1) / 2`` between.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.sparse_sigmoid(ops.convert_to_tensor([-2.0, 0.0, 2.0]))).tolist()
        [0.0, 0.5, 1.0]
    """
    return ops.clip(ops.divide(ops.add(_float(x), 1.0), 2.0), 0.0, 1.0)


def sparsemax(x, axis=-1):
    """Euclidean projection of ``x`` onto the probability simplex along ``axis`` (Martins & Astudillo, 2016).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.sparsemax(ops.convert_to_tensor([[1.0, 0.5], [3.0, 0.0]]))).tolist()
        [[0.75, 0.25], [1.0, 0.0]]
    """
    x = ops.moveaxis(_float(x), axis, -1)
    ordered = ops.flip(ops.sort(x, axis=-1), axis=-1)
    cumulative = ops.cumsum(ops.stop_gradient(ordered), axis=-1)
    k = ops.cast(ops.arange(1, ops.shape(x)[-1] + 1), ops.dtype(x))
    support = ops.greater(ops.add(1.0, ops.multiply(k, ops.stop_gradient(ordered))), cumulative)
    size = ops.sum(ops.cast(support, "int32"), axis=-1, keepdims=True)
    top_sum = ops.take_along_axis(ops.cumsum(ordered, axis=-1), ops.subtract(size, 1), axis=-1)
    tau = ops.divide(ops.subtract(top_sum, 1.0), ops.cast(size, ops.dtype(x)))
    return ops.moveaxis(ops.maximum(ops.subtract(x, tau), 0.0), -1, axis)


def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.squareplus(ops.convert_to_tensor([0.0, 1.5]))).tolist()
        [1.0, 2.0]
    """
    x = _float(x)
    return ops.divide(ops.add(x, ops.sqrt(ops.add(ops.square(x), b))), 2.0)


def swish(x):
    """Alias of ``ops.nn.silu``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.swish(ops.convert_to_tensor([0.0, 1.0]))).astype(float).round(4).tolist()
        [0.0, 0.7311]
    """
    return ops.nn.silu(_float(x))


def tanh_shrink(x):
    """``x - tanh(x)``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.tanh_shrink(ops.convert_to_tensor([0.0, 1.0]))).astype(float).round(4).tolist()
        [0.0, 0.2384]
    """
    x = _float(x)
    return ops.subtract(x, ops.tanh(x))


def threshold(x, threshold, default_value):
    """``x`` where ``x > threshold``, else ``default_value``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.threshold(ops.convert_to_tensor([-1.0, 2.0]), 0.0, -5.0)).tolist()
        [-5.0, 2.0]
    """
    x = _float(x)
    return ops.where(ops.greater(x, threshold), x, ops.full_like(x, default_value))


# ------------------------------------------------------------------------ normalizations
def normalize(x, axis=-1, order=2, epsilon=None):
    """``x`` divided by its ``order``-norm along ``axis`` (at least ``epsilon``).

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.normalize(ops.convert_to_tensor([[3.0, 4.0]]))).astype(float).round(4).tolist()
        [[0.6, 0.8]]
    """
    x = _float(x)
    epsilon = global_settings.epsilon() if epsilon is None else epsilon
    if order == 2:
        squares = ops.sum(ops.square(x), axis=axis, keepdims=True)
        return ops.multiply(x, ops.rsqrt(ops.maximum(squares, epsilon * epsilon)))
    norm = ops.linalg.norm(x, ord=order, axis=axis, keepdims=True)
    return ops.divide(x, ops.maximum(norm, epsilon))


def _broadcast_along(vector, axis, rank):
    if vector is None or ops.ndim(vector) != 1 or rank <= 1:
        return vector
    shape = [1] * rank
    shape[axis % rank] = ops.shape(vector)[0]
    return ops.reshape(vector, tuple(shape))


def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
    """``(x - mean) / sqrt(variance + epsilon) * scale + offset``, the 1-D statistics along ``axis``.

    Example:
        >>> from ember import ops
        >>> x = ops.convert_to_tensor([[1.0, 2.0], [3.0, 6.0]])
        >>> y = ops.batch_normalization(x, mean=[2.0, 4.0], variance=[1.0, 4.0], axis=-1, epsilon=0.0)
        >>> ops.to_numpy(y).tolist()
        [[-1.0, -1.0], [1.0, 1.0]]
    """
    x = _float(x)
    rank = ops.ndim(x)
    mean, variance = _broadcast_along(_float(mean), axis, rank), _broadcast_along(_float(variance), axis, rank)
    y = ops.multiply(ops.subtract(x, mean), ops.rsqrt(ops.add(variance, epsilon)))
    if scale is not None:
        y = ops.multiply(y, _broadcast_along(_float(scale), axis, rank))
    if offset is not None:
        y = ops.add(y, _broadcast_along(_float(offset), axis, rank))
    return y


def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=None):
    """Normalize over ``axis`` to zero mean and unit variance, then scale by ``gamma`` and shift by ``beta``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.layer_normalization(ops.convert_to_tensor([[1.0, 3.0]]))).astype(float).round(2).tolist()
        [[-1.0, 1.0]]
    """
    x = _float(x)
    epsilon = 1e-3 if epsilon is None else epsilon
    mean = ops.mean(x, axis=axis, keepdims=True)
    variance = ops.var(x, axis=axis, keepdims=True)
    y = ops.multiply(ops.subtract(x, mean), ops.rsqrt(ops.add(variance, epsilon)))
    if gamma is not None:
        y = ops.multiply(y, gamma)
    if beta is not None:
        y = ops.add(y, beta)
    return y


def rms_normalization(x, scale=None, axis=-1, epsilon=None):
    """``x / sqrt(mean(x**2, axis) + epsilon) * scale``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.rms_normalization(ops.convert_to_tensor([[2.0, -2.0]]))).astype(float).round(4).tolist()
        [[1.0, -1.0]]
    """
    x = _float(x)
    epsilon = global_settings.epsilon() if epsilon is None else epsilon
    y = ops.multiply(x, ops.rsqrt(ops.add(ops.mean(ops.square(x), axis=axis, keepdims=True), epsilon)))
    return y if scale is None else ops.multiply(y, scale)


# ------------------------------------------------------------------------ losses
def binary_crossentropy(target, output, from_logits=False):
    """Elementwise binary cross-entropy (probabilities clipped to ``[1e-7, 1 - 1e-7]``).

    Example:
        >>> from ember import ops
        >>> target, output = ops.convert_to_tensor([1.0, 0.0]), ops.convert_to_tensor([0.5, 0.5])
        >>> ops.to_numpy(ops.binary_crossentropy(target, output)).astype(float).round(4).tolist()
        [0.6931, 0.6931]
    """
    target, output = _float(target), _float(output)
    if from_logits:
        return ops.add(ops.subtract(ops.maximum(output, 0.0), ops.multiply(output, target)),
                       ops.log1p(ops.exp(ops.negative(ops.abs(output)))))
    output = ops.clip(output, global_settings.epsilon(), 1.0 - global_settings.epsilon())
    return ops.negative(ops.add(ops.multiply(target, ops.log(output)),
                                ops.multiply(ops.subtract(1.0, target), ops.log(ops.subtract(1.0, output)))))


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy between one-hot (or soft) ``target`` and ``output`` along ``axis``.

    Example:
        >>> from ember import ops
        >>> target, output = ops.convert_to_tensor([[0.0, 1.0]]), ops.convert_to_tensor([[0.5, 0.5]])
        >>> ops.to_numpy(ops.categorical_crossentropy(target, output)).astype(float).round(4).tolist()
        [0.6931]
    """
    target, output = _float(target), _float(output)
    if from_logits:
        log_probabilities = ops.nn.log_softmax(output, axis=axis)
    else:
        output = ops.divide(output, ops.sum(output, axis=axis, keepdims=True))
        log_probabilities = ops.log(ops.clip(output, global_settings.epsilon(), 1.0 - global_settings.epsilon()))
    return ops.negative(ops.sum(ops.multiply(target, log_probabilities), axis=axis))


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy between integer class ``target`` and ``output`` along ``axis``.

    Example:
        >>> from ember import ops
        >>> target, output = ops.convert_to_tensor([1]), ops.convert_to_tensor([[0.5, 0.5]])
        >>> ops.to_numpy(ops.sparse_categorical_crossentropy(target, output)).astype(float).round(4).tolist()
        [0.6931]
    """
    output = _float(output)
    depth = ops.shape(output)[axis]
    target = target if ops.is_array(target) else ops.convert_to_tensor(target)
    one_hot = ops.one_hot(ops.cast(target, "int32"), depth, dtype=ops.dtype(output), axis=axis)
    return categorical_crossentropy(one_hot, output, from_logits=from_logits, axis=axis)


def multi_hot(inputs, num_classes=None, axis=-1, dtype=None, sparse=False):
    """Multi-hot encoding: the last axis of integer ``inputs`` holds the active classes of one sample.

    Raises:
        ValueError: ``num_classes`` missing or ``sparse=True``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.multi_hot(ops.convert_to_tensor([[0, 2], [1, 1]]), num_classes=3)).tolist()
        [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    """
    if num_classes is None:
        raise ValueError("multi_hot: num_classes is required")
    if sparse:
        raise ValueError("multi_hot: sparse=True is not supported (Ember has no sparse arrays)")
    inputs = inputs if ops.is_array(inputs) else ops.convert_to_tensor(inputs)
    hot = ops.one_hot(ops.cast(inputs, "int32"), num_classes, dtype=dtypes.floatx() if dtype is None else dtype)
    out = ops.max(hot, axis=-2 if ops.ndim(inputs) > 1 else 0)
    return out if axis == -1 else ops.moveaxis(out, -1, axis)


# ------------------------------------------------------------------------ convolution and pooling
def _data_format(data_format):
    return global_settings.image_data_format() if data_format is None else data_format


def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """Depthwise convolution: each input channel convolved with its own ``(..., in, multiplier)`` filters.

    Example:
        >>> from ember import ops
        >>> y = ops.depthwise_conv(ops.ones((1, 5, 5, 2)), ops.ones((3, 3, 2, 1)))
        >>> ops.shape(y), ops.to_numpy(y)[0, 0, 0].tolist()
        ((1, 3, 3, 2), [9.0, 9.0])
    """
    kernel = _float(kernel)
    shape = tuple(ops.shape(kernel))
    grouped = ops.reshape(kernel, shape[:-2] + (1, shape[-2] * shape[-1]))
    return ops.nn.conv(inputs, grouped, strides=strides, padding=padding, data_format=_data_format(data_format),
                       dilation_rate=dilation_rate)


def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1):
    """Depthwise convolution followed by a pointwise (1x1) convolution.

    Example:
        >>> from ember import ops
        >>> y = ops.separable_conv(ops.ones((1, 5, 5, 2)), ops.ones((3, 3, 2, 1)), ops.ones((1, 1, 2, 4)))
        >>> ops.shape(y), ops.to_numpy(y)[0, 0, 0].tolist()
        ((1, 3, 3, 4), [18.0, 18.0, 18.0, 18.0])
    """
    hidden = depthwise_conv(inputs, depthwise_kernel, strides, padding, data_format, dilation_rate)
    return ops.nn.conv(hidden, pointwise_kernel, strides=1, padding="valid", data_format=_data_format(data_format))


def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Alias of ``ops.nn.avg_pool`` (Keras's name).

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.arange(4, dtype='float32'), (1, 4, 1))
        >>> ops.to_numpy(ops.average_pool(x, 2)).ravel().tolist()
        [0.5, 2.5]
    """
    return ops.nn.avg_pool(inputs, pool_size, strides=strides, padding=padding, data_format=_data_format(data_format))


def _adaptive_pool(op, inputs, output_size, data_format, reduce):
    inputs = inputs if ops.is_array(inputs) else ops.convert_to_tensor(inputs)
    channels_last = _data_format(data_format) == "channels_last"
    spatial = ops.ndim(inputs) - 2
    if spatial < 1:
        raise ValueError(f"{op}: inputs must have rank >= 3 (batch, spatial..., channels), received "
                         f"shape {ops.shape(inputs)}")
    sizes = (output_size,) * spatial if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != spatial or any(not isinstance(s, int) or s <= 0 for s in sizes):
        raise ValueError(f"{op}: output_size must be a positive int or {spatial} positive ints, "
                         f"received {output_size!r}")
    x = inputs
    first = 1 if channels_last else 2
    for offset, out in enumerate(sizes):
        axis = first + offset
        length = ops.shape(x)[axis]
        pieces = []
        for i in range(out):  # PyTorch's (and Keras's) bins: [floor(i L / out), ceil((i + 1) L / out))
            start, stop = (i * length) // out, -((-(i + 1) * length) // out)
            window = ops.take(x, ops.arange(start, stop), axis=axis)
            pieces.append(reduce(window, axis=axis, keepdims=True))
        x = ops.concatenate(pieces, axis=axis)
    return x


def adaptive_average_pool(inputs, output_size, data_format=None):
    """Average pooling to a fixed ``output_size`` (bins as in PyTorch's adaptive pooling).

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.arange(6, dtype='float32'), (1, 6, 1))
        >>> ops.to_numpy(ops.adaptive_average_pool(x, 2)).ravel().tolist()
        [1.0, 4.0]
    """
    return _adaptive_pool("adaptive_average_pool", inputs, output_size, data_format, ops.mean)


def adaptive_max_pool(inputs, output_size, data_format=None):
    """Max pooling to a fixed ``output_size`` (bins as in PyTorch's adaptive pooling).

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.arange(6, dtype='float32'), (1, 6, 1))
        >>> ops.to_numpy(ops.adaptive_max_pool(x, 2)).ravel().tolist()
        [2.0, 5.0]
    """
    return _adaptive_pool("adaptive_max_pool", inputs, output_size, data_format, ops.max)


# ------------------------------------------------------------------------ attention and metrics
def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False,
                          flash_attention=None, attn_logits_soft_cap=None):
    """Scaled dot-product attention on ``(batch, length, heads, head_dim)`` arrays (Keras's layout).

    ``mask`` (bool, broadcast to ``(batch, heads, query_length, key_length)``) keeps the
    positions where it is True; ``is_causal`` also hides later keys. Runs
    ``ops.nn.dot_product_attention`` (the backend's fused kernel where it has one).

    Raises:
        ValueError: ``flash_attention=True`` (Ember has no flash-attention kernel).

    Example:
        >>> from ember import ops
        >>> q, k, v = ops.ones((1, 3, 2, 4)), ops.ones((1, 5, 2, 4)), ops.ones((1, 5, 2, 4))
        >>> y = ops.dot_product_attention(q, k, v)
        >>> ops.shape(y), bool(ops.all(ops.equal(y, 1.0)))
        ((1, 3, 2, 4), True)
    """
    if flash_attention:
        raise ValueError("dot_product_attention: flash_attention=True is not available in Ember; "
                         "pass flash_attention=None or False")
    query, key, value = _float(query), _float(key), _float(value)
    if ops.ndim(query) != 4 or ops.ndim(key) != 4 or ops.ndim(value) != 4:
        raise ValueError("dot_product_attention: query, key and value must be (batch, length, heads, head_dim), "
                         f"received shapes {ops.shape(query)}, {ops.shape(key)}, {ops.shape(value)}")
    # The protocol op: the backend's fused kernel (torch's F.scaled_dot_product_attention, MLX's
    # mx.fast one) or the composite (NumPy); see ember.backends._spec.nn.dot_product_attention.
    return ops.nn.dot_product_attention(query, key, value, bias=bias, mask=mask, scale=scale, is_causal=is_causal,
                                        attn_logits_soft_cap=attn_logits_soft_cap)


def psnr(x1, x2, max_val):
    """Peak signal-to-noise ratio ``20 log10(max_val) - 10 log10(mean((x1 - x2)**2))`` in dB.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.psnr(ops.zeros((4,)), ops.ones((4,)), 10.0)).astype(float).round(3).tolist()
        20.0
    """
    mse = ops.mean(ops.square(ops.subtract(_float(x1), _float(x2))))
    return ops.subtract(20.0 * _math.log10(max_val), ops.multiply(10.0 / _math.log(10.0), ops.log(mse)))


def in_top_k(targets, predictions, k):
    """True where the class ``targets[i]`` is among the ``k`` highest ``predictions[i]`` (ties count in).

    Example:
        >>> from ember import ops
        >>> predictions = ops.convert_to_tensor([[1.0, 3.0], [1.0, 3.0]])
        >>> ops.to_numpy(ops.in_top_k(ops.convert_to_tensor([1, 0]), predictions, k=1)).tolist()
        [True, False]
    """
    predictions = _float(predictions)
    targets = ops.cast(targets if ops.is_array(targets) else ops.convert_to_tensor(targets), "int32")
    target_score = ops.take_along_axis(predictions, ops.expand_dims(targets, -1), axis=-1)
    higher = ops.sum(ops.cast(ops.greater(predictions, target_score), "int32"), axis=-1)
    return ops.less(higher, k)


def depth_to_space(x, block_size, data_format="channels_last"):
    """Move blocks of channels into ``block_size x block_size`` spatial blocks (4-D inputs).

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.arange(4), (1, 1, 1, 4))
        >>> y = ops.depth_to_space(x, 2)
        >>> ops.shape(y), ops.to_numpy(y)[0, :, :, 0].tolist()
        ((1, 2, 2, 1), [[0, 1], [2, 3]])
    """
    x = x if ops.is_array(x) else ops.convert_to_tensor(x)
    if data_format == "channels_first":
        x = ops.transpose(x, (0, 2, 3, 1))
    b, h, w, c = ops.shape(x)
    if c % (block_size * block_size):
        raise ValueError(f"depth_to_space: channels {c} must be divisible by block_size**2 = {block_size ** 2}")
    depth = c // (block_size * block_size)
    x = ops.reshape(x, (b, h, w, block_size, block_size, depth))
    x = ops.reshape(ops.transpose(x, (0, 1, 3, 2, 4, 5)), (b, h * block_size, w * block_size, depth))
    return ops.transpose(x, (0, 3, 1, 2)) if data_format == "channels_first" else x


def space_to_depth(x, block_size, data_format="channels_last"):
    """Move ``block_size x block_size`` spatial blocks into channels (4-D inputs).

    Example:
        >>> from ember import ops
        >>> x = ops.reshape(ops.arange(4), (1, 2, 2, 1))
        >>> y = ops.space_to_depth(x, 2)
        >>> ops.shape(y), ops.to_numpy(y).ravel().tolist()
        ((1, 1, 1, 4), [0, 1, 2, 3])
    """
    x = x if ops.is_array(x) else ops.convert_to_tensor(x)
    if data_format == "channels_first":
        x = ops.transpose(x, (0, 2, 3, 1))
    b, h, w, c = ops.shape(x)
    if h % block_size or w % block_size:
        raise ValueError(f"space_to_depth: height {h} and width {w} must be divisible by block_size={block_size}")
    x = ops.reshape(x, (b, h // block_size, block_size, w // block_size, block_size, c))
    x = ops.reshape(ops.transpose(x, (0, 1, 3, 2, 4, 5)), (b, h // block_size, w // block_size, block_size ** 2 * c))
    return ops.transpose(x, (0, 3, 1, 2)) if data_format == "channels_first" else x


def extract_sequences(x, sequence_length, sequence_stride):
    """Frames of ``sequence_length`` taken every ``sequence_stride`` along the last axis: ``(..., frames, length)``.

    Example:
        >>> from ember import ops
        >>> ops.to_numpy(ops.extract_sequences(ops.arange(5), 2, 2)).tolist()
        [[0, 1], [2, 3]]
    """
    x = x if ops.is_array(x) else ops.convert_to_tensor(x)
    length = ops.shape(x)[-1]
    if sequence_length > length:
        raise ValueError(f"extract_sequences: sequence_length={sequence_length} exceeds the last axis ({length})")
    frames = 1 + (length - sequence_length) // sequence_stride
    index = ops.add(ops.expand_dims(ops.multiply(ops.arange(frames), sequence_stride), 1),
                    ops.expand_dims(ops.arange(sequence_length), 0))
    return ops.take(x, index, axis=-1)


def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding ``kernel_size`` patches of a ``(N, C, H, W)`` array as ``(N, C * kh * kw, L)`` (PyTorch's unfold).

    Example:
        >>> from ember import ops
        >>> ops.shape(ops.unfold(ops.ones((1, 1, 3, 3)), 2))
        (1, 4, 4)
    """
    x = x if ops.is_array(x) else ops.convert_to_tensor(x)
    if ops.ndim(x) != 4:
        raise ValueError(f"unfold: x must be (N, C, H, W), received shape {ops.shape(x)}")
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (_pair(v) for v in (kernel_size, dilation, padding, stride))
    x = ops.pad(x, [(0, 0), (0, 0), (ph, ph), (pw, pw)])
    n, c, h, w = ops.shape(x)
    out_h, out_w = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    patches = []
    for i in range(kh):
        rows = ops.take(x, ops.add(ops.multiply(ops.arange(out_h), sh), i * dh), axis=2)
        for j in range(kw):
            patches.append(ops.take(rows, ops.add(ops.multiply(ops.arange(out_w), sw), j * dw), axis=3))
    stacked = ops.stack(patches, axis=2)  # (N, C, kh * kw, out_h, out_w)
    return ops.reshape(stacked, (n, c * kh * kw, out_h * out_w))


def segment_min(data, segment_ids, num_segments=None, sorted=False):
    """Minimum of ``data`` rows per segment (the negated ``ops.segment_max`` of ``-data``).

    Example:
        >>> from ember import ops
        >>> data, ids = ops.convert_to_tensor([5.0, 1.0, 3.0]), ops.convert_to_tensor([0, 0, 1])
        >>> ops.to_numpy(ops.segment_min(data, ids, num_segments=2)).tolist()
        [1.0, 3.0]
    """
    data = data if ops.is_array(data) else ops.convert_to_tensor(data)
    return ops.negative(ops.segment_max(ops.negative(data), segment_ids, num_segments=num_segments))


def segment_prod(data, segment_ids, num_segments=None, sorted=False):
    """Product of ``data`` rows per segment: magnitudes summed in log space, signs and zeros counted.

    Example:
        >>> from ember import ops
        >>> data, ids = ops.convert_to_tensor([2.0, -3.0, 4.0]), ops.convert_to_tensor([0, 0, 1])
        >>> ops.to_numpy(ops.segment_prod(data, ids, num_segments=2)).astype(float).round(3).tolist()
        [-6.0, 4.0]
    """
    data = _float(data)
    zero = ops.equal(data, 0)
    magnitude = ops.where(zero, ops.ones_like(data), ops.abs(data))
    log_sum = ops.segment_sum(ops.log(magnitude), segment_ids, num_segments=num_segments)
    negatives = ops.segment_sum(ops.cast(ops.less(data, 0), ops.dtype(data)), segment_ids, num_segments=num_segments)
    zeros = ops.segment_sum(ops.cast(zero, ops.dtype(data)), segment_ids, num_segments=num_segments)
    sign = ops.subtract(1.0, ops.multiply(2.0, ops.mod(negatives, 2.0)))
    return ops.where(ops.greater(zeros, 0), ops.zeros_like(log_sum), ops.multiply(sign, ops.exp(log_sum)))
