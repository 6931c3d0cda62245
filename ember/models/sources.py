"""``is_keras_tensor`` and ``get_source_inputs``: questions about symbolic tensors of a functional graph.

Example:
    >>> import ember
    >>> from ember import layers
    >>> from ember.utils import get_source_inputs, is_keras_tensor
    >>> a, b = ember.Input((2,), name="a"), ember.Input((2,), name="b")
    >>> total = layers.Add()([layers.Dense(2)(a), b])
    >>> is_keras_tensor(total), is_keras_tensor([1.0])
    (True, False)
    >>> [t.name for t in get_source_inputs(total)]
    ['a', 'b']
"""

from __future__ import annotations

from typing import Any

import optree

from ember.layers.core.input_layer import InputLayer
from ember.symbolic import SymbolicTensor


def is_keras_tensor(x: Any) -> bool:
    """Whether ``x`` is a symbolic tensor (from ``ember.Input`` or a layer call on one)."""
    return isinstance(x, SymbolicTensor)


def _parents(tensor: SymbolicTensor) -> list[SymbolicTensor]:
    node = tensor.node
    tree: Any = [node.inputs, node.kwargs]
    leaves = optree.tree_leaves(tree, is_leaf=lambda v: isinstance(v, SymbolicTensor),
                                none_is_leaf=False)
    return [leaf for leaf in leaves if isinstance(leaf, SymbolicTensor)]


def get_source_inputs(tensor: Any) -> list[SymbolicTensor]:
    """The ``Input`` tensors ``tensor`` is computed from, in the order a depth-first walk meets them.

    Raises:
        TypeError: ``tensor`` is not a symbolic tensor.
    """
    if not isinstance(tensor, SymbolicTensor):
        raise TypeError(f"get_source_inputs: expected a symbolic tensor, received {type(tensor).__name__}")
    found: list[SymbolicTensor] = []
    seen: set[int] = set()
    stack = [tensor]
    while stack:
        current = stack.pop()
        if current.uid in seen:
            continue
        seen.add(current.uid)
        if isinstance(current.node.layer, InputLayer):
            found.append(current)
        else:
            stack.extend(reversed(_parents(current)))
    return found
