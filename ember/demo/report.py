"""Comparing a loaded checkpoint's predictions with the reference, and the demo's tables.

Example:
    >>> import numpy as np
    >>> from ember.demo.report import compare_predictions
    >>> compare_predictions(np.eye(3), np.eye(3)).ok
    True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

# The same float32 weights on different backends run different matmul kernels (NumPy's BLAS,
# torch's, MLX's), which sum in different orders: probabilities agree to ~1e-7, not bit for bit.
# 1e-5 is two orders of magnitude above that and far below anything a wrong weight would cause.
PREDICTION_ATOL = 1e-5


@dataclasses.dataclass
class Agreement:
    """How a loaded checkpoint's predictions compare with the reference predictions."""

    max_abs_diff: float
    argmax_agreement: float
    ok: bool


def compare_predictions(reference: np.ndarray, predicted: np.ndarray, atol: float = PREDICTION_ATOL) -> Agreement:
    """Max |difference| of probabilities and the share of equal argmax; ok when both agree fully.

    Example:
        >>> a = np.array([[0.9, 0.1], [0.4, 0.6]])
        >>> agreement = compare_predictions(a, a + 1e-7)
        >>> round(agreement.max_abs_diff, 12), agreement.argmax_agreement, agreement.ok
        (1e-07, 1.0, True)
        >>> compare_predictions(a, a[:, ::-1]).ok
        False
    """
    reference, predicted = np.asarray(reference), np.asarray(predicted)
    if reference.shape != predicted.shape:
        return Agreement(float("inf"), 0.0, False)
    diff = float(np.max(np.abs(reference.astype(np.float64) - predicted.astype(np.float64))))
    same = float(np.mean(np.argmax(reference, axis=-1) == np.argmax(predicted, axis=-1)))
    return Agreement(diff, same, bool(diff <= atol and same == 1.0))


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table: text columns left-aligned, numbers right-aligned.

    Example:
        >>> print(format_table(["backend", "epochs"], [["numpy", 10]]))
        backend  epochs
        numpy        10
    """
    cells = [[str(value) for value in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
    numeric = [bool(rows) and all(isinstance(row[i], (int, float)) or _is_number(row[i]) for row in rows)
               for i in range(len(headers))]
    lines = ["  ".join(h.rjust(w) if n else h.ljust(w) for h, w, n in zip(headers, widths, numeric)).rstrip()]
    for row in cells:
        lines.append("  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(row, widths, numeric)).rstrip())
    return "\n".join(lines)


def _is_number(text: Any) -> bool:
    try:
        float(str(text).rstrip("%"))
    except ValueError:
        return False
    return True
