"""Independent NumPy float64 references for the other continuous-time cells (CT-RNN, CT-GRU,
the LTC's explicit solvers, the stride-aware CfC), written from the published equations:

* CT-RNN and CT-GRU: the baselines of the liquid time-constant paper (Hasani et al., AAAI
  2021; ``ctrnn_model.py`` of ``raminmh/liquid_time_constant_networks``), CT-GRU after Mozer
  et al. (2017): traces decaying by ``exp(-t / tau_i)``, ``tau_i = 10 ** (i / 2)``;
* the LTC ODE ``C dv/dt = g_l (v_l - v) + sum_i a_ij (E_ij - v)`` integrated by explicit Euler
  and classic RK4 with ``dt = t / unfolds`` (the paper's ``_ode_step_explicit`` and
  ``_ode_step_runge_kutta``, with the step scaled by the elapsed time);
* the stride-aware CfC: the ncps-torch CfC (``ncp_reference.cfc_step``) at the elapsed time
  ``stride * stride_length * time_scale_factor``.

Parameters come in as the float64 NumPy copies of a built state's params (Keras layout,
``(fan_in, fan_out)`` kernels); masks are computed here from the wiring's matrices.
"""

from __future__ import annotations

import numpy as np

from tests.layers.ncp_reference import sigmoid, softplus


def _masks(wiring):
    return (np.abs(wiring.sensory_adjacency_matrix).astype(np.float64),
            np.abs(wiring.adjacency_matrix).astype(np.float64))


def ctrnn_step(p, x, states, wiring, t=1.0, ode_unfolds=6, activation=np.tanh):
    """``ode_unfolds`` Euler steps of ``dh/dt = -h / tau + act(x W_in + h W_rec + b)``, ``dt = t / ode_unfolds``."""
    sensory_mask, mask = _masks(wiring)
    tau = softplus(p["tau"])
    dt = np.asarray(t, dtype=np.float64) / ode_unfolds
    h = states[0]
    for _ in range(ode_unfolds):
        dh = -h / tau + activation(x @ (p["kernel"] * sensory_mask) + h @ (p["recurrent_kernel"] * mask) + p["bias"])
        h = h + dt * dh
    return h[:, :wiring.output_dim], [h]


def ctgru_step(p, x, states, wiring, t=1.0, timescales=8):
    """Mozer et al.'s CT-GRU with the LTC paper's per-(neuron, scale) log-time-scale logits."""
    units, m = wiring.units, timescales
    log_tau = np.arange(m) * 0.5 * np.log(10.0)
    sensory_mask, mask = _masks(wiring)
    z_mask = np.vstack([sensory_mask, mask])
    r_mask = np.repeat(z_mask, m, axis=1)
    hh = states[0].reshape(-1, units, m)
    h = hh.sum(axis=2)
    z = np.concatenate([x, h], axis=-1)

    def scales(name):
        logits = (z @ (p[name]["kernel"] * r_mask) + p[name]["bias"]).reshape(-1, units, m)
        e = np.exp(-(logits - log_tau) ** 2)
        return e / e.sum(axis=2, keepdims=True)

    r = scales("tau_r")
    retrieved = (r * hh).sum(axis=2)
    q = np.tanh(np.concatenate([x, retrieved], axis=-1) @ (p["detect"]["kernel"] * z_mask) + p["detect"]["bias"])
    s = scales("tau_s")
    t = np.asarray(t, dtype=np.float64).reshape(-1, 1, 1)
    hh = ((1.0 - s) * hh + s * q[:, :, None]) * np.exp(-t / np.exp(log_tau))
    h = hh.sum(axis=2)
    return h[:, :wiring.output_dim], [hh.reshape(-1, units * m)]


def ltc_explicit_step(p, x, states, wiring, t=1.0, ode_unfolds=6, solver="euler"):
    """The LTC ODE (affine input and output mappings, softplus-positive parameters) by
    explicit Euler or RK4; ``[b, i, j]`` arrays hold the synapse ``i -> j``."""
    sensory_mask, mask = _masks(wiring)
    x = x * p["input_w"] + p["input_b"]
    cm, gleak = softplus(p["cm"]), softplus(p["gleak"])
    g_sensory = (softplus(p["sensory_w"]) * sensory_mask)[None] * sigmoid(
        p["sensory_sigma"][None] * (x[:, :, None] - p["sensory_mu"][None]))
    sensory_current_num = np.einsum("bij,ij->bj", g_sensory, p["sensory_erev"])
    sensory_conductance = g_sensory.sum(axis=1)

    def f(v):
        g = (softplus(p["w"]) * mask)[None] * sigmoid(p["sigma"][None] * (v[:, :, None] - p["mu"][None]))
        synaptic = np.einsum("bij,ij->bj", g, p["erev"]) - v * g.sum(axis=1)
        sensory = sensory_current_num - v * sensory_conductance
        return (gleak * (p["vleak"] - v) + synaptic + sensory) / cm

    dt = np.asarray(t, dtype=np.float64) / ode_unfolds
    v = states[0]
    for _ in range(ode_unfolds):
        if solver == "euler":
            v = v + dt * f(v)
        else:
            k1 = f(v)
            k2 = f(v + 0.5 * dt * k1)
            k3 = f(v + 0.5 * dt * k2)
            k4 = f(v + dt * k3)
            v = v + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return v[:, :wiring.output_dim] * p["output_w"] + p["output_b"], [v]
