"""Handles: where the current weights of a layer or model live, eager calls, the weights API.

A layer object has one set of weights wherever it is used (Keras's rule). They live in the
layer's own cell (``handle.state``) or, lent, in the state of the model that last wrote them
whole (the handle's *owner* and *path*): ``fit`` replaces a model's ``state`` at every step
without touching the layers, and the layers read their entries from it. A model's ``state``
is the collection of its layers' weights (``ember.models.model``): another model holding the
same layer, the layer itself (``model.get_layer("d").get_weights()``, ``set_weights``) and a
nested model all see the same values. A layer used on its own (``layer(x)`` on arrays, or a
Keras-style ``layer.build(shape)``) keeps its weights in its cell. :func:`variables_of` lists
a layer's weights as :class:`ember.Variable` views in Keras's order: its trainable weights,
its non-trainable ones, then each sub-layer's, each group in declaration order.

Example:
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> dense = layers.Dense(2, name="d")
    >>> ops.shape(dense(ops.ones((1, 3))))  # builds the layer's own weights on first use
    (1, 2)
    >>> [w.path for w in dense.weights]
    ['kernel', 'bias']
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import optree

from ember import ops
from ember.autodiff import tape as tape_module
from ember.layers import autocast, keras_mask
from ember.layers.loss_collection import collect_losses
from ember.layers.variable import Variable
from ember.layers.weights import WeightSpec


# ============================================================================ eager calls
def eager_call(layer: Any, args: tuple, kwargs: dict) -> Any:
    """``layer(x)`` on arrays: run on the layer's current weights, building them on first use."""
    if not args:
        raise TypeError(f"layer {layer.name!r}: call it on inputs, e.g. layer(x)")
    kwargs = dict(kwargs)
    training = bool(kwargs.pop("training", False) or False)
    raw = args[0] if len(args) == 1 else list(args)
    mask = keras_mask.input_mask(raw, kwargs.get("mask"))
    if mask is not None and "mask" not in kwargs and keras_mask.takes_mask(layer):
        kwargs["mask"] = mask  # Keras: a mask the inputs carry reaches a call that takes one
    inputs = _to_arrays(raw)
    try:
        state = layer._read_state()
    except ValueError:
        shapes = optree.tree_map(lambda a: (None,) + tuple(ops.shape(a))[1:], inputs, none_is_leaf=False)
        state = layer.build(shapes)
        layer._write_state(state)
    watch_read(layer)
    with collect_losses() as losses:
        outputs, new_state = autocast.apply(layer, state, inputs, training=training, **kwargs)
    if buffers_changed(state["buffers"], new_state["buffers"]):
        layer._write_state({"params": state["params"], "buffers": new_state["buffers"]})
    layer._handle().losses = list(losses)
    return keras_mask.attach_eager(layer, inputs, mask, outputs)


def buffers_changed(old: dict, new: dict) -> bool:
    """Whether ``apply`` returned other buffer arrays (compared by identity, never by value)."""
    if new is old:
        return False
    old_leaves, new_leaves = optree.tree_leaves(old), optree.tree_leaves(new)
    return len(old_leaves) != len(new_leaves) or any(a is not b for a, b in zip(old_leaves, new_leaves))


def _to_arrays(inputs: Any) -> Any:
    def convert(value: Any) -> Any:
        if getattr(type(value), "__ember_tensor__", False):
            return value._native
        return value if ops.is_array(value) else ops.convert_to_tensor(np.asarray(value))

    return optree.tree_map(convert, inputs, none_is_leaf=False)


def watch_read(layer: Any) -> None:
    """Tell recording tapes that a forward pass reads ``layer``'s trainable weights (TensorFlow's
    ``watch_accessed_variables``): each is read through its Variable, which calls the tape's hook."""
    if tape_module.active_tapes():
        for variable in variables_of(layer):
            if variable.trainable:
                variable.value  # noqa: B018  (the read is the point: it reaches record_variable_read)


# ============================================================================ state access
def read_state(layer: Any) -> dict:
    """The layer's entry in its owner's state when it has a built owner, else its own state."""
    handle = layer._handle()
    if handle.owner is not None:
        owner = handle.owner()
        if owner is not None:
            parent = owner._lent_state()
            if parent is None and handle.state is None:
                # A model that claimed the layer builds on first use when its input shapes are known; when
                # they are not, it stays unbuilt and the layer has no weights yet (the error below says so).
                with contextlib.suppress(ValueError):
                    owner._read_state()
                parent = owner._lent_state()
            if parent is not None:
                return {collection: sub_tree(parent[collection], handle.path) for collection in ("params", "buffers")}
    if handle.state is None:
        raise ValueError(f"layer {layer.name!r} has no weights yet: call it on data (layer(x)), or build the "
                         f"model that holds it")
    return handle.state


def held_state(layer: Any) -> dict | None:
    """The layer's weights where they are now (lent to a model, or its own cell), None when it has
    none; unlike :func:`read_state` this never builds the model that claimed the layer."""
    handle = layer._handle()
    owner = handle.owner() if handle.owner is not None else None
    if owner is not None:
        parent = owner._lent_state()
        if parent is not None:
            return {collection: sub_tree(parent[collection], handle.path) for collection in ("params", "buffers")}
    return handle.state


