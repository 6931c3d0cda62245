"""``Layer``: an immutable pytree of configuration with explicit, external state.

A layer holds configuration only (units, activation, initializers, name). Its
variables live in a *state* dict that :meth:`Layer.build` creates and returns::

    state = {"params": {...trainable arrays...}, "buffers": {...non-trainable arrays...}}

and :meth:`Layer.apply` is pure: ``apply(state, inputs, training=, rng=) -> (outputs, state)``.
A composite layer or model nests its children's entries under their names
(``state["params"]["dense"]["kernel"]``); a layer used twice has one entry.

Config fields are declared once, as annotated class attributes (the class becomes a
frozen dataclass automatically), so the constructor, ``get_config``/``from_config``,
pytree flattening and immutability all follow from the declaration.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.layers import DeclarativeLayer
    >>> class Scale(DeclarativeLayer):
    ...     factor: float = 2.0
    ...     def build(self, input_shape, seed=None):
    ...         return self.make_state(params={"w": ops.ones((input_shape[-1],))})
    ...     def call(self, params, inputs):
    ...         return ops.multiply(ops.multiply(inputs, params["w"]), self.factor)
    ...     def compute_output_shape(self, input_shape):
    ...         return input_shape
    >>> ember.set_backend("numpy")
    >>> layer = Scale(factor=3.0, name="scale")
    >>> state = layer.build((None, 2))
    >>> y, state = layer.apply(state, ops.ones((1, 2)))
    >>> ops.to_numpy(y).tolist()
    [[3.0, 3.0]]
    >>> layer.factor = 1.0
    Traceback (most recent call last):
    ...
    AttributeError: Layer 'scale' is immutable: create a new one with layer.replace(factor=...)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
from typing import TYPE_CHECKING, Any, ClassVar

import optree

from ember import dtype_policies, dtypes, initializers, ops
from ember.layers import handles, keras_mask, keras_object, scope
from ember.layers.construction import LayerHandle, LayerType
from ember.layers.loss_collection import add_loss
from ember.layers.state_check import check_state_dict, input_shapes, raise_if_mismatched
from ember.layers.variable import Variable
from ember.layers.weights import WeightSpec, create_weights, empty_state, spec_constraints, spec_penalties
from ember.naming import to_snake_case
from ember.serialization import add_keras_names, deserialize, register_serializable, registered_under, serialize
from ember.symbolic import call_symbolic, is_symbolic, node_shapes, node_tensors

if TYPE_CHECKING:
    from typing_extensions import Self, dataclass_transform
else:
    def dataclass_transform(**_: Any):  # informs type checkers only (typing has it from Python 3.11)
        return lambda cls: cls

PYTREE_NAMESPACE = "ember"
_name_counts: dict[str, int] = {}


def clear_session() -> None:
    """Reset automatic layer naming (``dense``, ``dense_1``, ...) back to the start.

    Example:
        >>> from ember import layers
        >>> layers.clear_session()
        >>> layers.Dense(2).name, layers.Dense(2).name
        ('dense', 'dense_1')
        >>> layers.clear_session()
        >>> layers.Dense(2).name
        'dense'
    """
    _name_counts.clear()




def unique_name(base: str) -> str:
    """``base`` the first time, then ``base_1``, ``base_2``, ..."""
    count = next_uid(base) - 1
    return base if count == 0 else f"{base}_{count}"


def next_uid(prefix: str) -> int:
    """The next count for ``prefix``, 1 on its first use (Keras's ``backend.get_uid``)."""
    count = _name_counts.get(prefix, 0) + 1
    _name_counts[prefix] = count
    return count


def _declared_style(cls: type[Layer]) -> bool:
    """Whether ``cls`` is Keras-style, as its classes declare it (never read from its methods).

    ``Layer`` declares the Keras style (Keras programs subclass ``keras.layers.Layer``),
    :class:`DeclarativeLayer` the declarative one; a class inherits its base's declaration
    unless its own body sets ``_keras_style``. A ``Model`` subclass is a subclassed (Keras-style)
    model unless it declares ``_graph_from_constructor`` (``Sequential``); as in Keras, an object
    constructed with ``inputs``/``outputs`` is a functional model all the same (``Model.__init__``
    records that on the object).
    """
    own = cls.__dict__.get("_keras_style")
    if own is not None:
        return bool(own)
    if getattr(cls, "_owns_state", False):
        return not getattr(cls, "_graph_from_constructor", False)
    return bool(getattr(cls, "_keras_style", False))


def _check_declaration(cls: type[Layer], keras: bool) -> None:
    """A TypeError when a class's ``call`` or ``build`` is written in the other style than it declares."""
    call, build = cls.__dict__.get("call"), cls.__dict__.get("build")
    call_takes_params = call is not None and list(inspect.signature(call).parameters)[1:2] == ["params"]
    build_takes_seed = build is not None and "seed" in inspect.signature(build).parameters
    if keras and not getattr(cls, "_owns_state", False) and (call_takes_params or build_takes_seed):
        what = "call(self, params, inputs)" if call_takes_params else "build(self, input_shape, seed)"
        raise TypeError(
            f"class {cls.__name__} subclasses ember.layers.Layer, the Keras style (build(input_shape) with "
            f"self.add_weight, call(self, inputs)), but defines {what} of the declarative style: subclass "
            f"ember.layers.DeclarativeLayer instead")
    if not keras and call is not None and list(inspect.signature(call).parameters)[1:2] != ["params"]:
        raise TypeError(
            f"class {cls.__name__} is a declarative layer (a DeclarativeLayer or a built-in layer's subclass), "
            f"whose call takes (self, params, inputs, ...); received call{inspect.signature(call)}. Write "
            f"call(self, params, inputs), or subclass ember.layers.Layer for the Keras style")


def _shadows_a_builtin(cls: type) -> bool:
    """Whether ``cls``, defined in an Ember module, takes the name of a built-in layer of another module:
    a class of a docstring example (``class Model(ember.Model)`` in ``ember.training.custom_steps``),
    which must not replace the built-in under ``ember>Model`` (a module reloaded re-registers its own).
    A built-in of another kind does not hold ``ember>`` names of layers (the ``Identity`` initializer
    is ``ember.initializers>Identity``); one that did would make registering the layer raise."""
    existing = registered_under(f"ember>{cls.__name__}")
    return isinstance(existing, LayerType) and existing.__module__ != cls.__module__


# For type checkers: every subclass is a frozen dataclass too (__init_subclass__ makes it one).
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Layer(metaclass=LayerType):
    """Base class of every layer; a direct subclass is a Keras-style layer, as in Keras.

    Keras-style subclasses (the style this base declares) set their configuration in
    ``__init__``, declare weights with ``self.add_weight(...)`` in ``build(input_shape)`` (the one
    way to declare a weight in this style) and compute in ``call(self, inputs, training=None,
    mask=None)``; see :mod:`ember.layers.keras_object`. Declarative layers (every built-in
    layer) subclass :class:`DeclarativeLayer` instead. Both styles give the same pure
    ``build(input_shape, seed) -> state`` and ``apply(state, x) -> (y, state)``.

    Args:
        name: unique name; generated from the class name when omitted.
        trainable: False freezes the layer's params (no gradient, state kept).
        dtype: a dtype policy: a name (``"mixed_bfloat16"``, ``"mixed_float16"``, a dtype name such as
            ``"float64"``) or a :class:`~ember.dtype_policies.DTypePolicy`, kept as its name; ``None``
            means the global policy when one is set (:func:`ember.mixed_precision.set_global_policy`),
            else ``floatx()`` at build time.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> class Scale(layers.Layer):
        ...     def __init__(self, factor=2.0, **kwargs):
        ...         super().__init__(**kwargs)
        ...         self.factor = factor
        ...     def call(self, inputs):
        ...         return ops.multiply(inputs, self.factor)
        >>> scale = Scale(factor=3.0)
        >>> ops.to_numpy(scale(ops.ones((1, 2)))).tolist()
        [[3.0, 3.0]]
    """

    name: str = dataclasses.field(default=None, kw_only=True)  # type: ignore[assignment]  # None: __post_init__ generates one
    trainable: bool = dataclasses.field(default=True, kw_only=True)
    dtype: str | None = dataclasses.field(default=None, kw_only=True)

    # Filled per subclass in __init_subclass__.
    _config_dataclass: ClassVar[bool] = True  # False for Model: its config is its graph
    # The style a subclass declares by its base: True here (Keras programs subclass keras.layers.Layer),
    # False in DeclarativeLayer (and so in every built-in layer); read by _declared_style.
    _keras_style: ClassVar[bool] = True
    _call_takes_training: ClassVar[bool] = False
    _call_takes_rng: ClassVar[bool] = False
    _call_takes_mask: ClassVar[bool] = False
    # How many positional inputs a Keras-style ``call`` requires (``call(self, targets, logits)``: 2):
    # with two or more, ``layer(a, b)`` calls ``call(a, b)``; otherwise ``call`` receives one input.
    _call_inputs: ClassVar[int] = 1
    # Whether apply's ``rng`` can reach this class's code (see :func:`_sees_rng`): models derive a
    # per-step seed only for the layers that do. Set per class in __init_subclass__.
    _uses_rng: ClassVar[bool] = True
    # Declared True in the body of a built-in class whose own ``apply`` never reads ``rng``
    # (BatchNormalization); read from that exact class's ``__dict__``, so a subclass is not covered.
    _apply_ignores_rng: ClassVar[bool] = False
    # Keras's flag: the layer passes an input mask through (see compute_mask).
    supports_masking: ClassVar[bool] = False
    # True: under a mixed policy the layer computes in float32 (normalization statistics); see autocast.
    float32_compute: ClassVar[bool] = False
    # False where ``dtype`` is the dtype of data (InputLayer), not a policy.
    _dtype_is_policy: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        keras = _declared_style(cls)
        _check_declaration(cls, keras)
        cls._keras_style = keras  # in every class's own __dict__
        if not keras and cls._config_dataclass:
            dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
            # The frozen dataclass installs its own __setattr__; ours says what to do instead.
            cls.__setattr__ = _layer_setattr  # type: ignore[method-assign,assignment]  # replaces the dataclass's
            cls.__delattr__ = _immutable_delattr  # type: ignore[method-assign,assignment]  # (same)
        parameters = inspect.signature(cls.call).parameters
        cls._call_takes_training = "training" in parameters
        cls._call_takes_rng = "rng" in parameters
        cls._call_takes_mask = "mask" in parameters
        cls._call_inputs = _positional_inputs(parameters) if keras else 1
        cls._uses_rng = _sees_rng(cls)
        if cls.__module__.startswith("ember.") and not _shadows_a_builtin(cls):
            register_serializable("ember")(cls)
            add_keras_names("keras.layers", (cls,))  # a .keras file's {"module": "keras.layers", ...}
        optree.register_pytree_node(
            cls, lambda layer: layer._tree_flatten(),
            lambda meta, children, cls=cls: cls._tree_unflatten(meta, children),
            namespace=PYTREE_NAMESPACE,
        )

    def __post_init__(self) -> None:
        if self.name is None:
            base = to_snake_case(type(self).__name__)
            object.__setattr__(self, "name", unique_name(base))
            object.__setattr__(self, "_auto_name", base)  # a model keys its state structurally
        elif not isinstance(self.name, str) or not self.name:
            raise ValueError(f"{type(self).__name__}: name must be a non-empty string, received {self.name!r}")
        elif self.name in (".", ".."):  # a path component: the saved files key weights by layer name
            raise ValueError(f"{type(self).__name__}: name {self.name!r} is not allowed (it is a path component "
                             "'.'/'..' in saved files); choose another name, e.g. 'dot' or a descriptive one")
        if self._dtype_is_policy:
            object.__setattr__(self, "dtype", _policy_name(self.dtype, self.name))
        elif self.dtype is not None:
            object.__setattr__(self, "dtype", dtypes.standardize_dtype(self.dtype, f"{self.name}: dtype"))
        if not isinstance(self.trainable, bool):
            raise TypeError(f"{self.name}: trainable must be a bool, received {self.trainable!r}")

    def __init__(self, *, name: str | None = None, trainable: bool = True, dtype: Any = None) -> None:
        """Keras-style subclasses call ``super().__init__(**kwargs)`` (name, trainable, dtype).
        Declarative subclasses get a generated constructor from their fields instead."""
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "trainable", trainable)
        object.__setattr__(self, "dtype", dtype)
        self.__post_init__()

    def __repr__(self) -> str:
        try:
            config = self.get_config()
        except (TypeError, ValueError, NotImplementedError):
            return f"<{type(self).__name__} name={self.name!r}>"
        fields = ", ".join(f"{k}={v!r}" for k, v in config.items() if k != "name")
        return f"{type(self).__name__}(name={self.name!r}{', ' if fields else ''}{fields})"

    def _normalize(self, field: str, value: Any) -> None:
        """Replace a config field's value during ``__post_init__`` (validation/standardising)."""
        object.__setattr__(self, field, value)

    # --- configuration ---------------------------------------------------------------
    @property
    def dtype_policy(self) -> dtype_policies.DTypePolicy:
        """The layer's :class:`~ember.dtype_policies.DTypePolicy` (from ``dtype``; ``floatx()``'s when None)."""
        return dtype_policies.get(self.dtype or dtypes.floatx(), f"{self.name}: dtype")

    @property
    def compute_dtype(self) -> str:
        """The dtype the layer computes in (``bfloat16`` under ``"mixed_bfloat16"``)."""
        return self.dtype_policy.compute_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype variables are created with: the policy's (``float32`` under a mixed policy), else
        the layer's ``dtype`` or ``floatx()``."""
        return self.dtype_policy.variable_dtype if self.dtype else dtypes.floatx()

    def replace(self, **changes: Any) -> Self:
        """A new layer with some config fields changed (the name is kept unless given)."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise TypeError(f"{self.name}.replace: unknown field(s) {sorted(unknown)}; fields are {sorted(known)}")
        return dataclasses.replace(self, **changes)

    def get_config(self) -> dict:
        """Every config field (sub-layers as their own serialized configs); a Keras-style layer's
        plain constructor arguments."""
        if self._keras_style:
            return keras_object.keras_get_config(self)
        return {f.name: serialize(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_config(cls, config: dict) -> Layer:
        """Rebuild a layer from :meth:`get_config`'s output."""
        if cls._keras_style:
            return keras_object.keras_from_config(cls, config)
        return cls(**{key: deserialize(value) for key, value in config.items()})

    # --- state --------------------------------------------------------------------------
    def make_state(self, params: dict | None = None, buffers: dict | None = None) -> dict:
        """Package variables into the standard state dict."""
        return {"params": dict(params or {}), "buffers": dict(buffers or {})}

    def weight_specs(self, input_shape: Any = None) -> list[WeightSpec]:
        """The layer's weight declarations (:class:`~ember.layers.weights.WeightSpec`) for inputs
        of ``input_shape``; with ``None``, the same declarations with unknown sizes as None.

        The one place a layer declares its weights: the default :meth:`build` creates them, and
        :meth:`regularization_losses` / :meth:`constraints` follow from the declared regularizers
        and constraints. None by default; a Keras-style layer's are its ``add_weight`` calls.
        """
        if self._keras_style:
            return keras_object.keras_weight_specs(self, input_shape)
        return []

    def _declared(self) -> list[WeightSpec]:
        """:meth:`weight_specs` without an input shape, cached (the declarations are config)."""
        cached = self.__dict__.get("_declared_cache")
        if cached is None:
            try:
                cached = list(self.weight_specs(None))
            except TypeError as error:  # e.g. input_shape[-1] of None
                raise TypeError(
                    f"layer {self.name!r}: {type(self).__name__}.weight_specs(input_shape) is also called with "
                    f"input_shape=None, for the weights' options (regularizers, constraints); give unknown sizes "
                    f"as None then, e.g. `fan_in = None if input_shape is None else input_shape[-1]` ({error})"
                ) from error
            object.__setattr__(self, "_declared_cache", cached)
        return cached

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        """Create this layer's variables for inputs of ``input_shape`` from :meth:`weight_specs`
        (each seeded by ``derive_seed(seed, name)``); none by default. A Keras-style layer runs its
        own ``build(input_shape)`` (its ``add_weight`` calls) and its sub-layers' builds
        (:func:`~ember.layers.keras_object.keras_build`).

        Two uses, told apart by ``seed``: ``state = layer.build(shape, seed=0)`` (``seed`` given, None
        included) is the pure core's: it returns a fresh state and keeps nothing. ``layer.build(shape)``
        (no ``seed`` argument) is Keras's: the state, drawn from the global initializer stream, also
        becomes the layer's own weights (``layer.weights``, ``get_weights``, ``set_weights``, and a model
        built over the layer reuses them), unless a model or a Keras-style parent holds the layer."""
        if self._keras_style:
            return keras_object.keras_build(self, input_shape, seed)
        specs = self.weight_specs(input_shape)
        if not specs:
            self.compute_output_shape(input_shape)  # validates the shape
            return empty_state()
        return create_weights(specs, seed, self.variable_dtype)

    # --- computation ------------------------------------------------------------------------
    def call(self, params: dict, inputs: Any) -> Any:
        """The forward computation given this layer's params."""
        raise NotImplementedError(f"{type(self).__name__} must implement call(params, inputs) or apply(...)")

    if TYPE_CHECKING:  # a subclass's apply takes no call keywords: checked against this signature
        def apply(self, state: dict, inputs: Any, *, training: bool = False, rng: Any = None) -> tuple[Any, dict]:
            """Pure forward pass (see the definition below)."""
    else:
        def apply(self, state, inputs, *, training=False, rng=None, **kwargs):
            """Pure forward pass: ``(outputs, state)``; the default leaves the state unchanged. A Keras-style
            layer runs its ``call`` reading ``state`` through its variables (``mask=`` and the other call
            keywords pass through to it); a declarative layer takes no other keywords.

            Raises:
                TypeError/ValueError: a state that is not ``{"params", "buffers"}``, or variables missing,
                    unexpected or mis-shaped for these inputs (named by path; see
                    :mod:`ember.layers.state_check`).
            """
            if self._keras_style:
                return keras_object.keras_apply(self, state, inputs, training=training, rng=rng, **kwargs)
            if kwargs:
                raise TypeError(f"layer {self.name!r} ({type(self).__name__}): apply() takes no keyword arguments "
                                f"{sorted(kwargs)} (its call takes none of them)")
            return self._declarative_apply(state, inputs, training, rng)

    def _declarative_apply(self, state: dict, inputs: Any, training: bool, rng: Any) -> tuple[Any, dict]:
        """:meth:`apply` of a declarative layer: ``call(params, inputs[, training][, rng])``."""
        check_state_dict(self, state)
        kwargs = {}
        if self._call_takes_training:
            kwargs["training"] = training
        if self._call_takes_rng:
            kwargs["rng"] = rng
        try:
            return self.call(state["params"], inputs, **kwargs), state
        except Exception as error:
            shape = input_shapes(inputs)
            raise_if_mismatched(self, state, lambda: self.build(shape, seed=0), shape, error)
            raise

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The output mask for ``inputs`` carrying ``mask``: passed through when the layer
        ``supports_masking``, dropped (None) otherwise. Layers that make masks override it."""
        return mask if self.supports_masking else None

    compute_mask.passes_masks_only = True  # type: ignore[attr-defined]  # read by keras_mask.makes_mask

    def compute_output_shape(self, input_shape: Any) -> Any:
        """Output shape for ``input_shape`` (``None`` for unknown dimensions). A Keras-style layer that
        does not define it infers it by running ``call`` on placeholders."""
        if self._keras_style:
            return keras_object.infer_output_shape(self, input_shape)
        raise NotImplementedError(f"{type(self).__name__} must implement compute_output_shape(input_shape)")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Symbolic tensors: record a node of a functional model. Inside a Keras-style parent's
        ``call``: run on the parent's state entry for this layer. Arrays: run eagerly on the
        layer's own weights, building them from the input shape on first use (Keras's ``layer(x)``)."""
        if args and is_symbolic(args[0]):
            inputs = args[0] if len(args) == 1 else list(args)
            mask = kwargs.get("mask") if kwargs.get("mask") is not None else keras_mask.symbolic_input_mask(inputs)
            with keras_mask.probing_with(mask):
                outputs = call_symbolic(self, *args, **kwargs)
            keras_mask.attach_symbolic(self, inputs, mask, outputs)
            return outputs
        frame = scope.top()
        if frame is not None:
            return keras_object.call_in_frame(self, frame, args, kwargs)
        return handles.eager_call(self, args, kwargs)

    def _activity_loss(self, outputs: Any) -> Any:
        """Pass ``activity_regularizer(outputs)`` to :func:`add_loss` when the layer has one; returns ``outputs``."""
        regularizer = getattr(self, "activity_regularizer", None)
        if regularizer is not None:
            add_loss(regularizer(outputs))
        return outputs

    def regularization_losses(self, params: dict) -> list:
        """Weight penalties (``kernel_regularizer=`` ...) as scalars, from this layer's params:
        the regularizers its :meth:`weight_specs` declare (none for a frozen layer)."""
        if self._keras_style:
            return keras_object.keras_regularization_losses(self, params)
        declared = self._declared()
        return spec_penalties(self, declared, params) if declared else []

    def constraints(self) -> dict:
        """``{param_name: constraint}`` for this layer's constrained params (``kernel_constraint=`` ...).

        As in Keras, constraints are projections the optimizer step applies *after*
        each update (``ember.constraints.apply_constraints(model.constraints(), params)``);
        layers never apply them in their forward pass. They come from the declarations of
        :meth:`weight_specs`; empty for a frozen (``trainable=False``) layer, whose params are
        not updated.
        """
        if self._keras_style:
            return keras_object.keras_constraints(self)
        declared = self._declared()
        return spec_constraints(self, declared) if declared else {}

    def count_params(self, state: dict | None = None) -> int:
        """Number of scalars in every weight of ``state`` (default: the layer's current weights),
        trainable or not, as Keras counts (BatchNorm's moving statistics included)."""
        state = self._read_state() if state is None else state
        return sum(ops.size(leaf) for leaf in optree.tree_leaves((state["params"], state["buffers"])))

    # --- the Keras object model: weights through the handle (see keras_object) --------------
    def _bind_build(self) -> None:
        """Bind this object's ``build`` when its class wrote its own (construction calls it once).

        As Keras wraps a layer's ``build`` per object: a Keras-style author's ``build(input_shape)``
        runs inside :func:`~ember.layers.keras_object.keras_build` (its ``add_weight`` calls make the
        state); a declarative author's ``build(input_shape, seed)`` keeps a standalone, seedless
        build as the layer's weights. Nothing is set on the class.
        """
        build = keras_object.own_build(type(self))
        if build is None:
            return
        wrapper = keras_object.keras_build if self._keras_style else _keeping_build(build)
        object.__setattr__(self, "build", types.MethodType(wrapper, self))

    def __copy__(self) -> Self:
        """A shallow copy (the same configuration and weights); a ``build`` wrapped for this object is
        wrapped again for the copy (a copied bound method would build the original)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        if new.__dict__.pop("build", None) is not None:
            new._bind_build()
        return new

    def _handle(self) -> LayerHandle:
        handle = self.__dict__.get("_handle_slot")
        if handle is None:
            handle = LayerHandle()
            object.__setattr__(self, "_handle_slot", handle)
        return handle

    def _read_state(self) -> dict:
        """The layer's current state: its entry in the owning model's state, or its own."""
        return handles.read_state(self)

    def _write_state(self, state: dict) -> None:
        """Replace the layer's current state whole (in its owner's state when it has one)."""
        handles.write_state(self, state)

    def _lent_state(self) -> dict | None:
        """The state the layers lent to this one (its sub-layers) read their entries from: its
        current state, None before it has one."""
        return handles.current_state(self)

    def _state_children(self) -> dict:
        """``{state key: sub-layer}`` for the sub-layers whose states nest in this layer's state."""
        if self._keras_style:
            return keras_object.keras_children(self)
        return {sub.name: sub for sub in self.sublayers()}

    # --- the symbolic surface (Keras's layer.input/output after a call on symbolic tensors) ----------
    def __getattr__(self, key: str) -> Any:
        """``layer.input``/``layer.output``: the tensor(s) of the layer's first call on symbolic tensors
        (Keras 3's rule; ``ember.Model(inputs=model.input, outputs=model.get_layer("x").output)`` builds
        a sub-model over the same layers and weights); ``layer.input_shape``/``output_shape``: their
        shapes, the same at every call. An AttributeError when the layer was never called on symbolic
        tensors (or, for the shapes, was called on inputs of different shapes). Looked up only when
        the layer has no such attribute of its own (a field, or what a custom ``__init__`` stored), so
        that a config field such as ``EinsumDense.output_shape`` keeps its meaning."""
        found = _SYMBOLIC_ATTRIBUTES.get(key)
        if found is None:
            prop = getattr(type(self), key, None)
            if isinstance(prop, property) and prop.fget is not None:  # a property's own AttributeError
                return prop.fget(self)  # (Python would otherwise replace its message with ours)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")
        attribute, read = found
        return read(self, attribute, key.replace("_", " "))

    @property
    def built(self) -> bool:
        """Whether the layer's weights exist (own, or in a built model that holds it)."""
        try:
            self._read_state()
        except ValueError:
            return False
        return True

    @property
    def weights(self) -> list:
        """Every weight as an :class:`ember.Variable`, in Keras's order: a layer's trainable
        weights, then its non-trainable ones, then each sub-layer's."""
        return handles.variables_of(self)

    @property
    def variables(self) -> list:
        """Same as :attr:`weights`."""
        return self.weights

    @property
    def trainable_weights(self) -> list:
        """The weights the optimizer updates (none when ``trainable`` is False)."""
        return [v for v in self.weights if v.trainable]

    @property
    def trainable_variables(self) -> list:
        """Same as :attr:`trainable_weights`."""
        return self.trainable_weights

    @property
    def non_trainable_weights(self) -> list:
        """Buffers (BatchNorm statistics, ``trainable=False`` weights) and frozen layers' weights."""
        return [v for v in self.weights if not v.trainable]

    @property
    def non_trainable_variables(self) -> list:
        """Same as :attr:`non_trainable_weights`."""
        return self.non_trainable_weights

    def get_weights(self) -> list:
        """The values of :attr:`weights` as NumPy arrays (Keras's order)."""
        return [v.numpy() for v in self.weights]

    def set_weights(self, weights: list) -> None:
        """Replace every weight from a list in :attr:`weights` order (as ``get_weights`` returns).

        Raises:
            ValueError: a wrong number of arrays or a wrong shape (nothing is changed).
        """
        handles.set_weights(self, weights)

    @property
    def losses(self) -> list:
        """The ``add_loss`` values of the last eager call plus the current weight penalties."""
        extra = []
        try:
            extra = self.regularization_losses(self._read_state()["params"])
        except ValueError:
            pass
        return list(self._handle().losses) + list(extra)

    def add_loss(self, value: Any) -> None:
        """Add ``value`` (a scalar) to the loss of the current forward pass (Keras's ``add_loss``):
        ``fit`` adds it to the training loss; after an eager call it is in :attr:`losses`."""
        add_loss(value._native if getattr(type(value), "__ember_tensor__", False) else value)

    def add_weight(self, shape: Any = None, initializer: Any = None, dtype: Any = None, trainable: bool = True,
                   regularizer: Any = None, constraint: Any = None, name: str | None = None) -> Variable:
        """Declare a weight (Keras's ``add_weight``) in ``__init__`` or ``build`` of a Keras-style layer.

        Returns an :class:`ember.Variable` to keep on ``self``; ``call`` reads it. The weight is
        created in the layer's state when the layer is built, seeded by its name.

        Raises:
            RuntimeError: called outside ``__init__``/``build``, or on a declarative layer.
            ValueError: a bad shape, or a name used twice.
        """
        return keras_object.add_weight(self, shape, initializer, dtype, trainable, regularizer, constraint, name)

    @property
    def quantization_mode(self) -> str | None:
        """The quantization mode of the layer's policy (``"int8"``), None when not quantized (Keras's)."""
        return self.dtype_policy.quantization_mode if self._dtype_is_policy and self.dtype else None

    def quantize(self, mode: str | None = None, type_check: bool = True, config: Any = None) -> None:
        """Quantize the layer's weights (Keras's ``layer.quantize``); Dense and Embedding implement it.

        Raises:
            NotImplementedError: this layer has no quantized form.
        """
        raise NotImplementedError(f"layer {self.name!r} ({type(self).__name__}) does not support quantize(); "
                                  f"Ember quantizes Dense and Embedding layers (mode 'int8')")

    def _tree_flatten(self) -> tuple[list, tuple, list]:
        if self._keras_style:
            return keras_object.keras_tree_flatten(self)
        return _flatten_layer(self)

    @classmethod
    def _tree_unflatten(cls, metadata: tuple, children: list) -> Layer:
        return _unflatten_layer(cls, metadata, children)

    def sublayers(self) -> list[Layer]:
        """Direct child layers (fields holding layers or lists of layers; a Keras-style layer's attributes)."""
        if self._keras_style:
            return list(keras_object.keras_children(self).values())
        children = []
        for f in dataclasses.fields(self):
            children.extend(_layers_in(getattr(self, f.name)))
        return children


