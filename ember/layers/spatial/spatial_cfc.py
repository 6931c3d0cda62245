"""``SpatialCfCCell`` / ``SpatialCfC``: a wired CfC on a :class:`~ember.wirings.SpatialWiring`
whose neuron-to-neuron weights pay the spatial penalty.

The cell is a :class:`~ember.layers.WiredCfCCell` (same equations, weights and state); its
:meth:`~SpatialCfCCell.regularization_losses` adds, for each masked head ``h`` in ``ff1``,
``ff2`` (``ff1`` alone in pure mode), :class:`~ember.layers.SpatialRegularizer` of the
``(units, units)`` matrix ``W_h`` that the head's kernels make between neurons, in the
wiring's neuron ids: ``W_h[i, j]`` is the kernel entry from neuron ``i`` of layer ``l-1``
(the input rows of layer ``l``) or of layer ``l`` (its recurrent rows) into neuron ``j``
of layer ``l``, times the wiring mask; every other entry is 0. The input synapses
(features to neurons) have no position and no penalty.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ember import ops
from ember.layers.ncp._common import compact_repr, default_name, to_mask
from ember.layers.ncp.wired_cfc_cell import WiredCfCCell
from ember.layers.rnn.rnn import RNN
from ember.layers.spatial.regularizers import SpatialRegularizer
from ember.wirings.spatial import SpatialWiring


def check_spatial(layer: Any, wiring: Any) -> None:
    if not isinstance(wiring, SpatialWiring):
        raise TypeError(f"{layer.name}: needs an ember.wirings.SpatialWiring (neurons with positions), "
                        f"received {wiring!r}")


class SpatialCfCCell(WiredCfCCell):
    """A wired CfC cell with the spatial penalty on its neuron-to-neuron weights (module docstring).

    Args:
        wiring: an :class:`~ember.wirings.SpatialWiring`.
        distance_strength: the penalty's factor.
        communicability: weight the penalty by the weighted communicability.
        comms_factor: the communicability's power.
        mode, fully_recurrent, kernel_initializer, bias_initializer: as for :class:`~ember.layers.WiredCfCCell`.

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> cell = layers.SpatialCfCCell(wirings.SpatialWiring(wirings.AutoNCP(8, 2, seed=0), "layered"))
        >>> state = cell.build((None, 3), seed=0)
        >>> [ops.shape(v) for v in cell.regularization_losses(state["params"])]
        [(), ()]
    """

    distance_strength: float = 0.01
    communicability: bool = False
    comms_factor: float = 1.0

    def __post_init__(self) -> None:
        default_name(self, "spatial_cfc_cell")
        super().__post_init__()
        check_spatial(self, self.wiring)
        self._normalize("distance_strength", self.regularizer().strength)

    def regularizer(self) -> SpatialRegularizer:
        """The :class:`~ember.layers.SpatialRegularizer` of this wiring and these settings."""
        return SpatialRegularizer(self.wiring.distance_matrix, strength=self.distance_strength,
                                  communicability=self.communicability, comms_factor=self.comms_factor)

    def neuron_weights(self, params: dict) -> dict:
        """``{head: W_head}``, the ``(units, units)`` neuron-to-neuron matrices of the masked heads."""
        sizes = self.layer_sizes
        features = ops.shape(params["layer_0"]["ff1"]["kernel"])[0] - sizes[0]
        dtype = ops.dtype(params["layer_0"]["ff1"]["kernel"])
        units = self.wiring.units
        layer_ids = [self.wiring.get_neurons_of_layer(i) for i in range(len(sizes))]
        heads = ("ff1",) if self.mode == "pure" else ("ff1", "ff2")
        result = {}
        for head in heads:
            total = None
            fan_in = features
            for i, mask in enumerate(self.layer_masks(features)):
                kernel = ops.multiply(params[f"layer_{i}"][head]["kernel"], to_mask(mask, dtype))
                rows = ([] if i == 0 else layer_ids[i - 1]) + layer_ids[i]
                kernel = kernel if i > 0 else ops.getitem(kernel, (slice(fan_in, None),))
                # scatter the block into (units, units): P_rows^T @ block @ P_cols with 0/1 placements
                place_rows = np.zeros((len(rows), units))
                place_rows[np.arange(len(rows)), rows] = 1.0
                place_cols = np.zeros((len(layer_ids[i]), units))
                place_cols[np.arange(len(layer_ids[i])), layer_ids[i]] = 1.0
                block = ops.matmul(ops.matmul(ops.transpose(to_mask(place_rows, dtype)), kernel),
                                   to_mask(place_cols, dtype))
                total = block if total is None else ops.add(total, block)
                fan_in = sizes[i]
            result[head] = total
        return result

    def regularization_losses(self, params: dict) -> list:
        """The spatial penalty of each masked head's neuron-to-neuron matrix (none when frozen)."""
        if not self.trainable or self.distance_strength == 0.0:
            return []
        regularizer = self.regularizer()
        return [regularizer(w) for w in self.neuron_weights(params).values()]


class SpatialCfC(RNN):
    """A spatially embedded CfC layer: ``RNN(SpatialCfCCell(wiring, ...))`` (arguments as for
    :class:`SpatialCfCCell` and :class:`~ember.layers.RNN`).

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> cfc = layers.SpatialCfC(wirings.SpatialWiring(wirings.FullyConnected(6, 2), "random", seed=1))
        >>> state = cfc.build((None, 5, 3), seed=0)
        >>> ops.shape(cfc.apply(state, ops.ones((2, 5, 3)))[0]), len(cfc.regularization_losses(state["params"]))
        ((2, 2), 2)
    """

    wiring: Any
    mode: str = "default"
    fully_recurrent: bool = True
    kernel_initializer: Any = "glorot_uniform"
    bias_initializer: Any = "zeros"
    distance_strength: float = 0.01
    communicability: bool = False
    comms_factor: float = 1.0
    cell: Any = dataclasses.field(init=False, repr=False)

    _cell_class = SpatialCfCCell

    def __post_init__(self) -> None:
        default_name(self, "spatial_cfc")
        super().__post_init__()

    def __repr__(self) -> str:
        return compact_repr(self)


__all__ = ["SpatialCfC", "SpatialCfCCell"]
