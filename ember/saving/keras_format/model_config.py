"""A Keras 3 model config (``Sequential`` or ``Functional``) as an Ember model, and back.

Keras lists each layer with its ``inbound_nodes``: the calls that fed it, whose tensor
arguments are ``{"class_name": "__keras_tensor__", "config": {"keras_history": [layer,
node_index, tensor_index]}}``. Importing replays those calls on Ember symbolic tensors,
each as soon as its inputs exist (shared layers may be called again later). Exporting
writes the same structure from Ember's graph, and :func:`keras_layer_order` gives the
order Keras will list the layers of the rebuilt model in, which fixes the names of their
groups in the weights file.

Example:
    >>> import ember
    >>> from ember import layers
    >>> from ember.saving.keras_format import model_config
    >>> ember.set_backend("numpy")
    >>> x = ember.Input((3,), name="x")
    >>> model = ember.Model(x, [layers.Dense(2, name="a")(x), layers.Dense(1, name="b")(x)], name="two")
    >>> config = model_config.model_to_keras(model)
    >>> config["class_name"], [entry["name"] for entry in config["config"]["layers"]]
    ('Functional', ['x', 'a', 'b'])
    >>> rebuilt = model_config.model_from_keras(config)
    >>> [layer.name for layer in rebuilt.layers], rebuilt.name
    (['x', 'a', 'b'], 'two')
"""

from __future__ import annotations

from typing import Any

import optree

from ember import dtypes
from ember.layers.attention.multi_head_attention import MultiHeadAttention
from ember.layers.core.input_layer import InputLayer, symbolic_input
from ember.saving.keras_format.layer_config import (
    MODEL_CLASSES,
    check_supported,
    layer_from_keras,
    layer_to_keras,
)
from ember.saving.keras_format.model_classes import (
    is_model,
    is_sequential,
    model_class,
    sequential_class,
)
from ember.saving.keras_format.objects import (
    KerasFormatError,
    from_keras,
    keras_dtype_policy,
    to_keras,
)
from ember.serialization import is_builtin_key, registered_name
from ember.symbolic import SymbolicTensor

KERAS_TENSOR = "__keras_tensor__"


# ------------------------------------------------------------------------------ Keras -> Ember
def model_from_keras(config: dict) -> Any:
    """The Ember model (unbuilt) for a Keras model config dict (``config.json``'s content).

    Raises:
        KerasFormatError: an unsupported layer (all are named), a Lambda layer, or a malformed graph.
    """
    class_name = config.get("class_name")
    if class_name not in MODEL_CLASSES:
        raise KerasFormatError(f"the config describes a {class_name!r}, not a Keras Sequential or functional model "
                               "(subclassed Keras models store no architecture Ember can rebuild)")
    body = config.get("config") or {}
    check_supported(body.get("layers", []))
    if class_name == "Sequential":
        return _sequential_from_keras(body, config.get("build_config"))
    return _functional_from_keras(body)


def _layer_or_model(entry: dict) -> Any:
    if entry.get("class_name") in MODEL_CLASSES:
        return model_from_keras(entry)
    return layer_from_keras(entry)


def _sequential_from_keras(body: dict, build_config: dict | None) -> Any:
    entries = body.get("layers", [])
    model = sequential_class()(name=body.get("name"), trainable=body.get("trainable", True))
    for entry in entries:
        layer = _layer_or_model(entry)
        model.add(symbolic_input(layer) if isinstance(layer, InputLayer) else layer)
    shape = (build_config or {}).get("input_shape") or body.get("build_input_shape")
    if model._input_layer is None and shape is not None:
        object.__setattr__(model, "_build_shape", tuple(shape))  # as Sequential.from_config does
    return model


def _is_history(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
            and isinstance(value[1], int) and isinstance(value[2], int))


def _tensors_of(value: Any, lookup: Any) -> Any:
    """Keras call arguments with every ``__keras_tensor__`` replaced by an Ember symbolic tensor."""
    if isinstance(value, dict):
        if value.get("class_name") == KERAS_TENSOR:
            return lookup(value["config"]["keras_history"])
        if value.get("class_name") == "__tuple__":
            return tuple(_tensors_of(v, lookup) for v in value["config"]["value"])
        return {k: _tensors_of(v, lookup) for k, v in value.items()}
    if isinstance(value, list):
        return [_tensors_of(v, lookup) for v in value]
    return value


def _histories(value: Any) -> list[list]:
    found: list[list] = []
    if isinstance(value, dict):
        if value.get("class_name") == KERAS_TENSOR:
            return [value["config"]["keras_history"]]
        for v in value.values():
            found.extend(_histories(v))
    elif isinstance(value, list):
        for v in value:
            found.extend(_histories(v))
    return found


