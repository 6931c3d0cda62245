"""``ember.Model``: a DAG of layers, and the Keras-style handle that owns its state.

The architecture (layers and the graph between them) is fixed at construction. The
handle owns one mutable slot, :attr:`Model.state`, which ``build``, ``fit`` and
``load_weights`` replace whole; :meth:`Model.apply` is the pure form that takes the
state explicitly. A Model is also a layer: it can be called on symbolic tensors
inside a bigger model, and its state nests under its name.

Example:
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> a = ember.Input((3,), name="a")
    >>> b = ember.Input((3,), name="b")
    >>> shared = layers.Dense(2, name="shared")
    >>> merged = layers.Add(name="sum")([shared(a), shared(b)])
    >>> model = ember.Model([a, b], merged, name="siamese")
    >>> state = model.build(seed=0)
    >>> sorted(state["params"])
    ['shared']
    >>> y = model([ops.ones((1, 3)), ops.ones((1, 3))])
    >>> ops.shape(y)
    (1, 2)
"""

from __future__ import annotations

import contextlib
import json
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import optree

from ember import initializers, ops
from ember.layers import autocast, handles, keras_object, scope
from ember.layers.construction import mark_auto_named, structural_keys
from ember.layers.core.input_layer import InputLayer
from ember.layers.keras_mask import makes_mask, store_mask_values, takes_mask
from ember.layers.layer import Layer, set_trainable, unique_name
from ember.layers.loss_collection import collect_losses
from ember.layers.state_check import check_state_dict, raise_if_mismatched
from ember.models.config import functional_config, functional_from_config
from ember.models.export import export_model
from ember.models.quantize import quantize_model
from ember.models.summary import summary
from ember.naming import to_snake_case
from ember.saving import keras_format
from ember.saving.model_io import model_config, save_model
from ember.saving.weights import load_weights, save_weights
from ember.seeds import derive_seed, is_seed_array, sub_seed
from ember.serialization import custom_object_scope
from ember.symbolic import Node, SymbolicTensor, is_shape, is_symbolic, node_shapes, node_tensors, replace_symbolic
from ember.training import concurrency, custom_steps
from ember.training.backend_check import move_model
from ember.training.handle import TrainingHandle
from ember.training.input_check import refuse_empty
from ember.training.model_api import TrainingAPI, is_compiling

# Attributes of the handle that may be replaced after construction.
_HANDLE_ATTRIBUTES = frozenset({"state", "_training", "stop_training", "history"})


def _is_symbolic_tensor(value: Any) -> bool:
    return isinstance(value, SymbolicTensor)


def _symbolic_leaves(tree: Any) -> list[SymbolicTensor]:
    """The symbolic tensors in a structure (a node's inputs and call keywords, a model's outputs)."""
    return [leaf for leaf in optree.tree_leaves(tree, is_leaf=_is_symbolic_tensor, none_is_leaf=False)
            if isinstance(leaf, SymbolicTensor)]


def _flat_tensors(structure: Any, argument: str) -> list[SymbolicTensor]:
    leaves = optree.tree_leaves(structure, is_leaf=lambda v: isinstance(v, SymbolicTensor), none_is_leaf=False)
    for leaf in leaves:
        if not isinstance(leaf, SymbolicTensor):
            raise TypeError(
                f"Model: {argument} must be symbolic tensors (from ember.Input or layer calls), received {leaf!r}"
            )
    if not leaves:
        raise ValueError(f"Model: {argument} is empty")
    return leaves


