"""Weight constraints (Keras's ``keras.constraints``): projections applied after each update.

A constraint is a callable ``constraint(w) -> w_projected`` (same shape and dtype).
Layers take them as ``kernel_constraint=``/``bias_constraint=``/``gamma_constraint=``...
and report them through :meth:`ember.layers.Layer.constraints`, a dict
``{param_name: constraint}``; a model's :meth:`~ember.Model.constraints` nests these
under the layer names exactly like ``state["params"]``. As in Keras, the optimizer
step applies them *after* each parameter update::

    params = optimizer_update(params, grads)
    params = ember.constraints.apply_constraints(model.constraints(), params)

Layers never apply constraints in their forward pass, and frozen layers
(``trainable=False``) report none, since their params are not updated.

Norms follow Keras: ``sqrt(sum(w**2, axis, keepdims=True))`` with Keras's epsilon
(1e-7) added to the denominator when rescaling.

Example:
    >>> import ember
    >>> from ember import constraints, ops
    >>> ember.set_backend("numpy")
    >>> ops.to_numpy(constraints.NonNeg()(ops.convert_to_tensor([-1.0, 2.0]))).tolist()
    [0.0, 2.0]
    >>> constraints.get("max_norm")
    MaxNorm(max_value=2.0, axis=0)
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

from ember import global_settings, ops
from ember.serialization import add_keras_names, register_serializable, resolve
from ember.serialization import deserialize as _deserialize
from ember.serialization import serialize as _serialize
from ember.validation import did_you_mean as _did_you_mean

__all__ = [
    "Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "apply_constraints", "deserialize", "get", "serialize",
    "weight_constraints",
]



def _number(value: Any, name: str, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < minimum:
        raise ValueError(f"{name} must be a finite number >= {minimum}, received {value!r}")
    return float(value)


def _axis(value: Any, name: str) -> int | tuple[int, ...]:
    """An int or a tuple of distinct ints (Keras allows e.g. ``[0, 1, 2]`` for conv kernels)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in value):
        axes = tuple(int(a) for a in value)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{name} must not repeat an axis, received {value!r}")
        return axes
    raise TypeError(f"{name} must be an int or a non-empty list/tuple of ints, received {value!r}")


def _norms(w: Any, axis: Any) -> Any:
    return ops.sqrt(ops.sum(ops.square(w), axis=axis, keepdims=True))


