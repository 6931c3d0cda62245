"""Composite ops: protocol ops written once with ``ember.ops``, for backends without a native kernel.

Composites here: ``nn.dense`` (a projection and its bias), ``nn.lstm`` and ``nn.gru`` (whole
recurrent sequences), ``nn.dot_product_attention`` (:mod:`ember.ops.extra.attention`; torch and MLX
have fused kernels, NumPy binds the composite), ``nn.layer_norm`` and ``nn.fused_batch_norm``
(:mod:`ember.ops.extra.normalization`; torch fuses both, MLX the layer norm), the ops of
``ember.backends._spec.COMPOSABLE``. torch has native fused kernels for all three, MLX a
native dense and NumPy a native LSTM; MLX gets the LSTM and GRU composites, NumPy the dense and
the GRU.

A backend implements such an op natively (a fused kernel in its namespace module) or
leaves it out; ``ember.ops`` binds what :func:`bound_tables` gives: the backend's own
functions, and the composite of each composable op the backend left out. No backend
imports this module (a backend imports nothing above the op protocol). A composite calls
``ember.ops`` at call time, so it runs on whichever backend is active, and it is in no
backend's op tables, so a recording :class:`~ember.GradientTape` (NumPy, MLX) leaves it
unwrapped and records the ops it calls one by one: its gradient comes from the existing
per-op VJP rules (NumPy) or MLX's replay, and ``mx.compile`` traces through it. It is
marked with ``__ember_composite__`` (:func:`is_composite`). A native version (torch's
``lstm``) is one op with the same signature and semantics.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.ops.extra import composites
    >>> with ember.using_backend("numpy"):
    ...     composites.is_composite(ops.nn.gru), composites.is_composite(ops.nn.lstm)
    (True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import ops
from ember.backends import _spec
from ember.backends._common import check_dense_shapes
from ember.backends._rnn_checks import check_rnn_dtypes, check_rnn_shapes
from ember.ops.extra.attention import dot_product_attention
from ember.ops.extra.normalization import fused_batch_norm, layer_norm


def composite(function: Callable) -> Callable:
    """Mark ``function`` as a composite op (recorded op by op by the tapes)."""
    function.__ember_composite__ = True  # type: ignore[attr-defined]  # a marker on the function object
    return function


def is_composite(function: Any) -> bool:
    """True for a function marked by :func:`composite`."""
    return bool(getattr(function, "__ember_composite__", False))


# ------------------------------------------------------------------- dense projection
@composite
def dense(inputs, kernel, bias=None):
    # (Docstring: _spec.nn.dense's, set below.) The product, then the bias: two recorded ops.
    x, kernel = [a if ops.is_array(a) else ops.convert_to_tensor(a) for a in (inputs, kernel)]
    if bias is not None and not ops.is_array(bias):
        bias = ops.convert_to_tensor(bias)
    check_dense_shapes(ops.shape(x), ops.shape(kernel), None if bias is None else ops.shape(bias))
    y = ops.matmul(x, kernel)
    return y if bias is None else ops.add(y, bias)


# ------------------------------------------------------------------- recurrent layers
def _rnn_operands(op: str, named: list) -> list:
    """The operands as native arrays of one floating dtype (None stays None)."""
    arrays = [None if a is None else a if ops.is_array(a) else ops.convert_to_tensor(a) for _, a in named]
    check_rnn_dtypes(op, [(n, ops.dtype(a)) for (n, _), a in zip(named, arrays) if a is not None])
    return arrays


def _time_steps(x: Any, time: int) -> list:
    """Time-major ``x`` as ``time`` step slices: one split (its gradient is one concatenate),
    not a slice per step."""
    if time == 1:
        return [ops.squeeze(x, 0)]
    return [ops.squeeze(part, 0) for part in ops.split(x, time, axis=0)]


@composite
def lstm(inputs, initial_h, initial_c, kernel, recurrent_kernel, bias=None, *, go_backwards=False,
         time_major=False):
    # (Docstring: _spec.nn.lstm's, set below, as the op tables do for native ops.) One matmul
    # projects every step's input, then each step is one matmul, the gates and the update.

    x, h, c, kernel, recurrent_kernel, bias = _rnn_operands("nn.lstm", [
        ("inputs", inputs), ("initial_h", initial_h), ("initial_c", initial_c), ("kernel", kernel),
        ("recurrent_kernel", recurrent_kernel), ("bias", bias)])
    time, _ = check_rnn_shapes("nn.lstm", 4, ops.shape(x), [("initial_h", ops.shape(h)), ("initial_c", ops.shape(c))],
                               ops.shape(kernel), ops.shape(recurrent_kernel),
                               None if bias is None else ops.shape(bias), time_major)
    if not time_major:
        x = ops.swapaxes(x, 0, 1)
    projected = ops.matmul(x, kernel)  # (time, batch, 4 * units): every step's input term at once
    if bias is not None:
        projected = ops.add(projected, bias)
    steps = _time_steps(projected, time)
    sigmoid, tanh = ops.nn.sigmoid, ops.nn.tanh
    outputs = []
    for t in (range(time - 1, -1, -1) if go_backwards else range(time)):
        z = ops.add(steps[t], ops.matmul(h, recurrent_kernel))
        i, f, g, o = ops.split(z, 4, axis=-1)
        c = ops.add(ops.multiply(sigmoid(f), c), ops.multiply(sigmoid(i), tanh(g)))
        h = ops.multiply(sigmoid(o), tanh(c))
        outputs.append(h)
    return ops.stack(outputs, axis=0 if time_major else 1), h, c


@composite
def gru(inputs, initial_h, kernel, recurrent_kernel, bias=None, *, go_backwards=False, time_major=False):
    # (Docstring from _spec.nn.gru.) Keras's reset_after=True GRU: one matmul projects every
    # step's input, then each step is one matmul, the gates and the update.

    x, h, kernel, recurrent_kernel, bias = _rnn_operands("nn.gru", [
        ("inputs", inputs), ("initial_h", initial_h), ("kernel", kernel), ("recurrent_kernel", recurrent_kernel),
        ("bias", bias)])
    time, _ = check_rnn_shapes("nn.gru", 3, ops.shape(x), [("initial_h", ops.shape(h))], ops.shape(kernel),
                               ops.shape(recurrent_kernel), None if bias is None else ops.shape(bias), time_major,
                               bias_rows=2)
    if not time_major:
        x = ops.swapaxes(x, 0, 1)
    projected = ops.matmul(x, kernel)
    recurrent_bias = None
    if bias is not None:
        projected = ops.add(projected, ops.getitem(bias, 0))
        recurrent_bias = ops.getitem(bias, 1)
    steps = _time_steps(projected, time)
    sigmoid, tanh = ops.nn.sigmoid, ops.nn.tanh
    outputs = []
    for t in (range(time - 1, -1, -1) if go_backwards else range(time)):
        x_z, x_r, x_h = ops.split(steps[t], 3, axis=-1)
        inner = ops.matmul(h, recurrent_kernel)
        if recurrent_bias is not None:
            inner = ops.add(inner, recurrent_bias)
        r_z, r_r, r_h = ops.split(inner, 3, axis=-1)
        z = sigmoid(ops.add(x_z, r_z))
        r = sigmoid(ops.add(x_r, r_r))
        candidate = tanh(ops.add(x_h, ops.multiply(r, r_h)))
        h = ops.add(candidate, ops.multiply(z, ops.subtract(h, candidate)))  # z * h + (1 - z) * candidate
        outputs.append(h)
    return ops.stack(outputs, axis=0 if time_major else 1), h


# ------------------------------------------------------------------- binding
COMPOSITES: dict[str, dict[str, Callable]] = {"nn": {"dense": dense, "lstm": lstm, "gru": gru,
                                                     "dot_product_attention": composite(dot_product_attention),
                                                     "layer_norm": composite(layer_norm),
                                                     "fused_batch_norm": composite(fused_batch_norm)}}
for _namespace, _table in COMPOSITES.items():
    for _name, _function in _table.items():
        _function.__doc__ = getattr(_spec.NAMESPACES[_namespace], _name).__doc__

_bound: dict[str, dict] = {}  # backend name -> its tables with the composites it needs


def bound_tables(backend: Any) -> dict:
    """What ``ember.ops`` binds for ``backend``: ``{namespace: {name: function}}``.

    The backend's own op tables, plus the composite of every ``_spec.COMPOSABLE`` op it
    leaves out (a backend's fused kernel wins over the composite).
    """
    tables = _bound.get(backend.name)
    if tables is None:
        tables = _bound[backend.name] = {namespace: _with_composites(namespace, table)
                                         for namespace, table in backend.op_tables().items()}
    return tables


def _with_composites(namespace: str, table: dict) -> dict:
    composites = COMPOSITES.get(namespace)
    if not composites:
        return table
    completed = {name: table[name] if name in table else composites[name]  # in the protocol's order
                 for name in _spec.op_names(namespace) if name in table or name in composites}
    completed.update(table)  # names beyond the protocol (aliases) keep their place after it
    return completed