class Model(TrainingAPI, Layer):
    """A functional model: ``Model(inputs, outputs)`` over symbolic tensors.

    Training (``compile``/``fit``/``evaluate``/``predict``) comes from
    :class:`ember.training.model_api.TrainingAPI`.

    Args:
        inputs: a symbolic tensor from :func:`ember.Input`, or a list/dict of them.
        outputs: symbolic tensor(s) computed from ``inputs`` (a tensor, list or dict).
        name: model name (generated when omitted).

    Raises:
        ValueError: an output that does not depend only on ``inputs`` (the message
            names the missing input and the layer that needs it), or two different
            layers with the same name.

    Example:
        >>> import numpy as np
        >>> import ember
        >>> from ember import layers
        >>> inputs = ember.Input((3,))
        >>> hidden = layers.Dense(4, activation="relu")(inputs)
        >>> model = ember.Model(inputs, [layers.Dense(1)(hidden), layers.Dense(2, activation="softmax")(hidden)])
        >>> model.compile(optimizer="adam", loss=["mse", "sparse_categorical_crossentropy"])
        >>> x = np.zeros((8, 3), "float32")
        >>> _ = model.fit(x, [np.zeros((8, 1)), np.zeros(8, "int32")], epochs=1, verbose=0)
        >>> [p.shape for p in model.predict(x, verbose=0)]
        [(8, 1), (8, 2)]
    """

    _config_dataclass = False  # the architecture comes from the graph, not from fields
    _linear_stack = False  # summary lists the layers each layer reads (Sequential: True)
    _owns_state = True  # the handle keeps the state its build makes
    # A functional model; a subclass is a subclassed (Keras-style) model unless its constructor builds
    # a graph (ember.layers.layer._declared_style).
    _keras_style = False

    # The graph, set once in __init__ with object.__setattr__ (the architecture is immutable).
    _inputs_struct: Any  # the inputs as given (a tensor, list or dict): ``model.input``
    _outputs_struct: Any
    _input_list: list[SymbolicTensor]
    _output_list: list[SymbolicTensor]
    _nodes: list[Node]
    _layers: list[Layer]

    def __init__(self, inputs: Any = None, outputs: Any = None, name: str | None = None, trainable: bool = True,
                 **kwargs: Any) -> None:
        set_ = object.__setattr__
        if inputs is not None or outputs is not None:  # a graph: a functional model, whatever its class (Keras)
            set_(self, "_keras_style", False)
        if inputs is None and outputs is None and self._keras_style:
            # A Keras-style subclass (``class M(ember.Model)`` with ``call``): its architecture is
            # its attributes; Layer.__init__ validates name/trainable/dtype.
            base = to_snake_case(type(self).__name__)
            Layer.__init__(self, name=name or unique_name(base), trainable=trainable, **kwargs)
            if name is None:
                mark_auto_named(self, base)
            initial = (("state", None), ("_training", TrainingHandle()), ("stop_training", False), ("history", None))
            for key, value in initial:
                set_(self, key, value)
            return
        if inputs is None or outputs is None:
            raise TypeError(f"{type(self).__name__}: a functional Model needs inputs= and outputs= (symbolic tensors); "
                            "to subclass ember.Model, define call(self, inputs) and call super().__init__()")
        if kwargs:
            raise TypeError(f"Model: unexpected argument(s) {sorted(kwargs)}")
        base = "functional" if type(self) is Model else to_snake_case(type(self).__name__)
        set_(self, "name", name or unique_name(base))
        if name is None:
            mark_auto_named(self, base)
        set_(self, "trainable", trainable)
        set_(self, "dtype", None)
        set_(self, "_inputs_struct", inputs)
        set_(self, "_outputs_struct", outputs)
        set_(self, "_input_list", _flat_tensors(inputs, "inputs"))
        set_(self, "_output_list", _flat_tensors(outputs, "outputs"))
        set_(self, "_nodes", self._topological_nodes())
        set_(self, "_layers", self._collect_layers())
        set_(self, "state", None)
        set_(self, "_training", TrainingHandle())
        set_(self, "stop_training", False)
        set_(self, "history", None)
        self._own_layers()
        if not trainable:  # Keras's Functional(trainable=False): every layer in it is frozen
            set_trainable(self, False)

    def __setattr__(self, key: str, value: Any) -> None:
        if key in _HANDLE_ATTRIBUTES:
            object.__setattr__(self, key, value)
            return
        if "_frozen" not in self.__dict__ or key == "trainable" or scope.is_building(self):
            Layer.__setattr__(self, key, value)
            return
        if is_compiling(self):  # Keras's GAN: an overriding compile keeps its optimizers/losses on self
            keras_object.check_attribute(self, key, value)
            object.__setattr__(self, key, value)
            keras_object.forget_child_keys(self)
            return
        raise AttributeError(
            f"Model {self.name!r}: the architecture is immutable; only the handle's "
            f"{sorted(_HANDLE_ATTRIBUTES)} and `trainable` can be replaced"
        )

    # --- graph -------------------------------------------------------------------------
    def _topological_nodes(self) -> list[Node]:
        input_ids = {t.uid for t in self._input_list}
        order: list[Node] = []
        seen: set[int] = set()
        visiting: set[int] = set()

        def visit(tensor: SymbolicTensor, consumer: str) -> None:
            if tensor.uid in input_ids:
                return
            node = tensor.node
            if isinstance(node.layer, InputLayer):
                raise ValueError(
                    f"Model {self.name!r}: graph disconnected: layer {consumer!r} needs input "
                    f"{tensor.name!r} (shape {tensor.shape}), which is not among the model's inputs "
                    f"{[t.name for t in self._input_list]}"
                )
            if id(node) in seen:
                return
            if id(node) in visiting:
                raise ValueError(f"Model {self.name!r}: the graph has a cycle through layer {node.layer.name!r}")
            visiting.add(id(node))
            for parent in node.input_tensors():
                visit(parent, node.layer.name)
            visiting.discard(id(node))
            seen.add(id(node))
            order.append(node)

        for output in self._output_list:
            visit(output, "output")
        return order

    def _collect_layers(self) -> list[Layer]:
        layers: list[Layer] = []
        by_name: dict[str, Layer] = {}
        for layer in [t.node.layer for t in self._input_list] + [node.layer for node in self._nodes]:
            other = by_name.get(layer.name)
            if other is None:
                by_name[layer.name] = layer
                layers.append(layer)
            elif other is not layer:
                raise ValueError(
                    f"Model {self.name!r}: two different layers are named {layer.name!r} "
                    f"({type(other).__name__} and {type(layer).__name__}); layer names must be unique in a model"
                )
        return layers

    @property
    def layers(self) -> list[Layer]:
        """The model's layers (each once, shared ones included), in execution order; for a
        Keras-style subclass, the sub-layers it holds, in attribute order."""
        if self._keras_style:
            return list(keras_object.keras_children(self).values())
        return list(self._layers)

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """A layer by name or by index in :attr:`layers`."""
        if (name is None) == (index is None):
            raise ValueError("get_layer: give exactly one of name or index")
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"get_layer: index {index} out of range for {len(layers)} layers")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"get_layer: no layer named {name!r}; layers are {[each.name for each in layers]}")

    # --- the symbolic surface (Keras: Functional.input/output/inputs/outputs) --------------------
    def _graph(self, what: str) -> Any:
        graph = self.__dict__.get(what)
        if graph is None:
            raise AttributeError(f"Model {self.name!r} has no symbolic inputs and outputs: a Keras-style "
                                 "subclass has no graph (build the model functionally to read them)")
        return graph

    @property
    def inputs(self) -> list[SymbolicTensor]:
        """The model's symbolic inputs, always a flat list (Keras's rule)."""
        return list(self._graph("_input_list"))

    @property
    def outputs(self) -> list[SymbolicTensor]:
        """The model's symbolic outputs, always a flat list (Keras's rule)."""
        return list(self._graph("_output_list"))

    @property
    def input(self) -> Any:
        """The inputs as given to the constructor: one tensor, or their list/dict (Keras's
        ``Functional.input``); ``ember.Model(inputs=model.input, outputs=layer.output)`` makes a
        sub-model over the same layers and weights."""
        if self._keras_style:
            return node_tensors(self, "input", "input")
        return self._graph("_inputs_struct")

    @property
    def output(self) -> Any:
        """The outputs as given to the constructor: one tensor, or their list/dict."""
        if self._keras_style:
            return node_tensors(self, "output", "output")
        return self._graph("_outputs_struct")

    @property
    def input_shape(self) -> Any:
        """The shape of :attr:`input` (shapes in its structure; one shape for a single input)."""
        if self._keras_style:
            return node_shapes(self, "input", "input shape")
        return _single_shape(optree.tree_map(lambda t: t.shape, self.inputs, is_leaf=_is_symbolic_tensor))

    @property
    def output_shape(self) -> Any:
        """The shape of :attr:`output` (shapes in its structure; one shape for a single output)."""
        if self._keras_style:
            return node_shapes(self, "output", "output shape")
        return _single_shape(optree.tree_map(lambda t: t.shape, self.outputs, is_leaf=_is_symbolic_tensor))

    # --- layer protocol ------------------------------------------------------------------
    def _input_shapes(self) -> Any:
        return optree.tree_map(lambda t: t.shape, self._inputs_struct, is_leaf=_is_symbolic_tensor)

    def compute_output_shape(self, input_shape: Any = None) -> Any:
        if self._keras_style:  # a subclassed model: Layer's (inferred from call)
            return Layer.compute_output_shape(self, input_shape)
        if input_shape is not None:
            self._check_input_shapes(input_shape)
        return optree.tree_map(lambda t: t.shape, self._outputs_struct, is_leaf=_is_symbolic_tensor)

    def _check_input_shapes(self, input_shape: Any) -> None:
        given = optree.tree_leaves(input_shape, is_leaf=is_shape, none_is_leaf=False)
        if len(given) != len(self._input_list):
            raise ValueError(
                f"Model {self.name!r}: expected {len(self._input_list)} input(s), received shapes {input_shape}"
            )
        for tensor, shape in zip(self._input_list, given):
            _check_compatible(self.name, tensor, tuple(shape))

    def build(self, input_shape: Any = None, seed: int | None = None) -> dict:
        """Create the state of every layer and make it the handle's :attr:`state`.

        Args:
            input_shape: optional; checked against the model's inputs.
            seed: makes the initial weights reproducible (identical on every backend).
        """
        if self._keras_style:  # a subclassed model: its own build and its layers' (keras_object.keras_build)
            return keras_object.keras_build(self, input_shape, seed)
        if input_shape is not None:
            self._check_input_shapes(input_shape)
        state = self._built_state(None, seed, reuse=True)
        if not initializers.in_shapes_only():  # a template's placeholders are nobody's weights
            object.__setattr__(self, "state", state)
        return state

    build._ember_framework_build = True  # type: ignore[attr-defined]  # not a user's (keras_object.own_build)

    def _built_state(self, input_shape: Any, seed: int | None, reuse: bool) -> dict:
        """The state of every layer: a layer that has weights keeps them when ``reuse`` (Keras: one
        set of weights per layer object), the others are built from ``seed`` (each under its
        structural key). Changes no handle (a Keras-style layer's ``build`` keeps what it built)."""
        if input_shape is not None:
            self._check_input_shapes(input_shape)
        params: dict = {}
        buffers: dict = {}
        keys = self._state_keys()
        built: set = set()
        for node in self._nodes:
            layer = node.layer
            key = keys[id(layer)]
            if key in built:
                continue
            built.add(key)
            shapes = optree.tree_map(lambda t: t.shape, node.inputs, is_leaf=lambda v: isinstance(v, SymbolicTensor))
            child = child_state(layer, shapes, sub_seed(seed, key), reuse)
            if child["params"]:
                params[key] = child["params"]
            if child["buffers"]:
                buffers[key] = child["buffers"]
        return {"params": params, "buffers": buffers}

    # --- the handle's weights (Keras object model) -----------------------------------------
    # A layer object has one set of weights wherever it is used (``ember.layers.handles``). A
    # graph model's ``state`` is the collection of its layers' weights, keyed structurally: reading
    # it returns the dict the model last wrote when every layer's weights are still lent to it
    # (what ``fit`` relies on: a step replaces the state and touches no layer), else it assembles
    # the dict from the layers (dict assembly, no copy) and they are lent to it; writing it lends
    # every layer its entry. A Keras-style model keeps its whole state itself (``_slot``); its
    # sub-layers read their entries from it.
    def _get_state(self) -> dict | None:
        if self._keras_style:
            return self.__dict__.get("_slot")
        slot = self._lent_record().slot
        leaves = self._leaves()
        if slot is not None and self._lends_all(leaves):
            return slot
        assembled = _assemble(leaves)
        if assembled is not None:
            self._set_state(assembled)
        return assembled

    def _set_state(self, value: dict | None) -> None:
        if self._keras_style:
            object.__setattr__(self, "_slot", value)
            return
        if value is None:
            self._release()
            return
        leaves = self._leaves()
        me = self._weak_self()
        sources = []
        for path, layer, lendable in leaves:
            if lendable:
                handle = layer._handle()
                if handle.owner is not me or handle.path != path:
                    handle.owner, handle.path = me, path
                handle.state = None
            else:  # a Keras-style model keeps its own state: give it its entry
                entry = {collection: handles.sub_tree(value[collection], path) for collection in ("params", "buffers")}
                layer.state = entry
                sources.append(entry)
        lent = self._lent_record()
        lent.slot, lent.leaves = value, leaves
        object.__setattr__(self, "_sources", sources)

    state = property(_get_state, _set_state, doc="""The model's current weights ``{"params": ..., "buffers": ...}``,
        keyed structurally (None before it is built); replaced whole, never patched in place. Every layer's
        entry is that layer's own weights: writing the state writes them, for every model that holds them.""")

    def _weak_self(self) -> Any:
        ref = self.__dict__.get("_weak_ref")
        if ref is None:
            ref = weakref.ref(self)
            object.__setattr__(self, "_weak_ref", ref)
        return ref

    def _leaves(self) -> list:
        """``[(path, layer, lendable)]``: the layers whose weights make up :attr:`state`, nested graph
        models looked into (a Keras-style model is one leaf that keeps its own state)."""
        cached = self.__dict__.get("_leaf_cache")
        if cached is None:
            cached = []
            seen: set = set()
            for key, layer in self._state_children().items():
                if isinstance(layer, InputLayer):
                    continue
                if isinstance(layer, Model) and not layer._keras_style:
                    found = [((key,) + path, leaf, lendable) for path, leaf, lendable in layer._leaves()]
                else:
                    found = [((key,), layer, not isinstance(layer, Model))]
                for entry in found:  # a layer in two places is lent at its first
                    if id(entry[1]) not in seen:
                        seen.add(id(entry[1]))
                        cached.append(entry)
            object.__setattr__(self, "_leaf_cache", cached)
        return cached

    def _lends_all(self, leaves: list) -> bool:
        me = self._weak_self()
        sources = iter(self.__dict__.get("_sources", ()))
        for path, layer, lendable in leaves:
            if lendable:
                handle = layer.__dict__.get("_handle_slot")
                if handle is None or handle.owner is not me or handle.path != path:
                    return False
            elif layer.state is not next(sources, None):
                return False
        return True

    def _release(self) -> None:
        """Unbuild the model: each layer lent to it keeps its weights in its own cell."""
        self._lent_record().give_back()
        object.__setattr__(self, "_sources", [])

    def _lent_record(self) -> _Lent:
        """Where a graph model keeps the state it wrote and what it lent (see :class:`_Lent`)."""
        lent = self.__dict__.get("_lent")
        if lent is None:  # when the model is collected, the layers lent to it get their weights back
            lent = _Lent(self._weak_self())
            object.__setattr__(self, "_lent", lent)
            weakref.finalize(self, lent.give_back)
        return lent

    def _get_cells(self) -> tuple:
        """Where each layer's weights are now (a snapshot, restored whole by the setter): so that a
        failed call leaves the model and its layers as they were."""
        if self._keras_style:
            return ()
        cells = []
        for _, layer, lendable in self._leaves():
            if lendable:
                handle = layer._handle()
                cells.append((layer, handle.owner, handle.path, handle.state))
            else:
                cells.append((layer, None, None, layer.state))
        return tuple(cells)

    def _set_cells(self, cells: tuple) -> None:
        for layer, owner, path, state in cells:
            if path is None:
                layer.state = state
            else:
                handle = layer._handle()
                handle.owner, handle.path, handle.state = owner, path, state

    _cells = property(_get_cells, _set_cells)

    def _lent_state(self) -> dict | None:
        if self._keras_style:
            return self._slot_or_built()
        lent = self.__dict__.get("_lent")
        return None if lent is None else lent.slot

    def _slot_or_built(self) -> dict | None:
        try:
            return self._read_state()
        except ValueError:
            return None

    def _own_layers(self) -> None:
        """After the layers changed (construction, ``Sequential.add``/``pop``): forget the cached list
        of layers, and claim those that have no weights and no model yet, so that reading one
        (``model.get_layer("d").weights``) builds this model when its input shapes are known."""
        self.__dict__.pop("_leaf_cache", None)
        if self._keras_style:
            return
        for layer in self.layers:
            if isinstance(layer, InputLayer) and layer._handle().state is None:
                layer._handle().state = {"params": {}, "buffers": {}}  # never has weights
        me = self._weak_self()
        for path, layer, lendable in self._leaves():
            handle = layer._handle()
            if lendable and handle.state is None and (handle.owner is None or handle.owner() is None):
                handle.owner, handle.path = me, path

    def _read_state(self) -> dict:
        """The handle's state; a model whose input shapes are known is built on first use (from the
        global initializer stream, as Keras builds at construction), so its weights can be read,
        set and saved before ``fit``."""
        if self.state is None and self._known_input_shape() is not None:
            with self._restored_on_error():
                self.build()
        if self.state is None:
            raise ValueError(f"Model {self.name!r} has no weights yet: build it (model.build(...)), call it on "
                             f"data, or fit it")
        return self.state

    def _write_state(self, state: dict) -> None:
        object.__setattr__(self, "state", state)

    def _state_keys(self) -> dict:
        """``{id(layer): state key}``: structural keys (see :func:`ember.layers.layer.structural_keys`)."""
        keys = self.__dict__.get("_state_key_map")
        if keys is None:
            keys = structural_keys(self.layers)
            object.__setattr__(self, "_state_key_map", keys)
        return keys

    def _release_plan(self) -> list[tuple[int, ...]]:
        """Per node, the uids of the values that its call reads last (not the model's outputs): the forward
        pass drops them after that node, so it holds only what later layers still read, as a chain of
        ``nn.Module`` calls does (W5, a ResNet-18: 218 MiB less at the peak of a step). Made once per model."""
        plan = self.__dict__.get("_release_plan_cache")
        if plan is None:
            last: dict[int, int] = {}
            for index, node in enumerate(self._nodes):
                for tensor in _symbolic_leaves((node.inputs, node.kwargs)):
                    last[tensor.uid] = index
            kept = {tensor.uid for tensor in _symbolic_leaves(self._outputs_struct)}
            grouped: list[list[int]] = [[] for _ in self._nodes]
            for uid, index in last.items():
                if uid not in kept:
                    grouped[index].append(uid)
            plan = [tuple(uids) for uids in grouped]
            object.__setattr__(self, "_release_plan_cache", plan)
        return plan

    def _state_children(self) -> dict:
        if self._keras_style:
            return keras_object.keras_children(self)
        keys = self._state_keys()
        return {keys[id(layer)]: layer for layer in self.layers}

    def _known_input_shape(self) -> Any:
        """The input shape the model is (or will be) built for; None when unknown (a Keras-style
        subclass before its first call: ``fit`` then builds it from the first batch)."""
        if self._keras_style:
            return self._handle().build_shape
        return self._input_shapes()

    if TYPE_CHECKING:  # a subclass's apply takes no call keywords: checked against this signature
        def apply(self, state: dict, inputs: Any, *, training: bool = False, rng: Any = None) -> tuple[Any, dict]:
            """Pure forward pass (see the definition below)."""
    else:
        def apply(self, state, inputs, *, training=False, rng=None, **kwargs):
            """Pure forward pass: ``(outputs, new_state)``; ``state`` itself is not modified. A subclassed
            model runs its ``call`` (the call keywords pass through to it)."""
            if self._keras_style:  # a subclassed model: its call (keras_object.keras_apply)
                return keras_object.keras_apply(self, state, inputs, training=training, rng=rng, **kwargs)
            if kwargs:
                raise TypeError(f"Model {self.name!r}: apply() takes no keyword arguments {sorted(kwargs)}")
            return self._graph_apply(state, inputs, training, rng)

    def _graph_apply(self, state: dict, inputs: Any, training: bool, rng: Any) -> tuple[Any, dict]:
        """:meth:`apply` of a functional model: each node's layer in order."""
        check_state_dict(self, state)
        values = self._bind_inputs(inputs)
        params, buffers = state["params"], state["buffers"]
        new_buffers = dict(buffers)
        masks: dict = {}  # Keras-style masks of the values that carry one (see takes_mask)
        keys = self._state_keys()
        rng = _checked_rng(rng)
        release = self._release_plan()
        for index, node in enumerate(self._nodes):
            layer = node.layer
            key = keys[id(layer)]
            node_inputs = node.inputs  # one tensor (most layers) or a structure of them
            args = values[node_inputs.uid] if isinstance(node_inputs, SymbolicTensor) else optree.tree_map(
                lambda t: values[t.uid], node_inputs, is_leaf=_is_symbolic_tensor)
            child_state = {"params": params.get(key, {}), "buffers": new_buffers.get(key, {})}
            child_rng = _layer_rng(layer, rng, key)
            # Call kwargs may hold symbolic tensors (attention_mask=...): bind their values.
            kwargs = replace_symbolic(node.kwargs, lambda t: values[t.uid]) if node.kwargs else node.kwargs
            mask = _input_mask(node, masks) if masks else None
            if mask is not None and "mask" not in kwargs and takes_mask(layer):
                kwargs = {**kwargs, "mask": mask}
            try:
                mode = training if node.training is None else node.training  # a call's fixed mode wins
                out, child_state = autocast.apply(layer, child_state, args, training=mode, rng=child_rng, **kwargs)
            except Exception as error:
                _explain_state_error(layer, node, child_state, error)
                raise
            if child_state["buffers"]:
                new_buffers[key] = child_state["buffers"]
            flat = [out] if node.structure is None else optree.tree_leaves(out, none_is_leaf=False)
            for tensor, value in zip(node.outputs, flat):
                values[tensor.uid] = value
            if mask is not None or makes_mask(layer):
                _store_masks(node, layer.compute_mask(args, mask), masks, values)
            for uid in release[index]:  # values no later node reads: autograd keeps what it needs
                del values[uid]
        outputs = optree.tree_map(lambda t: values[t.uid], self._outputs_struct, is_leaf=_is_symbolic_tensor)
        return outputs, {"params": params, "buffers": new_buffers}

    def _bind_inputs(self, inputs: Any) -> dict:
        if isinstance(self._inputs_struct, dict):
            if not isinstance(inputs, dict):
                raise TypeError(
                    f"Model {self.name!r}: expected a dict of inputs with keys {sorted(self._inputs_struct)}")
            missing = set(self._inputs_struct) - set(inputs)
            if missing:
                raise ValueError(
                    f"Model {self.name!r}: missing inputs {sorted(missing)}; "
                    f"expected keys {sorted(self._inputs_struct)}"
                )
            pairs = [(self._inputs_struct[k], inputs[k]) for k in self._inputs_struct]
        elif isinstance(self._inputs_struct, SymbolicTensor):
            if isinstance(inputs, (list, tuple)) and len(inputs) == 1 and not hasattr(inputs, "shape"):
                inputs = inputs[0]
            pairs = [(self._inputs_struct, inputs)]
        else:
            if isinstance(inputs, dict):
                by_name = {t.name: t for t in self._input_list}
                unknown = set(inputs) - set(by_name)
                if unknown or len(inputs) != len(by_name):
                    raise ValueError(
                        f"Model {self.name!r}: input keys {sorted(inputs)} do not match input names {sorted(by_name)}"
                    )
                pairs = [(by_name[k], v) for k, v in inputs.items()]
            else:
                if len(self._input_list) == 1 and not isinstance(inputs, (list, tuple)):
                    inputs = [inputs]  # Model([x], y) takes one array, as Keras does
                if not isinstance(inputs, (list, tuple)) or len(inputs) != len(self._input_list):
                    received = len(inputs) if isinstance(inputs, (list, tuple)) else 1
                    raise ValueError(
                        f"Model {self.name!r}: expected {len(self._input_list)} inputs, received {received}"
                    )
                pairs = list(zip(self._input_list, inputs))
        values = {}
        for tensor, value in pairs:
            if getattr(type(value), "__ember_tensor__", False):
                value = value._native
            elif not ops.is_array(value):
                value = ops.convert_to_tensor(value, dtype=tensor.dtype)
            _check_compatible(self.name, tensor, ops.shape(value))
            values[tensor.uid] = value
        return values

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Symbolic inputs: use the model as a layer. Arrays: run eagerly with :attr:`state`
        (built on first use); a recording tape watches the trainable weights it reads."""
        if args and is_symbolic(args[0]):
            return super().__call__(*args, **kwargs)
        if scope.top() is not None:  # a sub-model inside a Keras-style parent's call
            return super().__call__(*args, **kwargs)
        self._check_backend("model(x)")
        with concurrency.reading(self, "model(x)"):  # beside a fit in another thread: whole steps
            if self._keras_style:
                return handles.eager_call(self, args, kwargs)
            if self.state is None and args:
                # Build first, so a recording tape sees this very call read the weights (Keras's weights
                # exist from construction: the first step of a custom loop has gradients). A failing
                # first call leaves the model unbuilt.
                with self._restored_on_error():
                    self._build_for_batch(args[0])
                    return self._watched_forward(args, kwargs)
            return self._watched_forward(args, kwargs)

    def _watched_forward(self, args: tuple, kwargs: dict) -> Any:
        """The eager forward of ``model(x)``: recording tapes watch the weights it reads."""
        if self.state is not None:
            handles.watch_read(self)
        with collect_losses() as losses:
            outputs = self._forward_on_batch(*args, **kwargs)
        self._handle().losses = list(losses)
        return outputs

    @concurrency.reads
    def predict_on_batch(self, x: Any, training: bool = False) -> Any:
        """Outputs for one batch with the handle's state (built with a fresh seed if needed).

        A class that overrides ``predict_step`` has it called on ``x`` instead (as Keras 3), and gets
        its outputs as NumPy arrays. A call that fails leaves the handle as it was (an unbuilt model
        stays unbuilt).

        Raises:
            TypeError: the state is on a backend other than the active one (see :meth:`to_backend`).
        """
        self._check_backend("predict_on_batch")
        refuse_empty("predict_on_batch", x)
        if self._overrides("predict_step"):
            return self._own_predict_on_batch(x, training)
        return self._forward_on_batch(x, training)

    def _build_for_batch(self, x: Any) -> None:
        """Build the handle's state for inputs ``x`` if it has none (callers restore the handle when
        what follows fails). A graph model's input shapes are known, so ``x`` is unused here."""
        if self.state is None:
            self.build()

    def _forward_on_batch(self, x: Any, training: bool = False) -> Any:
        """The model's outputs on ``x`` with the handle's state (built first if needed); kept buffers."""
        if self._keras_style and self.state is None:  # a subclassed model (never a Sequential) builds by calling
            with self._restored_on_error():
                return handles.eager_call(self, (x,), {"training": training})
        with self._restored_on_error():
            self._build_for_batch(x)
            state = self.state
            outputs, new_state = self.apply(state, x, training=training)
        self._keep_updated_buffers(state, new_state)
        return outputs

    def _own_predict_on_batch(self, x: Any, training: bool) -> Any:
        """``predict_on_batch`` of a class overriding ``predict_step``: the override on ``x`` (Keras 3)."""
        if training:
            raise ValueError(f"{type(self).__name__}.predict_on_batch: training=True with an overridden "
                             "predict_step; the step decides how it calls the model (call self(x, training=True) "
                             "inside it)")
        with self._restored_on_error():
            return custom_steps.predict_batch(self, x)

    def _keep_updated_buffers(self, state: dict, new_state: dict) -> None:
        """Keep the buffers an eager call updated (a stateful RNN's carried states), as Keras does."""
        if handles.buffers_changed(state["buffers"], new_state["buffers"]):
            self._write_state({"params": state["params"], "buffers": new_state["buffers"]})

    def to_backend(self, name: str | None = None) -> None:
        """Move the model to backend ``name`` (default: the active one), in place; returns None.

        The handle's state is native arrays of the backend that was active when the model was
        built, loaded or trained, and ``ember.set_backend`` leaves existing arrays alone: after a
        switch, ``fit``/``evaluate``/``predict``/``model(x)``/``*_on_batch`` raise a TypeError until
        the model is moved here (or the backend is switched back). Every variable, params and
        buffers, is converted bit-exactly through host NumPy with its dtype (bfloat16 included)
        onto the backend's default device, and :attr:`state` is replaced whole (arrays already on
        the backend are kept). A compiled model's training state moves with it: the optimizer
        state (slots and ``iterations``, so the next ``fit`` continues where the last one stopped),
        the running metrics of ``train_on_batch``/``test_on_batch`` and the step RNG. An unbuilt
        model has nothing to move. Ember extension: Keras has one backend per process.

        Args:
            name: ``"numpy"``, ``"torch"`` or ``"mlx"``; None moves to the active backend.

        Raises:
            ValueError: an unknown backend name (the message lists the valid ones).
            ember.backends.BackendNotAvailableError: the backend is not installed.
            RuntimeError: called while ``fit`` runs (from a callback).

        Example:
            >>> import numpy as np
            >>> import ember
            >>> from ember import layers
            >>> ember.set_backend("numpy")
            >>> model = ember.Sequential([ember.Input((4,)), layers.Dense(2, name="dense")], name="net")
            >>> _ = model.build(seed=0)
            >>> ember.set_backend("torch")
            >>> model.predict(np.ones((1, 4), "float32"), verbose=0)  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            TypeError: predict: model 'net' holds its state as numpy arrays ... model.to_backend() ...
            >>> model.to_backend()
            >>> type(model.state["params"]["dense"]["kernel"]).__module__
            'torch'
            >>> model.predict(np.ones((1, 4), "float32"), verbose=0).shape
            (1, 2)
            >>> ember.set_backend("numpy")
        """
        move_model(self, name)

    def _handle_attributes(self) -> tuple[str, ...]:
        """Attributes a failed eager call must leave unchanged (``_cells``: where each layer's weights
        are; restored after ``state``)."""
        return ("state", "_cells")

    @contextlib.contextmanager
    def _restored_on_error(self) -> Iterator[None]:
        saved = {key: getattr(self, key) for key in self._handle_attributes()}
        try:
            yield
        except BaseException:
            for key, value in saved.items():
                object.__setattr__(self, key, value)
            raise

    # --- config ---------------------------------------------------------------------------
    def get_config(self) -> dict:
        if self._keras_style:  # a subclassed model: its constructor arguments
            return keras_object.keras_get_config(self)
        return functional_config(self)

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Model:
        """Rebuild a model from :meth:`get_config`; ``custom_objects`` resolves unregistered names."""
        with custom_object_scope(custom_objects):
            if cls._keras_style and "layers" not in config:  # a subclassed model's constructor arguments
                return keras_object.keras_from_config(cls, config)
            return functional_from_config(cls, config)

    def to_json(self, **kwargs: Any) -> str:
        """The model's architecture as JSON (``json.dumps`` keyword arguments pass through);
        :func:`ember.models.model_from_json` rebuilds it."""
        return json.dumps(model_config(self), **kwargs)

    def export(self, filepath: Any, format: str = "tf_saved_model", verbose: bool | None = None,
               input_signature: Any = None, **kwargs: Any) -> None:
        """Write the inference forward to an ONNX (``format="onnx"``), ``torch.export`` (``"torch"``,
        a ``.pt2`` file) or MLX function (``"mlx"``, an ``.mlxfn`` file) file, from any backend (Keras 3's
        ``export``; ``"tf_saved_model"`` raises NotImplementedError). See :func:`ember.models.export.export_model`."""
        export_model(self, filepath, format=format, verbose=verbose, input_signature=input_signature, **kwargs)

    # --- saving (ember.saving) ------------------------------------------------------------
    def save(self, filepath: Any, overwrite: bool = True, include_optimizer: bool = True) -> None:
        """Save architecture, compile config, weights and training state to one ``.h5`` file
        (atomically); reload on any backend with :func:`ember.load_model`. A ``.keras`` path writes a
        Keras 3 archive instead (architecture and weights). See :func:`ember.saving.save_model`."""
        with self._restored_on_error():  # a failing save changes nothing
            self._build_if_shapes_known()
            save_model(self, filepath, overwrite=overwrite, include_optimizer=include_optimizer)

    def _build_if_shapes_known(self) -> None:
        """Create the weights of a model whose input shapes are known and that has none yet (Keras's
        weights exist from construction), so that it saves what it then computes with."""
        if self.state is None and self._known_input_shape() is not None:
            with contextlib.suppress(ValueError):
                self._read_state()

    def save_weights(self, filepath: Any, overwrite: bool = True, format: str = "ember") -> None:
        """Save :attr:`state` (weights only) to an ``.h5`` file. See :func:`ember.saving.save_weights`.

        ``format="keras"`` writes Keras 3's ``.weights.h5`` layout instead (what ``keras.Model.load_weights``
        reads; float dtypes only, no checksums)."""
        if format not in ("ember", "keras"):
            raise ValueError(f"save_weights: format must be 'ember' or 'keras', received {format!r}")
        with self._restored_on_error():  # a failing save changes nothing
            self._build_if_shapes_known()
            if format == "keras":
                keras_format.save_keras_weights(self, filepath, overwrite=overwrite)
            else:
                save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath: Any, skip_mismatch: bool = False) -> Any:
        """Replace :attr:`state` with the weights of a ``save_weights``/``save`` file, matched by state
        path, or of a Keras 3 ``.weights.h5``/``.keras`` file (recognised by its content, matched by
        Keras's layer order); returns an :class:`ember.saving.LoadReport`. See
        :func:`ember.saving.load_weights` and :mod:`ember.saving.keras_format`."""
        if keras_format.is_keras_path(filepath):
            return keras_format.load_keras_archive_weights(self, filepath, skip_mismatch=skip_mismatch)
        if keras_format.is_keras_weights_file(filepath):
            return keras_format.load_keras_weights(self, filepath, skip_mismatch=skip_mismatch)
        return load_weights(self, filepath, skip_mismatch=skip_mismatch)

    def _tree_flatten(self) -> tuple[list, Any, list]:
        if self._keras_style:
            return keras_object.keras_tree_flatten(self)
        return [self._layers], (id(self), _Same(self)), ["layers"]

    @classmethod
    def _tree_unflatten(cls, metadata: Any, children: list) -> Model:
        if cls._keras_style:
            return Layer._tree_unflatten.__func__(cls, metadata, children)  # type: ignore[attr-defined]
        return metadata[1].model

    def sublayers(self) -> list[Layer]:
        if self._keras_style:
            return list(keras_object.keras_children(self).values())
        return list(self._layers)

    def weight_specs(self, input_shape: Any = None) -> list:
        """A functional model declares no weights of its own (its layers do); a subclassed model's
        are its ``add_weight`` calls."""
        return keras_object.keras_weight_specs(self, input_shape) if self._keras_style else []

    def regularization_losses(self, params: dict) -> list:
        """Every layer's weight penalties (each layer once, nested models included)."""
        if self._keras_style:
            return keras_object.keras_regularization_losses(self, params)
        losses = []
        for key, layer in self._state_children().items():
            if key in params:
                losses.extend(layer.regularization_losses(params[key]))
        return losses

    def constraints(self) -> dict:
        """Every layer's weight constraints nested like ``state["params"]``:
        ``{layer_name: {param_name: constraint}}`` (a nested model's under its name).

        The trainer applies them after each optimizer update, as Keras does:
        ``params = ember.constraints.apply_constraints(model.constraints(), params)``.
        Layers without constraints are left out; a frozen model has none.
        """
        if self._keras_style:
            return keras_object.keras_constraints(self)
        if not self.trainable:
            return {}
        nested = {}
        for key, layer in self._state_children().items():
            found = layer.constraints()
            if found:
                nested[key] = found
        return nested

    def quantize(self, mode: str | None = None, config: Any = None, filters: Any = None,  # type: ignore[override]
                 **kwargs: Any) -> None:
        """Quantize the model's Dense and Embedding layers in place (Keras's ``model.quantize``; ``"int8"``).

        See :func:`ember.models.quantize.quantize_model` (``filters`` selects layers by name or predicate).
        Compile (again) after quantizing to train the quantized model.
        """
        quantize_model(self, mode, config, filters, **kwargs)

    def count_params(self, state: dict | None = None) -> int:
        state = self.state if state is None else state
        if state is None:
            state = self.placeholder_state()
        return super().count_params(state)

    def placeholder_state(self) -> dict:
        """A state of the right structure, shapes and dtypes whose arrays are zero placeholders.

        For what needs only shapes (``summary``, ``count_params`` of an unbuilt model): no
        random numbers are drawn and the handle stays unbuilt, so a later ``build(seed=...)``
        or seeded ``fit`` gives the same weights whether or not ``summary`` ran first.
        """
        cells = self._cells  # a Keras-style layer keeps what its build makes: put back
        try:
            with initializers.shapes_only():
                return self._built_state(None, None, reuse=False)
        finally:
            object.__setattr__(self, "_cells", cells)

    def summary(self, print_fn: Any = print, line_length: int = 88, show_trainable: bool = False) -> None:
        """Print a table of layers: name, type, output shape and parameter counts (``show_trainable``:
        Keras's "Trainable" column, ``Y``/``N`` per layer with weights)."""
        summary(self, print_fn=print_fn, line_length=line_length, show_trainable=show_trainable)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {len(self.layers)} layers>"


