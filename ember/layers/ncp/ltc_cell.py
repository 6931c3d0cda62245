"""``LTCCell``: a liquid time-constant network (Hasani et al., AAAI 2021) on a wiring.

Each neuron ``j`` has a membrane potential ``v_j`` (the state) that follows::

    C_j dv_j/dt = g_j (E_leak_j - v_j) + sum_i w_ij s(v_i) (E_ij - v_j) + sum_k w'_kj s'(x_k) (E'_kj - v_j)

with synapses ``i -> j`` only where the wiring has one (masks ``M = |adjacency|``,
``M' = |sensory_adjacency|``), ``s(v_i) = sigmoid(sigma_ij (v_i - mu_ij))`` and ``s'``
the same with the sensory parameters. One step over the elapsed time ``t`` (1.0 unless
``timespans=`` gives it) runs ``ode_unfolds`` steps of the fused semi-implicit Euler solver
of the ncps package (Lechner & Hasani)::

    x      = x * input_w + input_b                       # input_mapping "affine" ("linear": no input_b)
    a'_kj  = softplus(sensory_w)_kj * M'_kj * sigmoid(sensory_sigma_kj * (x_k - sensory_mu_kj))
    num'_j = sum_k a'_kj * sensory_erev_kj,   den'_j = sum_k a'_kj
    cm_t   = softplus(cm) / (t / ode_unfolds)
    repeat ode_unfolds times:
        a_ij = softplus(w)_ij * M_ij * sigmoid(sigma_ij * (v_i - mu_ij))
        v_j  = (cm_t_j v_j + softplus(gleak)_j vleak_j + sum_i a_ij erev_ij + num'_j)
               / (cm_t_j + softplus(gleak)_j + sum_i a_ij + den'_j + epsilon)
    output = v[:, :output_dim] * output_w + output_b     # output_mapping "affine" ("linear": no output_b)

Solvers (``solver=``): the loop above is ``"semi_implicit"`` (the default, ncps's fused
solver). ``"euler"`` and ``"rk4"`` integrate the same ODE explicitly with the step
``dt = t / ode_unfolds``, writing it as ``dv/dt = f(v)`` with the sensory terms held for the
step (as in the LTC paper's baseline code, which also unfolds a fixed ``dt = 0.1``: pass
``timespans = 0.1 * ode_unfolds`` to reproduce it)::

    f(v)_j = (softplus(gleak)_j (vleak_j - v_j) + sum_i a_ij (erev_ij - v_j) + num'_j - den'_j v_j) / cm_j
    euler: v <- v + dt f(v)
    rk4:   k1 = f(v), k2 = f(v + dt k1 / 2), k3 = f(v + dt k2 / 2), k4 = f(v + dt k3)
           v <- v + dt (k1 + 2 k2 + 2 k3 + k4) / 6

(``cm`` and ``gleak`` through ``softplus`` with implicit constraints, ``epsilon`` unused).
The explicit solvers are only conditionally stable: ``dt (gleak + sum_i a_ij + den'_j) / cm_j``
must stay below 2 (Euler) or about 2.8 (RK4), so large wirings or long elapsed times want
more unfolds; the semi-implicit solver is stable for any ``dt``.

Each unfold moves information across one synapse (every neuron is updated from the
potentials of the previous unfold), exactly as in ncps. So on a layered wiring the
current input reaches the outputs within the same step only when ``ode_unfolds`` is at
least the number of synapses on the path: 3 for an :class:`~ember.wirings.NCP`
(sensory -> inter -> command -> motor). With fewer unfolds the outputs lag the inputs
(``ode_unfolds=2`` on an NCP: the output at step ``t`` does not depend on input ``t``),
which cripples tasks such as one-step-ahead forecasting; keep the default 6 there. A
fully connected wiring has one-synapse paths, so any ``ode_unfolds`` sees the current input.
Deep wirings also attenuate the input at this initialization (the motor potentials vary
several times less than the inter neurons'), so a wired LTC starts learning slowly and
wants more epochs than a fully connected one (ncps's first-steps example trains its
LTC on ``AutoNCP(16, 1)`` with Adam at 0.01 for 400 steps).

Positivity of ``w``, ``sensory_w``, ``cm`` and ``gleak``: with
``implicit_param_constraints=True`` (default) the forward pass reads them through
``softplus`` (as in the ncps torch ``LTC`` layer), so they stay positive whatever the
optimizer does; with False they are used as they are and :meth:`LTCCell.constraints`
reports ``NonNeg`` projections for them, which the trainer applies after every update
(ncps's ``apply_weight_constraints``).

Weights (``state["params"]``), ``U = wiring.units``, ``S`` input features, ``M`` motor neurons::

    gleak, vleak, cm: (U,)                 sigma, mu, w, erev: (U, U)
    sensory_sigma, sensory_mu, sensory_w, sensory_erev: (S, U)
    input_w, input_b: (S,)      output_w, output_b: (M,)        (per the mappings)

Initialization: uniform in ncps's ranges (``gleak`` [0.001, 1], ``vleak`` [-0.2, 0.2],
``cm`` [0.4, 0.6], ``w`` and ``sensory_w`` [0.001, 1], ``sigma`` and ``sensory_sigma``
[3, 8], ``mu`` and ``sensory_mu`` [0.3, 0.8]; override with ``initialization_ranges``),
``erev``/``sensory_erev`` the wiring's polarities, ``input_w``/``output_w`` ones,
``input_b``/``output_b`` zeros. The masks are not variables: they come from the wiring.
"""

