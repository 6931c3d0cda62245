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
    >>> from ember.layers import Layer
    >>> class Scale(Layer):
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

import contextlib
import dataclasses
import inspect
from typing import Any, ClassVar

import optree

from ember import dtypes
from ember.layers.state_check import check_state_dict, input_shapes, raise_if_mismatched
from ember.utils.naming import to_snake_case
from ember.serialization import register_serializable
from ember.serialization import serialize
from ember.serialization import deserialize
from ember.symbolic import call_symbolic, is_symbolic
from ember import ops

PYTREE_NAMESPACE = "ember"
_name_counts: dict[str, int] = {}
_loss_collectors: list[list] = []


@contextlib.contextmanager
def collect_losses():
    """Collect the scalars layers pass to :func:`add_loss` while the block runs.

    The trainer wraps each forward pass in this to add activity losses to the loss.

    Example:
        >>> from ember.layers.layer import add_loss, collect_losses
        >>> with collect_losses() as losses:
        ...     add_loss(0.5)
        >>> losses
        [0.5]
    """
    collected: list = []
    _loss_collectors.append(collected)
    try:
        yield collected
    finally:
        _loss_collectors.remove(collected)


def add_loss(value) -> None:
    """Add a scalar to the loss of the forward pass being collected (no-op otherwise).

    Layers call this from ``call`` for losses that depend on activations
    (``ActivityRegularization``, ``activity_regularizer=``); weight penalties come
    from :meth:`Layer.regularization_losses` instead, so a shared layer counts once.
    """
    if _loss_collectors:
        _loss_collectors[-1].append(value)


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
    count = _name_counts.get(base, 0)
    _name_counts[base] = count + 1
    return base if count == 0 else f"{base}_{count}"