def child_state(layer: Layer, input_shape: Any, seed: int | None, reuse: bool) -> dict:
    """A layer's part of a model's state: its weights when it has some and ``reuse``, else a fresh
    build (a nested graph model builds only its layers without weights)."""
    if isinstance(layer, Model) and not layer._keras_style:
        return layer._built_state(input_shape, seed, reuse)
    if reuse:
        current = layer.state if isinstance(layer, Model) else handles.held_state(layer)
        if current is not None:
            return current
    return layer.build(input_shape, seed=seed)


class _Lent:
    """A graph model's state (``slot``: the one reference to the dict it last wrote, so ``fit`` can
    still tell that only the model holds it) and the layers it lent it to, kept apart from the model
    so that when the model is unbuilt or garbage-collected (a temporary sub-model such as
    ``ember.Model(m.input, layer.output).predict(x)``) each layer still lent to it gets its entry
    back in its own cell instead of losing its weights."""

    __slots__ = ("ref", "slot", "leaves")

    def __init__(self, ref: Any) -> None:
        self.ref = ref
        self.slot: dict | None = None
        self.leaves: list = []

    def give_back(self) -> None:
        slot = self.slot
        if slot is None:
            return
        for _, layer, lendable in self.leaves:
            handle = layer.__dict__.get("_handle_slot")
            if lendable and handle is not None and handle.owner is self.ref:
                handle.state = {c: handles.sub_tree(slot[c], handle.path) for c in ("params", "buffers")}
                handle.owner, handle.path = None, ()
        self.slot, self.leaves = None, []


