"""``CallbackList``: calls every callback's hook in order, and the lazy batch logs.

``fit`` wraps the user's callbacks in a ``CallbackList`` that appends a
:class:`~ember.training.callbacks.History` and, unless ``verbose=0``, a
:class:`~ember.training.callbacks.ProgbarLogger` (as Keras does). Batch hooks are only
called on callbacks that override them, so an unused hook costs nothing per step.
"""

from __future__ import annotations

import collections.abc
from collections.abc import Callable, Iterator
from typing import Any

from ember import ops
from ember.training.callbacks.callback import Callback
from ember.training.callbacks.history import History
from ember.training.callbacks.progbar_logger import ProgbarLogger

_BATCH_HOOKS = ("on_train_batch_begin", "on_train_batch_end", "on_test_batch_begin", "on_test_batch_end",
                "on_predict_batch_begin", "on_predict_batch_end")


def _to_float(value: Any) -> Any:
    if isinstance(value, (int, float)):
        return float(value)
    if getattr(type(value), "__ember_tensor__", False):
        value = value._native
    if ops.is_array(value):
        array = ops.to_numpy(value)
        return float(array) if array.ndim == 0 else array
    return value


class BatchLogs(collections.abc.Mapping):
    """Batch-level logs: ``{name: float}`` computed from ``compute()`` on first access, then cached.

    Reading them is a host sync on an accelerator; ``on_read()``, when given, runs right after
    (``fit`` reads the checks it keeps on the device there: :mod:`ember.training.deferred_reads`).

    Example:
        >>> from ember.training.callbacks.callback_list import BatchLogs
        >>> logs = BatchLogs(lambda: {"loss": 0.5})
        >>> logs["loss"], dict(logs)
        (0.5, {'loss': 0.5})
    """

    __slots__ = ("_compute", "_values", "_on_read")

    def __init__(self, compute: Callable[[], dict], on_read: Callable[[], None] | None = None) -> None:
        self._compute = compute
        self._values: dict | None = None
        self._on_read = on_read

    def _resolved(self) -> dict:
        if self._values is None:
            self._values = {k: _to_float(v) for k, v in self._compute().items()}
            if self._on_read is not None:
                self._on_read()
        return self._values

    def __getitem__(self, key: str) -> Any:
        return self._resolved()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._resolved())

    def __len__(self) -> int:
        return len(self._resolved())

    def __repr__(self) -> str:
        return f"BatchLogs({self._resolved()!r})"


def _as_logs(logs: Any) -> Any:
    """``logs`` as Keras passes them to every hook: a dict (``{}`` when there are none)."""
    return {} if logs is None else logs


def _overrides(callback: Callback, hook: str) -> bool:
    method = getattr(type(callback), hook, None)
    if method is None:
        return False
    if method is not getattr(Callback, hook):
        return True
    # The base on_train_batch_* forward to on_batch_*: count those overrides too.
    legacy = {"on_train_batch_begin": "on_batch_begin", "on_train_batch_end": "on_batch_end"}.get(hook)
    return legacy is not None and getattr(type(callback), legacy) is not getattr(Callback, legacy)


class CallbackList:
    """A list of callbacks called as one (see the module docstring).

    Args:
        callbacks: the user's callbacks (a list of :class:`Callback`).
        add_history: append a :class:`History` unless one is given.
        add_progbar: append a :class:`ProgbarLogger` unless one is given.
        model: set on every callback.
        **params: ``verbose``, ``epochs``, ``steps`` passed to ``set_params``.

    Example:
        >>> from ember import callbacks
        >>> seen = []
        >>> record = callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(epoch))
        >>> hooks = callbacks.CallbackList([record])
        >>> hooks.on_epoch_end(0, {"loss": 1.0})
        >>> seen
        [0]
    """

    def __init__(self, callbacks: Any = None, add_history: bool = False, add_progbar: bool = False,
                 model: Any = None, **params: Any) -> None:
        if callbacks is None:
            callbacks = []
        elif isinstance(callbacks, Callback):
            callbacks = [callbacks]
        elif isinstance(callbacks, CallbackList):
            callbacks = list(callbacks.callbacks)
        else:
            callbacks = list(callbacks)
        for cb in callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks must be ember.callbacks.Callback instances, received {cb!r}")
        self.callbacks: list[Callback] = callbacks
        self.history = next((cb for cb in callbacks if isinstance(cb, History)), None)
        if self.history is None and add_history:
            self.history = History()
            self.callbacks.append(self.history)
        if add_progbar and not any(isinstance(cb, ProgbarLogger) for cb in callbacks):
            self.callbacks.append(ProgbarLogger())
        self.model = model
        self.params = dict(params)
        for cb in self.callbacks:
            if model is not None:
                cb.set_model(model)
            cb.set_params(self.params)
        self._batch = {hook: [getattr(cb, hook) for cb in self.callbacks if _overrides(cb, hook)]
                       for hook in _BATCH_HOOKS}

    def wants(self, hook: str) -> bool:
        """Whether any callback overrides the batch hook ``hook``."""
        return bool(self._batch[hook])

    def __iter__(self) -> Iterator[Callback]:
        return iter(self.callbacks)

    def _call(self, hook: str, *args: Any) -> None:
        args = args[:-1] + (_as_logs(args[-1]),)
        for cb in self.callbacks:
            getattr(cb, hook)(*args)

    def _call_batch(self, hook: str, batch: int, logs: Any) -> None:
        if self._batch[hook]:
            logs = _as_logs(logs)
            for method in self._batch[hook]:
                method(batch, logs)

    def on_train_begin(self, logs: Any = None) -> None:
        self._call("on_train_begin", logs)

    def on_train_end(self, logs: Any = None) -> None:
        self._call("on_train_end", logs)

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self._call("on_epoch_end", epoch, logs)

    def on_test_begin(self, logs: Any = None) -> None:
        self._call("on_test_begin", logs)

    def on_test_end(self, logs: Any = None) -> None:
        self._call("on_test_end", logs)

    def on_predict_begin(self, logs: Any = None) -> None:
        self._call("on_predict_begin", logs)

    def on_predict_end(self, logs: Any = None) -> None:
        self._call("on_predict_end", logs)

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self._call_batch("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self._call_batch("on_train_batch_end", batch, logs)

    def on_test_batch_begin(self, batch: int, logs: Any = None) -> None:
        self._call_batch("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch: int, logs: Any = None) -> None:
        self._call_batch("on_test_batch_end", batch, logs)

    def on_predict_batch_begin(self, batch: int, logs: Any = None) -> None:
        self._call_batch("on_predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch: int, logs: Any = None) -> None:
        self._call_batch("on_predict_batch_end", batch, logs)
