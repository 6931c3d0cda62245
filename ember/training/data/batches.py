"""``pack_x_y_sample_weight`` / ``unpack_x_y_sample_weight``: the batch tuples ``fit`` and a
``PyDataset`` exchange (``x``, ``(x,)``, ``(x, y)``, ``(x, y, sample_weight)``).

Example:
    >>> from ember.utils import pack_x_y_sample_weight, unpack_x_y_sample_weight
    >>> unpack_x_y_sample_weight(pack_x_y_sample_weight([1, 2], [3]))
    ([1, 2], [3], None)
"""

from __future__ import annotations

from typing import Any

from ember.training.data.adapter import unpack_batch


def pack_x_y_sample_weight(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    """The batch tuple for ``x`` (and ``y``, ``sample_weight``), as ``fit`` reads it.

    ``x`` alone stays ``x``, except a tuple/list ``x`` (several inputs), which becomes ``(x,)``
    so that it is not read as ``(x, y)``.

    Raises:
        ValueError: ``sample_weight`` without ``y``.
    """
    if y is None:
        if sample_weight is not None:
            raise ValueError("pack_x_y_sample_weight: sample_weight needs y")
        return (x,) if isinstance(x, (tuple, list)) else x
    return (x, y) if sample_weight is None else (x, y, sample_weight)


def unpack_x_y_sample_weight(data: Any) -> tuple:
    """``(x, y, sample_weight)`` of a batch (missing parts are None).

    Raises:
        ValueError: a tuple/list of more than three elements.
    """
    if isinstance(data, (tuple, list)):
        if not 1 <= len(data) <= 3:
            raise ValueError(f"unpack_x_y_sample_weight: expected x, (x,), (x, y) or (x, y, sample_weight), "
                             f"received a {type(data).__name__} of {len(data)} elements")
        return tuple(data) + (None,) * (3 - len(data))
    return unpack_batch(data, "unpack_x_y_sample_weight") if hasattr(data, "shape") or isinstance(data, dict) \
        else (data, None, None)