def _single_shape(shapes: list) -> Any:
    """Keras's ``Functional.input_shape``: the list of shapes, or the shape when there is one."""
    return shapes[0] if len(shapes) == 1 else shapes


def _assemble(leaves: list) -> dict | None:
    """A model's state from its layers' weights (None when one has none yet)."""
    params: dict = {}
    buffers: dict = {}
    for path, layer, lendable in leaves:
        value = handles.held_state(layer) if lendable else layer.state
        if value is None:
            return None
        if value["params"]:
            _put(params, path, value["params"])
        if value["buffers"]:
            _put(buffers, path, value["buffers"])
    return {"params": params, "buffers": buffers}


def _put(tree: dict, path: tuple, value: dict) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


class _Same:
    """Treespec metadata for a model: equal only to itself (the graph is not copied)."""

    __slots__ = ("model",)

    def __init__(self, model: Model) -> None:
        self.model = model

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.model is self.model

    def __hash__(self) -> int:
        return id(self.model)




def _checked_rng(rng: Any) -> Any:
    """A model's ``rng``, checked once per call: an int (a NumPy integer becomes one), a 0-d integer
    array (kept as is: no host sync, so it can stay symbolic under ``mx.compile``) or None.

    Raises:
        TypeError: any other value, whether or not a layer of the model draws random numbers.
    """
    if rng is None or (isinstance(rng, int) and not isinstance(rng, bool)):
        return rng
    if isinstance(rng, np.integer):
        return int(rng)
    if is_seed_array(rng):
        return rng
    raise TypeError(f"rng must be an int seed, a 0-d integer array or None, received {type(rng).__name__}")


