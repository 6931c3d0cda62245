"""Weight and activity penalties (Keras's ``keras.regularizers``).

A regularizer is a callable ``regularizer(x) -> scalar`` added to the training loss.
Layers take them as ``kernel_regularizer=``/``bias_regularizer=`` (penalties on a
weight, reported by :meth:`ember.layers.Layer.regularization_losses` from the
params, so a shared layer counts once) and ``activity_regularizer=`` (a penalty on
the layer's output, passed to :func:`ember.layers.loss_collection.add_loss` during the
forward pass). As in Keras 3, activity penalties are *not* divided by the batch size.

``get`` resolves what users write: ``None``, a name (``"l1"``, ``"l2"``, ``"l1_l2"``,
``"orthogonal_regularizer"`` or a class name), a :class:`Regularizer`, a config dict
(``{"class_name": "ember>L2", "config": {"l2": 0.1}}``) or any one-argument function.

Example:
    >>> import ember
    >>> from ember import ops, regularizers
    >>> ember.set_backend("numpy")
    >>> float(ops.to_numpy(regularizers.L2(0.5)(ops.ones((2, 3)))))
    3.0
    >>> regularizers.get("l1")
    L1(l1=0.01)
    >>> regularizers.get({"class_name": "ember>L1L2", "config": {"l1": 0.0, "l2": 0.1}})
    L1L2(l1=0.0, l2=0.1)
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

from ember import ops
from ember.serialization import add_keras_names, register_serializable, resolve
from ember.serialization import deserialize as _deserialize
from ember.serialization import serialize as _serialize
from ember.validation import did_you_mean as _did_you_mean

__all__ = [
    "L1", "L1L2", "L2", "OrthogonalRegularizer", "Regularizer", "deserialize", "get", "serialize", "weight_penalties",
    "l1", "l2", "l1_l2", "orthogonal_regularizer",
]

# Keras's backend.epsilon(): the floor on a row/column norm in OrthogonalRegularizer.
_EPSILON = 1e-7


def _penalty(value: Any, name: str, default: float) -> float:
    """A non-negative finite float (``None`` means ``default``), as Keras's ``validate_float_arg``."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative finite float, received {value!r}")
    return float(value)


