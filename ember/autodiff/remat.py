"""Rematerialization (gradient checkpointing): ``ember.remat`` and ``ember.RematScope``, as in Keras.

``remat(f)`` returns a function computing ``f`` whose intermediate activations are not kept
for the backward pass but recomputed there: less memory, one more forward pass of ``f``.

* torch: ``torch.utils.checkpoint.checkpoint`` (non-reentrant; the recomputation reuses the
  first run's RNG state);
* MLX: ``mx.checkpoint``, recorded as one op by a ``GradientTape``; inside ``fit``'s compiled
  step it is part of the traced function;
* NumPy: one recorded node (``ember.custom_gradient``) whose forward keeps only the inputs and
  whose backward runs ``f`` again under a tape of its own.

Gradients flow to the array leaves of ``f``'s positional arguments (pytrees allowed: pass the
parameters ``f`` uses as an argument). Arrays ``f`` only closes over are constants on MLX and
NumPy (as for ``mx.checkpoint``); torch differentiates them too. Pass them as arguments for
the same gradients everywhere.

``RematScope(mode=..., output_size_threshold=..., layer_names=...)`` is Keras's context manager;
:func:`get_current_remat_mode` gives the innermost active scope's settings and
:func:`remat_applies` Keras's rule for whether a layer is rematerialized under them.

Example:
    >>> import ember
    >>> from ember import ops
    >>> ember.set_backend("numpy")
    >>> block = ember.remat(lambda w, x: ops.sum(ops.tanh(ops.matmul(x, w))))
    >>> w, x = ops.ones((3, 2)), ops.ones((4, 3))
    >>> _, grad = ember.value_and_grad(block)(w, x)
    >>> ops.shape(grad)
    (3, 2)
    >>> with ember.RematScope(mode="larger_than", output_size_threshold=100):
    ...     ember.get_current_remat_mode().mode
    'larger_than'
"""

from __future__ import annotations

import functools
import threading
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import optree

from ember import backends, dtypes, ops
from ember.autodiff.custom_gradient import custom_gradient
from ember.autodiff.tape import GradientTape

MODES = ("full", "activations", "larger_than", "list_of_layers", None)

RematMode = namedtuple("RematMode", ["mode", "output_size_threshold", "layer_names"])


def _is_array(x: Any) -> bool:
    return getattr(type(x), "__ember_tensor__", False) or ops.is_array(x)


def remat(f: Callable) -> Callable:
    """``f`` with its activations recomputed in the backward pass instead of kept (Keras's ``keras.remat``).

    Args:
        f: a function of arrays (positional arguments, each an array or a pytree of arrays;
            other leaves are passed through as constants) returning an array or a pytree of arrays.

    Returns:
        A function with ``f``'s signature and values; its gradients equal ``f``'s.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> ember.set_backend("numpy")
        >>> square_sum = ember.remat(lambda x: ops.sum(ops.square(x)))
        >>> ops.to_numpy(ember.grad(square_sum)(ops.convert_to_tensor([1.0, 2.0]))).tolist()
        [2.0, 4.0]
    """
    if not callable(f):
        raise TypeError(f"remat: expected a function, received {type(f).__name__}")

    @functools.wraps(f)
    def rematerialized(*args: Any) -> Any:
        leaves, treedef = optree.tree_flatten(list(args), none_is_leaf=False)
        positions = [i for i, leaf in enumerate(leaves) if _is_array(leaf)]
        arrays = tuple(leaf._native if getattr(type(leaf), "__ember_tensor__", False) else leaf
                       for leaf in (leaves[i] for i in positions))

        def of_arrays(*new: Any) -> Any:
            full = list(leaves)
            for i, array in zip(positions, new):
                full[i] = array
            return f(*optree.tree_unflatten(treedef, full))

        native = backends.current().remat  # torch's checkpoint, MLX's own; None on NumPy
        if native is not None:
            return native.call_remat(of_arrays, arrays)
        return _recomputed(of_arrays)(*arrays)

    return rematerialized


