"""Keras's object model over Ember's pure core: Keras-style subclasses, weights, eager calls.

A *Keras-style* layer is a ``Layer`` subclass written as in Keras::

    class Linear(ember.layers.Layer):
        def __init__(self, units=32, **kwargs):
            super().__init__(**kwargs)
            self.units = units                      # config, set while __init__ runs
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="random_normal")
        def call(self, inputs):
            return ember.ops.matmul(inputs, self.w)

Its base declares its style: a direct subclass of ``Layer`` is Keras-style (a
``DeclarativeLayer``, every built-in layer, is not). ``Layer``'s own methods (``build``,
``apply``, ``weight_specs``, ``get_config`` ...) run the Keras-style versions below for it;
nothing is set on the user's class, and a ``build`` the user wrote is wrapped per object when
it is constructed, as Keras does. The pure core stays underneath:

* The object is frozen when ``__init__`` returns (Equinox-style); attributes may also be
  set while its ``build`` runs (the :class:`~ember.Variable` views ``add_weight`` returns).
  No arrays are ever stored on it.
* ``layer.build(input_shape, seed=None) -> state`` runs the user's ``build`` in an *init*
  frame (:mod:`ember.layers.scope`): ``add_weight`` creates each weight in the frame's state,
  seeded by its name; then, when the layer has sub-layers, ``call`` runs once on a small
  zero placeholder so each sub-layer called builds its state under the attribute that
  holds it (``"dense"``, ``"blocks_0"``): state keys are structural.
* ``layer.apply(state, x, training=, rng=, mask=) -> (y, state)`` runs ``call`` in an
  *apply* frame: ``self.w`` and ``self.dense(x)`` read the state given to ``apply``, and
  non-trainable weights assigned in ``call`` come back in the returned state.
* ``layer(x)`` on arrays (outside any frame) is an eager call on the layer's own weights,
  built from the input shape on first use (seeded by ``ember.initializers.set_seed``).
* ``compute_output_shape`` is optional: without one, it runs ``call`` on placeholders
  (no random numbers are drawn) and marks the sizes that follow unknown input sizes.
* ``get_config`` is automatic for constructor arguments that are plain values (numbers,
  strings, lists, dicts, layers and other serializable objects); ``from_config`` round-trips.

The weights API (``weights``, ``trainable_weights``, ``get_weights``/``set_weights``) works
on every layer and model through views onto the current state; a layer inside a built
model reads its entry in the model's state.

Example:
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> class Scale(layers.Layer):
    ...     def __init__(self, factor=2.0, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.factor = factor
    ...     def build(self, input_shape):
    ...         self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")
    ...     def call(self, inputs):
    ...         return inputs * self.w * self.factor
    >>> layer = Scale(3.0, name="scale")
    >>> ops.to_numpy(layer(ops.ones((1, 2)))).tolist()
    [[3.0, 3.0]]
    >>> [w.shape for w in layer.weights], layer.get_config()["factor"]
    ([(2,)], 3.0)
"""

from __future__ import annotations

import weakref
from typing import Any

import optree

from ember import initializers, ops
from ember._tensor import Tensor
from ember.layers import autocast, keras_mask, scope
from ember.layers.construction import LayerType
from ember.layers.loss_collection import collect_losses
from ember.layers.variable import Variable
from ember.layers.weights import WeightSpec, create_weights, empty_state, spec_constraints, spec_penalties
from ember.seeds import sub_seed
from ember.serialization import deserialize, serialize
from ember.symbolic import is_shape

# Attributes of a layer object that are bookkeeping, not configuration.
_INTERNAL = frozenset({"build", "_frozen", "_handle_slot", "_child_keys", "_init_config", "_init_specs", "_built_specs",
                       "_declared_cache", "_input_shape_arg", "_auto_name", "_state_key_map",
                       "_stage_cache", "_remat_mode"})


