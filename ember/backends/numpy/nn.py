"""NumPy backend, ``ember.ops.nn``: activations, softmax, moments, convolution, pooling,
recurrent sequences (``lstm`` native in :mod:`._rnn`; no ``gru``: ``ember.ops`` binds the
composite of :mod:`ember.ops.extra.composites`).

Activations on integer or bool inputs compute in ``floatx()`` (``relu``/``relu6``
keep integer dtypes, as they are exact there). float16/bfloat16 inputs compute in
float32 and round back once: ml_dtypes promotes ``bfloat16 * python_float`` to
float32, and float32 keeps softmax/softplus accurate.
"""

from __future__ import annotations

import math

import numpy as np

from ember.backends.numpy import _special
from ember.backends.numpy._base import BOOL, F64, ND, axes_arg, float_compute, out, to_native
from ember.backends.numpy._conv import avg_pool, conv, conv_transpose, max_pool  # noqa: F401  (ops)
from ember.backends.numpy._rnn import lstm  # noqa: F401  (op; its VJP rule is in ember.autodiff.rules.rnn)

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_GELU_C = math.sqrt(2.0 / math.pi)


def _done(r, final):
    r = out(r)
    return r if final is None else r.astype(final)


def relu(x):
    if type(x) is not ND:
        x = to_native(x)
    if x.dtype == BOOL:  # max(bool, 0) is int32 by Ember's weak-scalar rule
        x = x.astype(np.int32)
    return out(np.maximum(x, 0))


def relu6(x):
    if type(x) is not ND:
        x = to_native(x)
    if x.dtype == BOOL:
        x = x.astype(np.int32)
    return out(np.minimum(np.maximum(x, 0), 6))


def leaky_relu(x, negative_slope=0.2):
    x, final = float_compute(x)
    return _done(np.where(x > 0, x, x * negative_slope), final)


def _elu(x, alpha):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def elu(x, alpha=1.0):
    x, final = float_compute(x)
    return _done(_elu(x, alpha), final)


def selu(x):
    x, final = float_compute(x)
    return _done(_SELU_SCALE * _elu(x, _SELU_ALPHA), final)


def gelu(x, approximate=True):
    x, final = float_compute(x)
    if approximate:
        # 0.5 * (1 + tanh(z)) == sigmoid(2 z), which has no cancellation for negative z.
        return _done(x * _sigmoid(2.0 * _GELU_C * (x + 0.044715 * (x * x * x))), final)
    wide = x.astype(F64)
    r = 0.5 * wide * (1.0 + _special.erf(wide / math.sqrt(2.0)))
    return _done(r.astype(x.dtype, copy=False), final)


def _sigmoid(x):
    # exp(-|x|) never overflows; the two branches are 1/(1+e) and e/(1+e).
    e = np.exp(-np.abs(x))
    r = 1.0 / (1.0 + e)
    return np.where(x >= 0, r, e * r)


def sigmoid(x):
    x, final = float_compute(x)
    return _done(_sigmoid(x), final)


def silu(x):
    x, final = float_compute(x)
    return _done(x * _sigmoid(x), final)


def hard_sigmoid(x):
    x, final = float_compute(x)
    return _done(np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0, final)


def softplus(x):
    x, final = float_compute(x)
    return _done(np.logaddexp(x, 0.0), final)


def softsign(x):
    x, final = float_compute(x)
    return _done(x / (1.0 + np.abs(x)), final)


def tanh(x):
    x, final = float_compute(x)
    return _done(np.tanh(x), final)


def lecun_tanh(x):
    x, final = float_compute(x)
    return _done(1.7159 * np.tanh(0.666 * x), final)


def softmax(x, axis=-1):
    x, final = float_compute(x)
    axes = axes_arg(axis, x.ndim)
    with np.errstate(over="ignore"):  # x - max may overflow to -inf for huge inputs: exp gives 0
        e = np.exp(x - np.max(x, axis=axes, keepdims=True))
    return _done(e / np.sum(e, axis=axes, keepdims=True), final)


def log_softmax(x, axis=-1):
    x, final = float_compute(x)
    axes = axes_arg(axis, x.ndim)
    with np.errstate(over="ignore"):
        shifted = x - np.max(x, axis=axes, keepdims=True)
    return _done(shifted - np.log(np.sum(np.exp(shifted), axis=axes, keepdims=True)), final)


def moments(x, axes, keepdims=False):
    x, final = float_compute(x)
    axes = axes_arg(axes, x.ndim, "moments: axes: axis")
    mean = np.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    variance = np.mean(centered * centered, axis=axes, keepdims=keepdims)
    if not keepdims:
        mean = np.squeeze(mean, axis=axes) if axes is not None else mean.reshape(())
    return _done(mean, final), _done(variance, final)
