"""``CfCCell``: one step of a closed-form continuous-time network (Hasani et al., Nature MI 2022).

Equations, for input ``x`` ``(batch, features)``, state ``h`` ``(batch, units)`` and
elapsed time ``t`` ``(batch, 1)`` (1.0 unless ``RNN.apply(..., timespans=)`` gives it)::

    z     = [x, h]                                       # concatenated, (batch, features + units)
    z     = act(z @ W_b0 + b_b0), then act(z @ W_bi + b_bi) for i = 1 .. backbone_layers-1
                                                         # the backbone (none when backbone_layers=0);
                                                         # dropout after each backbone layer while training
    ff1   = tanh(z @ W_ff1 + b_ff1)                      # head g
    ff2   = tanh(z @ W_ff2 + b_ff2)                      # head h
    gate  = sigmoid((z @ W_ta + b_ta) * t + (z @ W_tb + b_tb))
    h'    = ff1 * (1 - gate) + gate * ff2                # mode="default"
    h'    = ff1 + gate * ff2                             # mode="no_gate"
    h'    = A - A * exp(-t * (|w_tau| + |f|)) * f        # mode="pure", f = z @ W_ff1 + b_ff1 (no tanh)

The output is ``h'`` and the new state is ``h'``.

Formulation: this follows the **ncps package's PyTorch** ``CfCCell`` (``ncps.torch``):
``tanh`` on both heads and the time gate ``sigmoid(t_a * t + t_b)``. The ncps Keras cell
differs in two places: its heads are linear (no ``tanh``) and its gate is
``sigmoid(-t_a * t + t_b)``. We follow the torch cell because (1) the bounded ``tanh``
heads keep the state in ``[-1, 1]`` in default mode (an interpolation of two values in
``[-1, 1]``), which keeps long rollouts and the gradients through them stable, and the
paper's experiments were run with that cell; (2) the gate's sign is only a
reparametrization: ``sigmoid(-t_a t + t_b)`` is ``sigmoid(t_a' t + t_b)`` with
``time_a``'s kernel and bias negated, so Keras-ncps weights of the time heads convert by a
sign flip (the head activations do not convert). The pure mode is the same in both.

Weights (``state["params"]``, Keras layout ``(fan_in, fan_out)``, rows of the first
kernel ordered ``[x features, h units]`` as in both ncps versions)::

    backbone_i: {"kernel": (fan_in, backbone_units), "bias": (backbone_units,)}
    ff1, ff2, time_a, time_b: {"kernel": (fan_in, units), "bias": (units,)}
    w_tau, A: (units,)                                   # pure mode only (instead of ff2/time_a/time_b)

``fan_in`` is ``features + units`` for the first layer, ``backbone_units`` after it. To
copy from ``ncps.torch.CfCCell``: ``kernel = linear.weight.T``, ``bias = linear.bias``
(``backbone.0`` is ``backbone_0``, ``backbone.2`` is ``backbone_1``, ...), and
``w_tau``/``A`` are the torch ``(1, units)`` parameters flattened.

Initialization as in the ncps Keras cell: Glorot-uniform kernels, zero biases,
``w_tau = 0``, ``A = 1``.
"""

from __future__ import annotations

import numbers
from typing import Any, ClassVar

from ember import activations, initializers, ops
from ember.layers.ncp._common import (
    cfc_head_names,
    cfc_heads,
    cfc_update,
    check_features,
    check_mode,
    compact_repr,
    default_name,
    dense_params,
    pure_params,
    split_rows,
)
from ember.layers.rnn.cell import RNNCell, check_rate, check_units, dropout_mask
from ember.seeds import check_seed


