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

import inspect
import itertools
from typing import Any, NoReturn

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
        kwargs: keyword arguments of the call, passed to ``layer.apply`` when the model
            runs; symbolic tensors among them (``attention_mask=``) are graph inputs too.
        training: the mode fixed by the call (``base(x, training=False)``: the layer runs in
            inference mode whatever the model's call says, as Keras); None follows the model's.
    """

    __slots__ = ("layer", "inputs", "outputs", "structure", "kwargs", "training")

    def __init__(self, layer: Any, inputs: Any, kwargs: dict | None = None, training: bool | None = None) -> None:
        self.layer = layer
        self.inputs = inputs
        self.outputs: list[SymbolicTensor] = []
        self.structure: Any = None
        self.kwargs = dict(kwargs or {})
        self.training = training

    def call_kwargs(self) -> dict:
        """The call's keyword arguments as written: :attr:`kwargs`, plus ``training`` when the call
        fixed it (what configs and clones record, Keras's ``{"training": false}``)."""
        return self.kwargs if self.training is None else {**self.kwargs, "training": self.training}

    def input_tensors(self) -> list[SymbolicTensor]:
        """Every symbolic tensor the call reads: its inputs, then those among its kwargs."""
        if self.inputs is None:
            return []
        # Leaves are single tensors (``is_symbolic`` would also accept a whole list).
        return symbolic_leaves(self.inputs) + symbolic_leaves(self.kwargs)

    def __repr__(self) -> str:
        return f"Node({self.layer.name})"


class SymbolicTensor:
    """A placeholder for a value in a model graph: shape (``None`` = unknown), dtype, producer
    (Keras's ``KerasTensor``; ``ember.KerasTensor`` is this class).

    Example:
        >>> import ember
        >>> x = ember.Input((3,), name="features")
        >>> isinstance(x, ember.KerasTensor), x.shape, x.dtype
        (True, (None, 3), 'float32')
    """

    __slots__ = ("shape", "dtype", "name", "node", "index", "uid", "_keras_mask")

    def __init__(self, shape: tuple, dtype: str, name: str, node: Node, index: int = 0) -> None:
        self._keras_mask: SymbolicTensor | None = None  # Keras's mask (ember.layers.keras_mask)
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

    def __iter__(self) -> NoReturn:
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


def is_dim(value: Any) -> bool:
    """True for a known size: an int (not a bool), or the symbolic integer a tracer gives for a dynamic
    size (torch.export's ``SymInt``: ``Model.export`` traces the forward with a dynamic batch size)."""
    return (isinstance(value, int) and not isinstance(value, bool)) or type(value).__name__ == "SymInt"


def is_shape(value: Any) -> bool:
    """True for a single shape: a tuple of ints (or traced symbolic sizes, :func:`is_dim`) / None."""
    return isinstance(value, tuple) and all(d is None or is_dim(d) for d in value)


def shapes_of(inputs: Any) -> Any:
    """The shape structure matching a structure of symbolic tensors."""
    return optree.tree_map(lambda t: t.shape, inputs,
                           is_leaf=lambda v: isinstance(v, SymbolicTensor), none_is_leaf=False)


def _first_dtype(inputs: Any) -> str:
    leaves = optree.tree_leaves(inputs, is_leaf=lambda v: isinstance(v, SymbolicTensor), none_is_leaf=False)
    return leaves[0].dtype if leaves else dtypes.floatx()


def symbolic_leaves(tree: Any) -> list[SymbolicTensor]:
    """The symbolic tensors in a structure (other leaves are skipped)."""
    leaves = optree.tree_leaves(tree, is_leaf=lambda v: isinstance(v, SymbolicTensor), none_is_leaf=False)
    return [leaf for leaf in leaves if isinstance(leaf, SymbolicTensor)]


def replace_symbolic(tree: Any, fn: Any) -> Any:
    """``tree`` with every symbolic tensor ``t`` replaced by ``fn(t)`` (other leaves kept)."""
    return optree.tree_map(lambda v: fn(v) if isinstance(v, SymbolicTensor) else v, tree,
                           is_leaf=lambda v: isinstance(v, SymbolicTensor), none_is_leaf=False)


def _accepted(function: Any, names: Any) -> tuple[set, bool]:
    """Which of ``names`` ``function`` takes as keyword arguments (all of them with ``**kwargs``)."""
    parameters = inspect.signature(function).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return set(names), True
    return {n for n in names if n in parameters and parameters[n].kind is not inspect.Parameter.POSITIONAL_ONLY}, False


def shape_kwargs(layer: Any, kwargs: dict) -> dict:
    """The call kwargs that ``layer.compute_output_shape`` declares, tensors as their shapes.

    A layer whose output depends on a call argument (``return_attention_scores=True``)
    names it in ``compute_output_shape``; other call arguments do not reach it.
    """
    if not kwargs:
        return {}
    names, _ = _accepted(layer.compute_output_shape, kwargs)
    return {k: replace_symbolic(v, lambda t: t.shape) for k, v in kwargs.items() if k in names}


def record_node(layer: Any, node: Node) -> None:
    """Remember ``node`` as one of ``layer``'s symbolic calls (``layer.input``/``layer.output``)."""
    handle = getattr(layer, "_handle", None)
    if handle is not None:
        handle().inbound_nodes.append(node)


def inbound_nodes(layer: Any) -> list[Node]:
    """``layer``'s symbolic calls, first call first (a Sequential that holds the layer records its
    graph on first asking)."""
    handle = layer._handle()
    if not handle.inbound_nodes and handle.owner is not None:
        owner = handle.owner()
        chain = getattr(owner, "_symbolic_chain", None)
        if chain is not None:
            chain()
    return handle.inbound_nodes


def _single(values: list) -> Any:
    return values[0] if len(values) == 1 else list(values)


def node_tensors(layer: Any, attribute: str, what: str) -> Any:
    """``layer.input``/``layer.output``: the input or output tensor(s) of the layer's first symbolic
    call (one tensor, or the call's structure: a list for several), as Keras 3 reads them.

    Raises:
        AttributeError: the layer was never called on symbolic tensors.
    """
    nodes = inbound_nodes(layer)
    if not nodes:
        raise AttributeError(f"Layer {layer.name!r} has never been called on symbolic tensors and thus has no "
                             f"defined {what}; call it on ember.Input(...) tensors (or use it in a model) first")
    node = nodes[0]
    if attribute == "input" and node.inputs is not None:  # an InputLayer's input is its output
        return node.inputs
    return node.outputs[0] if node.structure is None else optree.tree_unflatten(node.structure, node.outputs)


def node_shapes(layer: Any, attribute: str, what: str) -> Any:
    """``layer.input_shape``/``layer.output_shape``: the shape(s) of :func:`node_tensors`, the same at
    every call of the layer.

    Raises:
        AttributeError: the layer was never called on symbolic tensors, or its calls have different
            shapes (then each call's tensors are in ``layer.input``/a model's graph, not one shape).
    """
    node_tensors(layer, attribute, what)  # the never-called error
    shapes = []
    for node in inbound_nodes(layer):
        tensors = node.inputs if attribute == "input" and node.inputs is not None else (
            node.outputs[0] if node.structure is None else optree.tree_unflatten(node.structure, node.outputs))
        shape = shapes_of(tensors)
        if shape not in shapes:
            shapes.append(shape)
    if len(shapes) > 1:
        raise AttributeError(f"Layer {layer.name!r} has multiple inbound nodes with different {what}s {shapes}, "
                             f"hence the notion of its {what} is ill-defined; read the tensors of one call "
                             f"instead (layer.{attribute} is the first call's)")
    return shapes[0]


def call_symbolic(layer: Any, inputs: Any, *more_inputs: Any, **kwargs: Any) -> Any:
    """Record ``layer(inputs)`` in the graph and return its symbolic output(s).

    Several positional tensors (``mha(query, value)``) are recorded as the list
    ``[query, value]``, the layer's ``inputs``. Keyword arguments are recorded on the
    node and passed to ``layer.apply`` when the model runs; they may hold symbolic
    tensors (``attention_mask=mask_input``), which then feed the node like inputs.
    ``training=True``/``False`` fixes the mode this call runs in (Keras: ``base(x, training=False)``
    keeps a fine-tuned base's BatchNormalization in inference mode while the model trains).
    """
    for key in ("rng", "state"):
        if key in kwargs:
            raise TypeError(f"{layer.name}: {key!r} is given when the model runs, not when the graph is built")
    training = kwargs.pop("training", None)
    if training is not None and not isinstance(training, bool):
        raise TypeError(f"layer {layer.name!r}: training must be True, False or None, received {training!r}")
    if more_inputs:
        for position, value in enumerate(more_inputs, start=2):
            if not isinstance(value, SymbolicTensor):
                raise TypeError(
                    f"layer {layer.name!r} ({type(layer).__name__}): positional input {position} must be a "
                    f"symbolic tensor like the first, received {type(value).__name__}"
                )
        if not isinstance(inputs, SymbolicTensor):
            raise TypeError(
                f"layer {layer.name!r} ({type(layer).__name__}): with several positional inputs each must be "
                f"one symbolic tensor, received {type(inputs).__name__} first"
            )
        inputs = [inputs, *more_inputs]
    if kwargs:
        accepted, _ = _accepted(layer.apply, kwargs)
        unknown = sorted(set(kwargs) - accepted)
        if unknown:
            raise TypeError(
                f"layer {layer.name!r} ({type(layer).__name__}) got unexpected keyword argument(s) {unknown}: "
                f"its apply() takes none of them"
            )
    input_shapes = shapes_of(inputs)
    try:
        output_shapes = layer.compute_output_shape(input_shapes, **shape_kwargs(layer, kwargs))
    except (ValueError, TypeError) as error:
        message = str(error)
        if layer.name not in message:
            message = (f"layer {layer.name!r} ({type(layer).__name__}) "
                       f"cannot take inputs of shape {input_shapes}: {message}")
        raise type(error)(message) from None
    node = Node(layer, inputs, kwargs, training)
    record_node(layer, node)
    dtype = layer.output_dtype(_first_dtype(inputs)) if hasattr(layer, "output_dtype") else _first_dtype(inputs)
    if is_shape(output_shapes):
        node.outputs = [SymbolicTensor(output_shapes, dtype, layer.name, node, 0)]
        node.structure = None
        return node.outputs[0]
    flat, spec = optree.tree_flatten(output_shapes, is_leaf=is_shape, none_is_leaf=False)
    node.outputs = [SymbolicTensor(shape, dtype, f"{layer.name}:{i}", node, i) for i, shape in enumerate(flat)]
    node.structure = spec
    return optree.tree_unflatten(spec, node.outputs)