def _child_rng(rng: Any, name: str) -> Any:
    """The seed of the child ``name`` from the model's ``rng``: ``derive_seed(rng, name)`` (with ops
    for an array seed)."""
    return derive_seed(_checked_rng(rng), name)


def _layer_rng(layer: Any, checked_rng: Any, key: str) -> Any:
    """The step seed a model passes to ``layer`` (state key ``key``): ``derive_seed(checked_rng, key)``
    where the layer's code can read it, None where it cannot (``Layer._uses_rng``, fixed per class:
    a Dense takes no per-step seed work, a Dropout gets the same seed as it always did)."""
    if checked_rng is None or not getattr(layer, "_uses_rng", True):
        return None
    return derive_seed(checked_rng, key)


class _NamedShape(Protocol):
    """What :func:`_check_compatible` reads of a model input: a symbolic tensor or Sequential's stand-in."""

    @property
    def name(self) -> str | None: ...

    @property
    def shape(self) -> tuple: ...


def _check_compatible(model_name: str | None, tensor: _NamedShape, shape: tuple) -> None:
    expected = tensor.shape
    # None on either side is unknown (a symbolic shape), hence compatible.
    if len(shape) != len(expected) or any(e is not None and s is not None and e != s for e, s in zip(expected, shape)):
        raise ValueError(
            f"Model {model_name!r}: input {tensor.name!r} expects shape {expected}, received {tuple(shape)}"
        )


