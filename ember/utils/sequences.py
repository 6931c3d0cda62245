"""``pad_sequences``: a list of variable-length sequences as one padded 2-D (or N-D) array.

Example:
    >>> from ember.utils import pad_sequences
    >>> pad_sequences([[1, 2, 3], [4]], maxlen=2).tolist()
    [[2, 3], [0, 4]]
    >>> pad_sequences([[1, 2, 3], [4]], padding="post", truncating="post").tolist()
    [[1, 2, 3], [4, 0, 0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

_SIDES = ("pre", "post")


def pad_sequences(sequences: Any, maxlen: int | None = None, dtype: Any = "int32", padding: str = "pre",
                  truncating: str = "pre", value: Any = 0.0) -> np.ndarray:
    """Pad (or truncate) each sequence to ``maxlen`` steps, as Keras does.

    Args:
        sequences: an iterable of sequences (each a list/array of steps; a step may itself be an array).
        maxlen: the output length; the longest sequence when None.
        dtype: dtype of the output (NumPy name; strings work with ``dtype=object`` or ``"str"``).
        padding: ``"pre"`` or ``"post"``: where the padding goes.
        truncating: ``"pre"`` or ``"post"``: which end of a too-long sequence is cut.
        value: the padding value.

    Returns:
        NumPy array of shape ``(len(sequences), maxlen) + step_shape``.

    Raises:
        ValueError: a bad ``padding``/``truncating``/``maxlen``, sequences whose steps differ in
            shape, or a string ``value`` for a numeric ``dtype``.
    """
    for name, side in (("padding", padding), ("truncating", truncating)):
        if side not in _SIDES:
            raise ValueError(f"pad_sequences: {name} must be 'pre' or 'post', received {side!r}")
    if not hasattr(sequences, "__iter__"):
        raise TypeError(f"pad_sequences: sequences must be an iterable of sequences, received "
                        f"{type(sequences).__name__}")
    rows = []
    for index, sequence in enumerate(sequences):
        if not hasattr(sequence, "__len__"):
            raise ValueError(f"pad_sequences: sequences[{index}] is not a sequence: {sequence!r}")
        rows.append(np.asarray(sequence) if len(sequence) else None)
    if maxlen is None:
        maxlen = max((len(r) for r in rows if r is not None), default=0)
    elif isinstance(maxlen, bool) or not isinstance(maxlen, (int, np.integer)) or maxlen < 0:
        raise ValueError(f"pad_sequences: maxlen must be a non-negative int or None, received {maxlen!r}")
    step_shapes = {r.shape[1:] for r in rows if r is not None}
    if len(step_shapes) > 1:
        raise ValueError(f"pad_sequences: the steps of the sequences differ in shape: {sorted(step_shapes)}")
    step_shape = step_shapes.pop() if step_shapes else ()
    numeric = np.issubdtype(np.dtype(dtype), np.number)
    if isinstance(value, str) and numeric:
        raise ValueError(f"pad_sequences: dtype {dtype!r} cannot hold the padding value {value!r}; "
                         "use dtype=object for text")
    output = np.full((len(rows), maxlen) + step_shape, value, dtype=dtype)
    for i, row in enumerate(rows):
        if row is None or maxlen == 0:
            continue
        kept = row[-maxlen:] if truncating == "pre" else row[:maxlen]
        if padding == "post":
            output[i, :len(kept)] = kept
        else:
            output[i, maxlen - len(kept):] = kept
    return output
