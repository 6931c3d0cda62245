"""Independent references for the recurrent layers: NumPy float64 steps written out here,
and ``torch.nn.LSTM/GRU/RNN`` with weights copied from Keras's layout.

Layout conversions, Keras -> torch (single layer, ``u`` = units):

* SimpleRNN / LSTM: ``weight_ih_l0 = kernel.T``, ``weight_hh_l0 = recurrent_kernel.T``,
  ``bias_ih_l0 = bias``, ``bias_hh_l0 = 0``. LSTM gate order is i, f, c(g), o in both.
* GRU (torch is the reset_after=True variant): Keras's gate blocks z, r, h become
  torch's r, z, n: ``reorder(w) = [w[..., u:2u], w[..., :u], w[..., 2u:]]``;
  ``weight_ih_l0 = reorder(kernel).T``, ``weight_hh_l0 = reorder(recurrent_kernel).T``,
  ``bias_ih_l0 = reorder(bias[0])``, ``bias_hh_l0 = reorder(bias[1])``.
"""

from __future__ import annotations

import numpy as np


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# ------------------------------------------------------------------- one step, float64


def simple_rnn_step(p, x, states):
    h = np.tanh(x @ p["kernel"] + states[0] @ p["recurrent_kernel"] + p.get("bias", 0.0))
    return h, [h]


def lstm_step(p, x, states):
    h, c = states
    z = x @ p["kernel"] + h @ p["recurrent_kernel"] + p.get("bias", 0.0)
    i, f, g, o = np.split(z, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h = sigmoid(o) * np.tanh(c)
    return h, [h, c]


def gru_step(p, x, states, reset_after=True):
    h = states[0]
    u = h.shape[-1]
    kernel, recurrent = p["kernel"], p["recurrent_kernel"]
    bias = p.get("bias")
    if reset_after:
        bx = bias[0] if bias is not None else 0.0
        bh = bias[1] if bias is not None else 0.0
        xz, xr, xh = np.split(x @ kernel + bx, 3, axis=-1)
        hz, hr, hh = np.split(h @ recurrent + bh, 3, axis=-1)
        z, r = sigmoid(xz + hz), sigmoid(xr + hr)
        candidate = np.tanh(xh + r * hh)
    else:
        xz, xr, xh = np.split(x @ kernel + (bias if bias is not None else 0.0), 3, axis=-1)
        z = sigmoid(xz + h @ recurrent[:, :u])
        r = sigmoid(xr + h @ recurrent[:, u:2 * u])
        candidate = np.tanh(xh + (r * h) @ recurrent[:, 2 * u:])
    h = z * h + (1 - z) * candidate
    return h, [h]


def run(step, p, x, states, mask=None, go_backwards=False, zero_output=False):
    """Keras's RNN loop in float64: ``(sequence_outputs, last_output, final_states)``.

    Masked steps keep the states and repeat the previous output (zeros with
    ``zero_output``); ``go_backwards`` returns the outputs in processing order.
    """
    states = [np.asarray(s, dtype=np.float64) for s in states]
    outputs, previous = [], None
    steps = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    for t in steps:
        out, new = step(p, x[:, t], states)
        if mask is not None:
            keep = mask[:, t, None]
            new = [np.where(keep, n, s) for n, s in zip(new, states)]
            fallback = np.zeros_like(out) if zero_output or previous is None else previous
            out = np.where(keep, out, fallback)
        states, previous = list(new), out
        outputs.append(out)
    return np.stack(outputs, axis=1), previous, states


# ------------------------------------------------------------------------------ torch


def _gru_reorder(w, u):
    return np.concatenate([w[..., u:2 * u], w[..., :u], w[..., 2 * u:]], axis=-1)


def torch_module(kind, p, features, units, bidirectional_params=None):
    """A float64 ``torch.nn.{RNN,LSTM,GRU}`` (batch_first) holding Keras-layout params ``p``
    (and ``bidirectional_params`` for the reverse direction, if given)."""
    import torch

    cls = {"simple_rnn": torch.nn.RNN, "lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[kind]
    module = cls(features, units, batch_first=True, bidirectional=bidirectional_params is not None).double()
    directions = [("", p)] + ([("_reverse", bidirectional_params)] if bidirectional_params is not None else [])
    with torch.no_grad():
        for suffix, params in directions:
            kernel, recurrent = params["kernel"], params["recurrent_kernel"]
            if kind == "gru":
                kernel, recurrent = _gru_reorder(kernel, units), _gru_reorder(recurrent, units)
                bias_ih, bias_hh = _gru_reorder(params["bias"][0], units), _gru_reorder(params["bias"][1], units)
            else:
                bias_ih, bias_hh = params["bias"], np.zeros_like(params["bias"])
            getattr(module, f"weight_ih_l0{suffix}").copy_(torch.from_numpy(np.ascontiguousarray(kernel.T)))
            getattr(module, f"weight_hh_l0{suffix}").copy_(torch.from_numpy(np.ascontiguousarray(recurrent.T)))
            getattr(module, f"bias_ih_l0{suffix}").copy_(torch.from_numpy(np.ascontiguousarray(bias_ih)))
            getattr(module, f"bias_hh_l0{suffix}").copy_(torch.from_numpy(np.ascontiguousarray(bias_hh)))
    return module


def torch_grads_in_keras_layout(kind, module, units):
    """The gradients of a single-direction torch module's weights, in Keras's layout."""
    kernel = module.weight_ih_l0.grad.numpy().T
    recurrent = module.weight_hh_l0.grad.numpy().T
    bias_ih, bias_hh = module.bias_ih_l0.grad.numpy(), module.bias_hh_l0.grad.numpy()
    if kind == "gru":
        back = lambda w: np.concatenate([w[..., units:2 * units], w[..., :units], w[..., 2 * units:]], axis=-1)  # noqa: E731
        return {"kernel": back(kernel), "recurrent_kernel": back(recurrent),
                "bias": np.stack([back(bias_ih), back(bias_hh)])}
    # bias = bias_ih + bias_hh: both receive the same gradient.
    return {"kernel": kernel, "recurrent_kernel": recurrent, "bias": bias_ih}
