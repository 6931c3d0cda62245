"""Attention layers: MultiHeadAttention, GroupQueryAttention, Attention (Luong), AdditiveAttention (Bahdanau)."""

from ember.layers.attention.additive_attention import AdditiveAttention
from ember.layers.attention.attention import Attention
from ember.layers.attention.group_query_attention import GroupQueryAttention
from ember.layers.attention.multi_head_attention import MultiHeadAttention

GroupedQueryAttention = GroupQueryAttention  # Keras's alias

__all__ = ["AdditiveAttention", "Attention", "GroupQueryAttention", "GroupedQueryAttention", "MultiHeadAttention"]