class Constraint:
    """Base class: ``constraint(w)`` returns ``w`` projected onto the allowed set.

    The base class is the identity. Subclasses implement ``__call__`` with
    ``ember.ops`` and ``get_config``; register custom ones with
    ``@ember.saving.register_serializable()`` to save models that use them.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.constraints import Constraint
        >>> class Clip(Constraint):
        ...     def __init__(self, limit=1.0):
        ...         self.limit = limit
        ...     def __call__(self, w):
        ...         return ops.clip(w, -self.limit, self.limit)
        ...     def get_config(self):
        ...         return {"limit": self.limit}
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(Clip(1.0)(ops.convert_to_tensor([-3.0, 0.5]))).tolist()
        [-1.0, 0.5]
    """

    def __call__(self, w: Any) -> Any:
        """The projected weight (``w`` itself for the base class)."""
        return w

    def get_config(self) -> dict:
        """Constructor arguments as a JSON-compatible dict."""
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Constraint:
        """Rebuild from :meth:`get_config`'s output."""
        return cls(**config)


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class MaxNorm(Constraint):
    """Rescale each slice whose L2 norm (over ``axis``) exceeds ``max_value`` down to it.

    ``w * clip(norm, 0, max_value) / (1e-7 + norm)``.

    Args:
        max_value: the largest allowed norm.
        axis: axis (or axes) the norm is taken over: 0 for a ``Dense`` kernel
            ``(in, units)`` constrains each unit's incoming weights; ``[0, 1, 2]`` for
            a channels-last ``Conv2D`` kernel constrains each filter.

    Example:
        >>> import ember
        >>> from ember import constraints, ops
        >>> ember.set_backend("numpy")
        >>> w = ops.convert_to_tensor([[3.0, 0.1], [4.0, 0.0]])
        >>> ops.to_numpy(constraints.MaxNorm(1.0)(w)).astype(float).round(4).tolist()
        [[0.6, 0.1], [0.8, 0.0]]
    """

    max_value: float = 2.0
    axis: Any = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_value", _number(self.max_value, "MaxNorm: max_value"))
        object.__setattr__(self, "axis", _axis(self.axis, "MaxNorm: axis"))

    def __call__(self, w: Any) -> Any:
        norms = _norms(w, self.axis)
        desired = ops.clip(norms, 0.0, self.max_value)
        return ops.multiply(w, ops.divide(desired, ops.add(norms, global_settings.epsilon())))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": _config_axis(self.axis)}


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class NonNeg(Constraint):
    """Negative entries become 0: ``maximum(w, 0)``.

    Example:
        >>> import ember
        >>> from ember import constraints, ops
        >>> ember.set_backend("numpy")
        >>> ops.to_numpy(constraints.NonNeg()(ops.convert_to_tensor([-0.5, 0.0, 1.5]))).tolist()
        [0.0, 0.0, 1.5]
    """

    def __call__(self, w: Any) -> Any:
        return ops.maximum(w, 0.0)

    def get_config(self) -> dict:
        return {}


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class UnitNorm(Constraint):
    """Rescale each slice to unit L2 norm over ``axis``: ``w / (1e-7 + norm)``.

    Args:
        axis: axis (or axes) the norm is taken over (see :class:`MaxNorm`).

    Example:
        >>> import ember
        >>> from ember import constraints, ops
        >>> ember.set_backend("numpy")
        >>> w = ops.convert_to_tensor([[3.0], [4.0]])
        >>> ops.to_numpy(constraints.UnitNorm()(w)).astype(float).round(4).tolist()
        [[0.6], [0.8]]
    """

    axis: Any = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "axis", _axis(self.axis, "UnitNorm: axis"))

    def __call__(self, w: Any) -> Any:
        return ops.divide(w, ops.add(_norms(w, self.axis), global_settings.epsilon()))

    def get_config(self) -> dict:
        return {"axis": _config_axis(self.axis)}


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class MinMaxNorm(Constraint):
    """Move each slice's L2 norm (over ``axis``) into ``[min_value, max_value]``.

    The norm is rescaled to ``rate * clip(norm, min_value, max_value) + (1 - rate) * norm``:
    ``rate=1`` enforces the bounds exactly, a smaller rate moves towards them.

    Args:
        min_value: lower bound on the norm.
        max_value: upper bound on the norm (``>= min_value``).
        rate: in ``[0, 1]``.
        axis: axis (or axes) the norm is taken over (see :class:`MaxNorm`).

    Example:
        >>> import ember
        >>> from ember import constraints, ops
        >>> ember.set_backend("numpy")
        >>> w = ops.convert_to_tensor([[0.3], [0.4]])
        >>> ops.to_numpy(constraints.MinMaxNorm(min_value=1.0, max_value=2.0)(w)).astype(float).round(4).tolist()
        [[0.6], [0.8]]
    """

    min_value: float = 0.0
    max_value: float = 1.0
    rate: float = 1.0
    axis: Any = 0

    def __post_init__(self) -> None:
        low = _number(self.min_value, "MinMaxNorm: min_value")
        high = _number(self.max_value, "MinMaxNorm: max_value")
        if high < low:
            raise ValueError(f"MinMaxNorm: max_value ({high}) must be >= min_value ({low})")
        rate = _number(self.rate, "MinMaxNorm: rate")
        if rate > 1.0:
            raise ValueError(f"MinMaxNorm: rate must be in [0, 1], received {self.rate!r}")
        object.__setattr__(self, "min_value", low)
        object.__setattr__(self, "max_value", high)
        object.__setattr__(self, "rate", rate)
        object.__setattr__(self, "axis", _axis(self.axis, "MinMaxNorm: axis"))

    def __call__(self, w: Any) -> Any:
        norms = _norms(w, self.axis)
        desired = ops.add(ops.multiply(self.rate, ops.clip(norms, self.min_value, self.max_value)),
                          ops.multiply(1.0 - self.rate, norms))
        return ops.multiply(w, ops.divide(desired, ops.add(norms, global_settings.epsilon())))

    def get_config(self) -> dict:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": _config_axis(self.axis)}


