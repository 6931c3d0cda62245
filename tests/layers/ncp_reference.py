"""Independent NumPy float64 references for the NCP cells, written from the equations in
the cells' docstrings (ember/layers/ncp/*.py), not from the code under test.

Parameters come in as the float64 NumPy copies of a built state's params (Keras layout,
``(fan_in, fan_out)`` kernels); masks are computed here from the wiring's matrices.
"""

from __future__ import annotations

import numpy as np

from tests.layers import rnn_reference


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)


def lecun_tanh(x):
    return 1.7159 * np.tanh(0.666 * x)


def _dense(p, z, mask=None):
    kernel = p["kernel"] if mask is None else p["kernel"] * mask
    return z @ kernel + p["bias"]


def cfc_heads_update(p, z, t, mode, mask=None):
    """The CfC update from the heads' input ``z`` (ncps-torch formulation)."""
    ff1 = _dense(p["ff1"], z, mask)
    if mode == "pure":
        return -p["A"] * np.exp(-t * (np.abs(p["w_tau"]) + np.abs(ff1))) * ff1 + p["A"]
    ff1 = np.tanh(ff1)
    ff2 = np.tanh(_dense(p["ff2"], z, mask))
    gate = sigmoid(_dense(p["time_a"], z) * t + _dense(p["time_b"], z))
    if mode == "no_gate":
        return ff1 + gate * ff2
    return ff1 * (1.0 - gate) + gate * ff2


def cfc_step(p, x, states, t=1.0, mode="default", backbone_layers=1, activation=lecun_tanh, dropout_masks=None):
    z = np.concatenate([x, states[0]], axis=-1)
    for i in range(backbone_layers):
        z = activation(_dense(p[f"backbone_{i}"], z))
        if dropout_masks is not None:
            z = z * dropout_masks[i]
    h = cfc_heads_update(p, z, t, mode)
    return h, [h]


def wired_masks(wiring, fully_recurrent=True):
    """Per wiring layer: ``|into|`` stacked over the within-layer mask, from the built wiring's matrices."""
    masks, previous = [], None
    for i in range(wiring.num_layers):
        neurons = wiring.get_neurons_of_layer(i)
        if previous is None:
            into = wiring.sensory_adjacency_matrix[:, neurons]
        else:
            into = wiring.adjacency_matrix[previous][:, neurons]
        within = (np.ones((len(neurons), len(neurons))) if fully_recurrent
                  else wiring.adjacency_matrix[neurons][:, neurons])
        masks.append(np.abs(np.vstack([into, within])).astype(np.float64))
        previous = neurons
    return masks


def wired_cfc_step(p, x, states, wiring, t=1.0, mode="default", fully_recurrent=True):
    masks = wired_masks(wiring, fully_recurrent)
    sizes = [len(wiring.get_neurons_of_layer(i)) for i in range(wiring.num_layers)]
    hs = np.split(states[0], np.cumsum(sizes)[:-1], axis=-1)
    u, new = x, []
    for i, (h, mask) in enumerate(zip(hs, masks)):
        u = cfc_heads_update(p[f"layer_{i}"], np.concatenate([u, h], axis=-1), t, mode, mask)
        new.append(u)
    return u[:, :wiring.output_dim], [np.concatenate(new, axis=-1)]


def ltc_step(p, x, states, wiring, t=1.0, ode_unfolds=6, epsilon=1e-8, input_mapping="affine",
             output_mapping="affine", implicit=True):
    """The ODE's fused semi-implicit Euler steps; ``[b, i, j]`` arrays hold the synapse ``i -> j``."""
    positive = softplus if implicit else (lambda a: a)
    mask = np.abs(wiring.adjacency_matrix).astype(np.float64)
    sensory_mask = np.abs(wiring.sensory_adjacency_matrix).astype(np.float64)
    if input_mapping in ("affine", "linear"):
        x = x * p["input_w"]
    if input_mapping == "affine":
        x = x + p["input_b"]

    def conductances(pre, w, m, sigma, mu):
        # g[b, i, j] = w_ij * M_ij * sigmoid(sigma_ij * (pre_bi - mu_ij))
        return positive(w)[None] * m[None] * sigmoid(sigma[None] * (pre[:, :, None] - mu[None]))

    g_sensory = conductances(x, p["sensory_w"], sensory_mask, p["sensory_sigma"], p["sensory_mu"])
    sensory_num = np.einsum("bij,ij->bj", g_sensory, p["sensory_erev"])
    sensory_den = g_sensory.sum(axis=1)
    cm_t = positive(p["cm"]) / (np.asarray(t, dtype=np.float64) / ode_unfolds)
    gleak = positive(p["gleak"])
    v = states[0]
    for _ in range(ode_unfolds):
        g = conductances(v, p["w"], mask, p["sigma"], p["mu"])
        num = np.einsum("bij,ij->bj", g, p["erev"]) + sensory_num
        den = g.sum(axis=1) + sensory_den
        v = (cm_t * v + gleak * p["vleak"] + num) / (cm_t + gleak + den + epsilon)
    out = v[:, :wiring.output_dim]
    if output_mapping in ("affine", "linear"):
        out = out * p["output_w"]
    if output_mapping == "affine":
        out = out + p["output_b"]
    return out, [v]


def ncp_cell_step(p, x, states, wiring, activation=np.tanh):
    sensory_mask = np.abs(wiring.sensory_adjacency_matrix)
    mask = np.abs(wiring.adjacency_matrix)
    h = activation(x @ (p["kernel"] * sensory_mask) + states[0] @ (p["recurrent_kernel"] * mask) + p.get("bias", 0.0))
    return h[:, :wiring.output_dim], [h]


def mixed_step(cell_step):
    """The mixed-memory step around ``cell_step(p_cell, x, [h], t)``: LSTM first, sharing ``h``."""

    def step(p, x, states, t=1.0):
        h, c = states
        _, (h, c) = rnn_reference.lstm_step(p["memory"], x, [h, c])
        out, (h,) = cell_step(p["cell"], x, [h], t)
        return out, [h, c]

    return step


def run(step, x, initial_states, timespans=None, go_backwards=False):
    """``(sequence, last_output, final_states)`` of ``step(x_t, states, t_t)`` over ``x`` (batch, time, features)."""
    states = [np.asarray(s, dtype=np.float64) for s in initial_states]
    outputs = []
    order = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    for t in order:
        span = 1.0 if timespans is None else timespans[:, t:t + 1]
        out, states = step(x[:, t], states, span)
        outputs.append(out)
    return np.stack(outputs, axis=1), outputs[-1], states
