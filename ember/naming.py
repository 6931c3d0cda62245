"""Default object names, as Keras makes them: a class name in snake_case.

Layers (``Conv2D`` -> ``conv2d``, then ``conv2d_1``, ...), models, losses and metrics all name
themselves with :func:`to_snake_case`, so Ember's automatic names match Keras's.

Example:
    >>> [to_snake_case(n) for n in ("Conv2D", "GlobalAveragePooling2D", "LSTM", "KLDivergence", "CfC")]
    ['conv2d', 'global_average_pooling2d', 'lstm', 'kl_divergence', 'cf_c']
"""

from __future__ import annotations

import re


def to_snake_case(name: str) -> str:
    """``"MultiHeadAttention"`` -> ``"multi_head_attention"``; digits stay with what precedes them."""
    name = re.sub(r"\W+", "", name)
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()
