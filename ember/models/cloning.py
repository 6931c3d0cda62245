"""``clone_model``: the same architecture with new layer objects (and no weights yet).

As in Keras, the clone's layers are new (``layer.from_config(layer.get_config())`` by default,
or ``clone_function(layer)``) and the clone is unbuilt: building or fitting it draws fresh
weights; copy weights with ``clone.set_weights``/``clone.state = ...`` if wanted.

Example:
    >>> import ember
    >>> from ember import layers
    >>> from ember.models import clone_model
    >>> ember.set_backend("numpy")
    >>> x = ember.Input((3,), name="x")
    >>> model = ember.Model(x, layers.Dense(2, name="d")(x), name="m")
    >>> twin = clone_model(model)
    >>> twin.layers[1] is model.layers[1], twin.layers[1].name, twin.state is None
    (False, 'd', True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optree

from ember.layers.construction import mark_auto_named
from ember.layers.core.input_layer import InputLayer, symbolic_input
from ember.layers.layer import Layer
from ember.models.model import Model
from ember.models.sequential import Sequential
from ember.symbolic import SymbolicTensor, replace_symbolic


def _default_clone(layer: Layer) -> Layer:
    clone = type(layer).from_config(layer.get_config())
    base = layer.__dict__.get("_auto_name")
    if base is not None and clone.name == layer.name:
        mark_auto_named(clone, base)  # keep structural state keys: the clone's weights keep the same keys
    return clone


def _clone_input(layer: InputLayer) -> SymbolicTensor:
    """The input tensor of a clone of ``layer`` (``from_config`` of its own class: an InputLayer again)."""
    clone = _default_clone(layer)
    assert isinstance(clone, InputLayer)
    return symbolic_input(clone)


def _is_tensor(value: Any) -> bool:
    return isinstance(value, SymbolicTensor)


def clone_model(model: Model, input_tensors: Any = None, clone_function: Callable[[Layer], Layer] | None = None,
                call_function: Callable[..., Any] | None = None, recursive: bool = False) -> Model:
    """A new model with ``model``'s architecture and new layers.

    Args:
        model: an ``ember.Model`` or ``Sequential``.
        input_tensors: symbolic tensors (``ember.Input``) to build the clone on, in the structure of
            ``model.input`` (a Sequential: one tensor); new inputs like the original's when None.
        clone_function: ``layer -> new layer`` for each layer (each shared layer once).
        call_function: ``(layer, inputs, **kwargs) -> outputs`` to call each cloned layer of a
            functional model (default: ``layer(inputs, **kwargs)``).
        recursive: clone nested models layer by layer (with ``clone_function``) instead of passing
            the nested model to ``clone_function``.

    Raises:
        TypeError: ``model`` is not an Ember model, or ``clone_function`` returns a non-layer.
        ValueError: ``input_tensors`` does not match the model's inputs.

    Example:
        >>> import ember
        >>> from ember import layers
        >>> model = ember.Sequential([ember.Input((3,)), layers.Dense(4, name="hidden")])
        >>> wider = clone_model(model, clone_function=lambda layer: layer.replace(units=8))
        >>> wider.layers[0].units, model.layers[0].units
        (8, 4)
    """
    if not isinstance(model, Model):
        raise TypeError(f"clone_model: model must be an ember.Model or Sequential, received {type(model).__name__}")
    cloned: dict[int, Layer] = {}
    clone = clone_function or _default_clone

    def new_layer(layer: Layer) -> Layer:
        if id(layer) not in cloned:
            result: Layer
            if recursive and isinstance(layer, Model):
                result = clone_model(layer, clone_function=clone_function, call_function=call_function,
                                     recursive=True)
            else:
                result = clone(layer)
            if not isinstance(result, Layer):
                raise TypeError(f"clone_model: clone_function must return a Layer, returned {result!r} for "
                                f"layer {layer.name!r}")
            cloned[id(layer)] = result
        return cloned[id(layer)]

    if isinstance(model, Sequential):
        return _clone_sequential(model, input_tensors, new_layer)
    return _clone_functional(model, input_tensors, new_layer, call_function)


def _clone_sequential(model: Sequential, input_tensors: Any, new_layer: Callable) -> Sequential:
    entries: list = []
    if input_tensors is not None:
        tensors = input_tensors if isinstance(input_tensors, (list, tuple)) else [input_tensors]
        if len(tensors) != 1 or not _is_tensor(tensors[0]):
            raise ValueError(f"clone_model: a Sequential takes one input tensor, received {input_tensors!r}")
        entries.append(tensors[0])
    elif model._input_layer is not None:
        entries.append(_clone_input(model._input_layer))
    entries += [new_layer(layer) for layer in model.layers]
    clone = Sequential(entries, name=model.name, trainable=model.trainable)
    if model._input_layer is None and input_tensors is None and model._build_shape is not None:
        object.__setattr__(clone, "_build_shape", model._build_shape)
    return clone


def _clone_functional(model: Model, input_tensors: Any, new_layer: Callable, call_function: Callable | None) -> Model:
    mapping: dict[int, SymbolicTensor] = {}
    if input_tensors is None:
        new_inputs = optree.tree_map(lambda t: _clone_input(t.node.layer), model._inputs_struct,
                                     is_leaf=_is_tensor)
    else:
        new_inputs = input_tensors
        given = optree.tree_leaves(input_tensors, is_leaf=_is_tensor, none_is_leaf=False)
        if len(given) != len(model._input_list) or not all(_is_tensor(t) for t in given):
            raise ValueError(f"clone_model: input_tensors must be {len(model._input_list)} symbolic tensor(s) "
                             f"like model._inputs_struct, received {input_tensors!r}")
    for old, new in zip(model._input_list, optree.tree_leaves(new_inputs, is_leaf=_is_tensor, none_is_leaf=False)):
        mapping[old.uid] = new
    for node in model._nodes:
        if isinstance(node.layer, InputLayer):
            continue
        layer = new_layer(node.layer)
        inputs = optree.tree_map(lambda t: mapping[t.uid], node.inputs, is_leaf=_is_tensor)
        kwargs = replace_symbolic(node.call_kwargs(), lambda t: mapping[t.uid])
        outputs = call_function(layer, inputs, **kwargs) if call_function else layer(inputs, **kwargs)
        flat = optree.tree_leaves(outputs, is_leaf=_is_tensor, none_is_leaf=False)
        for old, new in zip(node.outputs, flat):
            mapping[old.uid] = new
    new_outputs = optree.tree_map(lambda t: mapping[t.uid], model._outputs_struct, is_leaf=_is_tensor)
    return type(model)(new_inputs, new_outputs, name=model.name, trainable=model.trainable) \
        if type(model) is Model else Model(new_inputs, new_outputs, name=model.name, trainable=model.trainable)
