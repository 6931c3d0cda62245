"""``WeightSpec``: the one way a layer declares a weight.

A weight is declared once, with everything that follows from it: its shape, dtype,
initializer, regularizer, constraint and whether it is trainable. From the list of
declarations a layer returns from :meth:`~ember.layers.Layer.weight_specs`,

* :func:`create_weights` makes the layer's state (trainable weights under
  ``"params"``, the others under ``"buffers"``), each weight seeded by its name;
* :func:`spec_penalties` gives the weight penalties the trainer adds to the loss;
* :func:`spec_constraints` gives the projections the optimizer applies after a step.

Built-in layers (``Dense``, ``Embedding``, the convolutions, the normalizations) and
Keras-style subclasses (``self.add_weight(...)`` in ``build``) both go through it, so
``kernel_regularizer=`` and ``kernel_constraint=`` are honoured the same way everywhere.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.layers.weights import WeightSpec, create_weights
    >>> ember.set_backend("numpy")
    >>> specs = [WeightSpec("w", (2, 3), initializer="ones"), WeightSpec("count", (), "zeros", trainable=False)]
    >>> state = create_weights(specs, seed=0)
    >>> ops.shape(state["params"]["w"]), sorted(state["buffers"])
    ((2, 3), ['count'])
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

from ember import constraints as constraints_module
from ember import dtypes, initializers
from ember import regularizers as regularizers_module
from ember.seeds import sub_seed


@dataclasses.dataclass(frozen=True)
class WeightSpec:
    """The declaration of one weight.

    Args:
        name: key of the weight in the layer's state (unique within the layer).
        shape: its shape; ``None`` entries only when the spec is asked for its options
            (regularizer/constraint) without an input shape.
        initializer: name, config or :class:`ember.initializers.Initializer`.
        regularizer: penalty added to the loss (trainable weights of trainable layers only).
        constraint: projection applied after each optimizer step.
        trainable: False puts the weight under ``"buffers"`` (Keras's non-trainable weights).
        dtype: the weight's dtype; None means ``floatx()``.

    Example:
        >>> from ember.layers import WeightSpec
        >>> spec = WeightSpec("moving_mean", (4,), "zeros", trainable=False)
        >>> spec.shape, spec.collection
        ((4,), 'buffers')
    """

    name: str
    shape: tuple
    initializer: Any = "glorot_uniform"
    regularizer: Any = None
    constraint: Any = None
    trainable: bool = True
    dtype: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or "/" in self.name:
            raise ValueError(f"weight name must be a non-empty string without '/', received {self.name!r}")
        where = f"weight {self.name!r}"
        try:
            shape = tuple(self.shape)
        except TypeError:
            raise TypeError(f"{where}: shape must be a tuple of ints, received {self.shape!r}") from None
        for d in shape:
            if d is not None and (isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 0):
                raise ValueError(f"{where}: shape must hold non-negative ints, received {self.shape!r}")
        object.__setattr__(self, "shape", tuple(None if d is None else int(d) for d in shape))
        if not isinstance(self.trainable, bool):
            raise TypeError(f"{where}: trainable must be a bool, received {self.trainable!r}")
        object.__setattr__(self, "initializer", initializers.get(self.initializer))
        object.__setattr__(self, "regularizer", regularizers_module.get(self.regularizer, f"{where}: regularizer"))
        object.__setattr__(self, "constraint", constraints_module.get(self.constraint, f"{where}: constraint"))
        if self.dtype is not None:
            object.__setattr__(self, "dtype", dtypes.standardize_dtype(self.dtype, f"{where}: dtype"))

    @property
    def collection(self) -> str:
        """``"params"`` for a trainable weight, ``"buffers"`` otherwise."""
        return "params" if self.trainable else "buffers"


def create_weights(specs: list[WeightSpec], seed: Any = None, dtype: str | None = None) -> dict:
    """The state ``{"params": ..., "buffers": ...}`` of ``specs``, in declaration order.

    Args:
        specs: the declarations (names must be unique).
        seed: the layer's build seed; each weight gets ``derive_seed(seed, name)``.
        dtype: the dtype of specs that give none (the layer's variable dtype).

    Raises:
        ValueError: two specs with one name, or a shape with unknown (None) sizes.
    """
    state: dict = {"params": {}, "buffers": {}}
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ValueError(f"two weights are named {spec.name!r}; weight names must be unique in a layer")
        seen.add(spec.name)
        if any(d is None for d in spec.shape):
            raise ValueError(f"weight {spec.name!r} needs a fully known shape to be created, received {spec.shape}")
        weight_seed = sub_seed(seed, spec.name)
        state[spec.collection][spec.name] = spec.initializer(
            spec.shape, spec.dtype or dtype or dtypes.floatx(), weight_seed)
    return state


def spec_penalties(layer: Any, specs: list[WeightSpec], params: dict) -> list:
    """``regularizer(params[name])`` for each trainable spec with a regularizer (none when the layer is frozen)."""
    return regularizers_module.weight_penalties(
        layer, params, {spec.name: spec.regularizer for spec in specs if spec.trainable})


def spec_constraints(layer: Any, specs: list[WeightSpec]) -> dict:
    """``{name: constraint}`` for the trainable specs that have one (none when the layer is frozen)."""
    return constraints_module.weight_constraints(
        layer, {spec.name: spec.constraint for spec in specs if spec.trainable})


def resolve_options(layer: Any, *fields: str) -> None:
    """Resolve a layer's ``*_regularizer`` / ``*_constraint`` config fields in ``__post_init__``
    (``ember.regularizers.get`` / ``ember.constraints.get``, errors naming the layer and field)."""
    for field in fields:
        getter = constraints_module.get if field.endswith("_constraint") else regularizers_module.get
        layer._normalize(field, getter(getattr(layer, field), f"{layer.name}: {field}"))


def empty_state() -> dict:
    """The state of a layer with no variables."""
    return {"params": {}, "buffers": {}}