def _layer_setattr(self: Layer, key: str, value: Any) -> None:
    """Attributes may be set while ``__init__`` (or a Keras-style ``build``) runs; afterwards the
    layer is frozen, except for ``trainable`` (Keras's switch, effective at the next ``compile``)."""
    if "_frozen" not in self.__dict__ or scope.is_building(self):
        keras_object.check_attribute(self, key, value)
        object.__setattr__(self, key, value)
        keras_object.forget_child_keys(self)
        return
    if key == "trainable":
        if not isinstance(value, bool):
            raise TypeError(f"{self.name}: trainable must be a bool, received {value!r}")
        set_trainable(self, value)
        return
    if self._keras_style:
        raise AttributeError(f"Layer {self.name!r} is immutable once constructed: set {key!r} in __init__ "
                             f"(or a weight with self.add_weight in build)")
    raise AttributeError(f"Layer {self.name!r} is immutable: create a new one with layer.replace({key}=...)")


_SYMBOLIC_ATTRIBUTES = {"input": ("input", node_tensors), "output": ("output", node_tensors),
                        "input_shape": ("input", node_shapes), "output_shape": ("output", node_shapes)}


def _keeping_build(build: Any) -> Any:
    """``build`` of a built-in (non Keras-style) class: called without ``seed`` on a layer that no model
    or parent holds, it keeps the state as the layer's weights (see :meth:`Layer.build`)."""

    @functools.wraps(build)
    def keeping(self: Layer, input_shape: Any, *args: Any, **kwargs: Any) -> dict:
        state = build(self, input_shape, *args, **kwargs)
        if not args and "seed" not in kwargs and not initializers.in_shapes_only() and scope.top() is None:
            handle = self._handle()
            if handle.owner is None or handle.owner() is None:
                if handle.state is not None and _same_shapes(handle.state, state):
                    return handle.state  # built already (or handed back by a model): never re-initialised
                handle.owner, handle.path, handle.state = None, (), state
        return state

    return keeping


