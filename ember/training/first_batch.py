"""``fit``'s check of its first batch, without a forward pass of the model where one can be avoided.

``fit`` checks its first batch before any state changes, so that bad data raises a clear error
(the loss's, the layer's) and leaves the model as it was. The check used to run the whole model
once in inference mode: on a 33.6M-parameter MLP that forward cost about a third of a training
step, on every ``fit`` call. Most of what it verifies needs no forward:

* the inputs: their structure and shapes against the model's declared inputs (``ember.Input``,
  or the shape the model was built for), compared symbolically;
* the targets: the losses run on a *stand-in* for the predictions (halves of the model's output
  shapes for this batch, from ``compute_output_shape``, or remembered from an earlier forward on
  inputs of the same shapes), so the label shapes, dtypes and values (class indices in range)
  are checked by the losses themselves. One half is a valid prediction for every loss: a
  probability (the crossentropies normalise ``y_pred / sum(y_pred)``, which zeros would make
  0 / 0 and a NumPy warning on every ``fit``), a finite logit, a regression value.

What only a forward can find (a layer failing on some input values, an output shape that
``compute_output_shape`` does not know) is found by the first training step itself, which is all
or nothing: when that step raises, ``fit`` runs the eager check on its batch
(:meth:`FirstBatchCheck.explain`) and raises the check's error where the data is at fault (else the
step's own), and the state is restored as before. Whenever the quick check fails or cannot decide
(inputs that do not match the model's, a loss rejecting the stand-in), the eager check runs at
once: every error message is the one it gives.

The quick check is for first steps that raise what the eager forward raises
(:func:`eager_first_step`): the eager steps, and torch's ``jit_compile=True`` step, which is pure
(it writes nothing of the state) and, when compiling fails, runs the same function eagerly and
raises the model's own error, for which :meth:`FirstBatchCheck.explain` then gives the check's.
A step replayed from a CUDA graph or traced by ``mx.compile`` may not surface what the eager
forward raises, and under ``ember.distribute`` a rank failing alone in its first step would leave
the others waiting in a collective; they keep the eager check (on MLX it is lazy: only the labels
it reads are computed).

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((4,)), layers.Dense(3)])
    >>> model.compile(optimizer="sgd", loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True))
    >>> x = np.zeros((8, 4), "float32")
    >>> predicted_shapes(model, model._training.trainer.output_names, x)
    [(8, 3)]
    >>> before = model.get_weights()
    >>> try:  # label 5 for 3 classes: the loss rejects it on the stand-in, and the eager check says so
    ...     model.fit(x, np.full(8, 5), verbose=0)
    ... except ValueError as error:
    ...     print(str(error)[:48])
    sparse_categorical_crossentropy: class indices m
    >>> all((a == b).all() for a, b in zip(before, model.get_weights()))
    True
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import optree

from ember import backends, dtypes, ops
from ember.training.steps import batch_size_of

# Output shapes learned from eager forwards, per model structure and input shapes: a few per trainer.
_LEARNED_MAX = 16
# The stand-in predictions' value: a probability strictly inside (0, 1) whose sums are never zero,
# so no loss divides 0 by 0 or takes log(0) on it (see the module docstring).
_STAND_IN_VALUE = 0.5


def _shape(value: Any) -> tuple | None:
    """The shape of a native array (None for anything else)."""
    return tuple(ops.shape(value)) if ops.is_array(value) else None


def _compatible(declared: Any, shape: tuple | None) -> bool:
    """Whether an input of ``shape`` fits a declared shape (None dims are free)."""
    if shape is None or declared is None:
        return False
    declared = tuple(declared)
    return len(declared) == len(shape) and all(d is None or d == s for d, s in zip(declared, shape))


def _bound_shapes(model: Any, x: Any) -> list[tuple] | None:
    """The shapes of ``x``'s arrays, one per input of ``model``, when ``x`` fits its declared inputs
    exactly as the model's ``apply`` binds them; None when it does not or cannot be told without a
    forward (a Keras-style subclass, a Sequential of unknown input shape)."""
    if getattr(model, "_keras_style", False):
        return None
    if hasattr(model, "_input_layer"):  # Sequential: one input
        declared = model._known_input_shape()
        shape = _shape(x)
        return [shape] if _compatible(declared, shape) else None  # type: ignore[list-item]
    inputs = getattr(model, "_inputs_struct", None)
    tensors = getattr(model, "_input_list", None)
    if inputs is None or tensors is None:
        return None
    if isinstance(inputs, dict) or isinstance(x, dict):
        named = inputs if isinstance(inputs, dict) else {tensor.name: tensor for tensor in tensors}
        if not isinstance(x, dict) or set(x) != set(named) or len(named) != len(tensors):
            return None
        pairs = [(named[key], x[key]) for key in named]
    elif len(tensors) == 1 and not isinstance(x, (dict, list, tuple)):
        pairs = [(tensors[0], x)]
    elif isinstance(x, (list, tuple)) and len(x) == len(tensors):
        pairs = list(zip(tensors, x))
    else:
        return None
    shapes = [_shape(value) for _, value in pairs]
    if not all(_compatible(tensor.shape, shape) for (tensor, _), shape in zip(pairs, shapes)):
        return None
    return shapes  # type: ignore[return-value]


def _declared_output_shapes(model: Any, names: list[str]) -> list | None:
    """The model's output shapes as declared (None dims unknown), one per output name."""
    try:
        shapes = model.compute_output_shape()
    except Exception:  # noqa: BLE001 - a model that cannot tell without data: the forward decides
        return None
    if isinstance(shapes, dict):
        return [tuple(shapes[name]) if name in shapes else None for name in names]
    if isinstance(shapes, list) and shapes and isinstance(shapes[0], (tuple, list)):
        return [tuple(shape) for shape in shapes]
    return [tuple(shapes)]


