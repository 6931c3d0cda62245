"""``ember.Variable``: a view onto one entry of a handle's state.

A Variable holds no array. It names an *owner* (a layer or model handle) and a *path*
into the owner's state (``("params", "dense", "kernel")``), plus the declaration it came
from (shape, dtype, trainable, regularizer, constraint). Reading it resolves the path:

* inside the owner's pure ``build``/``apply`` (a Keras-style ``call`` reading
  ``self.kernel``), from the state given to that call (see :mod:`ember.layers.scope`);
* elsewhere, from the owner's current state (``model.state``, or a layer's own state
  after an eager call).

``assign``/``assign_add``/``assign_sub`` never patch an array in place: they replace the
owner's state whole with a copy that has the new value (inside an ``apply``, the state
that ``apply`` returns). A Variable is an ``ember.Tensor``, so ``ember.ops`` and Python
operators accept it; gradient tapes watch it when read with ``watch_accessed_variables``.

Example:
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="d")], name="m")
    >>> kernel = model.weights[0]
    >>> kernel.path, kernel.shape, kernel.trainable
    ('d/kernel', (3, 2), True)
    >>> kernel.assign(ops.ones((3, 2)))
    >>> float(model.get_layer("d").get_weights()[0].sum())
    6.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import backends, ops
from ember._tensor import Tensor
from ember.autodiff import tape as tape_module
from ember.layers import scope
from ember.layers.weights import WeightSpec


def _backend_of(native: Any) -> str:
    root = type(native).__module__.split(".", 1)[0]
    return root if root in ("torch", "mlx") else "numpy"


def _lookup(state: dict, path: tuple, where: str) -> Any:
    node: Any = state
    for key in path:
        if not isinstance(node, dict) or key not in node:
            raise ValueError(f"{where}: the owner's state has no entry {'/'.join(path)!r}")
        node = node[key]
    return node


def replace_in(state: dict, path: tuple, value: Any) -> dict:
    """A copy of nested dict ``state`` with ``path`` set to ``value`` (the dicts on the path are copied)."""
    copy = dict(state)
    if len(path) == 1:
        copy[path[0]] = value
    else:
        copy[path[0]] = replace_in(state.get(path[0], {}), path[1:], value)
    return copy


class Variable(Tensor):
    """A named view onto one array of a layer's or model's state (see the module docstring).

    Attributes:
        name: the weight's name (``"kernel"``).
        path: its structural path within the owner, ``"dense/kernel"``.
        shape, dtype: from the declaration.
        trainable: whether the optimizer updates it.
        regularizer, constraint: from the declaration (None when not declared).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> dense = layers.Dense(2, name="d")
        >>> _ = dense(ops.ones((1, 3)))
        >>> bias = dense.weights[1]
        >>> bias.assign_add(ops.ones((2,)))
        >>> bias.numpy().tolist(), bias.trainable
        ([1.0, 1.0], True)
    """

    __slots__ = ("_owner", "_spec", "_state_path", "_trainable")
    # The slots' types (set once, through object.__setattr__, by view).
    _owner: Any
    _spec: WeightSpec
    _state_path: tuple[str, ...]
    _trainable: bool
    __gradient_type__ = Tensor  # a tape returns gradients of Variables as plain ember.Tensors

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("ember.Variable is created by layer.add_weight(...) or read from model.weights, "
                        "not constructed directly")

    @classmethod
    def view(cls, owner: Any, state_path: tuple, spec: WeightSpec, trainable: bool | None = None) -> Variable:
        """The Variable of ``owner``'s state entry ``state_path`` (``("params", ..., name)``)."""
        variable = object.__new__(cls)
        object.__setattr__(variable, "_owner", owner)
        object.__setattr__(variable, "_state_path", tuple(state_path))
        object.__setattr__(variable, "_spec", spec)
        object.__setattr__(variable, "_trainable", spec.trainable if trainable is None else trainable)
        return variable

    # --- declaration ------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._state_path[-1]

    @property
    def path(self) -> str:
        return "/".join(self._state_path[1:])

    @property
    def shape(self) -> tuple:
        return tuple(self._spec.shape)

    @property
    def dtype(self) -> str:  # type: ignore[override]  # a read-only view of the slot: Tensors are immutable
        return self._spec.dtype or ops.dtype(self._native)

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def regularizer(self) -> Any:
        return self._spec.regularizer

    @property
    def constraint(self) -> Any:
        return self._spec.constraint

    @property
    def owner(self) -> Any:
        """The layer or model whose state holds the value."""
        return self._owner

    # --- value ------------------------------------------------------------------------------
    def _state(self) -> dict:
        frame = scope.frame_of(self._owner)
        return frame.state if frame is not None else self._owner._read_state()

    @property
    def _native(self) -> Any:
        native = _lookup(self._state(), self._state_path, f"variable {self.path!r}")
        if tape_module.active_tapes():
            tape_module.record_variable_read(self, native)
        return native

    @property
    def value(self) -> Any:
        """The current value as a native array of the active backend."""
        return self._native

    @property
    def backend(self) -> str:  # type: ignore[override]  # read-only, like every Tensor slot
        return _backend_of(_lookup(self._state(), self._state_path, f"variable {self.path!r}"))

    @property
    def device(self) -> str:  # type: ignore[override]  # read-only, like every Tensor slot
        return ops.get_device(self._native)

    def assign(self, value: Any) -> None:
        """Replace the value (same shape; cast to the variable's dtype). Returns None.

        Raises:
            ValueError: a value of another shape (the variable is left as it was).
        """
        native = value._native if getattr(type(value), "__ember_tensor__", False) else value
        current = _lookup(self._state(), self._state_path, f"variable {self.path!r}")
        if not ops.is_array(native) or _backend_of(native) != backends.current().name:
            native = ops.convert_to_tensor(np.asarray(native) if not ops.is_array(native) else native)
        if tuple(ops.shape(native)) != tuple(ops.shape(current)):
            raise ValueError(f"variable {self.path!r}: assign expects shape {tuple(ops.shape(current))}, "
                             f"received {tuple(ops.shape(native))}")
        if ops.dtype(native) != ops.dtype(current):
            native = ops.cast(native, ops.dtype(current))
        frame = scope.frame_of(self._owner)
        if frame is not None:
            collection = self._state_path[0]
            frame.state[collection] = replace_in(frame.state[collection], self._state_path[1:], native)
            return
        self._owner._write_state(replace_in(self._owner._read_state(), self._state_path, native))

    def assign_add(self, delta: Any) -> None:
        """``assign(value + delta)``."""
        self.assign(ops.add(self._native, delta._native if isinstance(delta, Tensor) else delta))

    def assign_sub(self, delta: Any) -> None:
        """``assign(value - delta)``."""
        self.assign(ops.subtract(self._native, delta._native if isinstance(delta, Tensor) else delta))

    def __repr__(self) -> str:
        return f"<ember.Variable path={self.path!r} shape={self.shape} dtype={self._spec.dtype or 'float'} " \
               f"trainable={self.trainable}>"

    def __reduce__(self) -> Any:
        raise TypeError("ember.Variable is a view onto a model's state and is not picklable; "
                        "pickle variable.numpy() instead")

    __getstate__ = None  # type: ignore[assignment]  # not picklable (see __reduce__)
