"""Which backend a model's state lives on: the check the model's entry points make, and the move.

A model handle owns its state as native arrays of the backend that was active when it was
built, loaded or trained. ``ember.set_backend`` does not touch existing arrays, so after a
switch the state and the active backend can disagree; running the model then would feed one
library's arrays to another's ops (an obscure error on MLX, silent mixing on torch). Every
entry point (``fit``, ``evaluate``, ``predict``, ``train_on_batch``, ``test_on_batch``,
``predict_on_batch``, ``model(x)``) calls :func:`check_state_backend` first: it looks at one
leaf of the state (about a microsecond) and raises a ``TypeError`` naming both backends and
the two ways out. :func:`move_model` (``Model.to_backend``) converts the state and the
training caches (optimizer state, running metrics, step RNG) through host NumPy, bit-exactly.

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> from ember.training import backend_check
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    >>> backend_check.state_backend(model.state) is None   # unbuilt: no backend yet
    True
    >>> _ = model.build(seed=0)
    >>> backend_check.state_backend(model.state)
    'numpy'
    >>> backend_check.check_state_backend(model, "predict")   # the active backend: no error
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

import numpy as np
import optree

from ember import backends, ops
from ember.saving import _arrays
from ember.training.handle import TrainingHandle

_NO_LEAF = object()


def first_leaf(tree: Any) -> Any:
    """The first leaf of nested dicts/lists/tuples (None values skipped), or ``_NO_LEAF``."""
    children: Iterable[Any]
    if isinstance(tree, dict):
        children = tree.values()
    elif isinstance(tree, (list, tuple)):
        children = tree
    else:
        return _NO_LEAF if tree is None else tree
    for child in children:
        leaf = first_leaf(child)
        if leaf is not _NO_LEAF:
            return leaf
    return _NO_LEAF


def array_backend(value: Any) -> str | None:
    """The name of the backend whose native array ``value`` is; None for anything else (numbers)."""

    if ops.is_array(value):
        return backends.get_backend()
    try:
        return _arrays.backend_of(value)[0]
    except TypeError:
        return None


def state_backend(tree: Any) -> str | None:
    """The backend of ``tree``'s first array (one leaf is looked at); None when it has none."""
    leaf = first_leaf(tree)
    return None if leaf is _NO_LEAF else array_backend(leaf)


def _foreign(tree: Any) -> str | None:
    """The backend of ``tree``'s first leaf when it is not the active one (else None): the cheap check."""
    leaf = first_leaf(tree)
    if leaf is _NO_LEAF or ops.is_array(leaf):
        return None
    return array_backend(leaf)


def check_state_backend(model: Any, caller: str) -> None:
    """Raise a TypeError when ``model.state`` holds arrays of a backend other than the active one.

    An unbuilt model (state None) and a state without arrays pass: they have no backend yet.
    """
    leaf = first_leaf(model.state)
    if leaf is _NO_LEAF or ops.is_array(leaf):  # the common case: about a microsecond
        return
    where = array_backend(leaf)
    if where is None:
        return
    raise TypeError(
        f"{caller}: model {model.name!r} holds its state as {where} arrays (it was built, loaded or trained "
        f"with the {where!r} backend), but the active backend is {backends.get_backend()!r}. Either switch back with "
        f"ember.set_backend({where!r}), or move the model to the active backend with model.to_backend() "
        "(converts its weights and optimizer state)")


# ------------------------------------------------------------------------------------ moving
def _to_active(leaf: Any, dtype: str | None = None) -> Any:
    """One array as an independent array of the active backend with the same bits (``dtype``: cast)."""

    if dtype is None and ops.is_array(leaf):
        return leaf
    if array_backend(leaf) is None:
        return leaf  # not an array (a Python number): nothing to move
    host, _, _ = _arrays.to_host(leaf)
    # to_host may be a view of the old array's memory: copy, so the moved state shares nothing.
    host = np.array(host, copy=True)
    return _arrays.to_native(host, dtype or _arrays.info(leaf)[1])


def tree_to_active(tree: Any) -> Any:
    """``tree`` with every array on the active backend (arrays already there are kept, not copied)."""
    return optree.tree_map(_to_active, tree, none_is_leaf=False)