def _recomputed(function: Callable) -> Callable:
    """``function`` as one custom-gradient node: keep the inputs, recompute in the backward pass."""

    @custom_gradient
    def checkpointed(*arrays: Any) -> Any:
        outputs = function(*arrays)

        def grad_fn(*upstream: Any) -> Any:
            floating = [a for a in arrays if dtypes.is_float(ops.dtype(a))]
            with GradientTape() as tape:
                tape.watch(floating)
                again = function(*arrays)
            weights = type(again)(upstream) if isinstance(again, (tuple, list)) else upstream[0]
            grads = iter(tape.gradient(again, floating, output_gradients=weights))
            out = [next(grads) if dtypes.is_float(ops.dtype(a)) else None for a in arrays]
            return out[0] if len(out) == 1 else out

        return outputs, grad_fn

    return checkpointed


# ------------------------------------------------------------------------------ RematScope
_scopes = threading.local()


def _stack() -> list:
    stack = getattr(_scopes, "stack", None)
    if stack is None:
        stack = _scopes.stack = []
    return stack


class RematScope:
    """Keras's ``keras.RematScope``: the rematerialization settings while the ``with`` block runs.

    Args:
        mode: ``"full"`` (every layer), ``"activations"`` (layers with an activation),
            ``"larger_than"`` (layers whose output has more than ``output_size_threshold``
            elements), ``"list_of_layers"`` (the layers named in ``layer_names``) or None (off).
        output_size_threshold: the size for ``"larger_than"``.
        layer_names: the names for ``"list_of_layers"``.

    Scopes nest; the innermost wins (:func:`get_current_remat_mode`).

    Example:
        >>> import ember
        >>> with ember.RematScope(mode="list_of_layers", layer_names=["block_0"]) as scope:
        ...     scope.layer_names, ember.get_current_remat_mode().mode
        (['block_0'], 'list_of_layers')
    """

    def __init__(self, mode: str | None = "full", output_size_threshold: int = 1024,
                 layer_names: list[str] | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"RematScope: mode must be one of {MODES}, received {mode!r}")
        if isinstance(output_size_threshold, bool) or not isinstance(output_size_threshold, int) \
                or output_size_threshold < 0:
            raise ValueError(f"RematScope: output_size_threshold must be a non-negative int, "
                             f"received {output_size_threshold!r}")
        names = list(layer_names or [])
        if not all(isinstance(n, str) for n in names):
            raise TypeError(f"RematScope: layer_names must be a list of layer names (str), received {layer_names!r}")
        self.mode = mode
        self.output_size_threshold = output_size_threshold
        self.layer_names = names

    def __enter__(self) -> RematScope:
        _stack().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = _stack()
        if self in stack:
            stack.reverse()
            stack.remove(self)  # the innermost occurrence
            stack.reverse()


def get_current_remat_mode() -> RematMode | None:
    """The innermost active :class:`RematScope`'s settings, or None outside every scope.

    Example:
        >>> import ember
        >>> ember.get_current_remat_mode() is None
        True
    """
    stack = _stack()
    if not stack:
        return None
    scope = stack[-1]
    return RematMode(scope.mode, scope.output_size_threshold, scope.layer_names)


def remat_applies(mode: RematMode | None, layer_name: str, output_size: int, has_activation: bool) -> bool:
    """Keras's rule: whether a layer named ``layer_name`` is rematerialized under ``mode``.

    Example:
        >>> remat_applies(RematMode("larger_than", 1024, []), "dense", 4096, has_activation=False)
        True
    """
    if mode is None or mode.mode is None:
        return False
    if mode.mode == "full":
        return True
    if mode.mode == "larger_than":
        return output_size > mode.output_size_threshold
    if mode.mode == "list_of_layers":
        return layer_name in mode.layer_names
    return has_activation  # "activations"
