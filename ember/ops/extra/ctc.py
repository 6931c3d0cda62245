"""Connectionist temporal classification: ``ctc_loss`` (forward algorithm) and greedy ``ctc_decode``.

The loss runs the CTC forward recursion (Graves et al., 2006) in log space over the
blank-extended label sequence, vectorised over the batch and the label positions, one
step per time frame, from protocol ops only, so it runs and differentiates on every backend.

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     loss = ops.ctc_loss(ops.convert_to_tensor([[1]]), ops.zeros((1, 2, 2)),
    ...                         ops.convert_to_tensor([1]), ops.convert_to_tensor([2]))
    ...     round(float(ops.to_numpy(loss)[0]), 6)   # 3 of the 4 paths give "1": -log(3/4)
    0.287682
"""

from __future__ import annotations

from typing import Any

from ember import dtypes, ops

__all__ = ["ctc_loss", "ctc_decode"]


def _tensor(x: Any) -> Any:
    return x if ops.is_array(x) else ops.convert_to_tensor(x)


def _logsumexp(*terms: Any) -> Any:
    """Elementwise ``log(sum(exp(terms)))`` that stays -inf (with zero gradients) when every term is -inf."""
    top = terms[0]
    for term in terms[1:]:
        top = ops.maximum(top, term)
    finite = ops.isfinite(top)
    shift = ops.where(finite, top, ops.zeros_like(top))
    total = None
    for term in terms:
        part = ops.exp(ops.subtract(term, shift))
        total = part if total is None else ops.add(total, part)
    safe_total = ops.where(finite, total, ops.ones_like(total))
    return ops.where(finite, ops.add(shift, ops.log(safe_total)), top)


def _shift(x: Any, by: int, fill: Any) -> Any:
    """``x`` moved ``by`` positions right along the last axis, the vacated entries ``fill``."""
    pad = ops.full(ops.shape(x)[:-1] + (by,), fill, dtype=ops.dtype(x))
    return ops.concatenate([pad, ops.take(x, ops.arange(ops.shape(x)[-1] - by), axis=-1)], axis=-1)


def ctc_loss(target, output, target_length, output_length, mask_index=0):
    """CTC negative log-likelihood per batch entry.

    Args:
        target: ``(batch, max_label_length)`` integer labels (entries past ``target_length`` ignored).
        output: ``(batch, max_time, num_classes)`` logits (``log_softmax`` is applied here).
        target_length: ``(batch,)`` label lengths.
        output_length: ``(batch,)`` valid time frames.
        mask_index: the blank class.

    Raises:
        ValueError: inputs of the wrong rank.

    Example:
        >>> from ember import ops
        >>> logits = ops.zeros((1, 1, 2))  # one frame, two classes (0 is the blank)
        >>> labels, lengths = ops.convert_to_tensor([[1]]), ops.convert_to_tensor([1])
        >>> loss = ops.ctc_loss(labels, logits, target_length=lengths, output_length=lengths)
        >>> ops.to_numpy(loss).astype(float).round(4).tolist()
        [0.6931]
    """
    output = _tensor(output)
    if not dtypes.is_float(ops.dtype(output)):
        output = ops.cast(output, dtypes.floatx())
    target = ops.cast(_tensor(target), "int32")
    if ops.ndim(target) != 2 or ops.ndim(output) != 3:
        raise ValueError(f"ctc_loss: target must be (batch, max_label_length) and output (batch, max_time, "
                         f"num_classes), received shapes {ops.shape(target)} and {ops.shape(output)}")
    target_length = ops.cast(_tensor(target_length), "int32")
    output_length = ops.cast(_tensor(output_length), "int32")
    batch, time, _ = ops.shape(output)
    labels = ops.shape(target)[1]
    log_probs = ops.nn.log_softmax(output, axis=-1)
    # Blank-extended labels: blank, l1, blank, l2, ..., blank (length 2L + 1).
    blanks = ops.full((batch, labels + 1), mask_index, dtype="int32")
    interleaved = ops.reshape(ops.stack([ops.take(blanks, ops.arange(labels), axis=1), target], axis=-1),
                              (batch, 2 * labels))
    extended = ops.concatenate([interleaved, ops.take(blanks, ops.arange(1), axis=1)], axis=1)
    positions = 2 * labels + 1
    index = ops.broadcast_to(ops.expand_dims(extended, 1), (batch, time, positions))
    emissions = ops.take_along_axis(log_probs, index, axis=-1)  # (batch, time, positions)
    # A skip from s-2 to s is allowed onto a label that differs from the label two back.
    skip_ok = ops.logical_and(ops.not_equal(extended, mask_index),
                              ops.not_equal(extended, _shift(extended, 2, mask_index)))
    minus_inf = float("-inf")
    steps = [ops.squeeze(step, 1) for step in ops.split(emissions, time, axis=1)] if time > 1 else \
        [ops.squeeze(emissions, 1)]
    start = ops.less(ops.arange(positions), 2)
    alpha = ops.where(start, steps[0], ops.full_like(steps[0], minus_inf))
    for t in range(1, time):
        skip = ops.where(skip_ok, _shift(alpha, 2, minus_inf), ops.full_like(alpha, minus_inf))
        updated = ops.add(_logsumexp(alpha, _shift(alpha, 1, minus_inf), skip), steps[t])
        alpha = ops.where(ops.expand_dims(ops.less(t, output_length), 1), updated, alpha)
    last = ops.expand_dims(ops.multiply(target_length, 2), 1)  # index 2L: the final blank
    final_blank = ops.squeeze(ops.take_along_axis(alpha, last, axis=1), 1)
    final_label = ops.squeeze(ops.take_along_axis(alpha, ops.maximum(ops.subtract(last, 1), 0), axis=1), 1)
    final_label = ops.where(ops.greater(target_length, 0), final_label, ops.full_like(final_label, minus_inf))
    return ops.negative(_logsumexp(final_blank, final_label))


