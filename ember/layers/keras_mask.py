"""Keras's masks on tensors: ``x._keras_mask`` after a masking layer, eager or symbolic.

A layer that makes a mask (``Embedding(mask_zero=True)``, ``Masking``, a layer overriding
``compute_mask``) or passes one on (``supports_masking = True``) gives its output a ``_keras_mask``,
as Keras does; the next layer whose ``call``/``apply`` takes ``mask=`` receives it without being told.

* **Eager** (``y = embedding(x)``): the output array carries the mask. A torch tensor takes the
  attribute as it is; a NumPy or MLX array is returned as a zero-copy subclass that takes it
  (``backend.attribute_carrier``). While a gradient tape records, the array is left as it is (a view
  would be a new, unrecorded value) and the mask is kept in a table by identity instead:
  :func:`get_keras_mask` reads both, as ``keras.backend.get_keras_mask`` does.
* **Symbolic** (``x = embedding(ember.Input(...))``): the output's ``_keras_mask`` is a boolean
  symbolic tensor of the mask's shape (found by running ``compute_mask`` on placeholders). A model
  computes its value with the layer's output, so it can feed a later layer (``lstm(x, mask=m)``).
  A Keras-style layer whose ``call`` takes ``mask`` sees a mask when its output shape is inferred
  (Keras's ``assert mask is not None`` in ``call`` holds while the graph is built).

Example:
    >>> import numpy as np, ember
    >>> embedding = ember.layers.Embedding(10, 2, mask_zero=True)
    >>> out = embedding(np.array([[3, 0]]))
    >>> np.asarray(ember.ops.convert_to_numpy(out._keras_mask)).tolist()
    [[True, False]]
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import weakref
from collections.abc import Iterator
from typing import Any

import optree

from ember import backends, ops
from ember.autodiff import tape as tape_module
from ember.symbolic import SymbolicTensor, is_shape

# Masks of arrays that cannot carry the attribute (see the module docstring), by ``id``; an entry
# leaves with its array (a weakref finalizer), so an id is never read for another array.
_TABLE: dict[int, Any] = {}

# The input masks' shapes while a layer's output shape is inferred on placeholders (read by the
# Keras-style probe, ``keras_object._probe``); None when the symbolic inputs carry no mask.
PROBE_MASK_SHAPES: contextvars.ContextVar[Any] = contextvars.ContextVar("probe_mask_shapes", default=None)

_TAKES_MASK: dict[type, tuple[bool, bool]] = {}  # class -> (apply takes mask=, apply takes **kwargs)
_COMPUTE = object()  # compute_mask needs values: run it on placeholders


# ============================================================================ which layers
def takes_mask(layer: Any) -> bool:
    """Whether ``layer.apply`` accepts a ``mask=`` argument (RNN, LSTM, a Keras-style layer ...)."""
    cls = type(layer)
    known = _TAKES_MASK.get(cls)
    if known is None:
        parameters = inspect.signature(cls.apply).parameters
        known = ("mask" in parameters, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()))
        _TAKES_MASK[cls] = known
    # A Keras-style object's apply (the base's) hands its keywords, mask= included, to its call.
    return known[0] or (known[1] and bool(getattr(layer, "_keras_style", False)))


def makes_mask(layer: Any) -> bool:
    """Whether ``layer`` may create a mask from an unmasked input: it overrides ``compute_mask``
    (``Layer.compute_mask`` is marked ``passes_masks_only``: it only passes a mask on)."""
    return not getattr(type(layer).compute_mask, "passes_masks_only", False)


# ============================================================================ on arrays
def get_keras_mask(x: Any) -> Any:
    """The Keras mask ``x`` carries (``x._keras_mask``, or the table's entry), None when none."""
    mask = getattr(x, "_keras_mask", None)
    if mask is None and _TABLE:
        mask = _TABLE.get(id(x))
    return mask


def set_keras_mask(x: Any, mask: Any) -> Any:
    """``x`` carrying ``mask`` as ``_keras_mask``: ``x`` itself where its type takes attributes, a
    zero-copy carrier of the same values otherwise (or ``x`` with the mask in the table while a tape
    records). Use the returned value."""
    with contextlib.suppress(AttributeError):  # a NumPy or MLX array takes no attribute: see below
        x._keras_mask = mask
        return x
    if tape_module.active_tapes():
        key = id(x)
        if key not in _TABLE:
            weakref.finalize(x, _TABLE.pop, key, None)
        _TABLE[key] = mask
        return x
    carrier = backends.current().attribute_carrier(x)
    carrier._keras_mask = mask
    return carrier


def input_mask(inputs: Any, explicit: Any = None) -> Any:
    """The mask of eager ``inputs``: ``explicit`` when given, else what the inputs carry (one mask,
    or a list in the inputs' order when several inputs carry some), None when none does."""
    if explicit is not None:
        return explicit
    if isinstance(inputs, (list, tuple)):
        masks = [get_keras_mask(value) for value in inputs]
        return masks if any(m is not None for m in masks) else None
    return get_keras_mask(inputs)


def attach_eager(layer: Any, inputs: Any, mask: Any, outputs: Any) -> Any:
    """``outputs`` of ``layer(inputs)`` carrying ``layer.compute_mask(inputs, mask)``, as Keras."""
    if mask is None and not makes_mask(layer):
        return outputs
    out_mask = layer.compute_mask(inputs, mask)
    if out_mask is None:
        return outputs
    if isinstance(outputs, (list, tuple)):
        masks = out_mask if isinstance(out_mask, (list, tuple)) else [out_mask] * len(outputs)
        carried = [v if m is None else set_keras_mask(v, m) for v, m in zip(outputs, masks)]
        return type(outputs)(carried)
    if not ops.is_array(outputs):
        return outputs
    return set_keras_mask(outputs, out_mask)


# ============================================================================ on symbolic tensors
def symbolic_input_mask(inputs: Any) -> Any:
    """The symbolic masks ``inputs`` carry (one, or a list for a list of inputs), None when none."""
    if isinstance(inputs, SymbolicTensor):
        return inputs._keras_mask
    if isinstance(inputs, (list, tuple)):
        masks = [v._keras_mask if isinstance(v, SymbolicTensor) else None for v in inputs]
        return masks if any(m is not None for m in masks) else None
    return None


def _shapes(tree: Any) -> Any:
    return optree.tree_map(lambda t: None if t is None else t.shape, tree, none_is_leaf=True,
                           is_leaf=lambda v: isinstance(v, SymbolicTensor))


@contextlib.contextmanager
def probing_with(mask: Any) -> Iterator[None]:
    """While inside: a Keras-style layer's inferred output shape is probed with placeholder masks
    of ``mask``'s shapes (nothing changes when ``mask`` is None)."""
    token = PROBE_MASK_SHAPES.set(None if mask is None else _shapes(mask))
    try:
        yield
    finally:
        PROBE_MASK_SHAPES.reset(token)


def placeholder_mask(shapes: Any, fill: int) -> Any:
    """All-True boolean arrays of ``shapes`` (unknown sizes set to ``fill``); None stays None."""
    def make(shape: Any) -> Any:
        return None if shape is None else ops.ones(tuple(fill if d is None else d for d in shape), dtype="bool")

    if shapes is None or is_shape(shapes):
        return make(shapes)
    return [make(shape) for shape in shapes]


def _placeholder(tensors: Any, fill: int) -> Any:
    def make(t: SymbolicTensor) -> Any:
        return ops.zeros(tuple(fill if d is None else d for d in t.shape), dtype=t.dtype)

    return optree.tree_map(make, tensors, is_leaf=lambda v: isinstance(v, SymbolicTensor), none_is_leaf=False)


def _mask_shapes(layer: Any, inputs: Any, mask: Any) -> Any:
    """The shape(s) of ``layer``'s output mask for symbolic ``inputs`` carrying ``mask``: the mask's
    own when the layer only passes it on, else ``compute_mask`` run on placeholders of two sizes
    (sizes that differ between them are unknown). None where the layer gives no mask."""
    if not makes_mask(layer):
        return _shapes(mask) if layer.supports_masking else None
    # First on the symbolic values themselves: a layer that makes no mask here (Embedding without
    # mask_zero) answers None, one that passes symbolic masks on answers them, and no backend runs.
    try:
        direct = layer.compute_mask(inputs, mask)
    except (TypeError, ValueError, IndexError, AttributeError, NotImplementedError):
        direct = _COMPUTE
    if direct is None:
        return None
    leaves = optree.tree_leaves(direct, none_is_leaf=True, is_leaf=lambda v: isinstance(v, SymbolicTensor))
    if direct is not _COMPUTE and leaves and all(v is None or isinstance(v, SymbolicTensor) for v in leaves):
        return _shapes(direct)
    found = []
    for fill in (2, 3):
        # A compute_mask that cannot run on placeholders (a layer reading data it checks) gives the
        # graph no symbolic mask; the model still computes the mask from data when it runs.
        try:
            out = layer.compute_mask(_placeholder(inputs, fill), placeholder_mask(_shapes(mask), fill))
        except (TypeError, ValueError, IndexError, AttributeError, NotImplementedError):
            return None
        found.append(optree.tree_map(lambda a: None if a is None else tuple(ops.shape(a)), out, none_is_leaf=True))

    def merge(a: Any, b: Any) -> Any:
        return None if a is None else tuple(x if x == y else None for x, y in zip(a, b))

    first, second = found
    if first is None or is_shape(first):
        return merge(first, second)
    return [merge(a, b) for a, b in zip(first, second)]


def attach_symbolic(layer: Any, inputs: Any, mask: Any, outputs: Any) -> None:
    """Give ``layer``'s symbolic ``outputs`` their ``_keras_mask`` (a boolean symbolic tensor made
    by the same node: the model sets its value when it runs the node)."""
    if mask is None and not makes_mask(layer):
        return
    shapes = _mask_shapes(layer, inputs, mask)
    if shapes is None:
        return
    flat = [outputs] if isinstance(outputs, SymbolicTensor) else optree.tree_leaves(
        outputs, is_leaf=lambda v: isinstance(v, SymbolicTensor), none_is_leaf=False)
    per_output = [shapes] * len(flat) if is_shape(shapes) else list(shapes)
    for tensor, shape in zip(flat, per_output):
        if shape is not None:
            tensor._keras_mask = SymbolicTensor(shape, "bool", f"{tensor.name}_mask", tensor.node, tensor.index)


def store_mask_values(tensors: list, masks: list, values: dict) -> None:
    """Inside a model's run: the value of each of ``tensors``' symbolic ``_keras_mask``."""
    for tensor, mask in zip(tensors, masks):
        symbolic = tensor._keras_mask
        if symbolic is not None and mask is not None:
            values[symbolic.uid] = mask
