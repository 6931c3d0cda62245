"""``SeRSNN``: a spatially embedded recurrent spiking layer.

``SeRSNN(wiring, ...)`` is ``RNN(LIFCell(wiring, recurrent=True, recurrent_regularizer=R))``
on a :class:`~ember.wirings.SpatialWiring`, with ``R`` the
:class:`~ember.layers.SpatialRegularizer` of the wiring's distances (optionally
communicability-weighted): training pays ``strength * sum |W_rec| * D (* C)`` for the
masked recurrent synapses, which makes the recurrent connectivity sparse and local. The
neurons are the LIF neurons of :mod:`ember.layers.spiking.lif` (same equations, states and
outputs; ``return_sequences=True`` gives the spike train).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember.layers.ncp._common import compact_repr, default_name
from ember.layers.rnn.cell import RNNCell
from ember.layers.rnn.rnn import RNN
from ember.layers.spatial.regularizers import SpatialRegularizer
from ember.layers.spatial.spatial_cfc import check_spatial
from ember.layers.spiking.lif import LIFCell


class SeRSNN(RNN):
    """Spatially embedded recurrent spiking layer (module docstring).

    Args:
        units: an :class:`~ember.wirings.SpatialWiring`.
        distance_strength, communicability, comms_factor: the spatial penalty on the recurrent kernel.
        beta, threshold, reset, refractory, surrogate, output, learn_beta, learn_threshold: as for
            :class:`~ember.layers.LIFCell`.
        return_sequences, return_state, go_backwards, stateful, unroll, time_major,
            zero_output_for_mask: as for :class:`~ember.layers.RNN` (keyword-only).

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> snn = layers.SeRSNN(wirings.SpatialWiring(wirings.FullyConnected(9, 3)), return_sequences=True)
        >>> state = snn.build((None, 5, 2), seed=0)
        >>> ops.shape(snn.apply(state, ops.ones((2, 5, 2)))[0]), len(snn.regularization_losses(state["params"]))
        ((2, 5, 3), 1)
    """

    units: Any
    distance_strength: float = 0.01
    communicability: bool = False
    comms_factor: float = 1.0
    beta: float = 0.9
    threshold: float = 1.0
    reset: str = "subtract"
    refractory: int = 0
    surrogate: Any = "atan"
    output: str = "spikes"
    learn_beta: bool = False
    learn_threshold: bool = False
    cell: Any = dataclasses.field(init=False, repr=False)

    _cell_class = LIFCell

    def __post_init__(self) -> None:
        default_name(self, "sersnn")
        super().__post_init__()

    def __repr__(self) -> str:
        return compact_repr(self)

    def _make_cell(self) -> RNNCell:
        check_spatial(self, self.units)
        regularizer = SpatialRegularizer(self.units.distance_matrix, strength=self.distance_strength,
                                         communicability=self.communicability, comms_factor=self.comms_factor)
        self._normalize("distance_strength", regularizer.strength)
        self._normalize("comms_factor", regularizer.comms_factor)
        cell = LIFCell(self.units, beta=self.beta, threshold=self.threshold, reset=self.reset,
                       refractory=self.refractory, surrogate=self.surrogate, recurrent=True, output=self.output,
                       learn_beta=self.learn_beta, learn_threshold=self.learn_threshold,
                       recurrent_regularizer=regularizer, name=self.name, dtype=self.dtype, trainable=self.trainable)
        for field in ("units", "beta", "threshold", "refractory", "surrogate"):
            self._normalize(field, getattr(cell, field))
        return cell
