"""Spatial regularizers: the wiring cost of a spatially embedded network (Achterberg et al., 2023).

For a recurrent weight matrix ``W`` ``(n, n)`` (``W[i, j]``: neuron ``i`` to neuron ``j``) and the
distances ``D`` between the neurons (:attr:`~ember.wirings.SpatialWiring.distance_matrix`)::

    distance penalty       = strength * sum_ij |W_ij| * D_ij
    communicability penalty = strength * sum_ij |W_ij| * D_ij * C_ij ** comms_factor
    C = expm(S^{-1/2} |W| S^{-1/2}) with its diagonal set to 0,  S = diag(s),  s_i = sum_j |W_ij|

(the seRNN paper's weighted communicability: ``C_ij`` grows with the number of short walks
from ``i`` to ``j``, so the second penalty prunes the long connections that carry traffic).
A neuron with no outgoing weight (``s_i = 0``) gets ``S^{-1/2}_ii = 0``. ``expm`` is a degree-12
Taylor polynomial after scaling by ``2**-8`` and squaring 8 times, written with ``ember.ops`` so
the penalty and its gradient run on every backend; for ``||A|| <= 40`` (a normalised matrix
of the sizes used here is far below) the truncation is under ``1e-16`` relative.

Example:
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> reg = layers.SpatialRegularizer([[0.0, 2.0], [2.0, 0.0]], strength=0.5)
    >>> float(ops.to_numpy(reg(ops.convert_to_tensor([[1.0, -1.0], [3.0, 0.0]]))))
    4.0
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ember import ops
from ember.regularizers import Regularizer
from ember.serialization import register_serializable

_SQUARINGS = 8
_TAYLOR_DEGREE = 12


def expm(matrix: Any) -> Any:
    """``exp(matrix)`` for a square matrix: Taylor polynomial of ``matrix / 2**8``, squared 8 times."""
    scaled = ops.multiply(matrix, 1.0 / 2.0 ** _SQUARINGS)
    eye = ops.eye(ops.shape(matrix)[0], dtype=ops.dtype(matrix))
    result, term = eye, eye
    for k in range(1, _TAYLOR_DEGREE + 1):
        term = ops.multiply(ops.matmul(term, scaled), 1.0 / k)
        result = ops.add(result, term)
    for _ in range(_SQUARINGS):
        result = ops.matmul(result, result)
    return result


def communicability(weights: Any) -> Any:
    """The weighted communicability ``C`` of ``|weights|`` (module docstring), diagonal 0."""
    magnitude = ops.abs(weights)
    strength = ops.sum(magnitude, axis=1)
    positive = ops.greater(strength, 0.0)
    inv_sqrt = ops.where(positive, ops.rsqrt(ops.where(positive, strength, 1.0)), 0.0)
    normalised = ops.multiply(ops.multiply(ops.expand_dims(inv_sqrt, 1), magnitude), ops.expand_dims(inv_sqrt, 0))
    result = expm(normalised)
    off_diagonal = ops.subtract(1.0, ops.eye(ops.shape(weights)[0], dtype=ops.dtype(weights)))
    return ops.multiply(result, off_diagonal)


def distance_penalty(weights: Any, distance: Any) -> Any:
    """``sum |W| * D``."""
    return ops.sum(ops.multiply(ops.abs(weights), distance))


def communicability_penalty(weights: Any, distance: Any, comms_factor: float = 1.0) -> Any:
    """``sum |W| * D * C ** comms_factor``."""
    comms = communicability(weights)
    if comms_factor != 1.0:
        comms = ops.power(comms, comms_factor)
    return ops.sum(ops.multiply(ops.multiply(ops.abs(weights), distance), comms))


@register_serializable("ember")
@dataclasses.dataclass(frozen=True)
class SpatialRegularizer(Regularizer):
    """The distance (or communicability-weighted distance) penalty on a ``(n, n)`` weight matrix.

    Args:
        distance: ``(n, n)`` distances (a NumPy array or nested lists; a
            :class:`~ember.wirings.SpatialWiring`'s ``distance_matrix``).
        strength: the penalty's factor (``>= 0``).
        communicability: multiply by the weighted communicability (module docstring).
        comms_factor: the power of the communicability.

    Example:
        >>> from ember import layers, wirings
        >>> wiring = wirings.SpatialWiring(wirings.FullyConnected(4))
        >>> reg = layers.SpatialRegularizer(wiring.distance_matrix, strength=0.01, communicability=True)
        >>> reg.get_config()["strength"], len(reg.get_config()["distance"])
        (0.01, 4)
    """

    distance: Any
    strength: float = 0.01
    communicability: bool = False
    comms_factor: float = 1.0

    def __post_init__(self) -> None:
        distance = np.asarray(self.distance, dtype=np.float64)
        if distance.ndim != 2 or distance.shape[0] != distance.shape[1] or not np.all(np.isfinite(distance)):
            raise ValueError(f"SpatialRegularizer: distance must be a finite square matrix (n, n), "
                             f"received shape {distance.shape}")
        object.__setattr__(self, "distance", tuple(map(tuple, distance.tolist())))
        for field in ("strength", "comms_factor"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < math.inf:
                raise ValueError(f"SpatialRegularizer: {field} must be a non-negative finite number, "
                                 f"received {value!r}")
            object.__setattr__(self, field, float(value))
        if not isinstance(self.communicability, bool):
            raise TypeError(f"SpatialRegularizer: communicability must be a bool, received {self.communicability!r}")

    def __call__(self, x: Any) -> Any:
        n = len(self.distance)
        if tuple(ops.shape(x)) != (n, n):
            raise ValueError(f"SpatialRegularizer: expected weights of shape ({n}, {n}) (the distance matrix's), "
                             f"received {tuple(ops.shape(x))}")
        distance = ops.convert_to_tensor(np.asarray(self.distance), dtype=ops.dtype(x))
        if self.communicability:
            penalty = communicability_penalty(x, distance, self.comms_factor)
        else:
            penalty = distance_penalty(x, distance)
        return ops.multiply(penalty, self.strength)

    def get_config(self) -> dict:
        return {"distance": [list(row) for row in self.distance], "strength": self.strength,
                "communicability": self.communicability, "comms_factor": self.comms_factor}