class Regularizer:
    """Base class: ``regularizer(x)`` returns a scalar penalty for the array ``x``.

    Subclasses implement ``__call__`` (with ``ember.ops``, so they run on every
    backend and under a gradient tape) and ``get_config`` (a JSON-compatible dict
    of constructor arguments). Register a custom one with
    ``@ember.saving.register_serializable()`` so models using it can be saved.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.regularizers import Regularizer
        >>> class SumSquares(Regularizer):
        ...     def __init__(self, factor=1.0):
        ...         self.factor = factor
        ...     def __call__(self, x):
        ...         return ops.multiply(self.factor, ops.sum(ops.square(x)))
        ...     def get_config(self):
        ...         return {"factor": self.factor}
        >>> ember.set_backend("numpy")
        >>> float(ops.to_numpy(SumSquares(2.0)(ops.ones((2,)))))
        4.0
    """

    def __call__(self, x: Any) -> Any:
        """The penalty for ``x`` (0.0 for the base class)."""
        return 0.0

    def get_config(self) -> dict:
        """Constructor arguments as a JSON-compatible dict."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_config()")

    @classmethod
    def from_config(cls, config: dict) -> Regularizer:
        """Rebuild from :meth:`get_config`'s output."""
        return cls(**config)


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class L1L2(Regularizer):
    """``l1 * sum(abs(x)) + l2 * sum(square(x))``.

    Args:
        l1: L1 factor (non-negative; ``None`` means 0).
        l2: L2 factor (non-negative; ``None`` means 0).

    The string ``"l1_l2"`` (in :func:`get`) gives ``L1L2(l1=0.01, l2=0.01)``, as
    Keras documents it; ``L1L2()`` itself applies no penalty.

    Example:
        >>> import ember
        >>> from ember import ops, regularizers
        >>> ember.set_backend("numpy")
        >>> x = ops.convert_to_tensor([[1.0, -2.0]])
        >>> round(float(ops.to_numpy(regularizers.L1L2(l1=0.1, l2=0.5)(x))), 5)
        2.8
    """

    l1: float = 0.0
    l2: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "l1", _penalty(self.l1, "L1L2: l1", 0.0))
        object.__setattr__(self, "l2", _penalty(self.l2, "L1L2: l2", 0.0))

    def __call__(self, x: Any) -> Any:
        total = ops.zeros((), dtype=ops.dtype(x))
        if self.l1:
            total = ops.add(total, ops.multiply(self.l1, ops.sum(ops.abs(x))))
        if self.l2:
            total = ops.add(total, ops.multiply(self.l2, ops.sum(ops.square(x))))
        return total

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class L1(Regularizer):
    """``l1 * sum(abs(x))``.

    Args:
        l1: the factor (non-negative; ``None`` means the default 0.01).

    Example:
        >>> import ember
        >>> from ember import ops, regularizers
        >>> ember.set_backend("numpy")
        >>> float(ops.to_numpy(regularizers.L1(0.5)(ops.convert_to_tensor([1.0, -3.0]))))
        2.0
    """

    l1: float = 0.01

    def __post_init__(self) -> None:
        object.__setattr__(self, "l1", _penalty(self.l1, "L1: l1", 0.01))

    def __call__(self, x: Any) -> Any:
        return ops.multiply(self.l1, ops.sum(ops.abs(x)))

    def get_config(self) -> dict:
        return {"l1": self.l1}


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class L2(Regularizer):
    """``l2 * sum(square(x))``.

    Args:
        l2: the factor (non-negative; ``None`` means the default 0.01).

    Example:
        >>> import ember
        >>> from ember import ops, regularizers
        >>> ember.set_backend("numpy")
        >>> float(ops.to_numpy(regularizers.L2(0.1)(ops.convert_to_tensor([1.0, -3.0]))))
        1.0
    """

    l2: float = 0.01

    def __post_init__(self) -> None:
        object.__setattr__(self, "l2", _penalty(self.l2, "L2: l2", 0.01))

    def __call__(self, x: Any) -> Any:
        return ops.multiply(self.l2, ops.sum(ops.square(x)))

    def get_config(self) -> dict:
        return {"l2": self.l2}


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class OrthogonalRegularizer(Regularizer):
    """Pushes the rows (or columns) of a 2-D weight towards mutual orthogonality.

    The penalty is ``factor * 0.5 * sum(|P - diag(P)|) / (n * (n - 1) / 2)`` with ``P``
    the Gram matrix of the L2-normalised rows (``mode="rows"``, ``n`` rows) or
    columns (``mode="columns"``): ``factor`` times the mean absolute cosine between
    distinct pairs. A row/column norm below 1e-7 is taken as 1e-7 (Keras's epsilon).

    Args:
        factor: non-negative factor (default 0.01).
        mode: ``"rows"`` or ``"columns"``.

    Example:
        >>> import ember
        >>> from ember import ops, regularizers
        >>> ember.set_backend("numpy")
        >>> reg = regularizers.OrthogonalRegularizer(factor=1.0)
        >>> float(ops.to_numpy(reg(ops.eye(3))))
        0.0
        >>> round(float(ops.to_numpy(reg(ops.ones((2, 2))))), 6)
        1.0
    """

    factor: float = 0.01
    mode: str = "rows"

    def __post_init__(self) -> None:
        object.__setattr__(self, "factor", _penalty(self.factor, "OrthogonalRegularizer: factor", 0.01))
        if self.mode not in ("rows", "columns"):
            raise ValueError(f"OrthogonalRegularizer: mode must be 'rows' or 'columns', received {self.mode!r}")

    def __call__(self, x: Any) -> Any:
        shape = tuple(ops.shape(x))
        if len(shape) != 2:
            raise ValueError(f"OrthogonalRegularizer: expects a rank-2 weight, received shape {shape}")
        axis = 1 if self.mode == "rows" else 0
        size = shape[0] if self.mode == "rows" else shape[1]
        if size < 2:
            return ops.zeros((), dtype=ops.dtype(x))
        squares = ops.sum(ops.square(x), axis=axis, keepdims=True)
        unit = ops.multiply(x, ops.rsqrt(ops.maximum(squares, _EPSILON * _EPSILON)))
        gram = ops.matmul(unit, ops.transpose(unit)) if self.mode == "rows" else ops.matmul(ops.transpose(unit), unit)
        off_diagonal = ops.multiply(gram, ops.subtract(1.0, ops.eye(size, dtype=ops.dtype(x))))
        pairs = size * (size - 1) / 2.0
        return ops.multiply(self.factor * 0.5 / pairs, ops.sum(ops.abs(off_diagonal)))

    def get_config(self) -> dict:
        return {"factor": self.factor, "mode": self.mode}


