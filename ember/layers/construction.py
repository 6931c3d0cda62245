"""How a layer object comes to exist: freezing after ``__init__``, Keras's constructor keywords,
generated names and the structural state keys a model gives them.

* :class:`LayerType`, the metaclass of every layer, runs ``__init__`` and then freezes the
  object (Equinox-style); for Keras-style classes it records the constructor arguments, the
  automatic ``get_config``.
* ``input_shape=`` / ``input_dim=`` / ``batch_input_shape=`` are taken out of the constructor
  call (unless the class declares them) and kept for a ``Sequential`` that starts with the layer.
* :class:`LayerHandle` is the one mutable part of a layer object: where its current weights
  live (its own state, or its entry in an owning model's state) and its last eager losses.
* :func:`structural_keys`: the state keys of a model's layers.

Example:
    >>> from ember import layers
    >>> from ember.layers.construction import structural_keys
    >>> a, b, c = layers.Dense(1), layers.Dense(1, name="head"), layers.Dense(1)
    >>> sorted(structural_keys([a, b, c]).values())
    ['dense', 'dense_1', 'head']
"""

from __future__ import annotations

import inspect
from typing import Any

from ember.layers import rematerialization


class LayerHandle:
    """The mutable part of a layer object: where its weights live when it is used eagerly.

    ``state`` is the layer's own state (after ``layer(x)`` or ``set_weights``) unless
    ``owner`` (a weak reference to the model or Keras-style parent whose state holds this
    layer's entry under ``path``) is set. ``losses`` are the ``add_loss`` values of the last
    eager call. ``inbound_nodes`` are the layer's symbolic calls (:class:`ember.symbolic.Node`),
    in call order: ``layer.input``/``layer.output`` read the first (Keras's rule). Not
    configuration: not part of the pytree, the config or equality.
    """

    __slots__ = ("state", "owner", "path", "losses", "build_shape", "inbound_nodes")

    def __init__(self) -> None:
        self.state: dict | None = None
        self.owner: Any = None
        self.path: tuple = ()
        self.losses: list = []
        self.build_shape: Any = None
        self.inbound_nodes: list = []


class LayerType(type):
    """Metaclass of :class:`Layer`: runs ``__init__``, then freezes the object (Equinox-style).

    For Keras-style subclasses it also records the constructor arguments, which become
    the automatic :meth:`Layer.get_config`.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        layer_class: Any = cls  # this metaclass's instances are the Layer classes
        input_shape = _pop_input_shape(layer_class, kwargs)
        layer = layer_class.__new__(layer_class)
        if input_shape is not None:
            object.__setattr__(layer, "_input_shape_arg", input_shape)
        if layer_class._keras_style:
            object.__setattr__(layer, "_init_config", _constructor_config(layer_class, args, kwargs))
            object.__setattr__(layer, "_init_specs", [])
            object.__setattr__(layer, "_built_specs", [])
        type(layer).__init__(layer, *args, **kwargs)
        layer._bind_build()  # a class's own build, wrapped per object (as Keras does)
        mode = rematerialization.current_mode()
        if mode is not None:  # made inside an ember.RematScope: Keras keeps the scope's settings
            object.__setattr__(layer, "_remat_mode", mode)
        object.__setattr__(layer, "_frozen", True)
        return layer

    @property
    def __signature__(cls) -> inspect.Signature:
        """What ``inspect.signature(cls)`` (and so ``help``, IDEs and Jupyter) reports: the parameters of
        ``__init__`` without ``self``. Without it inspect would report this metaclass's ``__call__``,
        ``(*args, **kwargs)``. A property of the metaclass, so a layer object's own signature (its
        ``__call__``) is not affected."""
        signature = inspect.signature(cls.__init__)  # type: ignore[misc]  # cls: a layer class
        return signature.replace(parameters=list(signature.parameters.values())[1:])


_INPUT_SHAPE_ARGUMENTS = ("input_shape", "input_dim", "batch_input_shape")


def _pop_input_shape(cls: Any, kwargs: dict) -> tuple | None:
    """Keras's ``input_shape=`` / ``input_dim=`` / ``batch_input_shape=`` constructor keywords (unless
    the class's own constructor declares them): the batch shape a ``Sequential`` starting with this
    layer gets its input from. Not config: ``Sequential`` saves it as its input layer."""
    if not any(k in kwargs for k in _INPUT_SHAPE_ARGUMENTS):
        return None
    declared = inspect.signature(cls.__init__).parameters
    given = {k: kwargs.pop(k) for k in _INPUT_SHAPE_ARGUMENTS if k in kwargs and k not in declared}
    if not given:
        return None
    if len(given) > 1:
        raise TypeError(f"{cls.__name__}: give one of {sorted(given)}, not several")
    (key, value), = given.items()
    if key == "input_dim":
        value = (value,)
    try:
        shape = tuple(value)
    except TypeError:
        raise TypeError(f"{cls.__name__}: {key} must be a tuple of ints (None for unknown), "
                        f"received {value!r}") from None
    if any(d is not None and (isinstance(d, bool) or not isinstance(d, int) or d < 0) for d in shape):
        raise ValueError(f"{cls.__name__}: {key} must hold non-negative ints or None, received {value!r}")
    return shape if key == "batch_input_shape" else (None,) + shape


def _constructor_config(cls: Any, args: tuple, kwargs: dict) -> dict:
    """The constructor's arguments by name (``**kwargs`` spread out), as Keras's automatic config."""
    try:
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
    except TypeError:
        return dict(kwargs)
    config: dict = {}
    for name, value in list(bound.arguments.items())[1:]:
        kind = inspect.signature(cls.__init__).parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            config.update(value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                config[name] = list(value)
        else:
            config[name] = value
    return config


def mark_auto_named(layer: Any, base: str) -> None:
    """Record that ``layer``'s name was generated from ``base`` (see :func:`structural_keys`)."""
    object.__setattr__(layer, "_auto_name", base)


def structural_keys(layers: list) -> dict:
    """``{id(layer): state key}`` for the layers of one model, in model order.

    A layer named by the user keeps its name. A layer whose name was generated (``dense_7``,
    from a process-wide counter) is keyed by its base name counted within the model
    (``dense``, ``dense_1``, ...), as Flax names sub-modules per parent and Keras 3 names its
    weight-file entries. So the same definition gives the same state keys, the same seeded
    weights and loadable weight files in any process, whatever was created before it.
    """
    taken = {layer.name for layer in layers if "_auto_name" not in layer.__dict__}
    counts: dict[str, int] = {}
    keys: dict = {}
    for layer in layers:
        base = layer.__dict__.get("_auto_name")
        if base is None:
            keys[id(layer)] = layer.name
            continue
        count = counts.get(base, 0)
        key = base if count == 0 else f"{base}_{count}"
        while key in taken:
            count += 1
            key = f"{base}_{count}"
        counts[base] = count + 1
        taken.add(key)
        keys[id(layer)] = key
    return keys