def _config_axis(axis: Any) -> Any:
    return list(axis) if isinstance(axis, tuple) else axis


_CLASSES = (MaxNorm, MinMaxNorm, NonNeg, UnitNorm)
add_keras_names("keras.constraints", _CLASSES)
_NAMES = {"max_norm": MaxNorm, "min_max_norm": MinMaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm}
_NAMES.update({cls.__name__: cls for cls in _CLASSES})


def serialize(constraint: Any) -> Any:
    """The config of a constraint (by registered name), or None."""
    return _serialize(constraint)


def deserialize(config: Any) -> Any:
    """Inverse of :func:`serialize`."""
    return _deserialize(config)


def get(identifier: Any, argument: str = "constraint") -> Any:
    """Resolve a constraint: None, a name (``"max_norm"``, ``"non_neg"``, ``"unit_norm"``,
    ``"min_max_norm"`` or a class name), a :class:`Constraint`, a config dict, a
    Constraint class (instantiated with its defaults) or a one-argument function.

    Raises:
        ValueError: an unknown name or a config that is not a constraint config.
        TypeError: anything else that is not callable.

    Example:
        >>> from ember import constraints
        >>> constraints.get("unit_norm")
        UnitNorm(axis=0)
        >>> constraints.get(None) is None
        True
    """
    return resolve(identifier, kind="constraint", base=Constraint, names=_NAMES, argument=argument,
                   suggest=_did_you_mean)


def apply_constraints(constraints: dict, params: dict) -> dict:
    """A copy of ``params`` with each constrained leaf replaced by ``constraint(leaf)``.

    ``constraints`` is what :meth:`Layer.constraints` / :meth:`Model.constraints`
    return: a dict nested like ``params`` whose leaves are callables. Params without
    a constraint are passed through as the same objects; ``params`` is not modified.

    Raises:
        ValueError: a constraint names a param that ``params`` lacks.

    Example:
        >>> import ember
        >>> from ember import constraints, ops
        >>> ember.set_backend("numpy")
        >>> params = {"dense": {"kernel": ops.convert_to_tensor([[-1.0, 2.0]]), "bias": ops.zeros((2,))}}
        >>> new = constraints.apply_constraints({"dense": {"kernel": constraints.NonNeg()}}, params)
        >>> ops.to_numpy(new["dense"]["kernel"]).tolist(), new["dense"]["bias"] is params["dense"]["bias"]
        ([[0.0, 2.0]], True)
    """
    if not constraints:
        return params
    if not isinstance(params, dict):
        raise ValueError(f"apply_constraints: expected a dict of params, received {type(params).__name__}")
    updated = dict(params)
    for key, constraint in constraints.items():
        if key not in params:
            raise ValueError(f"apply_constraints: a constraint is given for {key!r}, which is not among the "
                             f"params {sorted(params)}")
        if isinstance(constraint, dict):
            updated[key] = apply_constraints(constraint, params[key])
        else:
            updated[key] = constraint(params[key])
    return updated


def weight_constraints(layer: Any, constraints: dict) -> dict:
    """What a layer returns from :meth:`~ember.layers.Layer.constraints`: the entries of
    ``{param_name: constraint or None}`` that are set, or ``{}`` for a frozen layer
    (``trainable=False``), whose params the optimizer does not update.

    Example:
        >>> from ember import constraints, layers
        >>> dense = layers.Dense(2, name="d")
        >>> constraints.weight_constraints(dense, {"kernel": constraints.NonNeg(), "bias": None})
        {'kernel': NonNeg()}
    """
    if not getattr(layer, "trainable", True):
        return {}
    return {name: constraint for name, constraint in constraints.items() if constraint is not None}