def _is_layer(value: Any) -> bool:
    """Whether ``value`` is a layer (its class is made by :class:`LayerType`, the layers' metaclass)."""
    return isinstance(type(value), LayerType)


# ============================================================================ the user's build
def own_build(cls: type) -> Any:
    """The ``build(self, input_shape)`` the author of a Keras-style class wrote, or None when the class
    has only the framework's (:meth:`Layer.build`, :meth:`Model.build`, marked ``_ember_framework_build``)."""
    build = getattr(cls, "build", None)
    return None if getattr(build, "_ember_framework_build", False) else build


# ============================================================================ attributes
def check_attribute(layer: Any, key: str, value: Any) -> None:
    """No arrays on layer objects: weights come from ``add_weight``."""
    if ops.is_array(value) or (isinstance(value, Tensor) and not isinstance(value, Variable)):
        raise TypeError(f"layer {getattr(layer, 'name', '?')!r}: {key!r} would store an array on the layer; "
                        f"declare weights with self.add_weight(...) in build (the state holds the values)")


def forget_child_keys(layer: Any) -> None:
    layer.__dict__.pop("_child_keys", None)


def _attributes(layer: Any) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in layer.__dict__.items() if k not in _INTERNAL and k not in ("name", "trainable", "dtype")]


def child_keys(layer: Any) -> dict:
    """``{id(sub-layer): state key}``: the attribute that holds it (``blocks_0`` for lists/dicts)."""
    keys = layer.__dict__.get("_child_keys")
    if keys is None:
        keys = {}
        for attribute, value in _attributes(layer):
            if _is_layer(value):
                keys.setdefault(id(value), attribute)
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if _is_layer(item):
                        keys.setdefault(id(item), f"{attribute}_{i}")
            elif isinstance(value, dict):
                for k, item in value.items():
                    if _is_layer(item):
                        keys.setdefault(id(item), f"{attribute}_{k}")
        object.__setattr__(layer, "_child_keys", keys)
    return keys


def keras_children(layer: Any) -> dict:
    """``{state key: sub-layer}`` of a Keras-style layer, in attribute order."""
    found: dict = {}
    for attribute, value in _attributes(layer):
        items = [(attribute, value)] if _is_layer(value) else (
            [(f"{attribute}_{i}", v) for i, v in enumerate(value)] if isinstance(value, (list, tuple)) else (
                [(f"{attribute}_{k}", v) for k, v in value.items()] if isinstance(value, dict) else []))
        for key, item in items:
            if _is_layer(item) and all(item is not other for other in found.values()):
                found[key] = item
    return found


def _key_of(parent: Any, child: Any) -> str:
    key = child_keys(parent).get(id(child))
    return key if key is not None else child.name


# ============================================================================ add_weight
def add_weight(layer: Any, shape: Any, initializer: Any, dtype: Any, trainable: bool, regularizer: Any,
               constraint: Any, name: str | None) -> Variable:
    """See :meth:`ember.layers.Layer.add_weight`."""
    if not layer._keras_style:
        raise RuntimeError(f"layer {layer.name!r} ({type(layer).__name__}) declares its weights in weight_specs(); "
                           f"add_weight is for Keras-style layers (call(self, inputs))")
    frame = scope.frame_of(layer)
    constructing = "_frozen" not in layer.__dict__
    if not constructing and (frame is None or frame.mode != "init"):
        raise RuntimeError(f"layer {layer.name!r}: add_weight can be called in __init__ or build only")
    if initializer is None:
        initializer = "glorot_uniform" if dtype is None or "float" in str(dtype) else "zeros"
    specs = layer._init_specs if constructing else layer._built_specs
    taken = {s.name for s in layer._init_specs} | {s.name for s in layer._built_specs}
    if name is None:
        name, count = "variable", 0
        while name in taken:
            count += 1
            name = f"variable_{count}"
    elif name in taken:
        raise ValueError(f"layer {layer.name!r}: a weight named {name!r} already exists; weight names must be unique")
    try:
        spec = WeightSpec(name, () if shape is None else shape, initializer, regularizer, constraint, trainable,
                          dtype or layer.variable_dtype)
    except (TypeError, ValueError) as error:
        raise type(error)(f"layer {layer.name!r}: add_weight: {error}") from None
    if any(d is None for d in spec.shape):
        raise ValueError(f"layer {layer.name!r}: add_weight {name!r} needs a fully known shape, received {spec.shape}")
    specs.append(spec)
    if frame is not None and frame.mode == "init":
        _create_into(frame, spec)
    return Variable.view(layer, (spec.collection, name), spec)