def _call(layer: Any, args: list, kwargs: dict) -> Any:
    """``layer(*args, **kwargs)`` on symbolic tensors, Keras's call conventions mapped to Ember's."""
    kwargs = {k: v for k, v in kwargs.items() if v is not None and k != "mask"}  # a fixed training stays
    if isinstance(layer, MultiHeadAttention):
        positional = list(args)
        for name in ("query", "value", "key"):
            if name in kwargs:
                positional.append(kwargs.pop(name))
        return layer(*positional, **kwargs)
    return layer(*args, **kwargs)


def _functional_from_keras(body: dict) -> Any:
    layers: dict[str, Any] = {}
    produced: dict[tuple[str, int], list] = {}
    pending = []
    for entry in body.get("layers", []):
        name = entry.get("name") or entry["config"]["name"]
        layer = _layer_or_model(entry)
        layers[name] = layer
        if isinstance(layer, InputLayer):
            produced[(name, 0)] = [symbolic_input(layer)]
            continue
        for index, node in enumerate(entry.get("inbound_nodes", [])):
            pending.append((name, index, node))

    def lookup(history: list) -> SymbolicTensor:
        return produced[(history[0], history[1])][history[2]]

    while pending:
        waiting = []
        for name, index, node in pending:
            if any((h[0], h[1]) not in produced for h in _histories(node)):
                waiting.append((name, index, node))
                continue
            args = _tensors_of(from_keras_args(node.get("args", [])), lookup)
            kwargs = _tensors_of(from_keras_args(node.get("kwargs", {})), lookup)
            outputs = _call(layers[name], args, kwargs)
            produced[(name, index)] = optree.tree_leaves(outputs, is_leaf=lambda v: isinstance(v, SymbolicTensor),
                                                         none_is_leaf=False)
        if len(waiting) == len(pending):
            raise KerasFormatError(f"model {body.get('name')!r}: the graph cannot be rebuilt; layer calls "
                                   f"{[(n, i) for n, i, _ in waiting]} wait for inputs no layer produces")
        pending = waiting

    def refs(value: Any) -> Any:
        if _is_history(value):
            return lookup(value)
        if isinstance(value, dict):
            return {k: refs(v) for k, v in value.items()}
        return [refs(v) for v in value]

    inputs, outputs = refs(body["input_layers"]), refs(body["output_layers"])
    return model_class()(inputs, outputs, name=body.get("name"), trainable=body.get("trainable", True))