def predicted_shapes(model: Any, names: list[str], x: Any) -> list[tuple] | None:
    """The shapes of the model's outputs for the batch ``x``, without running the model: its declared
    output shapes with the batch size for the leading unknown dim. None when ``x`` does not fit the
    declared inputs, or an output has another unknown dim (a forward tells).

    Args:
        model: an ``ember.Model``/``Sequential``.
        names: the model's output names (their order is the flat outputs').
        x: the batch's inputs (native arrays, as the data adapters give them).
    """
    shapes = _bound_shapes(model, x)
    if not shapes:
        return None
    batch = shapes[0][0] if shapes[0] else None
    if batch is None or any(not shape or shape[0] != batch for shape in shapes):
        return None
    declared = _declared_output_shapes(model, names)
    if declared is None or len(declared) != len(names):
        return None
    out = []
    for shape in declared:
        if shape is None or not shape or shape[0] is not None:
            return None
        concrete = (batch,) + tuple(shape[1:])
        if any(not isinstance(dim, int) for dim in concrete):
            return None
        out.append(concrete)
    return out


def eager_first_step(backend: str, jit_compile: Any, cuda_graphs: bool, distributed: bool) -> bool:
    """Whether ``fit``'s first step raises what the eager check would (module docstring): NumPy; torch
    without CUDA graphs (its compiled step falls back to the same step run eagerly); MLX with
    ``jit_compile=False``. Never under ``ember.distribute``.

    Example:
        >>> eager_first_step("torch", "auto", cuda_graphs=False, distributed=False)
        True
        >>> eager_first_step("mlx", "auto", cuda_graphs=False, distributed=False)
        False
    """
    if distributed or cuda_graphs:
        return False
    if backend in ("numpy", "torch"):
        return True
    return jit_compile is False


def _input_key(x: Any) -> tuple:
    """The shapes and dtypes of ``x``'s arrays, with its structure (hashable)."""
    leaves, spec = optree.tree_flatten(x)
    return spec, tuple((tuple(ops.shape(leaf)), str(ops.dtype(leaf))) if ops.is_array(leaf) else (type(leaf),)
                       for leaf in leaves)


def _stand_in(shape: tuple, target: Any) -> Any:
    """Halves of ``shape`` for the losses (a broadcast scalar where the backend makes views), on the device
    of ``target`` (the labels it meets)."""
    half = ops.full((), _STAND_IN_VALUE, dtype=dtypes.floatx())
    if ops.is_array(target):
        device = ops.get_device(target)
        if device != ops.get_device(half):
            half = ops.to_device(half, device)
    return ops.broadcast_to(half, shape)