class CfCCell(RNNCell):
    """A closed-form continuous-time (CfC) cell (equations in the module docstring).

    Args:
        units: size of the state and of the output.
        mode: ``"default"`` (gated interpolation of two heads), ``"no_gate"`` (``ff1 +
            gate * ff2``) or ``"pure"`` (the direct closed-form solution).
        activation: the backbone's activation (``"lecun_tanh"``: ``1.7159 * tanh(0.666 x)``).
        backbone_units: width of each backbone layer.
        backbone_layers: number of backbone layers (0: the heads read ``[x, h]`` directly).
        backbone_dropout: fraction of each backbone layer's output dropped while
            training (one mask per call, shared by every step).
        kernel_initializer, bias_initializer: for every kernel and bias.
        seed: seed of the dropout masks when ``apply`` gets no ``rng``.

    The cell accepts a per-step ``timespan`` (``accepts_timespan = True``): wrap it in
    :class:`~ember.layers.RNN` and pass ``timespans=`` of shape ``(batch, time)``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> cell = layers.CfCCell(4, backbone_units=8)
        >>> state = cell.build((None, 3), seed=0)
        >>> sorted(state["params"])
        ['backbone_0', 'ff1', 'ff2', 'time_a', 'time_b']
        >>> rnn = layers.RNN(cell, return_sequences=True)
        >>> ops.shape(rnn.apply(state, ops.ones((2, 5, 3)), timespans=ops.ones((2, 5)))[0])
        (2, 5, 4)
    """

    units: int
    mode: str = "default"
    activation: Any = "lecun_tanh"
    backbone_units: int = 128
    backbone_layers: int = 1
    backbone_dropout: float = 0.0
    kernel_initializer: Any = "glorot_uniform"
    bias_initializer: Any = "zeros"
    seed: int | None = None

    accepts_timespan: ClassVar[bool] = True

    def __post_init__(self) -> None:
        default_name(self, "cfc_cell")
        super().__post_init__()
        check_units(self, self.units)
        check_mode(self)
        self._normalize("activation", activations.standardize(self.activation, f"{self.name}: activation"))
        for field, minimum in (("backbone_units", 1), ("backbone_layers", 0)):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
                raise ValueError(f"{self.name}: {field} must be an int >= {minimum}, received {value!r}")
            self._normalize(field, int(value))
        check_rate(self, "backbone_dropout")
        self._normalize("kernel_initializer", initializers.get(self.kernel_initializer))
        self._normalize("bias_initializer", initializers.get(self.bias_initializer))
        self._normalize("seed", check_seed(self.seed, f"{self.name}: seed"))

    def __repr__(self) -> str:
        return compact_repr(self)

    @property
    def state_size(self) -> int:
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        features = self.step_input_shape(input_shape)[-1]
        params: dict = {}
        fan_in = features + self.units
        for i in range(self.backbone_layers):
            params[f"backbone_{i}"] = dense_params(self, fan_in, self.backbone_units, seed, f"backbone_{i}")
            fan_in = self.backbone_units
        for name in cfc_head_names(self.mode):
            params[name] = dense_params(self, fan_in, self.units, seed, name)
        if self.mode == "pure":
            params.update(pure_params(self, self.units))
        return self.make_state(params=params)

    def _first_layer(self, params: dict) -> tuple[Any, Any]:
        """The kernel and bias that read ``[x, h]``: the first backbone layer's, or the heads'."""
        if self.backbone_layers:
            return params["backbone_0"]["kernel"], params["backbone_0"]["bias"]
        return cfc_heads(params, self.mode)

    def prepare_sequence(self, params: dict, sequences: Any, *, training: bool = False,
                         rng: Any = None) -> tuple[Any, Any]:
        """``x @ W_in + b`` of the first layer for every step at once; the recurrent rows, the
        heads and the dropout masks as context."""
        kernel, bias = self._first_layer(params)
        features = ops.shape(kernel)[0] - self.units
        check_features(self, sequences, features)
        kernel_x, kernel_h = split_rows(kernel, features)
        projected = ops.add(ops.matmul(sequences, kernel_x), bias)
        heads = cfc_heads(params, self.mode) if self.backbone_layers else None
        masks = None
        if training and self.backbone_dropout > 0.0 and self.backbone_layers:
            batch = ops.shape(sequences)[-2]
            masks = [dropout_mask(self, (batch, self.backbone_units), self.backbone_dropout, rng,
                                  f"backbone_dropout_{i}", ops.dtype(projected))
                     for i in range(self.backbone_layers)]
        return projected, (kernel_h, heads, masks)

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        kernel_h, heads, masks = context
        z = ops.add(step_input, ops.matmul(states[0], kernel_h))
        if self.backbone_layers:
            act = activations.get(self.activation)
            for i in range(self.backbone_layers):
                if i:
                    layer = params[f"backbone_{i}"]
                    z = ops.add(ops.matmul(z, layer["kernel"]), layer["bias"])
                z = act(z)
                if masks is not None:
                    z = ops.multiply(z, masks[i])
            z = ops.add(ops.matmul(z, heads[0]), heads[1])
        h = cfc_update(z, params, self.mode, timespan)
        return h, [h]

    def step(self, params: dict, inputs: Any, states: list, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        projected, context = self.prepare_sequence(params, inputs, training=training, rng=rng)
        return self.prepared_step(params, projected, states, context, timespan=timespan)
