"""``nn.dot_product_attention`` on torch: ``torch.nn.functional.scaled_dot_product_attention``.

The fused kernel (flash attention on the CPU and CUDA, memory-efficient/cuDNN on CUDA) gets
``(B, N, T, H)`` views of the ``(B, T, N, H)`` operands (transposes, no copies) and gives one
autograd node. ``is_causal`` with no other mask goes to the kernel as ``is_causal=True``: no
T x S mask is built. A boolean mask goes in as it is (with a bias: the bias, ``-inf`` where
masked); the kernel gives a fully masked row zeros, which are replaced by the uniform average
of ``v`` (Ember's rule on every backend: masked scores are ``-1e9``, not ``-inf``).
``flash_attention=False`` and a logits soft cap run the unfused computation in torch ops.

Example:
    >>> import torch
    >>> from ember.backends.torch._attention import dot_product_attention
    >>> x = torch.ones(1, 3, 2, 4)
    >>> tuple(dot_product_attention(x, x, x, is_causal=True).shape)
    (1, 3, 2, 4)
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ember.backends._attention_checks import check_attention, check_attention_dtypes, large_negative
from ember.backends.torch._base import FLOATING, dtype_name, native


def _causal(length: int, memory: int, device: Any) -> torch.Tensor:
    """``(T, S)`` boolean, top-left aligned: ``i`` attends to ``j <= i``."""
    return torch.ones(length, memory, dtype=torch.bool, device=device).tril()


def _kernel_mask(mask: torch.Tensor | None, bias: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """The kernel's ``attn_mask``: the boolean mask, or the bias with ``-inf`` where the mask is False."""
    if mask is not None and mask.dtype is not torch.bool:
        mask = mask.to(torch.bool)
    if bias is None:
        return mask
    bias = bias if bias.dtype is dtype else bias.to(dtype)
    return bias if mask is None else bias.masked_fill(~mask, float("-inf"))


def uniform_where_fully_masked(out: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, heads: int) -> torch.Tensor:
    """``out`` (``(B, N, T, Hv)``) with each fully masked row replaced by the mean of ``v``.

    Ember's (and Keras's) rule: a masked score is ``-1e9``, not ``-inf``, so a row with every
    position masked gets uniform weights; the kernel gives zeros there. The gradient follows:
    such a row reaches ``v`` through the mean and ``q``/``k`` not at all, as in the composite.
    """
    empty = ~mask.any(dim=-1, keepdim=True)  # (..., T, 1)
    mean = v.mean(dim=-2, keepdim=True)
    if mean.shape[1] != heads:
        mean = mean.repeat_interleave(heads // mean.shape[1], 1)
    return torch.where(empty, mean, out)


def _unfused(q, k, v, bias, mask, scale, is_causal, soft_cap):
    """The reference computation in torch ops (``(B, N, T, H)`` operands)."""
    logits = torch.matmul(q * scale, k.transpose(-1, -2))
    if bias is not None:
        logits = logits + bias.to(logits.dtype)
    if soft_cap is not None:
        logits = torch.tanh(logits / soft_cap) * soft_cap
    if is_causal:
        causal = _causal(logits.shape[-2], logits.shape[-1], logits.device)
        mask = causal if mask is None else mask.to(torch.bool) & causal
    if mask is not None:
        logits = logits.masked_fill(~mask.to(torch.bool), large_negative(dtype_name(logits.dtype)))
    return torch.matmul(torch.softmax(logits, dim=-1), v)


def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False,
                          flash_attention=None, attn_logits_soft_cap=None):
    q, k, v = native(query, "query"), native(key, "key"), native(value, "value")
    b = None if bias is None else native(bias, "bias")
    m = None if mask is None else native(mask, "mask")
    heads, kv_heads, scale = check_attention(
        tuple(q.shape), tuple(k.shape), tuple(v.shape), None if b is None else tuple(b.shape),
        None if m is None else tuple(m.shape), scale, flash_attention, attn_logits_soft_cap)
    if q.dtype not in FLOATING or k.dtype is not q.dtype or v.dtype is not q.dtype:
        check_attention_dtypes(dtype_name(q.dtype), dtype_name(k.dtype), dtype_name(v.dtype))
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, N, T, H): views
    if flash_attention is False or attn_logits_soft_cap is not None:
        if kv_heads != heads:
            k, v = k.repeat_interleave(heads // kv_heads, 1), v.repeat_interleave(heads // kv_heads, 1)
        out = _unfused(q, k, v, b, m, scale, is_causal, attn_logits_soft_cap)
        return out.transpose(1, 2)
    if is_causal and (m is not None or b is not None):  # the kernel takes is_causal or a mask, not both
        causal = _causal(q.shape[-2], k.shape[-2], q.device)
        m, is_causal = causal if m is None else m.to(torch.bool) & causal, False
    if m is not None and m.dtype is not torch.bool:
        m = m.to(torch.bool)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=_kernel_mask(m, b, q.dtype), is_causal=is_causal,
                                         scale=scale, enable_gqa=kv_heads != heads)
    if m is not None:
        out = uniform_where_fully_masked(out, v, m, heads)
    return out.transpose(1, 2)
