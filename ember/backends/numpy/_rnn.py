"""NumPy backend, ``ops.nn.lstm``: the whole sequence in one NumPy loop (``ops.nn.gru`` is the composite).

The forward pass is plain NumPy: one matmul projects every step's input, then each step
is one matmul and in-place gate arithmetic on a preallocated buffer. It saves nothing:
the tape records ``nn.lstm`` as ONE op, and its VJP rule
(:mod:`ember.autodiff.rules.rnn`) rebuilds the gates from the inputs and the output
sequence with two batched matmuls, then runs backpropagation through time. float16 and
bfloat16 compute in float32 and round back once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backends._rnn_checks import check_rnn_dtypes, check_rnn_shapes
from ember.backends.numpy._base import F32, HALF, ND, name_of, out, to_native


def _sigmoid_(x: np.ndarray) -> np.ndarray:
    """In place: ``sigmoid(x) = 0.5 * tanh(0.5 * x) + 0.5`` (one transcendental, no overflow)."""
    x *= 0.5
    np.tanh(x, out=x)
    x *= 0.5
    x += 0.5
    return x


def _time_major(x: np.ndarray, time_major: bool, go_backwards: bool) -> np.ndarray:
    """``x`` as a contiguous ``(time, batch, ...)`` array in processing order."""
    xt = x if time_major else x.transpose(1, 0, 2)
    return np.ascontiguousarray(xt[::-1] if go_backwards else xt)


def _matmul_steps(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w`` for contiguous ``x`` ``(time, batch, n)`` as ONE 2-D GEMM (a 3-D matmul loops over time)."""
    time, batch, n = x.shape
    return (x.reshape(time * batch, n) @ w).reshape(time, batch, w.shape[1])


def lstm(inputs, initial_h, initial_c, kernel, recurrent_kernel, bias=None, *, go_backwards=False,
         time_major=False):
    named = [("inputs", inputs), ("initial_h", initial_h), ("initial_c", initial_c), ("kernel", kernel),
             ("recurrent_kernel", recurrent_kernel), ("bias", bias)]
    # Only the bias may be None: the others are required arguments.
    arrays: list[Any] = [None if v is None else v if type(v) is ND else to_native(v, n) for n, v in named]
    x, h, c, k, r, b = arrays
    dtype = x.dtype
    if dtype.kind != "f" and dtype not in HALF or any(a is not None and a.dtype != dtype for a in arrays):
        check_rnn_dtypes("nn.lstm", [(n, name_of(a.dtype)) for (n, _), a in zip(named, arrays) if a is not None])
    time, units = check_rnn_shapes("nn.lstm", 4, x.shape, [("initial_h", h.shape), ("initial_c", c.shape)],
                                   k.shape, r.shape, None if b is None else b.shape, time_major)
    if dtype in HALF:
        x, h, c, k, r, b = (None if a is None else a.astype(F32) for a in (x, h, c, k, r, b))
    xt = _time_major(x, time_major, go_backwards)
    batch = xt.shape[1]
    projected = _matmul_steps(xt, k)  # every step's input term: (time, batch, 4 * units)
    if b is not None:
        projected += b
    outputs = np.empty((time, batch, units) if time_major else (batch, time, units), dtype=projected.dtype)
    u2, u3 = 2 * units, 3 * units
    z = np.empty((batch, 4 * units), dtype=projected.dtype)
    for t in range(time):
        np.matmul(h, r, out=z)
        z += projected[t]
        _sigmoid_(z[:, :u2])  # i, f
        np.tanh(z[:, u2:u3], out=z[:, u2:u3])  # c~
        _sigmoid_(z[:, u3:])  # o
        c = z[:, units:u2] * c
        c += z[:, :units] * z[:, u2:u3]
        h = np.tanh(c)
        h *= z[:, u3:]
        if time_major:
            outputs[t] = h
        else:
            outputs[:, t] = h
    if dtype in HALF:
        return out(outputs.astype(dtype)), out(h.astype(dtype)), out(c.astype(dtype))
    return outputs, h, c


