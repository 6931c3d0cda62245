"""Shape checks shared by the core layers: errors name the layer and the shape received."""

from __future__ import annotations

import math
from typing import Any

from ember.layers.layer import Layer
from ember.symbolic import is_dim


def input_shape_of(layer: Layer, input_shape: Any, min_rank: int = 1, rank: int | None = None) -> tuple:
    """``input_shape`` as a tuple of ints/None with a valid rank; ValueError naming the layer otherwise."""
    try:
        shape = tuple(input_shape)
    except TypeError:
        raise TypeError(f"layer {layer.name!r} expects a single input shape (a tuple), "
                        f"received {input_shape!r}") from None
    if any(d is not None and not is_dim(d) for d in shape):
        raise TypeError(f"layer {layer.name!r} expects a single input shape of ints/None, received {input_shape!r}")
    if rank is not None and len(shape) != rank:
        raise ValueError(f"layer {layer.name!r} expects inputs of rank {rank}, received shape {shape}")
    if len(shape) < min_rank:
        raise ValueError(f"layer {layer.name!r} expects inputs of rank >= {min_rank}, received shape {shape}")
    return shape


def known_size(dims: tuple) -> int | None:
    """Product of ``dims``, or None when one of them is unknown."""
    return None if any(d is None for d in dims) else math.prod(dims)