def _create_into(frame: scope.Frame, spec: WeightSpec) -> None:
    created = create_weights([spec], frame.seed)
    frame.state[spec.collection][spec.name] = created[spec.collection][spec.name]


# ============================================================================ build / apply
def keras_build(self: Any, input_shape: Any = None, seed: Any = None) -> dict:
    """The state of a Keras-style layer: its ``add_weight`` declarations and its sub-layers'."""
    handle = self._handle()
    if input_shape is None:
        input_shape = handle.build_shape
    user_build = own_build(type(self))
    needs_shape = user_build is not None or keras_children(self)
    if input_shape is None and needs_shape:
        raise ValueError(f"layer {self.name!r}: build needs the input shape, e.g. build((None, 784)), "
                         f"or call the layer on data")
    top_level = scope.top() is None
    frame = scope.Frame("init", self, empty_state(), seed=seed)
    with scope.frames(frame):
        object.__setattr__(self, "_built_specs", [])
        for spec in self._init_specs:
            _create_into(frame, spec)
        if user_build is not None:
            user_build(self, _user_shape(input_shape))
        if keras_children(self) and input_shape is not None:
            with collect_losses():
                _run_call(self, placeholder(input_shape, 2), training=False, mask=None, kwargs={})
    handle.build_shape = input_shape
    state = {"params": frame.state["params"], "buffers": frame.state["buffers"]}
    if getattr(type(self), "_owns_state", False):  # a Model handle keeps what it built, as Model.build does
        self._write_state(state)
    elif top_level and handle.owner is None:  # Keras's layer.build(shape): the layer's weights now exist
        handle.state = state
    return state


def _user_shape(input_shape: Any) -> Any:
    if is_shape(input_shape):
        return tuple(input_shape)
    return optree.tree_map(tuple, input_shape, is_leaf=is_shape, none_is_leaf=False)


def placeholder(input_shape: Any, fill: int) -> Any:
    """Zeros of ``input_shape`` with each unknown size set to ``fill``."""
    def make(shape: tuple) -> Any:
        return ops.zeros(tuple(fill if d is None else d for d in shape))

    if is_shape(input_shape):
        return make(input_shape)
    return optree.tree_map(make, input_shape, is_leaf=is_shape, none_is_leaf=False)


def keras_apply(self: Any, state: dict, inputs: Any, *, training: bool = False, rng: Any = None, mask: Any = None,
                **kwargs: Any) -> tuple[Any, dict]:
    """Pure forward pass of a Keras-style layer: ``call`` reads ``state`` through its variables."""
    frame = scope.Frame("apply", self, state, rng=rng, training=training)
    with scope.frames(frame):
        outputs = _run_call(self, inputs, training, mask, kwargs)
    return outputs, {"params": state["params"], "buffers": frame.state["buffers"]}


def _run_call(layer: Any, inputs: Any, training: Any, mask: Any, kwargs: dict) -> Any:
    call_kwargs = dict(kwargs)
    if layer._call_takes_training and "training" not in call_kwargs:
        call_kwargs["training"] = bool(training)
    if mask is not None and layer._call_takes_mask:
        call_kwargs["mask"] = mask
    if layer._call_inputs > 1 and isinstance(inputs, (list, tuple)) and len(inputs) >= layer._call_inputs:
        return _natives(layer.call(*inputs, **call_kwargs))  # layer(targets, logits): call(targets, logits)
    return _natives(layer.call(inputs, **call_kwargs))