def ctc_decode(inputs, sequence_lengths, strategy="greedy", beam_width=100, top_paths=1, merge_repeated=True,
               mask_index=0):
    """Greedy CTC decoding, Keras's output format: ``(decoded, scores)``.

    ``decoded`` is ``(1, batch, max_time)`` int32 with the labels first and -1 after;
    ``scores`` is ``(batch, 1)``: minus the sum of the per-frame maxima of ``inputs``.

    Raises:
        NotImplementedError: ``strategy="beam_search"`` (only greedy decoding is implemented in
            Ember; use ``strategy="greedy"``).
        ValueError: an unknown strategy.

    Example:
        >>> from ember import ops
        >>> frames = ops.one_hot(ops.convert_to_tensor([[1, 1, 0, 2]]), 3)  # blank 0 separates labels
        >>> decoded, scores = ops.ctc_decode(frames, ops.convert_to_tensor([4]))
        >>> ops.to_numpy(decoded[0]).tolist(), ops.to_numpy(scores).tolist()
        ([[1, 2, -1, -1]], [[-4.0]])
    """
    if strategy == "beam_search":
        raise NotImplementedError("ctc_decode: strategy='beam_search' is not implemented in Ember on any backend; "
                                  "use strategy='greedy'")
    if strategy != "greedy":
        raise ValueError(f"ctc_decode: strategy must be 'greedy' or 'beam_search', received {strategy!r}")
    inputs = _tensor(inputs)
    lengths = ops.cast(_tensor(sequence_lengths), "int32")
    batch, time, _ = ops.shape(inputs)
    indices = ops.cast(ops.argmax(inputs, axis=-1), "int32")
    scores = ops.max(inputs, axis=-1)
    beyond = ops.greater_equal(ops.expand_dims(ops.arange(time), 0), ops.expand_dims(lengths, 1))
    indices = ops.where(beyond, mask_index, indices)
    scores = ops.where(beyond, ops.zeros_like(scores), scores)
    if merge_repeated and time > 1:
        repeat = ops.equal(indices, _shift(indices, 1, -2))
        indices = ops.where(repeat, mask_index, indices)
    invalid = ops.equal(indices, mask_index)
    indices = ops.where(invalid, -1, indices)
    order = ops.where(invalid, time, ops.broadcast_to(ops.expand_dims(ops.arange(time), 0), (batch, time)))
    order = ops.argsort(order, axis=-1)  # stable on every backend for distinct keys; invalid ones tie at the end
    decoded = ops.take_along_axis(indices, order, axis=-1)
    del beam_width, top_paths  # only meaningful for beam search, refused above
    return ops.expand_dims(decoded, 0), ops.expand_dims(ops.negative(ops.sum(scores, axis=1)), 1)