_NAMES = {
    "l1": L1,
    "l2": L2,
    "l1_l2": lambda: L1L2(l1=0.01, l2=0.01),
    "l1l2": L1L2,
    "orthogonal_regularizer": OrthogonalRegularizer,
    "L1": L1,
    "L2": L2,
    "L1L2": L1L2,
    "OrthogonalRegularizer": OrthogonalRegularizer,
}
add_keras_names("keras.regularizers", (L1, L2, L1L2, OrthogonalRegularizer))


def serialize(regularizer: Any) -> Any:
    """The config of a regularizer (by registered name), or None."""
    return _serialize(regularizer)


def deserialize(config: Any) -> Any:
    """Inverse of :func:`serialize`."""
    return _deserialize(config)


# Keras's lowercase names: ``regularizers.l2(1e-4)`` builds an L2 (they are the classes, as in Keras).
l1, l2, l1_l2, orthogonal_regularizer = L1, L2, L1L2, OrthogonalRegularizer


def get(identifier: Any, argument: str = "regularizer") -> Any:
    """Resolve a regularizer identifier (see the module docstring); ``None`` stays None.

    Args:
        identifier: None, a name, a :class:`Regularizer`, a config dict, a
            Regularizer class (instantiated with its defaults) or a function.
        argument: the argument name used in error messages (``"Dense: kernel_regularizer"``).

    Raises:
        ValueError: an unknown name or a config that is not a regularizer config.
        TypeError: anything else that is not callable.

    Example:
        >>> from ember import regularizers
        >>> regularizers.get("l1_l2")
        L1L2(l1=0.01, l2=0.01)
        >>> regularizers.get(None) is None
        True
    """
    return resolve(identifier, kind="regularizer", base=Regularizer, names=_NAMES, argument=argument,
                   suggest=_did_you_mean)


def weight_penalties(layer: Any, params: dict, regularizers: dict) -> list:
    """The penalties a layer reports from :meth:`~ember.layers.Layer.regularization_losses`.

    Args:
        layer: the layer (a frozen one, ``trainable=False``, reports none, as in Keras
            where only trainable weights are penalised).
        params: the layer's params.
        regularizers: ``{param_name: regularizer or None}``.

    Returns:
        ``[regularizer(params[name]), ...]`` for each param present with a regularizer.

    Example:
        >>> import ember
        >>> from ember import layers, ops, regularizers
        >>> ember.set_backend("numpy")
        >>> dense = layers.Dense(2, name="d")
        >>> params = {"kernel": ops.ones((3, 2)), "bias": ops.ones((2,))}
        >>> penalties = regularizers.weight_penalties(dense, params, {"kernel": regularizers.L2(0.5)})
        >>> [float(ops.to_numpy(v)) for v in penalties]
        [3.0]
    """
    if not getattr(layer, "trainable", True):
        return []
    return [regularizer(params[name]) for name, regularizer in regularizers.items()
            if regularizer is not None and name in params]