def _natives(tree: Any) -> Any:
    """Outputs as native arrays (operators on Variables give ember.Tensors)."""
    if getattr(type(tree), "__ember_tensor__", False):
        return tree._native
    if isinstance(tree, (list, tuple, dict)):
        return optree.tree_map(lambda v: v._native if getattr(type(v), "__ember_tensor__", False) else v, tree,
                               none_is_leaf=True)
    return tree


def call_in_frame(child: Any, frame: scope.Frame, args: tuple, kwargs: dict) -> Any:
    """``self.sub(x)`` inside a Keras-style ``call``: build (init) or read (apply) the sub-layer's entry."""
    parent = frame.layer
    key = _key_of(parent, child)
    inputs = _natives(args[0] if len(args) == 1 else list(args))
    kwargs = dict(kwargs)
    training = kwargs.pop("training", None)
    training = frame.training if training is None else bool(training)
    mask = kwargs.pop("mask", None)
    params, buffers = frame.state["params"], frame.state["buffers"]
    if frame.mode == "init" and key not in frame.built_children:
        shapes = optree.tree_map(lambda a: (None,) + tuple(ops.shape(a))[1:], inputs, none_is_leaf=False)
        seed = sub_seed(frame.seed, key)
        built = child.build(shapes, seed=seed)
        for collection in ("params", "buffers"):
            if key in frame.state[collection]:
                raise ValueError(f"layer {parent.name!r}: sub-layer {key!r} and a weight share the name {key!r}")
            if built[collection]:
                frame.state[collection][key] = built[collection]
        frame.built_children.add(key)
        handle = child._handle()
        handle.owner, handle.path = weakref.ref(parent), (key,)
        params, buffers = frame.state["params"], frame.state["buffers"]
    elif frame.mode == "apply" and key not in params and key not in buffers and _has_weights_declared(child):
        raise ValueError(f"layer {parent.name!r}: sub-layer {key!r} ({child.name!r}) has no state; was it "
                         f"created after the parent was built?")
    child_state = {"params": params.get(key, {}), "buffers": buffers.get(key, {})}
    if mask is not None and (child._keras_style or keras_mask.takes_mask(child)):
        kwargs["mask"] = mask
    rng = sub_seed(frame.rng, key) if child._uses_rng else None  # none derived for a Dense (see Layer._uses_rng)
    outputs, new_state = autocast.apply(child, child_state, inputs, training=training, rng=rng, **kwargs)
    if new_state["buffers"]:
        frame.state["buffers"][key] = new_state["buffers"]
    return outputs


def _has_weights_declared(layer: Any) -> bool:
    return bool(layer._declared()) if not layer._keras_style else bool(layer._init_specs or layer._built_specs)


# ============================================================================ Keras-style methods
def keras_weight_specs(self: Any, input_shape: Any = None) -> list[WeightSpec]:
    """The weights this layer declared with ``add_weight`` (in ``__init__`` and its last ``build``)."""
    return list(self._init_specs) + list(self._built_specs)


def keras_regularization_losses(self: Any, params: dict) -> list:
    losses = spec_penalties(self, keras_weight_specs(self), params)
    for key, child in keras_children(self).items():
        if key in params:
            losses.extend(child.regularization_losses(params[key]))
    return losses


def keras_constraints(self: Any) -> dict:
    if not self.trainable:
        return {}
    found = spec_constraints(self, keras_weight_specs(self))
    for key, child in keras_children(self).items():
        nested = child.constraints()
        if nested:
            found[key] = nested
    return found


def keras_sublayers(self: Any) -> list:
    return list(keras_children(self).values())


def keras_state_children(self: Any) -> dict:
    return keras_children(self)


