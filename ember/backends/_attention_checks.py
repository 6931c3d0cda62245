"""Argument checks of ``nn.dot_product_attention``, shared by every backend and the composite.

The fused kernels (torch's ``scaled_dot_product_attention``, MLX's
``mx.fast.scaled_dot_product_attention``) and the composite of :mod:`ember.ops.extra.attention` run
the same checks, so their errors read the same on every backend.

Example:
    >>> from ember.backends._attention_checks import check_attention
    >>> check_attention((2, 5, 4, 16), (2, 6, 2, 16), (2, 6, 2, 3), None, None, None, None, None)
    (4, 2, 0.25)
"""

from __future__ import annotations

import math
from typing import Any

OP = "nn.dot_product_attention"


def large_negative(dtype_name: str) -> float:
    """The score given to a masked position: ``-1e9``, or ``-3e4`` in float16 (its range is ±65504).

    Not ``-inf``: a row whose every position is masked gets uniform weights, not NaN (Keras's rule).
    """
    return -3e4 if dtype_name == "float16" else -1e9


def _check_broadcast(argument: str, shape: tuple | None, full: tuple) -> None:
    if shape is None:
        return
    shape = tuple(shape)
    if len(shape) > 4 or any(s != 1 and s != f for s, f in zip(shape[::-1], full[::-1])):
        raise ValueError(f"{OP}: {argument} must broadcast to (batch, num_heads, T, S) = {full}, "
                         f"received shape {shape}")


def check_attention(query: tuple, key: tuple, value: tuple, bias: tuple | None, mask: tuple | None,
                    scale: Any, flash_attention: Any, attn_logits_soft_cap: Any) -> tuple[int, int, float]:
    """``(num_heads, num_key_value_heads, scale)`` of the operands' shapes; ValueError/TypeError otherwise.

    ``query`` is ``(B, T, N, H)``, ``key`` ``(B, S, K, H)``, ``value`` ``(B, S, K, Hv)`` with ``N`` a
    multiple of ``K`` (grouped-query attention); ``bias`` and ``mask`` broadcast to ``(B, N, T, S)``.
    """
    query, key, value = tuple(query), tuple(key), tuple(value)
    for argument, shape in (("query", query), ("key", key), ("value", value)):
        if len(shape) != 4:
            raise ValueError(f"{OP}: {argument} must have shape (batch, length, num_heads, head_dim), "
                             f"received shape {shape}")
    batch, length, heads, head_dim = query
    if key[0] != batch or value[0] != batch:
        raise ValueError(f"{OP}: query, key and value must have one batch size, received shapes "
                         f"{query}, {key}, {value}")
    if key[1] != value[1] or key[2] != value[2]:
        raise ValueError(f"{OP}: key and value must have the same length and number of heads, received "
                         f"key shape {key} and value shape {value}")
    if key[3] != head_dim:
        raise ValueError(f"{OP}: key must have the query's head_dim {head_dim}, received key shape {key}")
    kv_heads = key[2]
    if kv_heads == 0 or heads % kv_heads:
        raise ValueError(f"{OP}: the query's num_heads ({heads}) must be a multiple of the key's ({kv_heads}), "
                         f"received query shape {query} and key shape {key}")
    full = (batch, heads, length, key[1])
    _check_broadcast("bias", bias, full)
    _check_broadcast("mask", mask, full)
    if flash_attention is not None and not isinstance(flash_attention, bool):
        raise TypeError(f"{OP}: flash_attention must be None, True or False, received {flash_attention!r}")
    if attn_logits_soft_cap is not None and (
            isinstance(attn_logits_soft_cap, bool) or not isinstance(attn_logits_soft_cap, (int, float))
            or not attn_logits_soft_cap > 0):
        raise ValueError(f"{OP}: attn_logits_soft_cap must be None or a positive number, "
                         f"received {attn_logits_soft_cap!r}")
    if scale is None:
        return heads, kv_heads, 1.0 / math.sqrt(head_dim) if head_dim else 1.0
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"{OP}: scale must be None or a number, received {scale!r}")
    return heads, kv_heads, float(scale)


def check_attention_dtypes(query: str, key: str, value: str) -> None:
    """TypeError unless query, key and value have one floating dtype (their dtype names)."""
    if not query.startswith(("float", "bfloat")) or key != query or value != query:
        raise TypeError(f"{OP}: query, key and value must have one floating dtype, received {query}, {key} "
                        f"and {value}")


def no_fused_kernel(backend: str) -> NotImplementedError:
    """The error of ``flash_attention=True`` on a backend without a fused attention kernel."""
    return NotImplementedError(
        f"{OP}: flash_attention=True needs a fused attention kernel, which the {backend} backend does not have; "
        f"use flash_attention=None (the composite path here) or the torch or mlx backend")
