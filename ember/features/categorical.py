"""``to_categorical`` and ``normalize``: Keras's label and vector helpers.

Host inputs (lists, NumPy arrays) give NumPy arrays, as in Keras; a native array of the
active backend (or an ``ember.Tensor``) gives a native array of that backend.

Example:
    >>> from ember.utils import to_categorical
    >>> to_categorical([0, 2, 1]).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import ops


def _is_backend_array(x: Any) -> bool:
    return getattr(type(x), "__ember_tensor__", False) or (ops.is_array(x) and not isinstance(x, np.ndarray))


def _class_indices(x: Any, num_classes: int | None) -> tuple[np.ndarray, int]:
    labels = np.asarray(x)
    integral = labels.dtype.kind in "iub" or (
        labels.dtype.kind == "f" and np.all(np.isfinite(labels)) and np.all(labels == np.round(labels)))
    if not integral:
        raise ValueError(f"to_categorical: x must hold integer class indices, received dtype {labels.dtype} "
                         f"with values like {labels.reshape(-1)[:3].tolist()}")
    labels = labels.astype(np.int64)
    if labels.ndim > 1 and labels.shape[-1] == 1:
        labels = labels[..., 0]
    if num_classes is None:
        num_classes = int(labels.max()) + 1 if labels.size else 0
    elif isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) or num_classes < 1:
        raise ValueError(f"to_categorical: num_classes must be a positive int, received {num_classes!r}")
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"to_categorical: class indices must lie in [0, {num_classes}), received values in "
                         f"[{labels.min()}, {labels.max()}]")
    return labels, int(num_classes)


def to_categorical(x: Any, num_classes: int | None = None) -> Any:
    """One-hot rows for integer class indices (a trailing axis of size 1 is dropped first).

    Args:
        x: class indices, shape ``(n,)``, ``(n, 1)`` or any ``(..., )``.
        num_classes: number of classes; ``max(x) + 1`` when None.

    Returns:
        float32 array of shape ``x.shape + (num_classes,)``: NumPy for host inputs, a native
        array of the active backend for backend arrays.

    Raises:
        ValueError: non-integer values, indices outside ``[0, num_classes)``, or a bad ``num_classes``.

    Example:
        >>> to_categorical([[1], [0]], num_classes=3).tolist()
        [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    """
    backend_input = _is_backend_array(x)
    host = ops.to_numpy(x) if backend_input else x
    labels, num_classes = _class_indices(host, num_classes)
    categorical = np.eye(num_classes, dtype=np.float32)[labels]
    return ops.convert_to_tensor(categorical) if backend_input else categorical


def normalize(x: Any, axis: int = -1, order: int = 2) -> Any:
    """``x`` divided by its ``order``-norm along ``axis`` (zero vectors stay zero).

    Example:
        >>> normalize([[3.0, 4.0], [0.0, 0.0]]).tolist()
        [[0.6, 0.8], [0.0, 0.0]]
    """
    backend_input = _is_backend_array(x)
    host = np.asarray(ops.to_numpy(x) if backend_input else x)
    if host.dtype.kind not in "fc":
        host = host.astype(np.float32)
    norm = np.linalg.norm(host, ord=order, axis=axis, keepdims=True)
    result = host / np.where(norm == 0, 1, norm)
    return ops.convert_to_tensor(result) if backend_input else result
