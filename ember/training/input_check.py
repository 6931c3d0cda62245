"""Checks of the inputs of each batch before a step: no empty batch, every Embedding index in range.

An empty batch would otherwise take an optimizer step (a loss of 0 or NaN moving the weights
through the optimizer's momentum) or fail deep inside a backend; ``fit``/``evaluate`` and the
``*_on_batch`` methods refuse it (Keras raises too) before any state changes.

An integer model input that feeds an ``Embedding`` directly must hold indices in
``[0, input_dim)``: the layer checks them itself when called eagerly, but not inside a compiled
step (``mx.compile`` cannot raise on data, and MLX's ``take`` then reads out of bounds: garbage,
or a segfault). So ``fit``, ``evaluate`` and ``predict`` check them before the steps: array data
once for all (the minimum and maximum of each such input, one host read per call), other data
(generators, Datasets, loaders) batch by batch (one read per batch: an out-of-range lookup must
never reach the step, so the read cannot be deferred as the label checks are).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import optree

from ember import ops
from ember.layers.core.embedding import Embedding
from ember.training.data.convert import is_array_like


def batch_rows(x: Any) -> tuple[int, tuple] | None:
    """``(rows, shape)`` of the first array of ``x`` (a batch's inputs), or None when it holds none."""
    for leaf in optree.tree_leaves(x, none_is_leaf=False):
        if is_array_like(leaf) or hasattr(leaf, "shape"):
            shape = tuple(ops.shape(leaf))
            if shape:
                return int(shape[0]), shape
    return None


def refuse_empty(caller: str, x: Any, where: str = "") -> None:
    """A ValueError when the batch ``x`` has 0 rows (no step may be taken on it)."""
    rows = batch_rows(x)
    if rows is not None and rows[0] == 0:
        at = f" {where}" if where else ""
        raise ValueError(f"{caller}:{at} received an empty batch (x of shape {rows[1]}); every batch needs at least "
                         "one sample. Drop empty batches from the data (e.g. filter the generator or Dataset)")


def _one_input(model: Any) -> tuple[str, Any] | None:
    """``(name, shape)`` of a model's only input; None when it has several or they are unknown (a subclass)."""
    try:
        inputs = model.inputs
    except AttributeError:  # no graph: a Sequential not yet built still has one input; a subclass is unknown
        return ("input", None) if hasattr(model, "_input_layer") else None
    if len(inputs) != 1:
        return None
    return str(inputs[0].name), tuple(inputs[0].shape)


def refuse_several_arrays(model: Any, x: Any, caller: str) -> None:
    """A TypeError when ``x`` is a tuple/list of several arrays but the model takes one input.

    The arrays would otherwise be stacked into one (or fail inside the backend, e.g. ``predict((x, y))``:
    NumPy's "setting an array element with a sequence").
    """
    if not isinstance(x, (list, tuple)) or len(x) < 2 or is_array_like(x):
        return
    if not all(is_array_like(v) for v in x):
        return  # a list of batches, or a nested structure: the adapter and the model judge those
    only = _one_input(model)
    if only is None:
        return
    name, shape = only
    shapes = ", ".join(str(tuple(np.shape(v))) if not hasattr(v, "shape") else str(tuple(v.shape)) for v in x)
    expected = f", shape {shape}" if shape is not None else ""
    hint = {"predict": " (predict takes no targets: to score (x, y) use evaluate(x, y))",
            "fit": " (targets go in y: fit(x, y))", "evaluate": " (targets go in y: evaluate(x, y))"}.get(caller, "")
    raise TypeError(
        f"{caller}: x is a {type(x).__name__} of {len(x)} arrays (shapes {shapes}), but model "
        f"{getattr(model, 'name', type(model).__name__)!r} takes one input ({name!r}{expected}): pass that input's "
        f"array alone{hint}")


def embedding_inputs(model: Any) -> dict[int, list[tuple[str, int]]]:
    """``{model input index: [(Embedding layer name, input_dim), ...]}`` for the inputs that feed an
    ``Embedding`` directly (a Sequential model's first layer, or a graph model's input node)."""
    nodes = getattr(model, "_nodes", None)
    found: dict[int, list[tuple[str, int]]] = {}
    if nodes is None:  # Sequential: the first layer reads the model's input
        model_layers = getattr(model, "layers", None) or []
        first = model_layers[0] if model_layers else None
        if isinstance(first, Embedding):
            found[0] = [(first.name, first.input_dim)]
        return found
    inputs = getattr(model, "_input_list", None) or []
    positions = {tensor.uid: i for i, tensor in enumerate(inputs)}
    for node in nodes:
        uid = getattr(node.inputs, "uid", None)
        if isinstance(node.layer, Embedding) and uid in positions:
            found.setdefault(positions[uid], []).append((node.layer.name, node.layer.input_dim))
    return found


def _input_list(x: Any, model: Any, count: int) -> list | None:
    """``x`` as one entry per model input, or None when its structure is not understood (the
    model's own binding then reports it)."""
    if isinstance(x, dict):
        names = [getattr(tensor, "name", None) for tensor in getattr(model, "_input_list", None) or []]
        return [x.get(name) for name in names] if len(names) == count else None
    if isinstance(x, (list, tuple)) and not is_array_like(x):
        return list(x) if len(x) == count else None
    return [x] if count == 1 else None


class EmbeddingIndexCheck:
    """The range check of the indices reaching the model's Embedding layers (module docstring).

    Args:
        model: the model; its inputs that feed an Embedding are checked.
        caller: the loop or method, for the message.
    """

    def __init__(self, model: Any, caller: str) -> None:
        self.model = model
        self.caller = caller
        self.targets = embedding_inputs(model)
        self.count = max(1, len(getattr(model, "_input_list", None) or [None]))
        self.vouched = not self.targets

    @classmethod
    def for_model(cls, model: Any, caller: str) -> EmbeddingIndexCheck | None:
        check = cls(model, caller)
        return None if check.vouched else check

    def vouch(self, x: Any) -> bool:
        """Check every index of the array data ``x`` at once; returns :attr:`vouched` (else the
        per-batch checks stay on and raise for the first bad batch)."""
        if x is not None and not self.vouched:
            self.vouched = self._bad(x) is None
        return self.vouched

    def __call__(self, epoch: int | None, step: int | None, x: Any) -> None:
        """Check one batch's inputs ``x``; raises before the step when an index is out of range."""
        if self.vouched or x is None:
            return
        bad = self._bad(x)
        if bad is not None:
            where = "" if step is None else (f" batch {step} (0-based):" if epoch is None
                                             else f" epoch {epoch}, batch {step} (0-based):")
            name, dim, low, high = bad
            raise ValueError(f"{self.caller}:{where} layer {name!r}: indices must lie in [0, {dim}) "
                             f"(input_dim, an Embedding), received values in [{low}, {high}]. Map the indices into the "
                             f"vocabulary, or raise input_dim to at least {high + 1}")

    def _bad(self, x: Any) -> tuple[str, int, int, int] | None:
        """``(layer, input_dim, min, max)`` of the first input with an index out of range, else None."""
        entries = _input_list(x, self.model, self.count)
        if entries is None:
            return None
        for index, layers in self.targets.items():
            indices = entries[index] if index < len(entries) else None
            if indices is None or not (is_array_like(indices) or hasattr(indices, "shape")) or ops.size(indices) == 0:
                continue
            low, high = (int(v) for v in ops.to_numpy(ops.stack([ops.min(indices), ops.max(indices)])).tolist())
            for name, dim in layers:
                if low < 0 or high >= dim:
                    return name, dim, low, high
        return None