def lstm_vjp(g_seq, g_h, g_c, sequence, inputs, initial_h, initial_c, kernel, recurrent_kernel, bias,
             go_backwards, time_major, needed):
    """The cotangents of :func:`lstm`'s six array arguments, in plain NumPy (the VJP rule's fast
    path; see :mod:`ember.autodiff.rules.rnn` for the math). Arrays are plain float32/float64
    ndarrays of one dtype; ``g_*`` may be None; ``needed[k]`` says whether argument ``k``
    needs its cotangent (others come back None)."""
    x = _time_major(inputs, time_major, go_backwards)
    hs = sequence if time_major else sequence.transpose(1, 0, 2)  # processing order already
    time, batch, _ = x.shape
    units = recurrent_kernel.shape[0]
    u2, u3 = 2 * units, 3 * units
    dtype = x.dtype
    # Rebuild the gates: every step's h_{t-1} is known, so two batched matmuls give all of z.
    h_prev = np.empty((time, batch, units), dtype)
    h_prev[0] = initial_h
    h_prev[1:] = hs[:-1]
    gates = _matmul_steps(x, kernel)
    gates += _matmul_steps(h_prev, recurrent_kernel)
    if bias is not None:
        gates += bias
    _sigmoid_(gates[..., :u2])
    np.tanh(gates[..., u2:u3], out=gates[..., u2:u3])
    _sigmoid_(gates[..., u3:])
    cells = np.empty((time + 1, batch, units), dtype)  # cells[t] is c_{t-1}
    cells[0] = initial_c
    for t in range(time):
        g = gates[t]
        np.multiply(g[:, units:u2], cells[t], out=cells[t + 1])
        cells[t + 1] += g[:, :units] * g[:, u2:u3]
    tanh_c = np.tanh(cells[1:])
    # Backpropagation through time.
    dz_all = np.empty_like(gates)
    dh = np.zeros((batch, units), dtype) if g_h is None else np.array(g_h, dtype=dtype)
    dc = np.zeros((batch, units), dtype) if g_c is None else np.array(g_c, dtype=dtype)
    d_seq = None if g_seq is None else (g_seq if time_major else g_seq.transpose(1, 0, 2))
    recurrent_t = recurrent_kernel.T
    for t in range(time - 1, -1, -1):
        g = gates[t]
        i, f, gg, o = g[:, :units], g[:, units:u2], g[:, u2:u3], g[:, u3:]
        if d_seq is not None:
            dh += d_seq[t]
        tc = tanh_c[t]
        dc += dh * o * (1.0 - tc * tc)
        dz = dz_all[t]
        np.multiply(dc, gg * i * (1.0 - i), out=dz[:, :units])
        np.multiply(dc, cells[t] * f * (1.0 - f), out=dz[:, units:u2])
        np.multiply(dc, i * (1.0 - gg * gg), out=dz[:, u2:u3])
        np.multiply(dh, tc * o * (1.0 - o), out=dz[:, u3:])
        dc *= f
        if t or needed[1]:
            dh = dz @ recurrent_t
    flat_dz = dz_all.reshape(time * batch, 4 * units)
    d_inputs = None
    if needed[0]:
        d_inputs = _matmul_steps(dz_all, kernel.T)
        if go_backwards:
            d_inputs = d_inputs[::-1]
        d_inputs = np.ascontiguousarray(d_inputs if time_major else d_inputs.transpose(1, 0, 2))
    d_kernel = x.reshape(time * batch, -1).T @ flat_dz if needed[3] else None
    d_recurrent = h_prev.reshape(time * batch, units).T @ flat_dz if needed[4] else None
    d_bias = flat_dz.sum(axis=0) if bias is not None and needed[5] else None
    return (d_inputs, dh if needed[1] else None, dc if needed[2] else None, d_kernel, d_recurrent, d_bias)