def _same_shapes(a: dict, b: dict) -> bool:
    """Whether two states hold the same variables with the same shapes."""
    def shapes(state: dict) -> list:
        paths, leaves, _ = optree.tree_flatten_with_path(state)
        return [(path, tuple(ops.shape(leaf))) for path, leaf in zip(paths, leaves)]

    return shapes(a) == shapes(b)


def set_trainable(layer: Layer, value: bool) -> None:
    """``layer.trainable = value`` as in Keras: on the layer and on every layer under it (sub-layers,
    a model's layers, nested models' layers, recursively), each once. A later ``compile`` trains
    what is trainable then; a layer set back to True under a frozen parent stays frozen as long as
    the parent is (``ember.training.steps.trainable_mask``)."""
    seen: set[int] = set()
    pending = [layer]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        object.__setattr__(current, "trainable", value)
        pending.extend(current._state_children().values())


def _policy_name(dtype: Any, layer_name: str) -> str | None:
    """A layer's ``dtype`` as it is kept in its config: a policy name (``"mixed_bfloat16"``, ``"float32"``),
    the global policy's when one was set and ``dtype`` is None (Keras records it too), else None."""
    if dtype is None:
        policy = dtype_policies.explicit_global_policy()
        return None if policy is None else policy.name
    if isinstance(dtype, str) and dtype in dtype_policies.MIXED:
        return dtype
    if isinstance(dtype, (dtype_policies.DTypePolicy, dict)) or (
            isinstance(dtype, str) and dtype.startswith(("mixed",) + dtype_policies.QUANTIZATION_MODES)):
        return dtype_policies.get(dtype, f"{layer_name}: dtype").name
    return dtypes.standardize_dtype(dtype, f"{layer_name}: dtype")