def keras_get_config(self: Any) -> dict:
    """Keras's automatic config: name, trainable, dtype and the plain constructor arguments."""
    config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
    for key, value in self.__dict__.get("_init_config", {}).items():
        try:
            config[key] = serialize(value)
        except (TypeError, ValueError) as error:
            raise NotImplementedError(
                f"layer {self.name!r} ({type(self).__name__}): constructor argument {key!r} ({type(value).__name__}) "
                f"is not a plain value, so get_config cannot be automatic; override get_config() ({error})") from None
    shape = self._handle().build_shape
    if shape is not None and getattr(type(self), "_owns_state", False):
        config["build_config"] = {"input_shape": _json_shape(shape)}  # as Keras 3: load_model can build
    return config


def _json_shape(shape: Any) -> Any:
    return list(shape) if is_shape(shape) else [_json_shape(s) for s in shape]


def _tuple_shape(shape: Any) -> Any:
    if all(d is None or isinstance(d, int) for d in shape):
        return tuple(shape)
    return [_tuple_shape(s) for s in shape]


def keras_from_config(cls: type, config: dict) -> Any:
    config = dict(config)
    build_config = config.pop("build_config", None)
    layer = cls(**{key: deserialize(value) for key, value in config.items()})
    if build_config is not None and build_config.get("input_shape") is not None:
        layer._handle().build_shape = _tuple_shape(build_config["input_shape"])
    return layer


def infer_output_shape(self: Any, input_shape: Any) -> Any:
    """Output shape by running ``call`` on placeholders (no random numbers drawn); sizes that
    change with an unknown input size are None."""
    first = _probe(self, input_shape, 2)
    second = _probe(self, input_shape, 3)

    def merge(a: tuple, b: tuple) -> tuple:
        return tuple(x if x == y else None for x, y in zip(a, b))

    if is_shape(first):
        return merge(first, second)
    return optree.tree_map(merge, first, second, is_leaf=is_shape, none_is_leaf=False)


def _probe(layer: Any, input_shape: Any, fill: int) -> Any:
    handle = layer._handle()
    saved = (handle.build_shape, handle.state, layer.__dict__.get("_slot"))
    try:
        with initializers.shapes_only(), collect_losses():
            state = layer.build(input_shape, seed=0)
            mask_shapes = keras_mask.PROBE_MASK_SHAPES.get()  # Keras: call(..., mask=) sees the inputs' mask
            mask = keras_mask.placeholder_mask(mask_shapes, fill) if mask_shapes is not None else None
            outputs, _ = layer.apply(state, placeholder(input_shape, fill), training=False, mask=mask)
    finally:  # the placeholder weights never become the layer's (or model's) weights
        handle.build_shape, handle.state = saved[0], saved[1]
        if "_slot" in layer.__dict__:  # a Keras-style model keeps its state there (ember.models.model)
            object.__setattr__(layer, "_slot", saved[2])
    shapes = optree.tree_map(lambda a: tuple(ops.shape(a)), outputs, none_is_leaf=False)
    return shapes


def keras_tree_flatten(self: Any) -> tuple[list, tuple, list]:
    children, names, meta = [], [], []
    for key, value in _attributes(self):
        if _is_layer(value) or (isinstance(value, (list, tuple)) and value and
                                        all(_is_layer(v) for v in value)):
            children.append(value)
            names.append(key)
        else:
            meta.append((key, _token(value), value))
    base = [(k, getattr(self, k), getattr(self, k)) for k in ("name", "trainable", "dtype")]
    internal = [(k, None, v) for k, v in self.__dict__.items() if k in ("_init_config", "_init_specs", "_built_specs")]
    raw = _RawMeta(base + meta + internal)
    return children, (tuple(names), tuple((k, t) for k, t, _ in base + meta), raw), names


def _token(value: Any) -> Any:
    if isinstance(value, Variable):
        return ("variable", value._state_path)
    try:
        hash(value)
        return value
    except TypeError:
        return ("object", id(value))


class _RawMeta:
    __slots__ = ("items",)

    def __init__(self, items: list) -> None:
        self.items = items

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _RawMeta)

    def __hash__(self) -> int:
        return 0
