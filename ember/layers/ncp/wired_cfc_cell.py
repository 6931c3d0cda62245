"""``WiredCfCCell``: a CfC whose connectivity follows a wiring, one CfC per wiring layer.

For a wiring with layers ``L_0 .. L_{n-1}`` (an :class:`~ember.wirings.NCP` has three:
inter, command, motor neurons; other wirings one, all neurons), layer ``l`` is a
backbone-free CfC (:mod:`ember.layers.ncp.cfc_cell`, same equations and the same ncps-torch
formulation) of ``|L_l|`` units whose input ``u_l`` is the model input for ``l = 0`` and
the new state of layer ``l-1`` after it::

    z_l    = [u_l, h_l]
    ff1_l  = tanh(z_l @ (W_ff1 * M_l) + b_ff1),   ff2_l = tanh(z_l @ (W_ff2 * M_l) + b_ff2)
    gate_l = sigmoid((z_l @ W_ta + b_ta) * t + (z_l @ W_tb + b_tb))
    h_l'   = ff1_l * (1 - gate_l) + gate_l * ff2_l          (mode "default"; "no_gate" and
                                                             "pure" as in CfCCell, pure masking ff1)

The mask ``M_l`` ``(|u_l| + |L_l|, |L_l|)`` stacks the wiring's synapses into the layer
(``|sensory_adjacency[:, L_0]|`` for the first layer, ``|adjacency[L_{l-1}][:, L_l]|``
after it; polarities are ignored, a CfC weight carries its own sign) over the recurrent
synapses within the layer: all ones with ``fully_recurrent=True`` (the ncps default),
``|adjacency[L_l][:, L_l]|`` otherwise. As in ncps, the time heads are not masked.

The state is the layers' states side by side in layer order (``[inter, command, motor]``
for an NCP, neuron ids in the wiring's order within each layer), ``wiring.units`` wide;
the output is the last layer's state restricted to the motor neurons
(``wiring.output_dim`` wide).

Weights: ``state["params"]["layer_<l>"]`` holds ``ff1``, ``ff2``, ``time_a``, ``time_b``
(each ``{"kernel": (|u_l| + |L_l|, |L_l|), "bias": (|L_l|,)}``; pure mode: ``ff1``,
``w_tau``, ``A``). The masks are not variables: they come from the wiring (part of the
config) when the cell runs.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ember import initializers, ops
from ember.layers.ncp._common import (
    built_wiring,
    cfc_head_names,
    cfc_heads,
    cfc_update,
    check_features,
    check_mode,
    default_name,
    dense_params,
    pure_params,
    split_rows,
    to_mask,
)
from ember.layers.ncp.wired_cell import WiredCell
from ember.validation import check_bool


class WiredCfCCell(WiredCell):
    """A CfC cell with sparse connectivity from a wiring (equations in the module docstring).

    Args:
        wiring: an :class:`~ember.wirings.Wiring` (the cell keeps a copy; an unbuilt
            wiring is built for the input size without being modified).
        mode: ``"default"``, ``"no_gate"`` or ``"pure"`` (see :class:`CfCCell`).
        fully_recurrent: connect every neuron of a layer to every neuron of the same layer
            (True, as ncps does); False uses the wiring's synapses within the layer.
        kernel_initializer, bias_initializer: for every kernel and bias.

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> cell = layers.WiredCfCCell(wirings.AutoNCP(10, 2, seed=0))
        >>> state = cell.build((None, 3), seed=0)
        >>> cell.state_size, cell.output_size, sorted(state["params"])
        (10, 2, ['layer_0', 'layer_1', 'layer_2'])
        >>> y, _ = layers.RNN(cell).apply(state, ops.ones((4, 6, 3)))
        >>> ops.shape(y)
        (4, 2)
    """

    mode: str = "default"
    fully_recurrent: bool = True
    kernel_initializer: Any = "glorot_uniform"
    bias_initializer: Any = "zeros"

    accepts_timespan: ClassVar[bool] = True
    _wiring_allows_units = False  # a Wiring only: the cell's layers are the wiring's

    def __post_init__(self) -> None:
        default_name(self, "wired_cfc_cell")
        super().__post_init__()  # WiredCell's: checks and copies the wiring
        check_mode(self)
        check_bool(self.name, "fully_recurrent", self.fully_recurrent)
        self._normalize("kernel_initializer", initializers.get(self.kernel_initializer))
        self._normalize("bias_initializer", initializers.get(self.bias_initializer))
        wiring = self.wiring
        last = wiring.get_neurons_of_layer(wiring.num_layers - 1)
        if last[:wiring.output_dim] != list(range(wiring.output_dim)):
            raise ValueError(f"{self.name}: the wiring's last layer must start with its motor neurons "
                             f"0 .. {wiring.output_dim - 1} (the outputs), received neurons {last}")

    @property
    def layer_sizes(self) -> list[int]:
        """Neurons per wiring layer, in state order."""
        return [len(self.wiring.get_neurons_of_layer(i)) for i in range(self.wiring.num_layers)]

    def layer_masks(self, features: int) -> list[np.ndarray]:
        """The 0/1 NumPy masks ``M_l`` ``(|u_l| + |L_l|, |L_l|)`` of each layer's ff1/ff2 kernels."""
        wiring = built_wiring(self, self.wiring, features)
        masks = []
        previous = None
        for i in range(wiring.num_layers):
            neurons = wiring.get_neurons_of_layer(i)
            if previous is None:
                into = wiring.sensory_adjacency_matrix[:, neurons]
            else:
                into = wiring.adjacency_matrix[np.ix_(previous, neurons)]
            within = (np.ones((len(neurons), len(neurons)), dtype=np.int32) if self.fully_recurrent
                      else wiring.adjacency_matrix[np.ix_(neurons, neurons)])
            masks.append(np.abs(np.concatenate([into, within], axis=0)))
            previous = neurons
        return masks

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        features = self.step_input_shape(input_shape)[-1]
        built_wiring(self, self.wiring, features)  # validates the input size against the wiring
        params = {}
        fan_in = features
        for i, size in enumerate(self.layer_sizes):
            layer = {name: dense_params(self, fan_in + size, size, seed, f"layer_{i}", name)
                     for name in cfc_head_names(self.mode)}
            if self.mode == "pure":
                layer.update(pure_params(self, size))
            params[f"layer_{i}"] = layer
            fan_in = size
        return self.make_state(params=params)

    def prepare_sequence(self, params: dict, sequences: Any, *, training: bool = False,
                         rng: Any = None) -> tuple[Any, Any]:
        """Masked heads per layer (once per call) and the first layer's input projection for every step."""
        first = params["layer_0"]["ff1"]["kernel"]
        features = ops.shape(first)[0] - self.layer_sizes[0]
        check_features(self, sequences, features)
        dtype = ops.dtype(first)
        layers = []
        fan_in = features
        for i, (mask, size) in enumerate(zip(self.layer_masks(features), self.layer_sizes)):
            kernel, bias = cfc_heads(params[f"layer_{i}"], self.mode, to_mask(mask, dtype))
            kernel_u, kernel_h = split_rows(kernel, fan_in)
            layers.append((kernel_u, kernel_h, bias))
            fan_in = size
        kernel_u, _, bias = layers[0]
        return ops.add(ops.matmul(sequences, kernel_u), bias), layers

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        sizes = self.layer_sizes
        hs = ops.split(states[0], [int(i) for i in np.cumsum(sizes)[:-1]], axis=-1) if len(sizes) > 1 else [states[0]]
        new_states = []
        u = None
        for i, (h, (kernel_u, kernel_h, bias)) in enumerate(zip(hs, context)):
            z = step_input if i == 0 else ops.add(ops.matmul(u, kernel_u), bias)
            z = ops.add(z, ops.matmul(h, kernel_h))
            u = cfc_update(z, params[f"layer_{i}"], self.mode, timespan)
            new_states.append(u)
        state = new_states[0] if len(new_states) == 1 else ops.concatenate(new_states, axis=-1)
        output = u
        if self.wiring.output_dim != sizes[-1]:
            output = ops.getitem(u, (slice(None), slice(0, self.wiring.output_dim)))
        return output, [state]

    def step(self, params: dict, inputs: Any, states: list, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        projected, context = self.prepare_sequence(params, inputs, training=training, rng=rng)
        return self.prepared_step(params, projected, states, context, timespan=timespan)