def from_keras_args(value: Any) -> Any:
    """Call arguments with Keras's tuples/objects translated, tensors left for :func:`_tensors_of`."""
    if isinstance(value, dict) and value.get("class_name") == KERAS_TENSOR:
        return value
    if isinstance(value, dict) and value.get("class_name") != "__tuple__":
        return {k: from_keras_args(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_keras_args(v) for v in value]
    if isinstance(value, dict):
        return value
    return from_keras(value, "call argument")


# ------------------------------------------------------------------------------ Ember -> Keras
def _shape(shape: Any) -> list:
    return [None if d is None else int(d) for d in shape]


def model_to_keras(model: Any) -> dict:
    """The Keras config dict (``config.json``'s content) of an Ember ``Sequential`` or functional model.

    Raises:
        KerasFormatError: a layer or object Keras cannot express (named in the message).
    """
    if is_sequential(model):
        return _sequential_to_keras(model)
    if type(model) is not model_class() and not is_builtin_key(registered_name(type(model))):
        raise KerasFormatError(f"model {model.name!r}: a custom Model subclass ({type(model).__name__}) cannot be "
                               "written to a .keras file (it would come back as a plain Model); save it as .h5")
    return _functional_to_keras(model)


def _entry(layer: Any) -> dict:
    if is_model(layer):
        return model_to_keras(layer)
    return layer_to_keras(layer)


def _sequential_to_keras(model: Any) -> dict:
    shape = model._known_input_shape()
    entries = []
    if model._input_layer is not None:
        entries.append(layer_to_keras(model._input_layer))
    for layer in model.layers:
        entry = _entry(layer)
        if shape is not None:
            entry["build_config"] = {"input_shape": _shape(shape)}
            shape = layer.compute_output_shape(shape)
        entries.append(entry)
    body = {"name": model.name, "trainable": model.trainable, "dtype": keras_dtype_policy(dtypes.floatx()),
            "layers": entries}
    config = {"module": "keras", "class_name": "Sequential", "config": body, "registered_name": None}
    if model._known_input_shape() is not None:
        body["build_input_shape"] = _shape(model._known_input_shape())
        config["build_config"] = {"input_shape": body["build_input_shape"]}
    return config


def _node_indices(model: Any) -> dict[int, tuple[str, int]]:
    """``id(node) -> (layer name, node index)`` in Keras's numbering (each layer's calls in order)."""
    index: dict[int, tuple[str, int]] = {}
    for tensor in model._input_list:
        index[id(tensor.node)] = (tensor.node.layer.name, 0)
    counts: dict[str, int] = {}
    for node in model._nodes:
        name = node.layer.name
        index[id(node)] = (name, counts.get(name, 0))
        counts[name] = counts.get(name, 0) + 1
    return index


def _functional_to_keras(model: Any) -> dict:
    index = _node_indices(model)

    def tensor(t: SymbolicTensor) -> dict:
        name, node_index = index[id(t.node)]
        return {"class_name": KERAS_TENSOR, "config": {"shape": _shape(t.shape), "dtype": t.dtype,
                                                        "keras_history": [name, node_index, t.index]}}

    def ref(t: SymbolicTensor) -> list:
        name, node_index = index[id(t.node)]
        return [name, node_index, t.index]

    def convert(value: Any, as_ref: bool = False) -> Any:
        to = ref if as_ref else tensor  # other leaves (a call's training=False) stay as they are
        return optree.tree_map(lambda v: to(v) if isinstance(v, SymbolicTensor) else v, value,
                               is_leaf=lambda v: isinstance(v, SymbolicTensor))

    inbound: dict[str, list] = {}
    for node in model._nodes:
        if isinstance(node.layer, MultiHeadAttention) and isinstance(node.inputs, (list, tuple)):
            args = [convert(t) for t in node.inputs[:2]]
            kwargs = {"key": convert(node.inputs[2])} if len(node.inputs) > 2 else {}
        else:
            args, kwargs = [convert(node.inputs)], {}
        kwargs.update(convert(to_keras(node.call_kwargs(), f"layer {node.layer.name!r} call")))
        inbound.setdefault(node.layer.name, []).append({"args": args, "kwargs": kwargs})
    entries = []
    for layer in model.layers:
        entry = _entry(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = inbound.get(layer.name, [])
        entries.append(entry)
    body = {"name": model.name, "trainable": model.trainable, "layers": entries,
            "input_layers": convert(model._inputs_struct, as_ref=True),
            "output_layers": convert(model._outputs_struct, as_ref=True)}
    return {"module": "keras.src.models.functional", "class_name": "Functional", "config": body,
            "registered_name": "Functional"}


# ------------------------------------------------------------------------------ layer order
def keras_layer_order(model: Any) -> list:
    """The layers of ``model`` in the order Keras lists them after rebuilding it from its config.

    Sequential: the layers as added (no InputLayer). Functional: Keras's graph order, the
    layers sorted by decreasing depth (distance to the outputs, inputs deepest), ties broken by
    when a depth-first walk from the outputs first reaches them.
    """
    if is_sequential(model):
        return list(model.layers)
    input_ids = {t.uid for t in model._input_list}
    finished: set[int] = set()
    ordered: list = []  # nodes from inputs to outputs
    first_seen: dict[int, int] = {}
    layers_by_id: dict[int, Any] = {}

    def visit(t: SymbolicTensor) -> None:
        node = t.node
        if id(node) in finished:
            return
        if t.uid in input_ids and not isinstance(node.layer, InputLayer):
            finished.add(id(node))
            return
        layers_by_id.setdefault(id(node.layer), node.layer)
        first_seen.setdefault(id(node.layer), len(first_seen))
        if not isinstance(node.layer, InputLayer):
            for parent in _input_tensors(node):
                visit(parent)
        finished.add(id(node))
        ordered.append(node)

    for output in model._output_list:
        visit(output)
    node_depth: dict[int, int] = {}
    layer_depth: dict[int, int] = {}
    for node in reversed(ordered):
        depth = node_depth.setdefault(id(node), 0)
        depth = max(depth, layer_depth.get(id(node.layer), 0))
        layer_depth[id(node.layer)] = depth
        node_depth[id(node)] = depth
        if isinstance(node.layer, InputLayer):
            continue
        for parent in _input_tensors(node):
            node_depth[id(parent.node)] = max(depth + 1, node_depth.get(id(parent.node), 0))
    for t in model._input_list:
        if id(t.node.layer) not in layer_depth:
            layer_depth[id(t.node.layer)] = 0
            first_seen[id(t.node.layer)] = -1
            layers_by_id[id(t.node.layer)] = t.node.layer
    keys = sorted(layer_depth, key=lambda k: (-layer_depth[k], first_seen[k]))
    return [layers_by_id[k] for k in keys]


def _input_tensors(node: Any) -> list[SymbolicTensor]:
    leaves = optree.tree_leaves([node.inputs, node.kwargs], is_leaf=lambda v: isinstance(v, SymbolicTensor),
                                none_is_leaf=False)
    return [leaf for leaf in leaves if isinstance(leaf, SymbolicTensor)]