def _immutable_delattr(self: Layer, key: str) -> None:
    raise AttributeError(f"Layer {self.name!r} is immutable: attributes cannot be deleted")


Layer.build = _keeping_build(Layer.__dict__["build"])  # type: ignore[method-assign]  # (see __init_subclass__)
Layer.build._ember_framework_build = True  # type: ignore[attr-defined]  # (see keras_object.own_build)
Layer.__setattr__ = _layer_setattr  # type: ignore[method-assign,assignment]  # replaces the frozen dataclass's
Layer.__delattr__ = _immutable_delattr  # type: ignore[method-assign,assignment]  # (same)



def _layers_in(value: Any) -> list[Layer]:
    if isinstance(value, Layer):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, Layer)]
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, Layer)]
    return []


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def _flatten_layer(layer: Layer) -> tuple[list, tuple, list]:
    children, child_names, meta = [], [], []
    for f in dataclasses.fields(layer):
        value = getattr(layer, f.name)
        if isinstance(value, Layer) or (
            isinstance(value, (list, tuple)) and value and all(isinstance(v, Layer) for v in value)
        ):
            children.append(value)
            child_names.append(f.name)
        else:
            meta.append((f.name, _hashable(value), value))
    metadata = (tuple(child_names), tuple((name, hashed) for name, hashed, _ in meta), _Raw(meta))
    return children, metadata, child_names


