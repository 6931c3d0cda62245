"""What runs at once on one model: one training call per model, any number of readers.

Thread safety of the training API (the rules this module enforces):

* ``predict``, ``evaluate`` and ``test_on_batch`` may run in several threads at once on
  one model, and beside a ``fit`` of that model in another thread: a reader started
  while the fit runs holds the model's step lock for its call, so it sees the weights of
  one completed step (never half of a step's update, never an MLX step not yet computed)
  and the fit waits for it between two steps;
* one training call (``fit``, ``train_on_batch``) per model at a time: a second one from
  another thread raises a ``RuntimeError`` at once (nothing is changed) instead of two
  loops writing one set of weights. Two models train in two threads independently;
* every such call is registered with :mod:`ember.backends.busy`, so ``ember.set_backend``
  from another thread refuses to switch while it runs.

The guards cost one lock round per call; a ``fit`` takes the model's (uncontended) step
lock once per step, never per op. ``model(x)`` and ``predict_on_batch`` are readers too. Not
covered: layers called on their own (``model.layers[0](x)``) and a custom ``train_step`` override,
which trains without the step lock.

Example:
    >>> import ember
    >>> from ember import layers
    >>> from ember.training import concurrency
    >>> model = ember.Sequential([layers.Input((2,)), layers.Dense(1)], name="tiny")
    >>> with concurrency.training(model, "fit"):
    ...     concurrency.guard_of(model).owner is not None
    True
    >>> concurrency.guard_of(model).owner is None
    True
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from ember.backends import busy

_guards_lock = threading.Lock()  # creating a guard, claiming and releasing a model
_guards: dict[int, ModelGuard] = {}  # id(model) -> its guard, dropped when the model is collected


class ModelGuard:
    """Per model: which thread trains it (``owner``), in which call, and the lock around each step."""

    __slots__ = ("call", "depth", "owner", "owner_name", "step_lock")

    def __init__(self) -> None:
        self.owner: int | None = None  # thread ident of the training call in progress
        self.owner_name = ""
        self.call = ""
        self.depth = 0  # nested training calls of the owner (a callback's train_on_batch)
        self.step_lock = threading.RLock()  # held by the trainer around a step and its publication

    def trained_elsewhere(self) -> bool:
        """Whether another thread is inside a training call of the model now."""
        owner = self.owner
        return owner is not None and owner != threading.get_ident()


def guard_of(model: Any) -> ModelGuard:
    """The model's guard (made on first use; kept beside the model, not on it, so that copying a
    model never shares or copies a lock)."""
    key = id(model)
    guard = _guards.get(key)
    if guard is None:
        with _guards_lock:
            guard = _guards.get(key)
            if guard is None:
                guard = _guards[key] = ModelGuard()
                weakref.finalize(model, _guards.pop, key, None)
    return guard


def _model_name(model: Any) -> str:
    return str(getattr(model, "name", type(model).__name__))


@contextlib.contextmanager
def training(model: Any, call: str) -> Iterator[ModelGuard]:
    """Claim ``model`` for training ``call`` in this thread; RuntimeError when another thread trains it."""
    guard = guard_of(model)
    me = threading.current_thread()
    with _guards_lock:
        if guard.owner is not None and guard.owner != me.ident:
            raise RuntimeError(
                f"{call}: model {_model_name(model)!r} is already training in another thread "
                f"({guard.owner_name!r}, in {guard.call}); one fit/train_on_batch per model at a time. "
                "Wait for that call to return (join its thread), or train a separate model "
                "(predict/evaluate may run beside it)")
        if guard.owner is None:
            guard.owner, guard.owner_name, guard.call = me.ident, me.name, call
        guard.depth += 1
    try:
        with busy.running(f"{call} of model {_model_name(model)!r}"):
            yield guard
    finally:
        with _guards_lock:
            guard.depth -= 1
            if guard.depth == 0:
                guard.owner, guard.owner_name, guard.call = None, "", ""


@contextlib.contextmanager
def reading(model: Any, call: str) -> Iterator[None]:
    """Run reader ``call``; while another thread trains ``model``, between two of its steps."""
    guard = _guards.get(id(model))
    with busy.running(f"{call} of model {_model_name(model)!r}"):
        if guard is not None and guard.trained_elsewhere():
            with guard.step_lock:
                yield
        else:
            yield


def trains(method: Callable) -> Callable:
    """Decorate a training method (``fit``): one per model at a time (see :func:`training`)."""

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        with training(self, method.__name__):
            return method(self, *args, **kwargs)

    return guarded


def trains_one_step(method: Callable) -> Callable:
    """Decorate a one-step training method (``train_on_batch``): as :func:`trains`, holding the step
    lock for the call (a reader in another thread sees the weights before or after it)."""

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        with training(self, method.__name__) as guard, guard.step_lock:
            return method(self, *args, **kwargs)

    return guarded


def reads(method: Callable) -> Callable:
    """Decorate a reading method (``predict``): sees whole steps of a fit in another thread."""

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        with reading(self, method.__name__):
            return method(self, *args, **kwargs)

    return guarded


__all__ = ["ModelGuard", "guard_of", "reading", "reads", "training", "trains", "trains_one_step"]
