"""The two ways the multi-head attention layers attend: the fused op, or the composite.

``MultiHeadAttention`` and ``GroupQueryAttention`` project to heads in Keras's ``(batch,
length, heads, head_dim)`` layout, then either call ``ops.nn.dot_product_attention`` (the
backend's fused kernel: torch's ``scaled_dot_product_attention``, MLX's
``mx.fast.scaled_dot_product_attention``; NumPy's composite) or, for what the fused kernels
cannot do (return the attention probabilities, attention dropout with Ember's seed), compute
scores, the masked softmax, dropout and the weighted sum op by op. Both give the same values
and gradients (to float rounding); ``tests/layers/test_fused_attention.py`` checks it.

Example:
    >>> import ember
    >>> from ember import layers
    >>> from ember.layers.attention._fused import use_fused_kernel
    >>> mha = layers.MultiHeadAttention(num_heads=2, key_dim=3)
    >>> use_fused_kernel(mha, False, False), use_fused_kernel(mha, True, False)
    (True, False)
"""

from __future__ import annotations

import math
from typing import Any

from ember import global_settings, ops
from ember.layers.attention._common import dropout_weights, masked_softmax


def use_fused_kernel(layer: Any, return_attention_scores: bool, training: bool) -> bool:
    """Whether ``layer`` attends through ``ops.nn.dot_product_attention`` on this call.

    Not when it must return the probabilities, nor with attention dropout while training (the
    kernels draw their own masks, which Ember's seeds cannot reproduce), nor with
    ``flash_attention=False`` (the layer's own setting, else ``ember.config``'s switch:
    ``disable_flash_attention()`` turns the fused path off for every layer left at None).
    ``flash_attention=True`` with ``return_attention_scores`` is a ValueError, as in Keras.
    """
    if layer.flash_attention and return_attention_scores:
        raise ValueError(
            f"layer {layer.name!r}: return_attention_scores=True needs the composite path, but the layer has "
            f"flash_attention=True; build it with flash_attention=None (or False) to get the scores")
    flash = layer.flash_attention if layer.flash_attention is not None else global_settings.flash_attention()
    if flash is False or return_attention_scores:
        return False
    return not (training and layer.dropout > 0.0)


def project_heads(params: dict, x: Any, batch: int, length: int, heads: int, head_dim: int,
                  use_bias: bool) -> Any:
    """``x`` ``(batch, *positions, dim)`` through a ``(dim, heads, head_dim)`` kernel -> ``(batch, length,
    heads, head_dim)``: one ``ops.nn.dense`` (the kernel reshaped to ``(dim, heads * head_dim)``; the
    bias in the same GEMM on torch and MLX)."""
    kernel = params["kernel"]
    dim = ops.shape(kernel)[0]
    bias = ops.reshape(params["bias"], (heads * head_dim,)) if use_bias else None
    y = ops.nn.dense(ops.reshape(x, (batch, length, dim)), ops.reshape(kernel, (dim, heads * head_dim)), bias)
    return ops.reshape(y, (batch, length, heads, head_dim))


def project_self_attention(params: dict, x: Any, batch: int, length: int, heads: tuple[int, int, int],
                           head_dim: int, use_bias: bool) -> tuple[Any, Any, Any]:
    """``(q, k, v)`` of self-attention, each ``(batch, length, its heads, head_dim)``, from one GEMM: the
    ``query``, ``key`` and ``value`` kernels ``(dim, heads[i], head_dim)`` side by side (as the fused
    ``in_proj`` of ``torch.nn.MultiheadAttention``), the same sums as three :func:`project_heads`."""
    names = ("query", "key", "value")
    dim = ops.shape(params["query"]["kernel"])[0]
    kernel = ops.concatenate([ops.reshape(params[name]["kernel"], (dim, count * head_dim))
                              for name, count in zip(names, heads)], axis=1)
    bias = (ops.concatenate([ops.reshape(params[name]["bias"], (count * head_dim,))
                             for name, count in zip(names, heads)]) if use_bias else None)
    y = ops.reshape(ops.nn.dense(ops.reshape(x, (batch, length, dim)), kernel, bias),
                    (batch, length, sum(heads), head_dim))
    q, k, v = ops.split(y, [heads[0], heads[0] + heads[1]], axis=2)
    return q, k, v


def attend_unfused(layer: Any, q: Any, k: Any, v: Any, mask: Any, training: bool, rng: Any) -> tuple[Any, Any]:
    """``(context (B, T, N, Hv), probabilities (B, N, T, S))`` computed op by op.

    ``q`` ``(B, T, N, H)``; ``k``/``v`` ``(B, S, K, .)`` with ``N`` a multiple of ``K`` (each key/value
    head serves ``N // K`` query heads); ``mask`` boolean, broadcastable to ``(B, T, S)``, or None.
    Dropout on the probabilities while training (the layer's ``dropout`` and seed).
    """
    heads, kv_heads = ops.shape(q)[2], ops.shape(k)[2]
    q, k, v = (ops.transpose(a, (0, 2, 1, 3)) for a in (q, k, v))  # (B, heads, length, head_dim)
    if kv_heads != heads:
        k, v = ops.repeat(k, heads // kv_heads, axis=1), ops.repeat(v, heads // kv_heads, axis=1)
    q = ops.multiply(q, 1.0 / math.sqrt(ops.shape(q)[-1]))
    scores = ops.matmul(q, ops.swapaxes(k, -1, -2))                                     # (B, N, T, S)
    probabilities = masked_softmax(scores, None if mask is None else ops.expand_dims(mask, 1))
    context = ops.matmul(dropout_weights(layer, probabilities, training, rng), v)      # (B, N, T, Hv)
    return ops.transpose(context, (0, 2, 1, 3)), probabilities
