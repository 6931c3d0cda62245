"""Random draws that do not depend on the world size: draw for the global batch, keep my rows.

Under data parallelism each rank runs the model on its rows ``[offset, offset + count)`` of
a global batch of ``total`` rows. The training step declares that window with
:func:`global_batch`; random layers (Dropout and friends) draw through :func:`draw_rows` or
:func:`apply_rows`, which draw for all ``total`` rows with the step's seed and keep this
rank's slice. A sample's dropout mask is then the one a single process would draw, whatever
the number of processes. Outside a window both helpers draw exactly as before.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import ops
    >>> ember.set_backend("numpy")
    >>> full = ops.random.uniform((4, 2), seed=3)
    >>> with global_batch(offset=2, total=4):
    ...     mine = draw_rows(lambda shape: ops.random.uniform(shape, seed=3), (2, 2))
    >>> bool(np.array_equal(mine, full[2:]))
    True
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeGuard

from ember import ops

_local = threading.local()


def current() -> tuple[int, int] | None:
    """``(offset, total)`` of the active window, or None."""
    return getattr(_local, "window", None)


@contextlib.contextmanager
def global_batch(offset: int, total: int) -> Iterator[None]:
    """Declare that the batch being processed is rows ``[offset, ...)`` of ``total`` global rows."""
    previous = current()
    _local.window = (int(offset), int(total))
    try:
        yield
    finally:
        _local.window = previous


def _fits(window: tuple[int, int] | None, rows: int) -> TypeGuard[tuple[int, int]]:
    """Whether a window is set and this rank's ``rows`` fit in it."""
    return window is not None and window[0] + rows <= window[1] and rows > 0


def draw_rows(draw: Callable[[tuple], Any], shape: tuple) -> Any:
    """``draw(shape)``, drawn for the global batch and sliced to this rank's rows (axis 0)."""
    shape = tuple(shape)
    window = current()
    if not shape or not _fits(window, shape[0]):
        return draw(shape)
    offset, total = window
    full = draw((total,) + shape[1:])
    return full[offset:offset + shape[0]]


def apply_rows(fn: Callable[[Any], Any], x: Any) -> Any:
    """``fn(x)`` for an element-wise random ``fn``, computed as on the global batch (``x`` padded with
    zeros to ``total`` rows) and sliced back: bit-identical to the single-process rows."""
    shape = tuple(ops.shape(x))
    window = current()
    if not shape or not _fits(window, shape[0]):
        return fn(x)
    offset, total = window
    rows = shape[0]
    parts = []
    if offset:
        parts.append(ops.zeros((offset,) + shape[1:], dtype=ops.dtype(x)))
    parts.append(x)
    if total - offset - rows:
        parts.append(ops.zeros((total - offset - rows,) + shape[1:], dtype=ops.dtype(x)))
    padded = ops.concatenate(parts, axis=0) if len(parts) > 1 else x
    return fn(padded)[offset:offset + rows]