def _input_names(model: Any) -> list[str] | None:
    try:
        return [str(t.name) for t in model.inputs]
    except AttributeError:  # a Keras-style subclass has no graph
        return None


def _no_targets_message(core: Any, x: Any) -> str:
    """Why a batch without targets cannot train a model with a loss, and what the data should be."""
    message = f"the model has a loss for output(s) {core.output_names} but the data gives no targets y"
    names = _input_names(core.model)
    inputs = f" (this model's inputs: {names})" if names else ""
    if isinstance(x, dict):
        return (f"{message}: each batch is a dict (keys {sorted(map(str, x))}), which is read as the inputs x alone. "
                "Give (x, y) or (x, y, sample_weight) tuples instead, x an array or a dict keyed by the model's "
                f"input names{inputs}, e.g. yield ({{...inputs...}}, y)")
    return (f"{message}: give y with array data (fit(x, y)), or make the generator/Dataset yield (x, y) or "
            f"(x, y, sample_weight) tuples{inputs}")


class FirstBatchCheck:
    """The first-batch check of one trainer (see the module docstring).

    Args:
        core: the trainer's :class:`~ember.training.steps.StepCore` (model, losses, forward).
    """

    def __init__(self, core: Any) -> None:
        self.core = core
        # {(backend, params structure, input shapes and dtypes): output shapes} from eager forwards
        self._learned: OrderedDict[tuple, list] = OrderedDict()

    # --- the checks ---------------------------------------------------------------------------
    def check(self, state: dict, batch: tuple, quick: bool) -> None:
        """Check ``batch`` (``(x, y, sample_weight)``) before the first step: quickly where ``quick``
        allows and the stand-in decides, else with the eager forward (raising its clear errors)."""
        x, y, _ = batch
        core = self.core
        if y is None and core.compile_loss.entries:
            raise ValueError(_no_targets_message(core, x))
        key = None
        if quick and y is not None and core.compile_loss.entries:
            key = self._key(state, x)
            shapes = self._learned.get(key) or predicted_shapes(core.model, core.output_names, x)
            if shapes is not None and self._targets_fit(batch, shapes):
                batch_size_of(x)
                return
        self.eager(state, batch, key)

    def eager(self, state: dict, batch: tuple, key: tuple | None = None) -> None:
        """Run the model and the losses once eagerly on ``batch`` (inference mode): bad labels or
        inputs raise clear errors. ``key`` (from :meth:`_key`): remember the output shapes under it."""
        x, y, sw = batch
        model_state = state["model"]
        total, _, y_pred_flat = self.core.eval_loss(model_state["params"], model_state["buffers"], x, y, sw)
        del total
        batch_size_of(x)
        if key is not None:
            self._learn(key, [None if value is None else tuple(ops.shape(value)) for value in y_pred_flat])

    def explain(self, state: dict, batch: tuple) -> Exception | None:
        """After the first step raised on ``batch``: the eager check's error on it (the clear one, where
        the data is at fault), or None when the check passes (the step's own error stands)."""
        try:
            self.eager(state, batch)
        except Exception as error:  # noqa: BLE001 - handed back to replace the step's error
            return error
        return None

    # --- pieces -------------------------------------------------------------------------------
    def _targets_fit(self, batch: tuple, shapes: list) -> bool:
        """Whether the losses accept the batch's targets against a stand-in of the predictions (the
        label values checked too); False on any error, which the eager check then reports."""
        _, y, sw = batch
        core = self.core
        try:
            targets = core.flat(y, "y")
            weights = core.flat(sw, "sample_weight")
            needed = {entry.index for entry in core.compile_loss.entries}
            stand_ins = [_stand_in(shape, targets[i]) if i in needed else None for i, shape in enumerate(shapes)]
            core.compile_loss(targets, stand_ins, weights)
        except Exception:  # noqa: BLE001 - the eager check gives the error (or finds the stand-in wrong)
            return False
        return True

    def _key(self, state: dict, x: Any) -> tuple:
        return backends.get_backend(), optree.tree_structure(state["model"]["params"]), _input_key(x)

    def _learn(self, key: tuple, shapes: list) -> None:
        if any(shape is None or not shape for shape in shapes):
            return
        self._learned[key] = shapes
        self._learned.move_to_end(key)
        while len(self._learned) > _LEARNED_MAX:
            self._learned.popitem(last=False)