class _Raw:
    """Carries the original (possibly unhashable) config values through a treespec."""

    __slots__ = ("items",)

    def __init__(self, items: list) -> None:
        self.items = items

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Raw)

    def __hash__(self) -> int:
        return 0


def _unflatten_layer(cls: type[Layer], metadata: tuple, children: list) -> Layer:
    child_names, _, raw = metadata
    layer = object.__new__(cls)
    for name, _, value in raw.items:
        object.__setattr__(layer, name, value)
    for name, child in zip(child_names, children):
        object.__setattr__(layer, name, child)
    object.__setattr__(layer, "_frozen", True)
    return layer


def _positional_inputs(parameters: Any) -> int:
    """The number of positional parameters of ``call(self, ...)`` without a default (Keras passes
    ``layer(a, b)``'s ``a`` and ``b`` to them), ``training``/``mask`` aside."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for name, p in list(parameters.items())[1:] if p.kind in kinds
                and p.default is inspect.Parameter.empty and name not in ("training", "mask")]
    return max(1, len(required))


def _sees_rng(cls: type[Layer]) -> bool:
    """Whether the ``rng`` given to ``cls.apply`` can reach the class's code, decided once per class.

    False only where it provably cannot: a declarative class whose ``call`` takes no ``rng`` and
    that keeps :meth:`Layer.apply` (which then never passes it on: Dense, Conv, pooling, layer
    normalization, activations, reshapes, Embedding, and user layers written the same way), or an
    exact class that declares ``_apply_ignores_rng = True`` in its own body. Keras-style classes
    (their sub-layers may draw), classes whose ``call`` takes ``rng``, and any other ``apply``
    (wrappers, RNNs, attention, models) keep it, as does every subclass of such a class that does
    not itself qualify (a Dense subclass whose ``call`` takes ``rng`` gets its seed).

    Example:
        >>> from ember import layers
        >>> _sees_rng(layers.Dense), _sees_rng(layers.Dropout), _sees_rng(layers.BatchNormalization)
        (False, True, False)
        >>> class NoisyNorm(layers.BatchNormalization):
        ...     pass
        >>> _sees_rng(NoisyNorm)
        True
    """
    if cls.__dict__.get("_apply_ignores_rng", False):
        return False
    return cls._keras_style or cls._call_takes_rng or cls.apply is not Layer.apply


class DeclarativeLayer(Layer):
    """Base class of declarative layers (every built-in layer): the style this base declares.

    Subclasses declare config fields as annotations (the object is a frozen dataclass) and
    implement:

    * ``weight_specs(input_shape)`` if they have variables: a list of
      :class:`~ember.layers.WeightSpec` (the one way to declare a weight in this style;
      ``build(input_shape, seed) -> state`` creates them, each with its own derived seed);
    * ``call(self, params, inputs[, training][, rng])`` returning outputs (stateless in
      buffers), or override :meth:`apply` when buffers change (BatchNorm);
    * ``compute_output_shape(input_shape)`` so models are built without running a backend.

    A subclass of a built-in layer is declarative too. Keras-style layers subclass :class:`Layer`.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> class Scale(layers.DeclarativeLayer):
        ...     factor: float = 2.0
        ...     def call(self, params, inputs):
        ...         return ops.multiply(inputs, self.factor)
        ...     def compute_output_shape(self, input_shape):
        ...         return input_shape
        >>> scale = Scale(factor=3.0)
        >>> outputs, _ = scale.apply(scale.build((None, 2)), ops.ones((1, 2)))
        >>> ops.to_numpy(outputs).tolist()
        [[3.0, 3.0]]
    """

    _keras_style: ClassVar[bool] = False
