"""Symbolic tensors and nodes: how ``Input`` and layer calls record a model graph.

``ember.Input(shape)`` returns a :class:`SymbolicTensor`. Calling a layer on symbolic
tensors runs only the layer's ``compute_output_shape`` (no backend) and returns new
symbolic tensors that remember the :class:`Node` (layer + inputs) that made them.
``ember.Model(inputs, outputs)`` walks these nodes back from the outputs.

Example:
    >>> import ember
    >>> x = ember.Input((4,), name="features")
    >>> x.shape
    (None, 4)
"""

from __future__ import annotations

import itertools
from typing import Any

import optree

from ember import dtypes

_ids = itertools.count()


class Node:
    """One call of a layer on symbolic inputs.

    Attributes:
        layer: the layer called.
        inputs: the inputs as passed (a SymbolicTensor, or a list/tuple/dict of them),
            None for an input node.
        outputs: the symbolic outputs, as a flat list.
        structure: how to rebuild the outputs structure from the flat list.
        kwargs: static keyword arguments of the call.
    """

    __slots__ = ("layer", "inputs", "outputs", "structure", "kwargs")

    def __init__(self, layer: Any, inputs: Any, kwargs: dict | None = None) -> None:
        self.layer = layer
        self.inputs = inputs
        self.outputs: list[SymbolicTensor] = []
        self.structure: Any = None
        self.kwargs = dict(kwargs or {})

    def input_tensors(self) -> list["SymbolicTensor"]:
        if self.inputs is None:
            return []
        # Leaves are single tensors (``is_symbolic`` would also accept a whole list).
        return optree.tree_leaves(self.inputs, is_leaf=lambda v: isinstance(v, SymbolicTensor), none_is_leaf=False)

    def __repr__(self) -> str:
        return f"Node({self.layer.name})"


class SymbolicTensor:
    """A placeholder for a value in a model graph: shape (``None`` = unknown), dtype, producer."""

    __slots__ = ("shape", "dtype", "name", "node", "index", "uid")

    def __init__(self, shape: tuple, dtype: str, name: str, node: Node, index: int = 0) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype
        self.name = name
        self.node = node
        self.index = index
        self.uid = next(_ids)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"<SymbolicTensor name={self.name} shape={self.shape} dtype={self.dtype}>"

    def __iter__(self):
        raise TypeError(
            f"symbolic tensor {self.name!r} cannot be iterated; index it with a layer (e.g. Reshape/Lambda)"
        )

    def __bool__(self) -> bool:
        raise TypeError(f"symbolic tensor {self.name!r} has no truth value: it holds no data yet")


def is_symbolic(value: Any) -> bool:
    """True for a SymbolicTensor or a non-empty list/tuple/dict of them."""
    if isinstance(value, SymbolicTensor):
        return True
    if isinstance(value, (list, tuple)) and value:
        return all(isinstance(v, SymbolicTensor) for v in value)
    if isinstance(value, dict) and value:
        return all(isinstance(v, SymbolicTensor) for v in value.values())
    return False


def is_shape(value: Any) -> bool:
    """True for a single shape: a tuple of ints / None."""
    return isinstance(value, tuple) and all(d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in value)


def shapes_of(inputs: Any) -> Any:
    """The shape structure matching a structure of symbolic tensors."""
    return optree.tree_map(lambda t: t.shape, inputs, is_leaf=lambda v: isinstance(v, SymbolicTensor), none_is_leaf=False)


def _first_dtype(inputs: Any) -> str:
    leaves = optree.tree_leaves(inputs, is_leaf=lambda v: isinstance(v, SymbolicTensor), none_is_leaf=False)
    return leaves[0].dtype if leaves else dtypes.floatx()


def call_symbolic(layer: Any, inputs: Any, **kwargs: Any) -> Any:
    """Record ``layer(inputs)`` in the graph and return its symbolic output(s)."""
    for key in ("training", "rng", "state"):
        if key in kwargs:
            raise TypeError(f"{layer.name}: {key!r} is given when the model runs, not when the graph is built")
    input_shapes = shapes_of(inputs)
    try:
        output_shapes = layer.compute_output_shape(input_shapes)
    except (ValueError, TypeError) as error:
        message = str(error)
        if layer.name not in message:
            message = f"layer {layer.name!r} ({type(layer).__name__}) cannot take inputs of shape {input_shapes}: {message}"
        raise type(error)(message) from None
    node = Node(layer, inputs, kwargs)
    dtype = layer.output_dtype(_first_dtype(inputs)) if hasattr(layer, "output_dtype") else _first_dtype(inputs)
    if is_shape(output_shapes):
        node.outputs = [SymbolicTensor(output_shapes, dtype, layer.name, node, 0)]
        node.structure = None
        return node.outputs[0]
    flat, spec = optree.tree_flatten(output_shapes, is_leaf=is_shape, none_is_leaf=False)
    node.outputs = [SymbolicTensor(shape, dtype, f"{layer.name}:{i}", node, i) for i, shape in enumerate(flat)]
    node.structure = spec
    return optree.tree_unflatten(spec, node.outputs)
