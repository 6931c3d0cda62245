"""``SpatialWiring``: a wiring whose neurons sit at coordinates in 2-D or 3-D space.

Spatially embedded networks (Achterberg et al., 2023, "Spatially embedded recurrent neural
networks reveal widespread links between structural and functional neuroscience findings")
place each neuron at a point and pay for long connections. A :class:`SpatialWiring` wraps
any wiring (:class:`~ember.wirings.FullyConnected`, :class:`~ember.wirings.NCP`,
:class:`~ember.wirings.AutoNCP`, ...), keeping its synapses, neuron types and layers, and adds
``positions`` ``(units, dims)``:

* ``"grid"``: the first ``units`` points of a regular grid of ``ceil(units ** (1/dims))``
  points per side in ``[0, extent]^dims`` (row-major; neuron ``i`` at grid point ``i``);
* ``"random"``: uniform in ``[0, extent]^dims`` from ``numpy.random.default_rng(seed)``;
* ``"layered"``: wiring layer ``l`` (an NCP's inter, command, motor neurons) on the plane
  ``x = extent * l / max(1, num_layers - 1)``, its neurons spread evenly along ``y`` in
  ``[0, extent]`` (further axes 0);
* an array-like ``(units, dims)`` of coordinates, used as given.

``distance_matrix`` is the ``(units, units)`` float64 Euclidean distance between neurons
(what :class:`~ember.layers.SpatialRegularizer` multiplies the weights by). Positions are
plain NumPy data, the same on every backend; the config stores the resolved coordinates,
so a saved wiring comes back with exactly the same positions.

Example:
    >>> from ember import wirings
    >>> wiring = wirings.SpatialWiring(wirings.FullyConnected(4), positions="grid")
    >>> wiring.positions.tolist()
    [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]
    >>> round(float(wiring.distance_matrix[0, 3]), 4)
    1.4142
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.serialization import deserialize, register_serializable, serialize
from ember.wirings.base import Wiring, check_count, check_seed

PLACEMENTS = ("grid", "random", "layered")


def grid_positions(units: int, dims: int = 2, extent: float = 1.0) -> np.ndarray:
    """The first ``units`` points of a regular ``dims``-D grid spanning ``[0, extent]`` per axis.

    Example:
        >>> from ember.wirings.spatial import grid_positions
        >>> grid_positions(3, dims=1).tolist()
        [[0.0], [0.5], [1.0]]
    """
    side = max(2, math.ceil(round(units ** (1.0 / dims), 9)))
    axis = np.linspace(0.0, extent, side)
    mesh = np.stack(np.meshgrid(*([axis] * dims), indexing="ij"), axis=-1).reshape(-1, dims)
    return np.ascontiguousarray(mesh[:units], dtype=np.float64)


def random_positions(units: int, dims: int = 2, seed: int = 0, extent: float = 1.0) -> np.ndarray:
    """``units`` points uniform in ``[0, extent]^dims`` from ``numpy.random.default_rng(seed)``."""
    return np.random.default_rng(seed).uniform(0.0, extent, size=(units, dims))


def layered_positions(wiring: Wiring, dims: int = 2, extent: float = 1.0) -> np.ndarray:
    """Each wiring layer on its own plane ``x = extent * l / (layers - 1)``, spread along ``y``."""
    positions = np.zeros((wiring.units, dims))
    layers = wiring.num_layers
    for layer in range(layers):
        neurons = wiring.get_neurons_of_layer(layer)
        positions[neurons, 0] = extent * layer / max(1, layers - 1)
        if dims > 1:
            positions[neurons, 1] = np.linspace(0.0, extent, len(neurons)) if len(neurons) > 1 else extent / 2
    return positions


def distance_matrix(positions: Any) -> np.ndarray:
    """Pairwise Euclidean distances ``(n, n)`` (float64) between the rows of ``positions`` ``(n, dims)``."""
    points = np.asarray(positions, dtype=np.float64)
    return np.sqrt(np.sum(np.square(points[:, None, :] - points[None, :, :]), axis=-1))


@register_serializable("ember")
class SpatialWiring(Wiring):
    """A wiring with neuron coordinates (module docstring).

    Args:
        wiring: the wiring to place (its synapses, types and layers are kept; a copy is held).
        positions: ``"grid"`` (default), ``"random"``, ``"layered"`` or an array-like ``(units, dims)``.
        dims: 2 or 3 (ignored for given coordinates, which set it).
        seed: seed of ``"random"`` placement.
        extent: side of the cube the placements fill.

    Example:
        >>> from ember import wirings
        >>> wiring = wirings.SpatialWiring(wirings.AutoNCP(8, 2, seed=0), positions="layered")
        >>> wiring.units, wiring.num_layers, wiring.positions.shape
        (8, 3, (8, 2))
    """

    def __init__(self, wiring: Any, positions: Any = "grid", dims: int = 2, seed: int = 0,
                 extent: float = 1.0) -> None:
        name = type(self).__name__
        if isinstance(wiring, dict):
            wiring = deserialize(wiring)
        if not isinstance(wiring, Wiring) or isinstance(wiring, SpatialWiring):
            raise TypeError(f"{name}: wiring must be an ember.wirings.Wiring (not already spatial), "
                            f"received {wiring!r}")
        super().__init__(wiring.units, wiring.output_dim)
        self.wiring = wiring.copy()
        self.adjacency_matrix = self.wiring.adjacency_matrix.copy()
        sensory = self.wiring.sensory_adjacency_matrix
        if sensory is not None:
            self.sensory_adjacency_matrix = sensory.copy()
            self.input_dim = self.wiring.input_dim
        self.seed = check_seed(name, "seed", seed)
        if isinstance(extent, bool) or not isinstance(extent, (int, float)) or not 0.0 < float(extent) < math.inf:
            raise ValueError(f"{name}: extent must be a positive finite number, received {extent!r}")
        self.extent = float(extent)
        if isinstance(positions, str):
            self.dims = check_count(name, "dims", dims)
            if self.dims not in (2, 3):
                raise ValueError(f"{name}: dims must be 2 or 3, received {dims!r}")
            if positions == "grid":
                points = grid_positions(self.units, self.dims, self.extent)
            elif positions == "random":
                points = random_positions(self.units, self.dims, self.seed, self.extent)
            elif positions == "layered":
                points = layered_positions(self.wiring, self.dims, self.extent)
            else:
                raise ValueError(f"{name}: positions must be one of {PLACEMENTS} or an array (units, dims), "
                                 f"received {positions!r}")
        else:
            try:
                points = np.asarray(positions, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"{name}: positions must be one of {PLACEMENTS} or an array (units, dims) of "
                                 f"numbers, received {positions!r}") from None
            if points.ndim != 2 or points.shape[0] != self.units or not np.all(np.isfinite(points)):
                raise ValueError(f"{name}: positions must be finite coordinates of shape ({self.units}, dims), "
                                 f"received shape {points.shape}")
            self.dims = int(points.shape[1])
        self.positions = np.ascontiguousarray(points, dtype=np.float64)

    # --- the wrapped wiring's structure --------------------------------------------------
    @property
    def num_layers(self) -> int:
        return self.wiring.num_layers

    def get_neurons_of_layer(self, layer_id: int) -> list[int]:
        return self.wiring.get_neurons_of_layer(layer_id)

    def get_type_of_neuron(self, neuron_id: int) -> str:
        return self.wiring.get_type_of_neuron(neuron_id)

    def _draw_sensory_synapses(self, sensory: np.ndarray) -> None:
        sensory[...] = self.wiring.built(sensory.shape[0]).sensory_adjacency_matrix

    # --- space ---------------------------------------------------------------------------
    @property
    def distance_matrix(self) -> np.ndarray:
        """``(units, units)`` float64 Euclidean distances between the neurons."""
        return distance_matrix(self.positions)

    def fraction_within(self, weights: Any, radius: float) -> float:
        """The share of ``sum |weights|`` (a ``(units, units)`` NumPy array) on synapses shorter than ``radius``."""
        magnitude = np.abs(np.asarray(weights, dtype=np.float64))
        total = magnitude.sum()
        return float(magnitude[self.distance_matrix <= radius].sum() / total) if total > 0 else 0.0

    # --- serialization ---------------------------------------------------------------------
    def _constructor_config(self) -> dict:
        return {"wiring": serialize(self.wiring), "positions": self.positions.tolist(), "dims": self.dims,
                "seed": self.seed, "extent": self.extent}

    def __repr__(self) -> str:
        return f"SpatialWiring({self.wiring!r}, dims={self.dims})"