def current_state(layer: Any) -> dict | None:
    """The layer's current weights wherever they live (see :func:`read_state`), None before it has any."""
    try:
        return layer._read_state()
    except ValueError:
        return None


def sub_tree(tree: dict, path: tuple) -> dict:
    for key in path:
        tree = tree.get(key, {}) if isinstance(tree, dict) else {}
    return tree


def write_state(layer: Any, state: dict) -> None:
    """Replace the layer's state whole (its entry in the owner's state, which is replaced whole too)."""
    handle = layer._handle()
    owner = handle.owner() if handle.owner is not None else None
    if owner is not None:
        parent = owner._lent_state()
        if parent is not None:
            new = {}
            for collection in ("params", "buffers"):
                entry = state[collection]
                base = parent[collection]
                if entry or sub_tree(base, handle.path):
                    base = replace_in(base, handle.path, entry)
                new[collection] = base
            owner._write_state(new)
            return
    handle.state = state


def replace_in(tree: dict, path: tuple, value: Any) -> dict:
    copy = dict(tree)
    if len(path) == 1:
        if isinstance(value, dict) and not value:
            copy.pop(path[0], None)
        else:
            copy[path[0]] = value
    else:
        copy[path[0]] = replace_in(tree.get(path[0], {}), path[1:], value)
    return copy


# ============================================================================ weights API
def variables_of(layer: Any) -> list[Variable]:
    """The layer's weights as Variables, in Keras's order (see :attr:`Layer.weights`)."""
    state = layer._read_state()
    entries: list = []
    _walk(layer, state["params"], state["buffers"], (), True, entries)
    return [Variable.view(layer, path, spec, trainable) for path, spec, trainable in entries]


def _specs_by_name(layer: Any) -> dict:
    if layer is None:
        return {}
    try:
        return {spec.name: spec for spec in layer.weight_specs()}
    except (TypeError, ValueError):
        return {}


def _walk(layer: Any, params: dict, buffers: dict, prefix: tuple, trainable: bool, out: list) -> None:
    trainable = trainable and getattr(layer, "trainable", True)
    declared = _specs_by_name(layer)
    rank = {name: i for i, name in enumerate(declared)}
    carried = set(getattr(layer, "carried_buffers", ()))  # a stateful RNN's states are not weights (Keras)
    for collection, tree in (("params", params), ("buffers", buffers)):
        # declaration order (a state read from a file may list its entries alphabetically)
        for key in sorted(tree, key=lambda k: rank.get(k, len(rank))):
            value = tree[key]
            if isinstance(value, dict) or (collection == "buffers" and key in carried):
                continue
            spec = declared.get(key)
            if spec is None or spec.shape != tuple(ops.shape(value)):
                spec = WeightSpec(key, tuple(ops.shape(value)), "zeros", None if spec is None else spec.regularizer,
                                  None if spec is None else spec.constraint, collection == "params",
                                  ops.dtype(value))
            out.append(((collection,) + prefix + (key,), spec, trainable and collection == "params"))
    children = layer._state_children() if layer is not None else {}
    keys = [k for k, v in params.items() if isinstance(v, dict)]
    keys += [k for k, v in buffers.items() if isinstance(v, dict) and k not in keys]
    ordered = [k for k in children if k in keys] + [k for k in keys if k not in children]
    for key in ordered:
        _walk(children.get(key), params.get(key, {}), buffers.get(key, {}), prefix + (key,), trainable, out)


def set_weights(layer: Any, weights: list) -> None:
    """See :meth:`Layer.set_weights`."""
    variables = variables_of(layer)
    weights = list(weights)
    if len(weights) != len(variables):
        raise ValueError(f"{layer.name}.set_weights: expected {len(variables)} arrays (one per weight: "
                         f"{[v.path for v in variables]}), received {len(weights)}")
    state = layer._read_state()
    new = {"params": state["params"], "buffers": state["buffers"]}
    for variable, value in zip(variables, weights):
        # A copy, as Keras's assign: on torch the weight would otherwise share the caller's memory,
        # which the optimizer's in-place updates would then change.
        array = np.array(value._native if getattr(type(value), "__ember_tensor__", False) and
                         not ops.is_array(value) else value, copy=True)
        current = _lookup(new, variable._state_path)
        if tuple(array.shape) != tuple(ops.shape(current)):
            raise ValueError(f"{layer.name}.set_weights: weight {variable.path!r} has shape "
                             f"{tuple(ops.shape(current))}, received an array of shape {tuple(array.shape)}")
        native = ops.convert_to_tensor(array, dtype=ops.dtype(current))
        collection = variable._state_path[0]
        new[collection] = replace_in(new[collection], variable._state_path[1:], native)
    layer._write_state(new)


def _lookup(state: dict, path: tuple) -> Any:
    node: Any = state
    for key in path:
        node = node[key]
    return node
