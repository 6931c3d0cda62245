"""``NCPCell``: a discrete-time recurrent cell whose weights are masked by a wiring.

One step, for input ``x`` ``(batch, features)`` and state ``h`` ``(batch, units)``::

    h' = activation(x @ (kernel * M_s) + h @ (recurrent_kernel * M) + bias)
    output = h'[:, :output_dim]                          # the motor neurons

with the masks ``M_s = |sensory_adjacency_matrix|`` ``(features, units)`` and
``M = |adjacency_matrix|`` ``(units, units)`` of the wiring (synapse present: 1; the
polarity is not used, each weight carries its own sign). This is the seed system's
single-step NCP cell: a ``SimpleRNNCell`` restricted to the wiring's synapses.

Weights (Keras layout, as ``SimpleRNNCell``): ``kernel (features, units)``,
``recurrent_kernel (units, units)``, ``bias (units,)``. The masks are not variables: they
come from the wiring (part of the config) when the cell runs.
"""

from __future__ import annotations

from typing import Any

from ember import activations, initializers, ops
from ember.layers.ncp._common import built_wiring, check_features, to_mask
from ember.layers.ncp.wired_cell import WiredCell
from ember.layers.rnn.cell import init_weight
from ember.validation import check_bool


class NCPCell(WiredCell):
    """A wiring-masked ``tanh`` recurrence (equations in the module docstring); also ``layers.NCP``.

    Args:
        wiring: an :class:`~ember.wirings.Wiring`, or an int ``units`` for
            ``FullyConnected(units)``. The cell keeps a copy; an unbuilt wiring is built for
            the input size without being modified.
        activation: applied to the pre-activation (``"tanh"``).
        use_bias: add ``bias``.
        kernel_initializer, recurrent_initializer, bias_initializer: initializers (the
            masks are applied to the initialized kernels in the forward pass).

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> cell = layers.NCPCell(wirings.AutoNCP(8, 2, seed=0))
        >>> state = cell.build((None, 3), seed=0)
        >>> y, (h,) = cell.step(state["params"], ops.ones((5, 3)), cell.get_initial_state(5))
        >>> ops.shape(y), ops.shape(h)
        ((5, 2), (5, 8))
    """

    activation: Any = "tanh"
    use_bias: bool = True
    kernel_initializer: Any = "glorot_uniform"
    recurrent_initializer: Any = "orthogonal"
    bias_initializer: Any = "zeros"

    def __post_init__(self) -> None:
        super().__post_init__()  # WiredCell's: checks and copies the wiring
        self._normalize("activation", activations.standardize(self.activation, f"{self.name}: activation"))
        check_bool(self.name, "use_bias", self.use_bias)
        for field in ("kernel_initializer", "recurrent_initializer", "bias_initializer"):
            self._normalize(field, initializers.get(getattr(self, field)))

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        features = self.step_input_shape(input_shape)[-1]
        built_wiring(self, self.wiring, features)
        units = self.wiring.units
        params = {
            "kernel": init_weight(self, self.kernel_initializer, (features, units), seed, "kernel"),
            "recurrent_kernel": init_weight(self, self.recurrent_initializer, (units, units), seed,
                                            "recurrent_kernel"),
        }
        if self.use_bias:
            params["bias"] = init_weight(self, self.bias_initializer, (units,), seed, "bias")
        return self.make_state(params=params)

    def prepare_sequence(self, params: dict, sequences: Any, *, training: bool = False,
                         rng: Any = None) -> tuple[Any, Any]:
        """``x @ (kernel * M_s) + bias`` for every step at once; the masked recurrent kernel as context."""
        features = ops.shape(params["kernel"])[0]
        check_features(self, sequences, features)
        wiring = built_wiring(self, self.wiring, features)
        dtype = ops.dtype(params["kernel"])
        kernel = ops.multiply(params["kernel"], to_mask(wiring.sensory_adjacency_matrix, dtype))
        projected = ops.matmul(sequences, kernel)
        if self.use_bias:
            projected = ops.add(projected, params["bias"])
        return projected, ops.multiply(params["recurrent_kernel"], to_mask(wiring.adjacency_matrix, dtype))

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        h = activations.get(self.activation)(ops.add(step_input, ops.matmul(states[0], context)))
        output = h
        if self.wiring.output_dim != self.wiring.units:
            output = ops.getitem(h, (slice(None), slice(0, self.wiring.output_dim)))
        return output, [h]

    def step(self, params: dict, inputs: Any, states: list, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        projected, context = self.prepare_sequence(params, inputs, training=training, rng=rng)
        return self.prepared_step(params, projected, states, context)
