"""Keras's stateful optimizer API over the pure one: ``apply(grads, variables)``.

``optimizer.apply(grads, model.trainable_variables)`` and
``optimizer.apply_gradients(zip(grads, variables))`` update :class:`ember.Variable` views:
the variables are grouped by the handle that owns them (a model or layer); for each group
the pure ``Optimizer.apply_gradients(grads, opt_state, params)`` runs on the current values,
the declared constraints are applied, and the owner's state is replaced whole. The optimizer
keeps each group's ``opt_state`` (slots and ``iterations``) between calls, as a Keras
optimizer holds its slot variables; a float ``learning_rate`` set on the optimizer (by the user
or a callback such as ``LearningRateScheduler``) takes effect at the next call.

``optimizer.iterations`` counts the updates of whichever user of the optimizer ran last: the
calls above, or the steps of ``fit``/``train_on_batch`` of the model it was compiled with, whose
optimizer state (the trainer's, saved with checkpoints and restored by ``BackupAndRestore``)
holds the counter; :func:`count_steps_from` points the optimizer at that state.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1, name="d")], name="m")
    >>> model.set_weights([np.ones((2, 1), "float32"), np.zeros((1,), "float32")])
    >>> opt = ember.optimizers.SGD(0.5)
    >>> with ember.GradientTape() as tape:
    ...     loss = ops.sum(model(np.ones((1, 2), "float32")))
    >>> grads = tape.gradient(loss, model.trainable_variables)
    >>> opt.apply_gradients(zip(grads, model.trainable_variables))
    >>> model.get_weights()[0].ravel().tolist(), int(opt.iterations)
    ([0.5, 0.5], 1)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ember import ops
from ember.constraints import apply_constraints
from ember.layers.handles import replace_in
from ember.layers.variable import Variable


def _native(value: Any) -> Any:
    return value._native if getattr(type(value), "__ember_tensor__", False) else value


def apply_to_variables(optimizer: Any, grads: list, variables: list) -> None:
    """Update ``variables`` (ember.Variables) with ``grads`` (same order; None skips one)."""
    grads, variables = list(grads), list(variables)
    if len(grads) != len(variables):
        raise ValueError(f"{type(optimizer).__name__}.apply: received {len(grads)} gradients for "
                         f"{len(variables)} variables")
    groups: dict[int, list] = {}
    owners: dict[int, Any] = {}
    for grad, variable in zip(grads, variables):
        if not isinstance(variable, Variable):
            raise TypeError(f"{type(optimizer).__name__}.apply: variables must be ember.Variables (e.g. "
                            f"model.trainable_variables), received {type(variable).__name__}; for arrays use "
                            f"apply_gradients(grads, opt_state, params)")
        if not variable.trainable:
            raise ValueError(f"{type(optimizer).__name__}.apply: variable {variable.path!r} is not trainable")
        owners[id(variable.owner)] = variable.owner
        groups.setdefault(id(variable.owner), []).append((grad, variable))
    if all(grad is None for grad in grads) and grads:
        raise ValueError(f"{type(optimizer).__name__}: no gradients provided for any variable (every grad is None)")
    states = optimizer.__dict__.setdefault("_variable_states", {})
    for owner_id, items in groups.items():
        owner = owners[owner_id]
        keys = ["/".join(v._state_path) for _, v in items]
        params = {k: v.value for k, (_, v) in zip(keys, items)}
        grad_tree = {k: None if g is None else _native(g) for k, (g, _) in zip(keys, items)}
        if all(g is None for g in grad_tree.values()):
            continue
        slot_key = (owner_id, tuple(keys))
        entry = states.get(slot_key)
        if entry is not None and entry[0]() is owner:
            opt_state = entry[1]
            if not optimizer.has_schedule and entry[2] != optimizer.learning_rate:  # set since (a callback)
                opt_state = optimizer.set_learning_rate(opt_state, optimizer.learning_rate)
        else:
            opt_state = optimizer.init(params)
        new_params, opt_state = optimizer.apply_gradients(grad_tree, opt_state, params)
        constraints = {k: v.constraint for k, (_, v) in zip(keys, items) if v.constraint is not None}
        if constraints:
            new_params = apply_constraints(constraints, new_params)
        state = owner._read_state()
        for key, (_, variable) in zip(keys, items):
            state = replace_in(state, variable._state_path, new_params[key])
        owner._write_state(state)
        states[slot_key] = (_weak(owner), opt_state, optimizer.learning_rate)
        optimizer.__dict__["_last_iterations"] = opt_state["iterations"]
        optimizer.__dict__["_iterations_source"] = None  # counted here now, not in a model's training state


def _weak(owner: Any) -> Any:
    return weakref.ref(owner)


def count_steps_from(optimizer: Any, read_opt_state: Callable[[], Any]) -> None:
    """Make ``optimizer.iterations`` read the step counter of the optimizer state that
    ``read_opt_state()`` returns (None: no step yet), until :func:`apply_to_variables` or another
    call of this function points it elsewhere. ``compile``, ``fit`` and ``train_on_batch`` point it
    at their model's training state, which already counts the steps: no second counter is kept.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> ember.set_backend("numpy")
        >>> opt = ember.optimizers.SGD(0.1)
        >>> state = opt.init({"w": ops.zeros((2,))})
        >>> _, state = opt.apply_gradients({"w": ops.ones((2,))}, state, {"w": ops.zeros((2,))})
        >>> count_steps_from(opt, lambda: state)
        >>> int(opt.iterations)
        1
    """
    optimizer.__dict__["_iterations_source"] = read_opt_state


def iterations(optimizer: Any) -> Any:
    """The updates ``optimizer`` applied (0 before any): those of the optimizer state that
    :func:`count_steps_from` named, else those of the last :func:`apply_to_variables` group. A copy of
    the counter, as a native 0-d integer array (``fit`` may update the state's own in place)."""
    source = optimizer.__dict__.get("_iterations_source")
    if source is not None:
        opt_state = source()
        value = None if not isinstance(opt_state, dict) else opt_state.get("iterations")
        return ops.convert_to_tensor(0) if value is None else ops.copy(value)
    value = optimizer.__dict__.get("_last_iterations")
    return ops.convert_to_tensor(0) if value is None else value