def _rng_to_active(trainer: Any, value: Any) -> Any:
    """A step-RNG value in the active backend's form (an int, or an MLX array)."""
    if value is None or trainer is None:
        return value

    number = int(value) if isinstance(value, (int, np.integer)) else int(_arrays.to_host(value)[0])
    return trainer.steps.rng(number - 1)  # steps.rng(s) = s % (2**31 - 2) + 1: gives back ``number``


def _opt_state_to_active(trainer: Any, model_state: dict | None, opt_state: Any) -> Any:
    """The optimizer state on the active backend, each leaf in the dtype this backend's optimizer
    uses (``iterations`` is int32 on MLX, int64 elsewhere): the dtypes of a fresh ``init``."""
    if opt_state is None or _foreign(opt_state) is None:
        return opt_state
    if trainer is not None and model_state is not None:
        core = trainer.core
        core.prepare_mask(model_state["params"])
        trainable, _ = core.split(model_state["params"])
        template = trainer.optimizer.init(trainable)
        template_leaves, template_spec = optree.tree_flatten(template, none_is_leaf=False)
        leaves, spec = optree.tree_flatten(opt_state, none_is_leaf=False)
        if spec == template_spec:

            moved = [_to_active(leaf, _arrays.info(like)[1]) for leaf, like in zip(leaves, template_leaves)]
            return optree.tree_unflatten(spec, moved)
    return tree_to_active(opt_state)  # a stale state (another architecture): fit drops it anyway


def training_to_active(model: Any, model_state: dict | None) -> TrainingHandle:
    """A copy of ``model._training`` whose arrays are on the active backend (see :func:`move_model`)."""
    training = model._training.copy()
    trainer = training.trainer
    if training.opt_state is not None:
        training.opt_state = _opt_state_to_active(trainer, model_state, training.opt_state)
    if training.train_metrics is not None:
        training.train_metrics = tree_to_active(training.train_metrics)
    if training.test_metrics is not None:
        training.test_metrics = tree_to_active(training.test_metrics)
    training.batch_rng = _rng_to_active(trainer, training.batch_rng)
    if training.last_fit:
        training.last_fit = dict(training.last_fit, rng=_rng_to_active(trainer, training.last_fit.get("rng")))
    return training


def drop_other_steps(training: TrainingHandle) -> None:
    """Let the trainers forget the steps of backends other than the active one (rebuilt on use):
    torch's keep the last weights they published, MLX's their compiled functions."""
    for trainer in (training.trainer, training.predict_trainer):
        if trainer is not None:
            trainer.drop_steps(keep=backends.get_backend())


def training_is_foreign(model: Any) -> bool:
    """Whether a training cache (optimizer state, running metrics, step RNG) is on another backend
    than the active one: a state replaced by ``load_weights`` or by hand after a switch. One leaf each."""
    training = model._training
    for cache in (training.opt_state, training.train_metrics, training.test_metrics):
        if cache is not None and _foreign(cache) is not None:
            return True
    rng = training.batch_rng
    return rng is not None and not isinstance(rng, int) and _foreign(rng) is not None


def move_model(model: Any, name: str | None = None) -> None:
    """``Model.to_backend``: the state and training caches of ``model`` moved to backend ``name``.

    Everything is converted first and assigned at the end: a failure leaves the model as it was.
    """
    if name is not None and (not isinstance(name, str) or name.lower() not in backends.BACKENDS):
        raise ValueError(f"Model {model.name!r}: to_backend: unknown backend {name!r}; expected one of "
                         f"{list(backends.BACKENDS)} (installed: {backends.available()}) or None for the "
                         f"active backend ({backends.get_backend()!r})")
    target = backends.get_backend() if name is None else name.lower()
    backends.load(target)  # not installed: BackendNotAvailableError naming the extra
    if model._training.live_state is not None:
        raise RuntimeError(f"Model {model.name!r}: to_backend cannot move the model while fit is running "
                           "(from a callback); call it before or after fit")
    switch = backends.using_backend(target) if target != backends.get_backend() else contextlib.nullcontext()
    with switch:
        state = None if model.state is None else tree_to_active(model.state)
        new_training = training_to_active(model, state)
        drop_other_steps(new_training)
    object.__setattr__(model, "state", state)
    object.__setattr__(model, "_training", new_training)