from __future__ import annotations

import numbers
from typing import Any, ClassVar

from ember import constraints as constraints_module
from ember import ops
from ember.initializers import RandomUniform
from ember.layers.ncp._common import (
    built_wiring,
    check_features,
    to_array,
    to_mask,
)
from ember.layers.ncp.wired_cell import WiredCell
from ember.seeds import sub_seed
from ember.validation import check_positive_int

MAPPINGS = ("affine", "linear", None)
SOLVERS = ("semi_implicit", "euler", "rk4")
DEFAULT_RANGES = {
    "gleak": (0.001, 1.0), "vleak": (-0.2, 0.2), "cm": (0.4, 0.6),
    "w": (0.001, 1.0), "sigma": (3.0, 8.0), "mu": (0.3, 0.8),
    "sensory_w": (0.001, 1.0), "sensory_sigma": (3.0, 8.0), "sensory_mu": (0.3, 0.8),
}
_POSITIVE = ("w", "sensory_w", "cm", "gleak")


class LTCCell(WiredCell):
    """A liquid time-constant cell (equations in the module docstring).

    Args:
        wiring: an :class:`~ember.wirings.Wiring`, or an int ``units`` for
            ``FullyConnected(units)``. The cell keeps a copy; an unbuilt wiring is built for
            the input size without being modified.
        input_mapping: ``"affine"`` (``x * input_w + input_b``), ``"linear"``
            (``x * input_w``) or None / ``"none"`` (inputs used as they are).
        output_mapping: the same for the motor neurons' potentials.
        ode_unfolds: solver steps per time step (positive int); at least the number of
            synapses from an input to an output (3 for an NCP wiring) for the output to
            see the current input (module docstring).
        epsilon: added to the solver's denominator.
        implicit_param_constraints: read ``w``, ``sensory_w``, ``cm``, ``gleak`` through
            ``softplus`` (True), or use them as they are with ``NonNeg`` constraints applied
            by the trainer after each update (False).
        initialization_ranges: ``{name: (low, high)}`` overriding the uniform ranges of
            ``gleak``, ``vleak``, ``cm``, ``w``, ``sigma``, ``mu``, ``sensory_w``,
            ``sensory_sigma``, ``sensory_mu``.
        solver: ``"semi_implicit"`` (ncps's fused solver), ``"euler"`` (explicit Euler) or
            ``"rk4"`` (classic Runge-Kutta), each with ``ode_unfolds`` steps of
            ``dt = t / ode_unfolds`` (module docstring).

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> cell = layers.LTCCell(wirings.NCP(3, 2, 1, 2, 2, 1, 2, seed=0), ode_unfolds=3)
        >>> state = cell.build((None, 2), seed=0)
        >>> ops.shape(state["params"]["sensory_w"]), cell.state_size, cell.output_size
        ((2, 6), 6, 1)
        >>> y, _ = layers.RNN(cell).apply(state, ops.ones((4, 5, 2)))
        >>> ops.shape(y)
        (4, 1)
    """

    input_mapping: str | None = "affine"
    output_mapping: str | None = "affine"
    ode_unfolds: int = 6
    epsilon: float = 1e-8
    implicit_param_constraints: bool = True
    initialization_ranges: dict | None = None
    solver: str = "semi_implicit"

    accepts_timespan: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()  # WiredCell's: checks and copies the wiring
        for field in ("input_mapping", "output_mapping"):
            value = getattr(self, field)
            if value == "none":
                self._normalize(field, None)
            elif not (value is None or (isinstance(value, str) and value in MAPPINGS)):
                raise ValueError(f"{self.name}: {field} must be one of {MAPPINGS} (or 'none'), received {value!r}")
        self._normalize("ode_unfolds", check_positive_int(self.name, "ode_unfolds", self.ode_unfolds))
        eps = self.epsilon
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps >= 0.0:
            raise ValueError(f"{self.name}: epsilon must be a number >= 0, received {eps!r}")
        self._normalize("epsilon", float(eps))
        if not isinstance(self.implicit_param_constraints, bool):
            raise TypeError(f"{self.name}: implicit_param_constraints must be a bool, "
                            f"received {self.implicit_param_constraints!r}")
        self._normalize("initialization_ranges", self._check_ranges(self.initialization_ranges))
        if not (isinstance(self.solver, str) and self.solver in SOLVERS):
            raise ValueError(f"{self.name}: solver must be one of {SOLVERS}, received {self.solver!r}")

    def _check_ranges(self, ranges: Any) -> dict | None:
        if ranges is None:
            return None
        if not isinstance(ranges, dict):
            raise TypeError(f"{self.name}: initialization_ranges must be a dict {{name: (low, high)}}, "
                            f"received {ranges!r}")
        checked = {}
        for name, bounds in ranges.items():
            if name not in DEFAULT_RANGES:
                raise ValueError(f"{self.name}: initialization_ranges has unknown entry {name!r}; "
                                 f"known: {sorted(DEFAULT_RANGES)}")
            try:
                low, high = (float(b) for b in bounds)
            except (TypeError, ValueError):
                raise ValueError(f"{self.name}: initialization_ranges[{name!r}] must be (low, high), "
                                 f"received {bounds!r}") from None
            if not low <= high:
                raise ValueError(f"{self.name}: initialization_ranges[{name!r}] needs low <= high, "
                                 f"received {bounds!r}")
            checked[name] = (low, high)
        return checked

    # --- protocol --------------------------------------------------------------------------
    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        features = self.step_input_shape(input_shape)[-1]
        wiring = built_wiring(self, self.wiring, features)

        dtype = self.variable_dtype
        units, motor = wiring.units, wiring.output_dim
        ranges = {**DEFAULT_RANGES, **(self.initialization_ranges or {})}
        shapes = {"gleak": (units,), "vleak": (units,), "cm": (units,), "sigma": (units, units),
                  "mu": (units, units), "w": (units, units), "sensory_sigma": (features, units),
                  "sensory_mu": (features, units), "sensory_w": (features, units)}
        params = {name: RandomUniform(*ranges[name])(shape, dtype, sub_seed(seed, name))
                  for name, shape in shapes.items()}
        params["erev"] = to_array(wiring.adjacency_matrix, dtype)
        params["sensory_erev"] = to_array(wiring.sensory_adjacency_matrix, dtype)
        for side, size in (("input", features), ("output", motor)):
            mapping = getattr(self, f"{side}_mapping")
            if mapping in ("affine", "linear"):
                params[f"{side}_w"] = ops.ones((size,), dtype=dtype)
            if mapping == "affine":
                params[f"{side}_b"] = ops.zeros((size,), dtype=dtype)
        return self.make_state(params=params)

    def constraints(self) -> dict:
        """``NonNeg`` for ``w``, ``sensory_w``, ``cm``, ``gleak`` unless the constraints are implicit."""
        if self.implicit_param_constraints:
            return {}
        return constraints_module.weight_constraints(self, {name: constraints_module.NonNeg() for name in _POSITIVE})

    # --- computation -----------------------------------------------------------------------
    def _positive(self, x: Any) -> Any:
        return ops.nn.softplus(x) if self.implicit_param_constraints else x

    def prepare_sequence(self, params: dict, sequences: Any, *, training: bool = False,
                         rng: Any = None) -> tuple[Any, Any]:
        """The input mapping for every step at once; masked, positive synapse weights as context."""
        features = ops.shape(params["sensory_w"])[0]
        check_features(self, sequences, features)
        wiring = built_wiring(self, self.wiring, features)
        dtype = ops.dtype(params["w"])
        x = sequences
        if self.input_mapping in ("affine", "linear"):
            x = ops.multiply(x, params["input_w"])
        if self.input_mapping == "affine":
            x = ops.add(x, params["input_b"])
        w = ops.multiply(self._positive(params["w"]), to_mask(wiring.adjacency_matrix, dtype))
        sensory_w = ops.multiply(self._positive(params["sensory_w"]), to_mask(wiring.sensory_adjacency_matrix, dtype))
        context = {
            "w": w, "w_erev": ops.multiply(w, params["erev"]),
            "sensory_w": sensory_w, "sensory_w_erev": ops.multiply(sensory_w, params["sensory_erev"]),
            "cm": self._positive(params["cm"]), "gleak": self._positive(params["gleak"]),
        }
        context["leak"] = ops.multiply(context["gleak"], params["vleak"])
        return x, context

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        def synapses(v: Any, sigma: Any, mu: Any, weight: Any, weight_erev: Any) -> tuple[Any, Any]:
            # v (batch, pre) -> activations (batch, pre, post), summed over the presynaptic axis.
            s = ops.nn.sigmoid(ops.multiply(sigma, ops.subtract(ops.expand_dims(v, -1), mu)))
            return ops.sum(ops.multiply(s, weight_erev), axis=1), ops.sum(ops.multiply(s, weight), axis=1)

        num_sensory, den_sensory = synapses(step_input, params["sensory_sigma"], params["sensory_mu"],
                                            context["sensory_w"], context["sensory_w_erev"])
        if self.solver != "semi_implicit":
            v = self._explicit(params, context, states[0], num_sensory, den_sensory, timespan, synapses)
            return self._output(params, v), [v]
        if timespan is None:
            cm_t = ops.multiply(context["cm"], float(self.ode_unfolds))
        else:
            cm_t = ops.divide(context["cm"], ops.divide(timespan, float(self.ode_unfolds)))
        gleak = context["gleak"]
        base_num = ops.add(context["leak"], num_sensory)
        base_den = ops.add(ops.add(cm_t, gleak), ops.add(den_sensory, self.epsilon))
        v = states[0]
        for _ in range(self.ode_unfolds):
            num, den = synapses(v, params["sigma"], params["mu"], context["w"], context["w_erev"])
            v = ops.divide(ops.add(ops.add(ops.multiply(cm_t, v), base_num), num), ops.add(base_den, den))
        return self._output(params, v), [v]

    def _explicit(self, params: dict, context: dict, v: Any, num_sensory: Any, den_sensory: Any, timespan: Any,
                  synapses: Any) -> Any:
        """``ode_unfolds`` explicit Euler or RK4 steps of ``dv/dt = f(v)`` (module docstring)."""
        dt: Any = 1.0 / self.ode_unfolds if timespan is None else ops.divide(timespan, float(self.ode_unfolds))
        base_num = ops.add(context["leak"], num_sensory)
        base_den = ops.add(context["gleak"], den_sensory)
        inverse_cm = ops.divide(1.0, context["cm"])

        def f(u: Any) -> Any:
            num, den = synapses(u, params["sigma"], params["mu"], context["w"], context["w_erev"])
            drive = ops.subtract(ops.add(base_num, num), ops.multiply(u, ops.add(base_den, den)))
            return ops.multiply(drive, inverse_cm)

        def moved(u: Any, k: Any, scale: float) -> Any:
            return ops.add(u, ops.multiply(dt * scale if isinstance(dt, float) else ops.multiply(dt, scale), k))

        for _ in range(self.ode_unfolds):
            k1 = f(v)
            if self.solver == "euler":
                v = moved(v, k1, 1.0)
                continue
            k2 = f(moved(v, k1, 0.5))
            k3 = f(moved(v, k2, 0.5))
            k4 = f(moved(v, k3, 1.0))
            v = moved(v, ops.add(ops.add(k1, k4), ops.multiply(ops.add(k2, k3), 2.0)), 1.0 / 6.0)
        return v

    def _output(self, params: dict, v: Any) -> Any:
        output = v
        motor = self.wiring.output_dim
        if motor != self.wiring.units:
            output = ops.getitem(v, (slice(None), slice(0, motor)))
        if self.output_mapping in ("affine", "linear"):
            output = ops.multiply(output, params["output_w"])
        if self.output_mapping == "affine":
            output = ops.add(output, params["output_b"])
        return output

    def step(self, params: dict, inputs: Any, states: list, *, training: bool = False, rng: Any = None,
             timespan: Any = None) -> tuple[Any, list]:
        mapped, context = self.prepare_sequence(params, inputs, training=training, rng=rng)
        return self.prepared_step(params, mapped, states, context, timespan=timespan)