# --- masks (Keras semantics) ------------------------------------------------------------------
# A layer's ``compute_mask(inputs, mask)`` gives the mask of its output (Embedding with
# mask_zero and Masking make one; layers with ``supports_masking`` pass it on). The
# models hand a value's mask to the next layer's ``apply(..., mask=)`` when that apply
# takes a ``mask`` argument (RNN, LSTM, GRU, Bidirectional, TimeDistributed, ...).
# Nested models do not take one, so masks stop at a nested model's boundary. Symbolic tensors
# carry theirs as ``_keras_mask`` (ember.layers.keras_mask).
def _input_mask(node: Node, masks: dict) -> Any:
    """The masks of ``node``'s inputs in the inputs' structure, or None when none has one."""
    if isinstance(node.inputs, SymbolicTensor):
        return masks.get(node.inputs.uid)
    structure = optree.tree_map(lambda t: masks.get(t.uid), node.inputs,
                                is_leaf=lambda v: isinstance(v, SymbolicTensor), none_is_leaf=False)
    return structure if optree.tree_leaves(structure, none_is_leaf=False) else None


def _store_masks(node: Node, mask: Any, masks: dict, values: dict) -> None:
    """Record ``compute_mask``'s result for the node's outputs (a list: one per output, as Keras zips),
    and the values of the outputs' symbolic ``_keras_mask`` tensors (a later node may read them)."""
    if mask is None:
        return
    if node.structure is None:
        masks[node.outputs[0].uid] = mask
        store_mask_values(node.outputs[:1], [mask], values)
        return

    flat = mask if isinstance(mask, (list, tuple)) and not ops.is_array(mask) else [mask]
    for tensor, value in zip(node.outputs, flat):
        if value is not None:
            masks[tensor.uid] = value
    store_mask_values(node.outputs, list(flat), values)


def _explain_state_error(layer: Any, node: Any, child_state: dict, error: BaseException) -> None:
    """After ``layer`` failed inside a model: raise a clear error when its part of the model's state
    (``params[layer.name]``/``buffers[layer.name]``) does not fit it; return otherwise."""
    shapes = optree.tree_map(lambda t: t.shape, node.inputs, is_leaf=lambda v: isinstance(v, SymbolicTensor))
    raise_if_mismatched(layer, child_state, lambda: layer.build(shapes, seed=0), shapes, error)
