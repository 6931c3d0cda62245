"""Every sparse class label and binary label checked: at once for array data, else batch by batch
without a sync per step.

A label outside ``[0, classes)`` in a sparse loss or metric (``sparse_categorical_crossentropy``,
``sparse_categorical_accuracy``, ``sparse_top_k_categorical_accuracy``) would otherwise train or
score as if that sample did not exist; a label outside ``[0, 1]`` in a binary loss
(``binary_crossentropy``, ``binary_focal_crossentropy``: soft labels inside the interval are valid)
would train on a meaningless target. Both are checked the same way. For array data, ``fit``,
``evaluate`` and validation first check every label at once (:meth:`SparseLabelCheck.vouch`: the
minimum and the maximum of the whole ``y``, one host read per call): when all are in range, no batch
is checked again (nothing per step). Otherwise (a label out of range, or data from a generator, a
Dataset or a loader) they run one reduction per batch over its labels (``any(label < 0 or label >=
classes)``, ignoring ``ignore_class``), so the error names the batch. Where reading it costs no
extra sync (NumPy, torch on the CPU, MLX whose step evaluates anyway) the flag is read at once and a
bad batch raises before its step; on a CUDA/MPS device the flag and the first offending value stay
on the device (:class:`~ember.training.deferred_reads.DeferredReads`) and are read at the next point
where the loop synchronises for its logs anyway (a callback or the progress bar reading a batch's
logs, the end of an epoch or evaluation), so the error may come some steps late but no step waits
for the host.

The error names the loop, the epoch and batch (0-based) and the offending value.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(3)])
    >>> model.compile(optimizer="sgd", loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True))
    >>> x, y = np.zeros((4, 2), "float32"), np.array([0, 1, 2, 7])
    >>> try:
    ...     model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
    ... except ValueError as error:
    ...     message = str(error)
    >>> message[:64]
    'fit: epoch 0, batch 1 (0-based): sparse_categorical_crossentropy'
    >>> message[64:]
    ': class indices must be in [0, 3) for y_pred with 3 classes, received 7'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import backends, ops
from ember.training.compile_utils import flatten_outputs
from ember.training.deferred_reads import DeferredReads
from ember.training.losses.focal import binary_focal_crossentropy
from ember.training.losses.probabilistic import binary_crossentropy, sparse_categorical_crossentropy
from ember.training.metrics.accuracy import sparse_categorical_accuracy, sparse_top_k_categorical_accuracy

_SPARSE_FUNCTIONS = (sparse_categorical_crossentropy, sparse_categorical_accuracy, sparse_top_k_categorical_accuracy)
# Binary losses: their labels are probabilities of the positive class, in [0, 1] (soft labels included).
_BINARY_FUNCTIONS = (binary_crossentropy, binary_focal_crossentropy)
_BINARY_NAMES = frozenset(fn.__name__ for fn in _BINARY_FUNCTIONS)


def _sparse_kind(obj: Any) -> tuple[str, int | None] | None:
    """``(function name, ignore_class)`` when ``obj`` (a loss or metric) reads sparse class labels."""
    fn = getattr(obj, "fn", None)
    if fn in _BINARY_FUNCTIONS:
        return fn.__name__, None
    if fn not in _SPARSE_FUNCTIONS:
        return None
    kwargs = getattr(obj, "_fn_kwargs", None) or {}
    return fn.__name__, kwargs.get("ignore_class")


def sparse_label_outputs(compile_loss: Any, compile_metrics: Any) -> dict[int, tuple[str, int | None]]:
    """``{output index: (owner name, ignore_class)}`` for the outputs whose targets are class indices."""
    found: dict[int, tuple[str, int | None]] = {}
    for entry in compile_loss.entries:
        kind = _sparse_kind(entry.fn)
        if kind is not None:
            found.setdefault(entry.index, kind)
    for entry in compile_metrics.entries:
        kind = _sparse_kind(entry.metric)
        if kind is not None:
            found.setdefault(entry.index, kind)
    return found


def reads_without_sync(array: Any) -> bool:
    """Whether reading ``array`` on the host costs no extra wait: NumPy; torch on the CPU; MLX (its
    fit step already evaluates its results before returning). A CUDA/MPS tensor would wait for
    the queued kernels."""
    if isinstance(array, np.ndarray) or np.isscalar(array):
        return True
    name = backends.get_backend()
    return name == "mlx" or (name == "torch" and str(ops.get_device(array)).split(":")[0] == "cpu")


class SparseLabelCheck:
    """Per-batch range check of the sparse labels of one ``fit``/``evaluate`` (module docstring).

    Args:
        outputs: from :func:`sparse_label_outputs`.
        output_names: the model's output names (to split ``y``).
        classes: ``{output index: number of classes}`` (the model's output's last axis).
        caller: ``"fit"``, ``"evaluate"`` or ``"fit (validation)"``, for the message.
    """

    def __init__(self, outputs: dict, output_names: list[str], classes: dict[int, int | np.integer],
                 caller: str) -> None:
        self.outputs = {i: spec for i, spec in outputs.items() if spec[0] in _BINARY_NAMES or classes.get(i)}
        self.output_names = output_names
        self.classes = classes
        self.caller = caller
        # Per output (a binary loss's culprit is a [min, max] pair, a class loss's one index): tag
        # (epoch, step); columns: the flag and the culprit.
        self._deferred = {index: DeferredReads(columns=2) for index in self.outputs}
        self.vouched = False  # every label of the data is known to be in range: no per-batch check

    @classmethod
    def for_trainer(cls, trainer: Any, output_shapes: list | None, caller: str) -> SparseLabelCheck | None:
        """The check for ``trainer``'s losses and metrics, or None when no output has sparse labels
        (or the class counts are unknown)."""
        outputs = sparse_label_outputs(trainer.compile_loss, trainer.compile_metrics)
        if not outputs or output_shapes is None:
            return None
        classes = {i: shape[-1] for i, shape in enumerate(output_shapes)
                   if shape is not None and len(shape) and isinstance(shape[-1], (int, np.integer))}
        check = cls(outputs, trainer.output_names, classes, caller)
        return check if check.outputs else None

    def vouch(self, y: Any) -> bool:
        """Check every label of ``y``, the targets of all the batches to come, at once: when each is in
        ``[0, classes)`` the per-batch checks are skipped from then on (:attr:`vouched`). Two
        reductions and one host read for the whole data; anything else (a label out of range,
        one equal to ``ignore_class``, NaN, a ``y`` of another structure) leaves the per-batch
        checks on, which find the batch and raise. Returns :attr:`vouched`."""
        if y is None or self.vouched:
            return self.vouched
        try:
            flat = flatten_outputs(y, self.output_names, "y")
        except (TypeError, ValueError):  # the per-batch checks report what is wrong with y
            return False
        for index in self.outputs:
            labels = flat[index]
            if labels is None or ops.size(labels) == 0 or self._always_valid(labels, index):
                continue
            low, high = ops.to_numpy(ops.stack([ops.min(labels), ops.max(labels)])).tolist()
            if self._binary(index):
                if not (low >= 0 and high <= 1):  # False for NaN too
                    return False
            elif not (low >= 0 and high < self.classes[index]):  # False for NaN too
                return False
        self.vouched = True
        return True

    def __call__(self, epoch: int | None, step: int, y: Any) -> None:
        """Check one batch's targets ``y`` (raises now on the CPU, at the next sync elsewhere)."""
        if y is None or self.vouched:
            return
        flat = flatten_outputs(y, self.output_names, "y")
        for index in self.outputs:
            labels = flat[index]
            if labels is None or ops.size(labels) == 0 or self._always_valid(labels, index):
                continue
            outside = self._out_of_range(labels, index)
            if reads_without_sync(labels):
                if bool(ops.to_numpy(ops.any(outside))):
                    self._raise(epoch, step, index, self._culprit(labels, outside, index))
            else:
                self._deferred[index].add((epoch, step), ops.any(outside), self._culprit(labels, outside, index))

    def _binary(self, index: int) -> bool:
        return self.outputs[index][0] in _BINARY_NAMES

    def _always_valid(self, labels: Any, index: int) -> bool:
        """Boolean labels of a binary loss: in {0, 1} by their type, nothing to check."""
        return self._binary(index) and ops.dtype(labels) == "bool"

    def _culprit(self, labels: Any, outside: Any, index: int) -> Any:
        """What the error reports (on the device, no host read): the first bad class index, or the
        ``[min, max]`` range of a binary loss's labels."""
        if self._binary(index):
            return ops.stack([ops.min(labels), ops.max(labels)])
        return _first_marked(labels, outside)

    def _out_of_range(self, labels: Any, index: int) -> Any:
        if self._binary(index):
            return ops.logical_or(ops.less(labels, 0), ops.greater(labels, 1))
        classes = self.classes[index]
        ignore = self.outputs[index][1]
        outside = ops.logical_or(ops.less(labels, 0), ops.greater_equal(labels, classes))
        if ignore is not None:
            outside = ops.logical_and(outside, ops.not_equal(labels, ignore))
        return outside

    def flush(self) -> None:
        """Read the flags kept on the device (one transfer); raise for the first bad batch."""
        bad = [((epoch, step), index, value) for index, record in self._deferred.items()
               for (epoch, step), (flag, value) in record.read() if bool(flag)]
        if bad:  # the first bad batch (then the first output) is the one reported
            (epoch, step), index, value = min(bad, key=lambda entry: (entry[0][0] or 0, entry[0][1], entry[1]))
            self._raise(epoch, step, index, value)

    def _raise(self, epoch: int | None, step: int, index: int, value: Any) -> None:
        for record in self._deferred.values():
            record.clear()
        owner, _ = self.outputs[index]
        where = f"batch {step} (0-based)" if epoch is None else f"epoch {epoch}, batch {step} (0-based)"
        output = f" (output {self.output_names[index]!r})" if len(self.output_names) > 1 else ""
        if self._binary(index):
            low, high = np.asarray(value if isinstance(value, np.ndarray) else ops.to_numpy(value)).reshape(2).tolist()
            raise ValueError(f"{self.caller}: {where}{output}: {owner}: labels must be in [0, 1] (the probability of "
                             f"the positive class), received labels in [{low!r}, {high!r}]. Use 0/1 (or soft) labels, "
                             "or for more than two classes a categorical loss such as "
                             "sparse_categorical_crossentropy")
        classes = self.classes[index]
        value = np.asarray(value if isinstance(value, np.generic) else ops.to_numpy(value)).reshape(())
        raise ValueError(f"{self.caller}: {where}{output}: {owner}: class indices must be in [0, {classes}) for "
                         f"y_pred with {classes} classes, received {value.item()!r}")


def _first_marked(labels: Any, marked: Any) -> Any:
    """The first label where ``marked`` is True (0-d, computed on the device: no host read)."""
    flat_marked = ops.reshape(marked, (-1,))
    first = ops.argmax(ops.cast(flat_marked, "float32"))  # float: argmax of every backend and device
    return ops.take(ops.reshape(labels, (-1,)), first)