def empty_state() -> dict:
    """The state of a layer with no variables."""
    return {"params": {}, "buffers": {}}


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Layer:
    """Base class of every layer. Subclasses declare config fields as annotations.

    Subclasses implement:

    * ``build(input_shape, seed=None) -> state`` if they have variables
      (use :meth:`make_state`);
    * ``call(params, inputs[, training][, rng])`` returning outputs (stateless in
      buffers), or override :meth:`apply` when buffers change (BatchNorm);
    * ``compute_output_shape(input_shape)`` so models are built without running
      a backend.

    Args:
        name: unique name; generated from the class name when omitted.
        trainable: False freezes the layer's params (no gradient, state kept).
        dtype: dtype of the layer's variables; ``None`` means ``floatx()`` at build time.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> class Scale(layers.Layer):
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

    name: str | None = dataclasses.field(default=None, kw_only=True)
    trainable: bool = dataclasses.field(default=True, kw_only=True)
    dtype: str | None = dataclasses.field(default=None, kw_only=True)

    # Filled per subclass in __init_subclass__.
    _config_dataclass: ClassVar[bool] = True  # False for Model: its config is its graph
    _call_takes_training: ClassVar[bool] = False
    _call_takes_rng: ClassVar[bool] = False
    # Keras's flag: the layer passes an input mask through (see compute_mask).
    supports_masking: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls._config_dataclass:
            dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
            # The frozen dataclass installs its own __setattr__; ours says what to do instead.
            cls.__setattr__ = _immutable_setattr
            cls.__delattr__ = _immutable_delattr
        parameters = inspect.signature(cls.call).parameters
        cls._call_takes_training = "training" in parameters
        cls._call_takes_rng = "rng" in parameters
        if cls.__module__.startswith("ember."):
            register_serializable("ember")(cls)
        optree.register_pytree_node(
            cls, lambda layer: layer._tree_flatten(),
            lambda meta, children, cls=cls: cls._tree_unflatten(meta, children),
            namespace=PYTREE_NAMESPACE,
        )

    def __post_init__(self) -> None:
        if self.name is None:
            object.__setattr__(self, "name", unique_name(to_snake_case(type(self).__name__)))
        elif not isinstance(self.name, str) or not self.name:
            raise ValueError(f"{type(self).__name__}: name must be a non-empty string, received {self.name!r}")
        if self.dtype is not None:
            object.__setattr__(self, "dtype", dtypes.standardize_dtype(self.dtype, f"{self.name}: dtype"))
        if not isinstance(self.trainable, bool):
            raise TypeError(f"{self.name}: trainable must be a bool, received {self.trainable!r}")

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items() if k != "name")
        return f"{type(self).__name__}(name={self.name!r}{', ' if fields else ''}{fields})"

    def _normalize(self, field: str, value: Any) -> None:
        """Replace a config field's value during ``__post_init__`` (validation/standardising)."""
        object.__setattr__(self, field, value)

    # --- configuration ---------------------------------------------------------------
    @property
    def variable_dtype(self) -> str:
        """The dtype variables are created with: the layer's ``dtype`` or ``floatx()``."""
        return self.dtype or dtypes.floatx()

    def replace(self, **changes: Any) -> "Layer":
        """A new layer with some config fields changed (the name is kept unless given)."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise TypeError(f"{self.name}.replace: unknown field(s) {sorted(unknown)}; fields are {sorted(known)}")
        return dataclasses.replace(self, **changes)

    def get_config(self) -> dict:
        """Every config field (sub-layers as their own serialized configs)."""
        return {f.name: serialize(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_config(cls, config: dict) -> "Layer":
        """Rebuild a layer from :meth:`get_config`'s output."""
        return cls(**{key: deserialize(value) for key, value in config.items()})

    # --- state --------------------------------------------------------------------------
    def make_state(self, params: dict | None = None, buffers: dict | None = None) -> dict:
        """Package variables into the standard state dict."""
        return {"params": dict(params or {}), "buffers": dict(buffers or {})}

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        """Create this layer's variables for inputs of ``input_shape``; none by default."""
        self.compute_output_shape(input_shape)  # validates the shape
        return empty_state()

    # --- computation ------------------------------------------------------------------------
    def call(self, params: dict, inputs: Any) -> Any:
        """The forward computation given this layer's params."""
        raise NotImplementedError(f"{type(self).__name__} must implement call(params, inputs) or apply(...)")

    def apply(self, state: dict, inputs: Any, *, training: bool = False, rng: Any = None) -> tuple[Any, dict]:
        """Pure forward pass: ``(outputs, state)``; the default leaves the state unchanged.

        Raises:
            TypeError/ValueError: a state that is not ``{"params", "buffers"}``, or variables missing,
                unexpected or mis-shaped for these inputs (named by path; see
                :mod:`ember.layers.state_check`).
        """
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

    def compute_output_shape(self, input_shape: Any) -> Any:
        """Output shape for ``input_shape`` (``None`` for unknown dimensions)."""
        raise NotImplementedError(f"{type(self).__name__} must implement compute_output_shape(input_shape)")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """On symbolic tensors, record a node of a functional model; eager calls need state."""
        if args and is_symbolic(args[0]):
            return call_symbolic(self, *args, **kwargs)
        raise TypeError(
            f"Layer {self.name!r} holds no variables, so it cannot be called eagerly: build it with "
            f"state = layer.build(input_shape) and run layer.apply(state, x), or use it in a Model"
        )

    def regularization_losses(self, params: dict) -> list:
        """Weight penalties (``kernel_regularizer=`` ...) as scalars, from this layer's params."""
        return []

    def constraints(self) -> dict:
        """``{param_name: constraint}`` for this layer's constrained params (``kernel_constraint=`` ...).

        As in Keras, constraints are projections the optimizer step applies *after*
        each update (``ember.constraints.apply_constraints(model.constraints(), params)``);
        layers never apply them in their forward pass. Empty by default, and for a
        frozen (``trainable=False``) layer, whose params are not updated.
        """
        return {}

    def count_params(self, state: dict) -> int:
        """Number of scalars in the state's params."""
        return sum(ops.size(leaf) for leaf in optree.tree_leaves(state["params"]))

    def _tree_flatten(self) -> tuple[list, tuple, list]:
        return _flatten_layer(self)

    @classmethod
    def _tree_unflatten(cls, metadata: tuple, children: list) -> "Layer":
        return _unflatten_layer(cls, metadata, children)

    def sublayers(self) -> list["Layer"]:
        """Direct child layers (fields holding layers or lists of layers)."""
        children = []
        for f in dataclasses.fields(self):
            children.extend(_layers_in(getattr(self, f.name)))
        return children


def _immutable_setattr(self: Layer, key: str, value: Any) -> None:
    raise AttributeError(f"Layer {self.name!r} is immutable: create a new one with layer.replace({key}=...)")


def _immutable_delattr(self: Layer, key: str) -> None:
    raise AttributeError(f"Layer {self.name!r} is immutable: attributes cannot be deleted")


Layer.__setattr__ = _immutable_setattr
Layer.__delattr__ = _immutable_delattr


def _layers_in(value: Any) -> list[Layer]:
    if isinstance(value, Layer):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, Layer)]
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


def _unflatten_layer(cls: type, metadata: tuple, children: list) -> Layer:
    child_names, _, raw = metadata
    layer = object.__new__(cls)
    for name, _, value in raw.items:
        object.__setattr__(layer, name, value)
    for name, child in zip(child_names, children):
        object.__setattr__(layer, name, child)
    return layer
