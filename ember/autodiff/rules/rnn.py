"""VJP rule of ``ops.nn.lstm`` (the NumPy backend's native whole-sequence LSTM).

The forward op saves nothing. The rule rebuilds the gates from what the tape holds: the
inputs and the output sequence (every step's ``h``, in processing order), so
``h_{t-1}`` of every step is known and all pre-activations come from two batched
matmuls, ``z = x @ kernel + h_prev @ recurrent_kernel + bias``. Only the cell state
needs a pass over time (``c_t = f_t * c_{t-1} + i_t * g_t``, elementwise). Then
backpropagation through time, one ``(batch, 4 * units) @ recurrent_kernel.T`` per step,
with every per-step factor precomputed over all steps at once::

    dh_t += d seq_t;  dc_t += dh_t * o_t * (1 - tanh(c_t)^2)
    dz_t = [dc_t, dc_t, dc_t, dh_t] * P_t     P = [g*i(1-i), c_prev*f(1-f), i(1-g^2), tanh(c)*o(1-o)]
    dc_{t-1} = dc_t * f_t;  dh_{t-1} = dz_t @ recurrent_kernel.T

and the weight and input gradients as single contractions over (time, batch) of ``dz``.

Two implementations of that math: when the cotangents and the recorded values are plain
float32/float64 ndarrays (no outer tape records this backward pass: the common case),
the NumPy backend's kernel (:func:`ember.backends.numpy._rnn.lstm_vjp`, in-place,
step-sized temporaries) computes it; otherwise it is computed with ``ember.ops``, as every
rule is, so nested tapes differentiate it again (and half-precision inputs work). Tests
check the first against torch's autograd and the second against the composite LSTM.
(``ops.nn.gru`` on NumPy is a composite: the tape records its inner ops instead.)
"""

from __future__ import annotations

import numpy as np

from ember import ops
from ember.autodiff.rules import fill_zeros, needs, register
from ember.backends.numpy._rnn import lstm_vjp


def _steps(x, time):
    return [ops.squeeze(part, 0) for part in ops.split(x, time, axis=0)] if time > 1 else [ops.squeeze(x, 0)]


def _shifted(first, steps, time):
    """``[first, steps[0], ..., steps[time - 2]]``: each step's previous value, ``(time, batch, units)``."""
    first = ops.expand_dims(first, 0)
    if time == 1:
        return first
    return ops.concatenate([first, ops.getitem(steps, slice(0, time - 1))], axis=0)


def _processing_order(x, time_major, go_backwards):
    """A sequence array as ``(time, batch, ...)`` in processing order."""
    x = x if time_major else ops.swapaxes(x, 0, 1)
    return ops.flip(x, 0) if go_backwards else x


def _plain_float(values) -> bool:
    """True when every value is a plain float32/float64 ndarray (or None) of one dtype: no outer
    tape records this backward pass, so the NumPy kernel may compute it."""
    dtype = None
    for v in values:
        if v is None:
            continue
        if type(v) is not np.ndarray or v.dtype not in _FAST_DTYPES or (dtype is not None and v.dtype != dtype):
            return False
        dtype = v.dtype
    return True


_FAST_DTYPES = (np.dtype("float32"), np.dtype("float64"))


@register("nn.lstm")
def lstm(g, out, inputs, initial_h, initial_c, kernel, recurrent_kernel, bias=None, *, go_backwards=False,
         time_major=False):
    g_seq, g_h, g_c = g
    sequence, h_last, c_last = out
    arrays = (g_seq, g_h, g_c, sequence, inputs, initial_h, initial_c, kernel, recurrent_kernel, bias)
    if _plain_float(arrays):
        return lstm_vjp(*arrays, go_backwards, time_major, tuple(needs(k) for k in range(6)))
    x = _processing_order(inputs, time_major, go_backwards)
    hs = sequence if time_major else ops.swapaxes(sequence, 0, 1)  # outputs are already in processing order
    time = x.shape[0]
    units = recurrent_kernel.shape[0]
    h_prev = _shifted(initial_h, hs, time)
    z = ops.add(ops.matmul(x, kernel), ops.matmul(h_prev, recurrent_kernel))
    if bias is not None:
        z = ops.add(z, bias)
    z_if, z_g, z_o = ops.split(z, [2 * units, 3 * units], axis=-1)
    s_if, g_gate, o = ops.nn.sigmoid(z_if), ops.nn.tanh(z_g), ops.nn.sigmoid(z_o)
    i, f = ops.split(s_if, 2, axis=-1)
    # The cell states: the one recurrence the rule has to replay.
    ig, f_steps = _steps(ops.multiply(i, g_gate), time), _steps(f, time)
    cells, c = [], initial_c
    for t in range(time):
        c = ops.add(ops.multiply(f_steps[t], c), ig[t])
        cells.append(c)
    cs = ops.stack(cells, axis=0)
    c_prev = _shifted(initial_c, cs, time)
    tanh_c = ops.tanh(cs)
    one_minus = lambda v: ops.subtract(1.0, v)  # noqa: E731
    to_dc = _steps(ops.multiply(o, one_minus(ops.square(tanh_c))), time)  # dc += dh * o (1 - tanh(c)^2)
    factors = _steps(ops.concatenate([
        ops.multiply(ops.multiply(g_gate, i), one_minus(i)),
        ops.multiply(ops.multiply(c_prev, f), one_minus(f)),
        ops.multiply(i, one_minus(ops.square(g_gate))),
        ops.multiply(ops.multiply(tanh_c, o), one_minus(o)),
    ], axis=-1), time)

    dh = fill_zeros(g_h, h_last)
    dc = fill_zeros(g_c, c_last)
    d_seq = None if g_seq is None else _steps(g_seq if time_major else ops.swapaxes(g_seq, 0, 1), time)
    recurrent_t = ops.transpose(recurrent_kernel)
    dz_steps = [None] * time
    for t in range(time - 1, -1, -1):
        if d_seq is not None:
            dh = ops.add(dh, d_seq[t])
        dc = ops.add(dc, ops.multiply(dh, to_dc[t]))
        dz = ops.multiply(ops.concatenate([dc, dc, dc, dh], axis=-1), factors[t])
        dz_steps[t] = dz
        dc = ops.multiply(dc, f_steps[t])
        if t or needs(1):
            dh = ops.matmul(dz, recurrent_t)
    dz = ops.stack(dz_steps, axis=0)  # (time, batch, 4 * units)

    d_inputs = None
    if needs(0):
        d_inputs = ops.matmul(dz, ops.transpose(kernel))
        if go_backwards:
            d_inputs = ops.flip(d_inputs, 0)
        if not time_major:
            d_inputs = ops.swapaxes(d_inputs, 0, 1)
    d_kernel = ops.tensordot(x, dz, axes=([0, 1], [0, 1])) if needs(3) else None
    d_recurrent = ops.tensordot(h_prev, dz, axes=([0, 1], [0, 1])) if needs(4) else None
    d_bias = ops.sum(dz, axis=(0, 1)) if bias is not None and needs(5) else None
    return (d_inputs, dh if needs(1) else None, dc if needs(2) else None, d_kernel, d_recurrent, d_bias)
