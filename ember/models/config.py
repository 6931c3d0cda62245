"""Functional model configs: the graph as JSON data, and the model rebuilt from it.

A config lists every layer once (its registered class and config) and, for each
layer call, which earlier outputs fed it::

    {"name": "siamese",
     "layers": [{"class_name": "ember>InputLayer", "config": {...}, "name": "a"}, ...],
     "nodes": [{"layer": "shared", "inputs": [["a", 0, 0]], "kwargs": {}}, ...],
     "inputs": [["a", 0, 0], ...], "outputs": [["sum", 0, 0]]}

where ``[layer_name, node_index, output_index]`` names a symbolic tensor, and
``inputs``/``outputs`` keep their list/dict/single structure. A symbolic tensor passed
as a call keyword (``attention_mask=``) appears in ``kwargs`` as
``{"__symbolic_tensor__": [layer_name, node_index, output_index]}``.
"""

from __future__ import annotations

from typing import Any

import optree

from ember.layers.construction import mark_auto_named
from ember.layers.core.input_layer import InputLayer, symbolic_input
from ember.serialization import deserialize, serialize
from ember.symbolic import SymbolicTensor, replace_symbolic

# A symbolic tensor among a layer call's kwargs (``attention_mask=``) is stored as
# ``{"__symbolic_tensor__": [layer_name, node_index, output_index]}``.
_TENSOR_KEY = "__symbolic_tensor__"


def _tensors_in_kwargs(value: Any, lookup: Any) -> Any:
    """Call kwargs with the stored tensor references replaced by the rebuilt tensors."""
    if isinstance(value, dict):
        if set(value) == {_TENSOR_KEY}:
            return lookup(value[_TENSOR_KEY])
        return {k: _tensors_in_kwargs(v, lookup) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_tensors_in_kwargs(v, lookup) for v in value)
    return value


def _is_sym(value: Any) -> bool:
    return isinstance(value, SymbolicTensor)


def functional_config(model: Any) -> dict:
    """The JSON-compatible config of a functional :class:`~ember.models.Model`."""
    node_index: dict[int, tuple[str, int]] = {}
    calls: dict[str, int] = {}
    for tensor in model._input_list:
        node_index[id(tensor.node)] = (tensor.node.layer.name, 0)
        calls[tensor.node.layer.name] = 1
    nodes = []
    for node in model._nodes:
        name = node.layer.name
        index = calls.get(name, 0)
        calls[name] = index + 1
        node_index[id(node)] = (name, index)

    def ref(tensor: SymbolicTensor) -> list:
        name, index = node_index[id(tensor.node)]
        return [name, index, tensor.index]

    for node in model._nodes:
        nodes.append({
            "layer": node.layer.name,
            "inputs": optree.tree_map(ref, node.inputs, is_leaf=_is_sym),
            "kwargs": serialize(replace_symbolic(node.call_kwargs(), lambda t: {_TENSOR_KEY: ref(t)})),
        })
    layers = [{"class_name": serialize(layer)["class_name"], "config": layer.get_config(), "name": layer.name}
              for layer in model._layers]
    config = {
        "name": model.name,
        "trainable": model.trainable,
        "layers": layers,
        "nodes": nodes,
        "inputs": optree.tree_map(ref, model._inputs_struct, is_leaf=_is_sym),
        "outputs": optree.tree_map(ref, model._outputs_struct, is_leaf=_is_sym),
    }
    auto = auto_named(model._layers)
    if auto:
        config["auto_named"] = auto
    return config


def auto_named(layers: list) -> dict:
    """``{name: base}`` of the layers whose names were generated: the model's state keys for them are
    structural (:func:`ember.layers.layer.structural_keys`), and a rebuilt model must key them alike."""
    return {layer.name: layer.__dict__["_auto_name"] for layer in layers if "_auto_name" in layer.__dict__}


def restore_auto_named(layers: Any, auto: dict | None) -> None:
    """Mark the rebuilt layers that :func:`auto_named` recorded."""
    for layer in layers:
        if auto and layer.name in auto:
            mark_auto_named(layer, auto[layer.name])


def _is_ref(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
            and isinstance(value[1], int) and isinstance(value[2], int))


def functional_from_config(cls: type, config: dict) -> Any:
    """Rebuild a functional model by replaying its layer calls on new symbolic inputs."""
    layers = {}
    for entry in config["layers"]:
        layers[entry["name"]] = deserialize({"class_name": entry["class_name"], "config": entry["config"]})
    restore_auto_named(layers.values(), config.get("auto_named"))
    produced: dict[tuple[str, int], list] = {}
    counts: dict[str, int] = {}
    for name, layer in layers.items():
        if isinstance(layer, InputLayer):
            produced[(name, 0)] = [symbolic_input(layer)]
            counts[name] = 1

    def lookup(ref: list) -> SymbolicTensor:
        key = (ref[0], ref[1])
        if key not in produced:
            raise ValueError(f"model config {config.get('name')!r}: layer call {ref} is used before it is defined")
        return produced[key][ref[2]]

    for node in config["nodes"]:
        layer = layers[node["layer"]]
        inputs = optree.tree_map(lookup, node["inputs"], is_leaf=_is_ref)
        out = layer(inputs, **_tensors_in_kwargs(deserialize(node.get("kwargs", {})), lookup))
        index = counts.get(layer.name, 0)
        counts[layer.name] = index + 1
        produced[(layer.name, index)] = optree.tree_leaves(out, is_leaf=_is_sym, none_is_leaf=False)
    inputs = optree.tree_map(lookup, config["inputs"], is_leaf=_is_ref)
    outputs = optree.tree_map(lookup, config["outputs"], is_leaf=_is_ref)
    return cls(inputs, outputs, name=config.get("name"), trainable=config.get("trainable", True))
