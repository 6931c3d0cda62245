"""Attention layers: MultiHeadAttention, Attention (Luong), AdditiveAttention (Bahdanau)."""

from ember.layers.attention.additive_attention import AdditiveAttention
from ember.layers.attention.attention import Attention
from ember.layers.attention.multi_head_attention import MultiHeadAttention

__all__ = ["AdditiveAttention", "Attention", "MultiHeadAttention"]
