"""``ember.Sequential``: a linear stack of layers.

Example:
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((4,)), layers.Dense(8, activation="relu"), layers.Dense(2)])
    >>> _ = model.build(seed=0)
    >>> ops.shape(model(ops.ones((3, 4))))
    (3, 2)
"""

from __future__ import annotations

import functools
from typing import Any

from ember import initializers, ops
from ember.layers import autocast
from ember.layers.construction import mark_auto_named
from ember.layers.core.input_layer import InputLayer, symbolic_input
from ember.layers.keras_mask import makes_mask, takes_mask
from ember.layers.layer import Layer, unique_name
from ember.layers.state_check import check_state_dict, input_shapes, raise_if_mismatched
from ember.models.config import auto_named, restore_auto_named
from ember.models.model import Model, _check_compatible, _checked_rng, _layer_rng, child_state
from ember.seeds import sub_seed
from ember.serialization import custom_object_scope, deserialize, serialize
from ember.symbolic import SymbolicTensor, call_symbolic, is_shape
from ember.training.handle import TrainingHandle


class Sequential(Model):
    """Layers applied one after another.

    Args:
        layers: the layers, optionally starting with ``ember.Input(shape)`` (or an
            ``InputLayer``) that fixes the input shape.
        name: model name.

    The input shape comes from the leading ``Input`` or from ``build(input_shape)``.
    ``add`` and ``pop`` change the architecture and drop the current state.

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import layers
        >>> model = ember.Sequential([ember.Input((4,)), layers.Dense(8, activation="relu"), layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> history = model.fit(np.ones((16, 4), "float32"), np.ones((16, 1), "float32"), epochs=2, verbose=0)
        >>> len(history.history["loss"]), model.predict(np.ones((2, 4), "float32"), verbose=0).shape
        (2, (2, 1))
    """

    _linear_stack = True  # its summary lists no per-layer inputs: the order says them

    _graph_from_constructor = True  # its constructor builds a graph (never a Keras-style subclass)

    # Set with object.__setattr__ in __init__, replaced by add/pop/build.
    _input_layer: InputLayer | None
    _build_shape: tuple | None

    def __init__(self, layers: list | None = None, name: str | None = None, trainable: bool = True) -> None:
        set_ = object.__setattr__
        set_(self, "name", name or unique_name("sequential"))
        if name is None:
            mark_auto_named(self, "sequential")
        set_(self, "trainable", trainable)
        set_(self, "dtype", None)
        set_(self, "_input_layer", None)
        set_(self, "_layers", [])
        set_(self, "_build_shape", None)
        set_(self, "state", None)
        set_(self, "_training", TrainingHandle())
        set_(self, "stop_training", False)
        set_(self, "history", None)
        for layer in layers or []:
            self.add(layer)

    # --- architecture --------------------------------------------------------------------
    def add(self, layer: Any) -> None:
        """Append a layer (or an ``ember.Input`` as the very first entry)."""
        if isinstance(layer, SymbolicTensor):
            if not isinstance(layer.node.layer, InputLayer):
                raise TypeError(f"Sequential {self.name!r}: add() takes layers or an ember.Input, received {layer!r}")
            layer = layer.node.layer
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential {self.name!r}: add() takes a Layer, received {type(layer).__name__}")
        if isinstance(layer, InputLayer):
            if self._layers or self._input_layer is not None:
                raise ValueError(f"Sequential {self.name!r}: an Input can only be the first entry")
            object.__setattr__(self, "_input_layer", layer)
            return
        declared = layer.__dict__.get("_input_shape_arg")
        if declared is not None and not self._layers and self._input_layer is None:
            # Keras's ``Dense(4, input_shape=(3,))`` as the first layer: the model's input.
            object.__setattr__(self, "_input_layer", InputLayer(shape=declared[1:], batch_size=declared[0]))
        names = [other.name for other in self._layers] + ([self._input_layer.name] if self._input_layer else [])
        if layer.name in names and layer not in self._layers:
            raise ValueError(f"Sequential {self.name!r}: a layer named {layer.name!r} is already in the model")
        shape = self._known_input_shape()
        if shape is not None:
            for existing in self._layers:
                shape = existing.compute_output_shape(shape)
            _checked_output_shape(layer, shape)
        object.__setattr__(self, "_layers", self._layers + [layer])
        object.__setattr__(self, "state", None)
        self.__dict__.pop("_state_key_map", None)
        self.__dict__.pop("_stage_cache", None)
        chain = self.__dict__.get("_chain_cache")
        if chain is not None:  # extend the recorded graph by the new layer's call
            chain.append(call_symbolic(layer, chain[-1]))
        self._own_layers()

    def pop(self) -> Layer:
        """Remove and return the last layer."""
        if not self._layers:
            raise ValueError(f"Sequential {self.name!r}: pop() on a model with no layers")
        layer = self._layers[-1]
        chain = self.__dict__.get("_chain_cache")
        if chain is not None:  # the popped layer's call leaves the recorded graph
            _forget_node(chain.pop().node)
        object.__setattr__(self, "_layers", self._layers[:-1])
        object.__setattr__(self, "state", None)
        self.__dict__.pop("_state_key_map", None)
        self.__dict__.pop("_stage_cache", None)
        self._own_layers()
        return layer

    @property
    def layers(self) -> list[Layer]:
        return list(self._layers)

    def _known_input_shape(self) -> tuple | None:
        if self._input_layer is not None:
            return self._input_layer.batch_shape
        return self._build_shape

    def _layer_output_shapes(self) -> dict:
        shape = self._known_input_shape()
        shapes: dict[str, list] = {}
        if shape is None:
            return shapes
        for layer in self._layers:
            shape = layer.compute_output_shape(shape)
            shapes[layer.name] = [shape]
        return shapes

    # --- the symbolic surface (Keras: a Sequential of known input shape is a functional model) ---
    def _symbolic_chain(self) -> list[SymbolicTensor] | None:
        """``[input tensor, each layer's output tensor]``: the Sequential as a graph, recorded on first
        asking once the input shape is known (None before), extended by ``add``, shortened by ``pop``.
        Each layer's call is one of its inbound nodes (``layer.output``)."""
        shape = self._known_input_shape()
        chain = self.__dict__.get("_chain_cache")
        if chain is not None and shape is not None and chain[0].shape == tuple(shape):
            return chain
        if chain is not None:  # built for another shape since: record the graph again
            for tensor in chain[1:]:
                _forget_node(tensor.node)
            self.__dict__.pop("_chain_cache")
        if shape is None:
            return None
        if self._input_layer is not None:
            nodes = self._input_layer._handle().inbound_nodes
            tensor = nodes[0].outputs[0] if nodes else symbolic_input(self._input_layer)
        else:
            tensor = symbolic_input(InputLayer(shape=tuple(shape)[1:], batch_size=tuple(shape)[0]))
        chain = [tensor]
        for layer in self._layers:
            chain.append(call_symbolic(layer, chain[-1]))
        object.__setattr__(self, "_chain_cache", chain)
        return chain

    def _chain(self, what: str) -> list[SymbolicTensor]:
        chain = self._symbolic_chain()
        if chain is None:
            raise AttributeError(f"Sequential model {self.name!r} has no defined {what} yet: start it with "
                                 "ember.Input(shape) or build it (model.build(input_shape))")
        return chain

    @property
    def inputs(self) -> list[SymbolicTensor]:
        """``[the input tensor]`` (Keras's rule: a list)."""
        return self._chain("inputs")[:1]

    @property
    def outputs(self) -> list[SymbolicTensor]:
        """``[the last layer's output tensor]`` (Keras's rule: a list)."""
        return self._chain("outputs")[-1:]

    @property
    def input(self) -> SymbolicTensor:
        """The input tensor."""
        return self._chain("input")[0]

    @property
    def output(self) -> SymbolicTensor:
        """The last layer's output tensor."""
        return self._chain("output")[-1]

    @property
    def input_shape(self) -> tuple:
        return self._chain("input shape")[0].shape

    @property
    def output_shape(self) -> tuple:
        return self._chain("output shape")[-1].shape

    # --- layer protocol -----------------------------------------------------------------
    def compute_output_shape(self, input_shape: Any = None) -> Any:
        shape = input_shape if input_shape is not None else self._known_input_shape()
        if shape is None:
            raise ValueError(f"Sequential {self.name!r}: the input shape is unknown; pass input_shape")
        if input_shape is not None and self._input_layer is not None:
            _check_compatible(self.name, _Expected(self._input_layer), tuple(input_shape))
        for layer in self._layers:
            shape = _checked_output_shape(layer, shape)
        return shape

    def build(self, input_shape: Any = None, seed: int | None = None) -> dict:
        """Create the state of every layer without weights (reproducibly with ``seed``; a layer that has
        weights keeps them) and store it on the handle."""
        shape, state = self._shaped_state(input_shape, seed, reuse=True)
        if not initializers.in_shapes_only():  # a template's placeholders are nobody's weights
            object.__setattr__(self, "_build_shape", shape)
            object.__setattr__(self, "state", state)
        return state

    build._ember_framework_build = True  # type: ignore[attr-defined]  # not a user's (keras_object.own_build)

    def _built_state(self, input_shape: Any, seed: int | None, reuse: bool) -> dict:
        return self._shaped_state(input_shape, seed, reuse)[1]

    def _shaped_state(self, input_shape: Any, seed: int | None, reuse: bool) -> tuple[tuple, dict]:
        """The input shape and the state of every layer (see ``Model._built_state``)."""
        shape = input_shape if input_shape is not None else self._known_input_shape()
        if shape is None:
            raise ValueError(
                f"Sequential {self.name!r} has no input shape: start it with ember.Input(shape) "
                "or call build(input_shape), e.g. build((None, 784))"
            )
        shape = tuple(shape)
        if self._input_layer is not None and input_shape is not None:
            _check_compatible(self.name, _Expected(self._input_layer), shape)
        if not self._layers:
            raise ValueError(f"Sequential {self.name!r} has no layers to build")
        params: dict = {}
        buffers: dict = {}
        current = shape
        keys = self._state_keys()
        for layer in self._layers:
            key = keys[id(layer)]
            child = child_state(layer, current, sub_seed(seed, key), reuse)
            if child["params"]:
                params[key] = child["params"]
            if child["buffers"]:
                buffers[key] = child["buffers"]
            current = _checked_output_shape(layer, current)
        return shape, {"params": params, "buffers": buffers}

    def apply(self, state: dict, inputs: Any, *, training: bool = False, rng: Any = None) -> tuple[Any, dict]:
        x = inputs._native if getattr(type(inputs), "__ember_tensor__", False) else inputs
        if not ops.is_array(x):
            x = ops.convert_to_tensor(x)
        expected = self._known_input_shape()
        if expected is not None:
            _check_compatible(self.name, _Expected(self._input_layer, expected), ops.shape(x))
        check_state_dict(self, state)
        params, buffers = state["params"], state["buffers"]
        new_buffers = dict(buffers)
        mask = None  # Keras-style masks, as in Model.apply
        rng = _checked_rng(rng)
        for layer, key, mask_in, mask_out in self._stages():
            child = {"params": params.get(key, {}), "buffers": buffers.get(key, {})}
            x_in = x
            try:
                if mask is not None and mask_in:
                    x, child = autocast.apply(layer, child, x, training=training, rng=_layer_rng(layer, rng, key),
                                              mask=mask)
                else:
                    x, child = autocast.apply(layer, child, x, training=training, rng=_layer_rng(layer, rng, key))
            except Exception as error:
                shape = input_shapes(x_in)
                raise_if_mismatched(layer, child, functools.partial(layer.build, shape, seed=0), shape, error)
                raise
            if child["buffers"]:
                new_buffers[key] = child["buffers"]
            if mask is not None or mask_out:
                mask = layer.compute_mask(x_in, mask)
        return x, {"params": params, "buffers": new_buffers}

    def _stages(self) -> tuple:
        """``(layer, state key, takes a mask, makes a mask)`` per layer, in order: what ``apply``
        reads of each layer on every call, worked out once per architecture (``add``/``pop``
        drop it with the state keys)."""
        stages = self.__dict__.get("_stage_cache")
        if stages is None:
            keys = self._state_keys()
            stages = tuple((layer, keys[id(layer)], takes_mask(layer), makes_mask(layer)) for layer in self._layers)
            object.__setattr__(self, "_stage_cache", stages)
        return stages

    def _build_for_batch(self, x: Any) -> None:
        """Build the handle's state if it has none: for the input shape, else ``x``'s (see ``Model``)."""
        if self.state is None:
            native = x._native if getattr(type(x), "__ember_tensor__", False) else x
            shape = self._known_input_shape() or (None,) + tuple(ops.shape(ops.convert_to_tensor(native)))[1:]
            self.build(shape)

    def _handle_attributes(self) -> tuple[str, ...]:
        return (*super()._handle_attributes(), "_build_shape")

    # --- config ---------------------------------------------------------------------------
    def get_config(self) -> dict:
        layers = ([serialize(self._input_layer)] if self._input_layer is not None else []) + [
            serialize(layer) for layer in self._layers
        ]
        config: dict[str, Any] = {"name": self.name, "trainable": self.trainable, "layers": layers,
                  "build_input_shape": list(self._build_shape) if self._build_shape else None}
        auto = auto_named(([self._input_layer] if self._input_layer is not None else []) + self._layers)
        if auto:
            config["auto_named"] = auto
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Sequential:
        with custom_object_scope(custom_objects):
            layers = [deserialize(entry) for entry in config["layers"]]
        restore_auto_named(layers, config.get("auto_named"))
        model = cls(layers, name=config.get("name"), trainable=config.get("trainable", True))
        if config.get("build_input_shape") is not None:
            object.__setattr__(model, "_build_shape", tuple(config["build_input_shape"]))
        return model

    def __repr__(self) -> str:
        return f"<Sequential {self.name!r}: {len(self._layers)} layers>"


class _Expected:
    """Adapter giving ``_check_compatible`` the name/shape of the Sequential's input."""

    def __init__(self, layer: InputLayer | None, shape: tuple | None = None) -> None:
        self.name = layer.name if layer is not None else "input"
        if shape is not None:
            self.shape = tuple(shape)
        elif layer is not None:
            self.shape = layer.batch_shape
        else:
            raise TypeError("_Expected: needs the input layer or the shape")


def _forget_node(node: Any) -> None:
    """Remove a call the Sequential recorded from its layer's inbound nodes."""
    nodes = node.layer._handle().inbound_nodes
    if node in nodes:
        nodes.remove(node)


def _checked_output_shape(layer: Layer, shape: Any) -> Any:
    try:
        out = layer.compute_output_shape(shape)
    except (ValueError, TypeError) as error:
        message = str(error)
        if layer.name not in message:
            message = f"layer {layer.name!r} ({type(layer).__name__}) cannot take inputs of shape {shape}: {message}"
        raise type(error)(message) from None
    if not is_shape(out):
        raise ValueError(f"layer {layer.name!r} returns several outputs; use the functional API for it")
    return out
