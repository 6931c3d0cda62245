"""Argument checks of the fused recurrent ops (``nn.lstm``, ``nn.gru``), shared by every backend.

Native kernels (torch, NumPy's LSTM) and the composites of :mod:`ember.ops.extra.composites` run
the same checks, so their errors read the same on every backend.

Example:
    >>> from ember.backends._rnn_checks import check_rnn_shapes
    >>> check_rnn_shapes("nn.gru", 3, (2, 5, 4), [("initial_h", (2, 8))], (4, 24), (8, 24), None,
    ...                  time_major=False)
    (5, 8)
"""

from __future__ import annotations

from ember import dtypes


def check_rnn_shapes(op: str, gates: int, x: tuple, states: list, kernel: tuple, recurrent: tuple,
                     bias: tuple | None, time_major: bool, bias_rows: int | None = None) -> tuple[int, int]:
    """``(time, units)`` of a fused recurrent op's operands (``nn.lstm``: 4 gates, ``nn.gru``: 3);
    a ValueError naming ``op`` and the argument otherwise.

    ``states`` is ``[(argument, shape)]``; the bias must be ``(gates * units,)``, or
    ``(bias_rows, gates * units)`` when ``bias_rows`` is given. Shared by every backend so
    the errors read the same.
    """
    layout = "(time, batch, features)" if time_major else "(batch, time, features)"
    if len(x) != 3:
        raise ValueError(f"{op}: inputs must be {layout}, received shape {x}")
    time, batch = (x[0], x[1]) if time_major else (x[1], x[0])
    features = x[2]
    if len(kernel) != 2 or kernel[0] != features or kernel[1] % gates:
        raise ValueError(f"{op}: kernel must have shape (features, {gates} * units) with features={features} "
                         f"(the last axis of inputs), received shape {kernel}")
    units = kernel[1] // gates
    if tuple(recurrent) != (units, gates * units):
        raise ValueError(f"{op}: recurrent_kernel must have shape {(units, gates * units)}, received {recurrent}")
    expected = (gates * units,) if bias_rows is None else (bias_rows, gates * units)
    if bias is not None and tuple(bias) != expected:
        raise ValueError(f"{op}: bias must have shape {expected}, received {bias}")
    for name, shape in states:
        if tuple(shape) != (batch, units):
            raise ValueError(f"{op}: {name} must have shape (batch, units) = {(batch, units)}, received {shape}")
    if time == 0:
        raise ValueError(f"{op}: inputs need at least one time step, received shape {x}")
    return time, units


def check_rnn_dtypes(op: str, names: list) -> str:
    """The one floating dtype of a fused recurrent op's operands (``[(argument, dtype name)]``);
    TypeError naming ``op`` otherwise."""
    first = names[0][1]
    for _argument, name in names:
        if name != first or not dtypes.is_float(name):
            found = ", ".join(f"{a}={n}" for a, n in names)
            raise TypeError(f"{op}: every array must have the same floating dtype, received {found}")
    return first
