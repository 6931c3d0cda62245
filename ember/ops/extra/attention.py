"""The composite ``nn.dot_product_attention``: attention written with ``ember.ops``.

NumPy binds it (it has no fused kernel); torch and MLX define their own op with the fused
kernel and keep this as the reference their tests compare with. Like every composite
(:mod:`ember.ops.extra.composites`), it calls ``ember.ops`` at call time, so a recording tape sees
the ops it calls one by one and needs no rule of its own.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.ops.extra.attention import dot_product_attention
    >>> with ember.using_backend("numpy"):
    ...     x = ops.ones((1, 3, 2, 4))
    ...     ops.shape(dot_product_attention(x, x, x, is_causal=True))
    (1, 3, 2, 4)
"""

from __future__ import annotations

from ember import backends, ops
from ember.backends._attention_checks import check_attention, check_attention_dtypes, large_negative, no_fused_kernel


def _array(x):
    return x if x is None or ops.is_array(x) else ops.convert_to_tensor(x)


def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False,
                          flash_attention=None, attn_logits_soft_cap=None):
    # (Docstring: _spec.nn.dot_product_attention's, set by ember.ops.extra.composites.)
    q, k, v, bias, mask = (_array(a) for a in (query, key, value, bias, mask))
    heads, kv_heads, scale = check_attention(
        ops.shape(q), ops.shape(k), ops.shape(v), None if bias is None else ops.shape(bias),
        None if mask is None else ops.shape(mask), scale, flash_attention, attn_logits_soft_cap)
    check_attention_dtypes(ops.dtype(q), ops.dtype(k), ops.dtype(v))
    if flash_attention:
        raise no_fused_kernel(backends.current().name)
    q, k, v = (ops.transpose(a, (0, 2, 1, 3)) for a in (q, k, v))  # (B, heads, length, head_dim)
    if kv_heads != heads:
        k, v = ops.repeat(k, heads // kv_heads, axis=1), ops.repeat(v, heads // kv_heads, axis=1)
    logits = ops.matmul(ops.multiply(q, scale), ops.swapaxes(k, -1, -2))  # (B, N, T, S)
    if bias is not None:
        logits = ops.add(logits, bias)
    if attn_logits_soft_cap is not None:
        logits = ops.multiply(ops.nn.tanh(ops.divide(logits, attn_logits_soft_cap)), attn_logits_soft_cap)
    if is_causal:
        length, memory = ops.shape(logits)[-2:]
        rows = ops.expand_dims(ops.arange(length, dtype="int32"), 1)
        causal = ops.greater_equal(rows, ops.expand_dims(ops.arange(memory, dtype="int32"), 0))
        mask = causal if mask is None else ops.logical_and(ops.cast(mask, "bool"), causal)
    if mask is not None:
        logits = ops.where(ops.cast(mask, "bool"), logits, large_negative(ops.dtype(logits)))
    out = ops.matmul(ops.nn.softmax(logits, axis=-1), v)  # (B, N, T, Hv)
    return ops.transpose(out, (0, 2, 1, 3))
