"""``nn.dot_product_attention`` on MLX: ``mx.fast.scaled_dot_product_attention``.

The fused kernel takes ``(B, N, T, H)`` operands (transposes of the ``(B, T, N, H)`` ones),
grouped-query key/value heads as they are, a boolean or additive mask, and ``mask="causal"``
(used when ``is_causal`` comes alone and T == S: MLX aligns its causal mask bottom-right,
which equals Ember's top-left one only then). MLX's boolean mask already gives a fully masked
row uniform weights (with a bias too: such rows are set to the mean of ``v``).
float64 (MLX's fused kernel and softmax are float32-grade there),
``flash_attention=False`` and a logits soft cap run the unfused computation.

Example:
    >>> import mlx.core as mx
    >>> from ember.backends.mlx._attention import dot_product_attention
    >>> x = mx.ones((1, 3, 2, 4))
    >>> tuple(dot_product_attention(x, x, x, is_causal=True).shape)
    (1, 3, 2, 4)
"""

from __future__ import annotations

import mlx.core as mx

from ember.backends._attention_checks import check_attention, check_attention_dtypes, large_negative
from ember.backends.mlx import _f64
from ember.backends.mlx._base import FLOATS, to_mx

_FUSED_DTYPES = (mx.float32, mx.float16, mx.bfloat16)


def _causal(length: int, memory: int) -> mx.array:
    """``(T, S)`` boolean, top-left aligned: ``i`` attends to ``j <= i``."""
    return mx.arange(length)[:, None] >= mx.arange(memory)[None, :]


def _fill(dtype: mx.Dtype) -> mx.array:
    """The masked score in ``dtype`` (``-1e9``; ``-3e4`` in float16)."""
    return mx.array(large_negative("float16" if dtype == mx.float16 else "float"), dtype)


def _softmax(x: mx.array) -> mx.array:
    return _f64.softmax(x, [-1]) if x.dtype == mx.float64 else mx.softmax(x, axis=-1, precise=True)


def _unfused(q, k, v, bias, mask, scale, is_causal, soft_cap):
    """The reference computation in MLX ops (``(B, N, T, H)`` operands)."""
    logits = mx.matmul(q * mx.array(scale, q.dtype), mx.swapaxes(k, -1, -2))
    if bias is not None:
        logits = logits + bias.astype(logits.dtype)
    if soft_cap is not None:
        logits = mx.tanh(logits / soft_cap) * soft_cap
    if is_causal:
        causal = _causal(logits.shape[-2], logits.shape[-1])
        mask = causal if mask is None else mask.astype(mx.bool_) & causal
    if mask is not None:
        logits = mx.where(mask.astype(mx.bool_), logits, _fill(logits.dtype))
    return mx.matmul(_softmax(logits), v)


def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False,
                          flash_attention=None, attn_logits_soft_cap=None):
    q, k, v = to_mx(query, "query"), to_mx(key, "key"), to_mx(value, "value")
    b = None if bias is None else to_mx(bias, "bias")
    m = None if mask is None else to_mx(mask, "mask")
    heads, kv_heads, scale = check_attention(
        tuple(q.shape), tuple(k.shape), tuple(v.shape), None if b is None else tuple(b.shape),
        None if m is None else tuple(m.shape), scale, flash_attention, attn_logits_soft_cap)
    if q.dtype not in FLOATS or k.dtype != q.dtype or v.dtype != q.dtype:
        check_attention_dtypes(*(str(a.dtype).split(".")[-1] for a in (q, k, v)))
    q, k, v = (mx.swapaxes(a, 1, 2) for a in (q, k, v))  # (B, N, T, H)
    if flash_attention is False or attn_logits_soft_cap is not None or q.dtype not in _FUSED_DTYPES:
        if kv_heads != heads:
            k, v = mx.repeat(k, heads // kv_heads, axis=1), mx.repeat(v, heads // kv_heads, axis=1)
        return mx.swapaxes(_unfused(q, k, v, b, m, scale, is_causal, attn_logits_soft_cap), 1, 2)
    length, memory = q.shape[2], k.shape[2]
    fused_mask = None if m is None else m.astype(mx.bool_)
    if is_causal:
        if fused_mask is None and b is None and length == memory:
            fused_mask = "causal"
        else:
            causal = _causal(length, memory)
            fused_mask = causal if fused_mask is None else fused_mask & causal
    if b is not None:  # one additive mask: the bias, and -1e9 where the boolean mask is False
        additive = b.astype(q.dtype)
        if fused_mask is not None:
            additive = mx.where(fused_mask, additive, _fill(q.dtype))
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask=additive)
        if fused_mask is not None:  # the -1e9 added to the logits leaves a fully masked row non-uniform
            out = _uniform_where_fully_masked(out, v, fused_mask, heads)
        return mx.swapaxes(out, 1, 2)
    out = mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask=fused_mask)
    return mx.swapaxes(out, 1, 2)


def _uniform_where_fully_masked(out: mx.array, v: mx.array, mask: mx.array, heads: int) -> mx.array:
    """``out`` with each fully masked row replaced by the mean of ``v`` (uniform weights, Ember's rule)."""
    empty = ~mx.any(mask, axis=-1, keepdims=True)
    mean = mx.mean(v, axis=-2, keepdims=True)
    if mean.shape[1] != heads:
        mean = mx.repeat(mean, heads // mean.shape[1], axis=1)
    return mx.where(empty, mean, out)
