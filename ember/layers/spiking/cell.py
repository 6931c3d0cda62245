"""``SpikingCell``: what the spiking cells (``LIFCell``, ``ALIFCell``, ``SynapticCell``) share.

A spiking cell of ``U`` neurons (``units``, or a wiring's ``units``) receives the step input
``x`` ``(batch, features)`` and, with ``recurrent=True``, its own spikes of the previous step::

    I_t = x_t @ (W_in * M_in) + b + S_{t-1} @ (W_rec * M_rec)

where the masks ``M_in = |sensory_adjacency|`` and ``M_rec = |adjacency|`` come from the wiring
(an :class:`~ember.wirings.NCP`, :class:`~ember.wirings.AutoNCP` or any other; polarities are
ignored, a weight carries its own sign, as in the wired CfC) and are all ones for an int
``units``. Each cell then integrates ``I_t`` into its membrane ``U_t`` (its own module says
how) and fires ``S_t = surrogate(U_t - threshold_t)``: a Heaviside spike whose backward is
the surrogate derivative (:mod:`ember.layers.spiking.surrogates`). The reset follows
snntorch (``reset_delay=True``, its default): the spike of step ``t-1``, with its gradient
stopped (snntorch detaches it too), resets the membrane at step ``t``, so ``U_t`` is the
membrane before its own reset and a neuron above threshold shows it.

Refractory period ``refractory = r > 0`` steps: after a spike at step ``t`` the neuron
neither integrates its input (``I`` is multiplied by 0) nor fires during steps
``t+1 .. t+r``; a counter state (remaining refractory steps, as a float) tracks it.
``r = 0`` (default) is exactly snntorch's neuron.

States (``state_size``, each ``(batch, U)``): the cell's own (``mem`` and, per cell,
``syn`` or ``adapt``), then ``spk`` (the last spikes), then ``refractory`` when ``r > 0``.
The step output is the motor neurons' (the first ``wiring.output_dim``; all for an int
``units``) spikes (``output="spikes"``), membranes (``"membrane"``) or both side by side
(``"both"``: ``[spikes, membranes]``). ``RNN(cell, return_sequences=True)`` gives the spike
train ``(batch, time, outputs)``; spike times are where it is 1.

Weights (``state["params"]``): ``kernel`` ``(features, U)``, ``recurrent_kernel`` ``(U, U)``
(with ``recurrent=True``), ``bias`` ``(U,)`` (``use_bias``), ``beta`` / ``threshold``
``(U,)`` when learned (``learn_beta`` / ``learn_threshold``; ``beta`` is clipped to
``[0, 1]`` when read, as snntorch does). ``kernel_regularizer`` and
``recurrent_regularizer`` see the masked kernels (the synapses that exist).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, ClassVar

import numpy as np

from ember import initializers, ops, regularizers
from ember.layers.ncp._common import built_wiring, compact_repr, to_mask
from ember.layers.rnn.cell import RNNCell
from ember.layers.spiking import surrogates
from ember.seeds import sub_seed
from ember.validation import check_bool
from ember.wirings import Wiring

RESETS = ("subtract", "zero", "none")
OUTPUTS = ("spikes", "membrane", "both")


def check_real(layer: Any, field: str, low: float = -math.inf, high: float = math.inf) -> None:
    """Store ``layer.<field>`` as a float in ``[low, high]``; ValueError naming the layer otherwise."""
    value = getattr(layer, field)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not low <= float(value) <= high \
            or not math.isfinite(float(value)):
        raise ValueError(f"{layer.name}: {field} must be a finite number in [{low}, {high}], received {value!r}")
    layer._normalize(field, float(value))


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class SpikingFields:
    """The configuration every spiking cell and spiking layer shares, in this order (the arguments
    of :class:`~ember.layers.LIFCell`, which documents them). A cell or layer class lists it before
    its layer base, so these fields follow the base's and precede the class's own
    (``ALIFCell``'s ``adaptation``, ``rho``).

    Example:
        >>> import dataclasses
        >>> from ember import layers
        >>> from ember.layers.spiking.cell import SpikingFields
        >>> [f.name for f in dataclasses.fields(SpikingFields)][:4]
        ['units', 'beta', 'threshold', 'reset']
        >>> [f.name for f in dataclasses.fields(layers.ALIFCell)][-3:]
        ['recurrent_regularizer', 'adaptation', 'rho']
    """

    units: Any
    beta: float = 0.9
    threshold: float = 1.0
    reset: str = "subtract"
    refractory: int = 0
    surrogate: Any = "atan"
    recurrent: bool = True
    output: str = "spikes"
    learn_beta: bool = False
    learn_threshold: bool = False
    use_bias: bool = True
    kernel_initializer: Any = "glorot_uniform"
    recurrent_initializer: Any = "glorot_uniform"
    bias_initializer: Any = "zeros"
    kernel_regularizer: Any = None
    recurrent_regularizer: Any = None


class SpikingCell(SpikingFields, RNNCell):
    """Base of the spiking cells (module docstring): the :class:`SpikingFields`, checked here;
    subclasses implement :meth:`integrate`.

    Example:
        >>> from ember import layers
        >>> from ember.layers.spiking import SpikingCell
        >>> cell = layers.LIFCell(3, refractory=2)
        >>> isinstance(cell, SpikingCell), cell.state_names
        (True, ('mem', 'spk', 'refractory'))
    """

    own_states: ClassVar[tuple[str, ...]] = ("mem",)

    def __post_init__(self) -> None:
        super().__post_init__()
        units = self.units
        if isinstance(units, Wiring):
            self._normalize("units", units.copy())
        elif isinstance(units, numbers.Integral) and not isinstance(units, bool) and int(units) > 0:
            self._normalize("units", int(units))
        else:
            raise TypeError(f"{self.name}: units must be a positive int or an ember.wirings.Wiring, "
                            f"received {units!r}")
        check_real(self, "beta", 0.0, 1.0)
        check_real(self, "threshold")
        if self.reset not in RESETS:
            raise ValueError(f"{self.name}: reset must be one of {RESETS}, received {self.reset!r}")
        if self.output not in OUTPUTS:
            raise ValueError(f"{self.name}: output must be one of {OUTPUTS}, received {self.output!r}")
        refractory = self.refractory
        if isinstance(refractory, bool) or not isinstance(refractory, numbers.Integral) or int(refractory) < 0:
            raise ValueError(f"{self.name}: refractory must be an int >= 0 (steps), received {refractory!r}")
        self._normalize("refractory", int(refractory))
        for flag in ("recurrent", "learn_beta", "learn_threshold", "use_bias"):
            check_bool(self.name, flag, getattr(self, flag))
        self._normalize("surrogate", surrogates.get(self.surrogate, f"{self.name}: surrogate"))
        for field in ("kernel_initializer", "recurrent_initializer", "bias_initializer"):
            self._normalize(field, initializers.get(getattr(self, field)))
        for field in ("kernel_regularizer", "recurrent_regularizer"):
            self._normalize(field, regularizers.get(getattr(self, field), f"{self.name}: {field}"))

    def __repr__(self) -> str:
        return compact_repr(self)

    # --- sizes -----------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """The number of neurons ``U``."""
        return self.units.units if isinstance(self.units, Wiring) else self.units

    @property
    def motor_size(self) -> int:
        """The neurons whose spikes (membranes) are the output: the wiring's motor neurons, else all."""
        return self.units.output_dim if isinstance(self.units, Wiring) else self.units

    @property
    def state_names(self) -> tuple[str, ...]:
        """The names of the states, in ``state_size`` order."""
        return (*self.own_states, "spk") + (("refractory",) if self.refractory else ())

    @property
    def state_size(self) -> tuple[int, ...]:
        return tuple(self.size for _ in self.state_names)

    @property
    def output_size(self) -> int:
        return self.motor_size * (2 if self.output == "both" else 1)

    # --- weights -----------------------------------------------------------------------------
    def masks(self, features: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The 0/1 NumPy masks ``(M_in, M_rec)`` of the kernels; ``(None, None)`` without a wiring."""
        if not isinstance(self.units, Wiring):
            return None, None
        wiring = built_wiring(self, self.units, features)
        return np.abs(wiring.sensory_adjacency_matrix), np.abs(wiring.adjacency_matrix)

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        features = self.step_input_shape(input_shape)[-1]
        self.masks(features)  # validates the input size against the wiring
        dtype, units = self.variable_dtype, self.size
        params = {"kernel": self.kernel_initializer((features, units), dtype, sub_seed(seed, "kernel"))}
        if self.recurrent:
            params["recurrent_kernel"] = self.recurrent_initializer((units, units), dtype,
                                                                     sub_seed(seed, "recurrent_kernel"))
        if self.use_bias:
            params["bias"] = self.bias_initializer((units,), dtype, sub_seed(seed, "bias"))
        if self.learn_beta:
            params["beta"] = ops.full((units,), self.beta, dtype=dtype)
        if self.learn_threshold:
            params["threshold"] = ops.full((units,), self.threshold, dtype=dtype)
        return self.make_state(params=params)

    def masked_kernels(self, params: dict) -> tuple[Any, Any]:
        """``(W_in * M_in, W_rec * M_rec)`` (the second None without recurrence)."""
        kernel = params["kernel"]
        dtype = ops.dtype(kernel)
        mask_in, mask_rec = self.masks(ops.shape(kernel)[0])
        if mask_in is not None:
            kernel = ops.multiply(kernel, to_mask(mask_in, dtype))
        recurrent = params.get("recurrent_kernel") if self.recurrent else None
        if recurrent is not None and mask_rec is not None:
            recurrent = ops.multiply(recurrent, to_mask(mask_rec, dtype))
        return kernel, recurrent

    def regularization_losses(self, params: dict) -> list:
        """``kernel_regularizer`` / ``recurrent_regularizer`` of the masked kernels (none when frozen)."""
        if not self.trainable or (self.kernel_regularizer is None and self.recurrent_regularizer is None):
            return []
        kernel, recurrent = self.masked_kernels(params)
        return regularizers.weight_penalties(
            self, {"kernel": kernel, **({} if recurrent is None else {"recurrent_kernel": recurrent})},
            {"kernel": self.kernel_regularizer, "recurrent_kernel": self.recurrent_regularizer})

    # --- computation ---------------------------------------------------------------------------
    def prepare_sequence(self, params: dict, sequences: Any, *, training: bool = False,
                         rng: Any = None) -> tuple[Any, Any]:
        """The input currents of every step at once; the recurrent kernel and neuron constants as context."""
        features = ops.shape(params["kernel"])[0]
        if ops.shape(sequences)[-1] != features:
            raise ValueError(f"layer {self.name!r} expects {features} input features (the last axis), "
                             f"received {ops.shape(sequences)[-1]}")
        kernel, recurrent = self.masked_kernels(params)
        current = ops.matmul(sequences, kernel)
        if self.use_bias:
            current = ops.add(current, params["bias"])
        beta = ops.clip(params["beta"], 0.0, 1.0) if self.learn_beta else self.beta
        threshold = params["threshold"] if self.learn_threshold else self.threshold
        return current, {"recurrent": recurrent, "beta": beta, "threshold": threshold}

    def integrate(self, params: dict, current: Any, prev: dict, reset: Any, context: dict) -> tuple[dict, Any]:
        """The new own states (``mem`` and the cell's others) and the threshold of this step."""
        raise NotImplementedError(f"{type(self).__name__} must implement integrate")

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        prev = dict(zip(self.state_names, states))
        current = step_input
        if context["recurrent"] is not None:
            current = ops.add(current, ops.matmul(prev["spk"], context["recurrent"]))
        active = None
        if self.refractory:
            active = ops.cast(ops.less_equal(prev["refractory"], 0.0), ops.dtype(current))
            current = ops.multiply(current, active)
        reset = ops.stop_gradient(prev["spk"])
        new, threshold = self.integrate(params, current, prev, reset, context)
        spk = self.surrogate(ops.subtract(new["mem"], threshold))
        if active is not None:
            spk = ops.multiply(spk, active)
            counter = ops.maximum(ops.subtract(prev["refractory"], 1.0), 0.0)
            new["refractory"] = ops.where(ops.greater(spk, 0.0), ops.full_like(counter, float(self.refractory)),
                                          counter)
        new["spk"] = spk
        return self.step_output(new), [new[name] for name in self.state_names]

    def step_output(self, new: dict) -> Any:
        """The motor neurons' spikes, membranes, or both (``output``)."""
        parts = {"spikes": [new["spk"]], "membrane": [new["mem"]], "both": [new["spk"], new["mem"]]}[self.output]
        if self.motor_size != self.size:
            parts = [ops.getitem(p, (slice(None), slice(0, self.motor_size))) for p in parts]
        return parts[0] if len(parts) == 1 else ops.concatenate(parts, axis=-1)

    def step(self, params: dict, inputs: Any, states: list, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        current, context = self.prepare_sequence(params, inputs, training=training, rng=rng)
        return self.prepared_step(params, current, states, context)


def leaky_membrane(mem: Any, drive: Any, reset: Any, beta: Any, threshold: Any, mechanism: str) -> Any:
    """snntorch ``Leaky``'s membrane update: ``beta*U + drive`` minus ``reset*threshold`` ("subtract"),
    ``beta*(1 - reset)*U + drive`` ("zero"), or neither ("none")."""
    if mechanism == "zero":
        return ops.add(ops.multiply(ops.multiply(ops.subtract(1.0, reset), mem), beta), drive)
    base = ops.add(ops.multiply(mem, beta), drive)
    if mechanism == "subtract":
        return ops.subtract(base, ops.multiply(reset, threshold))
    return base
