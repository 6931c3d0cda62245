"""Surrogate gradients: a Heaviside spike forward, a smooth derivative backward.

A spiking neuron emits ``S = H(U - threshold)`` (``H(x) = 1`` for ``x > 0``, else 0, as
snntorch). ``H`` has a zero derivative almost everywhere, so training uses the derivative
of a smooth stand-in ``S~`` in the backward pass (Neftci, Mostafa & Zenke, 2019). Each
surrogate here is an ``ember.custom_gradient`` function (so it works under every tape,
``fit`` and the compiled steps on every backend) with these derivatives, the same as
``snntorch.surrogate`` where snntorch defines the same one:

=====================  =========================================  ====================================
name (argument)        ``dS/dx`` in the backward pass             smooth function ``S~(x)``
=====================  =========================================  ====================================
``fast_sigmoid(slope)``  ``1 / (slope |x| + 1)^2``                ``x / (1 + slope |x|)``
``atan(alpha)``        ``(alpha / 2) / (1 + (pi/2 alpha x)^2)``   ``arctan(pi/2 alpha x) / pi + 1/2``
``straight_through()``  ``1``                                     ``x``
``triangle(width)``    ``max(0, 1 - |x| / width) / width``        the integral of that tent
=====================  =========================================  ====================================

``fast_sigmoid``, ``atan`` and ``straight_through`` are snntorch's ``fast_sigmoid``,
``atan`` and ``straight_through_estimator`` (defaults ``slope=25``, ``alpha=2``).
``triangle`` is the triangular pseudo-derivative of Esser et al. (2016) and Bellec et al.
(2018), a tent of unit area; snntorch's ``triangular(threshold)`` is not that: its backward
is ``+threshold`` for ``x < 0`` and ``-threshold`` for ``x >= 0`` (the derivative of a
tent, not a tent), so Ember does not copy it.

A :class:`Surrogate` is a small serializable value (kind and parameter) that layers keep in
their config (``LIFCell(surrogate="fast_sigmoid")`` or ``surrogate=fast_sigmoid(10.0)``);
calling it on membrane potentials minus threshold gives the spikes.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.layers.spiking import surrogates
    >>> ember.set_backend("numpy")
    >>> spike = surrogates.fast_sigmoid(slope=1.0)
    >>> x = ops.convert_to_tensor([-1.0, 0.0, 1.0])
    >>> ops.to_numpy(spike(x)).tolist()
    [0.0, 0.0, 1.0]
    >>> ops.to_numpy(ember.grad(lambda v: ops.sum(spike(v)))(x)).tolist()
    [0.25, 1.0, 0.25]
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

from ember import ops
from ember.autodiff.custom_gradient import custom_gradient
from ember.serialization import register_serializable

KINDS = ("fast_sigmoid", "atan", "straight_through", "triangle")
DEFAULTS = {"fast_sigmoid": 25.0, "atan": 2.0, "straight_through": 1.0, "triangle": 1.0}


def heaviside(x: Any) -> Any:
    """``1`` where ``x > 0``, else ``0``, in ``x``'s dtype (snntorch's spike: ``H(0) = 0``)."""
    return ops.cast(ops.greater(x, 0.0), ops.dtype(x))


def surrogate_derivative(kind: str, x: Any, scale: float) -> Any:
    """The backward derivative ``dS~/dx`` of surrogate ``kind`` with parameter ``scale`` (table above)."""
    if kind == "fast_sigmoid":
        return ops.reciprocal(ops.square(ops.add(ops.multiply(ops.abs(x), scale), 1.0)))
    if kind == "atan":
        return ops.divide(scale / 2.0, ops.add(ops.square(ops.multiply(x, math.pi / 2.0 * scale)), 1.0))
    if kind == "triangle":
        return ops.divide(ops.relu(ops.subtract(1.0, ops.divide(ops.abs(x), scale))), scale)
    return ops.ones_like(x)  # straight_through


@custom_gradient
def _spike(x: Any, *, kind: str, scale: float) -> tuple[Any, Any]:
    def grad_fn(upstream: Any) -> Any:
        return ops.multiply(upstream, surrogate_derivative(kind, x, scale))
    return heaviside(x), grad_fn


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class Surrogate:
    """A Heaviside spike with a surrogate derivative (module docstring): ``Surrogate(kind, scale)(x)``.

    Args:
        kind: one of ``"fast_sigmoid"``, ``"atan"``, ``"straight_through"``, ``"triangle"``.
        scale: the kind's parameter (slope, alpha, unused, width); None means its default
            (25, 2, 1, 1). A positive finite number.

    Example:
        >>> from ember.layers.spiking.surrogates import Surrogate
        >>> Surrogate("atan").get_config()
        {'kind': 'atan', 'scale': 2.0}
    """

    kind: str = "atan"
    scale: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Surrogate: kind must be one of {KINDS}, received {self.kind!r}")
        scale = DEFAULTS[self.kind] if self.scale is None else self.scale
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not (0.0 < scale < math.inf):
            raise ValueError(f"Surrogate({self.kind!r}): scale must be a positive finite number, received {scale!r}")
        object.__setattr__(self, "scale", float(scale))

    def __call__(self, x: Any) -> Any:
        """Spikes ``H(x)``; the gradient is the surrogate's derivative."""
        return _spike(x, kind=self.kind, scale=float(self.scale or 0.0))

    def derivative(self, x: Any) -> Any:
        """The surrogate's derivative at ``x`` (what the backward multiplies the upstream gradient by)."""
        return surrogate_derivative(self.kind, x, float(self.scale or 0.0))

    def get_config(self) -> dict:
        return {"kind": self.kind, "scale": self.scale}

    @classmethod
    def from_config(cls, config: dict) -> Surrogate:
        return cls(**config)


def fast_sigmoid(slope: float = 25.0) -> Surrogate:
    """snntorch's fast sigmoid: backward ``1 / (slope |x| + 1)^2``."""
    return Surrogate("fast_sigmoid", slope)


def atan(alpha: float = 2.0) -> Surrogate:
    """snntorch's arctan: backward ``(alpha / 2) / (1 + (pi/2 alpha x)^2)``."""
    return Surrogate("atan", alpha)


def straight_through() -> Surrogate:
    """snntorch's straight-through estimator: backward ``1``."""
    return Surrogate("straight_through")


def triangle(width: float = 1.0) -> Surrogate:
    """The triangular pseudo-derivative: backward ``max(0, 1 - |x| / width) / width``."""
    return Surrogate("triangle", width)


def get(identifier: Any, argument: str = "surrogate") -> Surrogate:
    """A :class:`Surrogate` from itself, a kind name (default parameter) or a config dict.

    Example:
        >>> from ember.layers.spiking import surrogates
        >>> surrogates.get("fast_sigmoid")
        Surrogate(kind='fast_sigmoid', scale=25.0)
    """
    if isinstance(identifier, Surrogate):
        return identifier
    if isinstance(identifier, str):
        if identifier not in KINDS:
            raise ValueError(f"{argument} must be one of {KINDS} or an ember Surrogate, received {identifier!r}")
        return Surrogate(identifier)
    if isinstance(identifier, dict):
        config = identifier.get("config", identifier)
        return Surrogate(**config)
    raise TypeError(f"{argument} must be one of {KINDS} or an ember Surrogate, received {identifier!r}")
